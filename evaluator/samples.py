"""The sample runs shipped in data/, loaded into an empty store on first start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from evaluator.ingest import ingest_file
from evaluator.store import fetch_value

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
# (file in data/, run name, profile, rule sets evaluated on load)
SAMPLES = (
    ("ramayana_golden.csv", "ramayana", "ramayana", ("legacy", "t3_aware")),
    ("ramayana_v2.jsonl", "ramayana_v2", "ramayana", ("legacy", "t3_aware")),
    ("clearpath_support.jsonl", "clearpath", "clearpath", ("t3_aware",)),
)


def load_samples(
    con: duckdb.DuckDBPyConnection, *, data_dir: Path = DATA_DIR, say: Callable[[str], None] = print
) -> list[str]:
    """Ingest and evaluate the sample runs when the store holds no runs; return the runs loaded."""
    from evaluator.recompute import recompute

    if fetch_value(con, "SELECT count(*) FROM runs"):
        say("the store already has runs; sample runs not loaded")
        return []
    loaded = []
    for file_name, run_name, profile, rulesets in SAMPLES:
        result = ingest_file(con, data_dir / file_name, name=run_name, profile=profile)
        for ruleset in rulesets:
            recompute(con, run_name, ruleset)
        say(f"loaded {run_name}: {result.n_responses} responses, evaluated under {', '.join(rulesets)}")
        loaded.append(run_name)
    return loaded
