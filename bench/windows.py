"""How long each writing command keeps others out of the store (issue 15), on one generated run.

    python -m bench.windows --rows 1000000 [--workdir DIR]

Runs ingest, recompute t3_aware, search-index and metrics through the real CLI (bench.run.measure)
with EVALUATOR_LOCK_LOG set, and prints, per command: wall time, the time it held the store for
writing (everyone else waits: pages show a notice, reviewers' saves stay pending), the longest
such hold, and the time it held it for reading only (pages go on; writers wait). `make bench`
reports the same figures in its table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from bench.generate import generate
from bench.run import cli, measure

KEYS = ("seconds", "store_held_s", "longest_hold_s", "shared_hold_s", "peak_mb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--workdir", help="where the run file and store go (default: a new temp dir)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rag-windows-"))
    workdir.mkdir(parents=True, exist_ok=True)
    run_file, db = workdir / "run.jsonl", workdir / "store.duckdb"
    try:
        if not run_file.exists():
            generate(run_file, args.rows, seed=7)
        for stale in workdir.glob("store.duckdb*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        results = {}
        for name, command in (
            ("ingest", cli("ingest", "--db", str(db), str(run_file), "--name", "a")),
            ("recompute", cli("recompute", "--db", str(db), "--run", "a", "--ruleset", "t3_aware")),
            ("search-index", cli("search-index", "--db", str(db), "--run", "a")),
            ("metrics", cli("metrics", "--db", str(db), "--run", "a")),
        ):
            measured = measure(command)
            results[name] = {key: measured[key] for key in KEYS}
            print(name, json.dumps(results[name]), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
