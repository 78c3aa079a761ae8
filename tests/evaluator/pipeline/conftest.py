"""Fixtures of the pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_endpoint import FakeEndpoint, serve


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    """A real OpenAI-compatible server on 127.0.0.1 (tests/llm_endpoint.py)."""
    with serve() as state:
        yield state
