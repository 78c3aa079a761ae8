"""Benchmarks at scale (`make bench`), never part of `make test`."""
