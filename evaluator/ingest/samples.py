"""The sample runs shipped in data/, loaded into an empty store on first start."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from evaluator.ingest.loader import prepare_run, store_run
from evaluator.pipeline import search_index
from evaluator.store.db import connect

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
# (file in data/, run name, profile, rule sets evaluated on load)
SAMPLES = (
    ("ramayana_golden.csv", "ramayana", "ramayana", ("legacy", "t3_aware")),
    ("ramayana_v2.jsonl", "ramayana_v2", "ramayana", ("legacy", "t3_aware")),
    ("clearpath_support.jsonl", "clearpath", "clearpath", ("t3_aware",)),
)


def load_samples(
    db: str | os.PathLike[str] | None, *, data_dir: Path = DATA_DIR, say: Callable[[str], None] = print
) -> list[str]:
    """On a store without runs, ingest and evaluate every sample run; on one that is loading them
    (an interrupted first start), finish what is missing. A store with other runs is left alone.
    Each step holds the store only for its own short windows."""
    from evaluator.pipeline.metrics.runner import compute_and_store
    from evaluator.pipeline.recompute import recompute

    with connect(db) as con:
        names = {row[0] for row in con.execute("SELECT name FROM runs").fetchall()}
    sample_names = {run_name for _, run_name, _, _ in SAMPLES}
    if names - sample_names:
        say("the store already has runs of its own; sample runs not loaded")
        return []
    loaded = []
    for file_name, run_name, profile, rulesets in SAMPLES:
        if run_name not in names:
            with prepare_run(data_dir / file_name, name=run_name, profile=profile) as prepared:
                store_run(db, prepared)
        with connect(db) as con:
            done = {row[0] for row in con.execute(
                "SELECT DISTINCT e.ruleset FROM evaluations e JOIN runs r USING (run_id) WHERE r.name = $run",
                {"run": run_name},
            ).fetchall()}
            has_metrics = con.execute(
                "SELECT count(*) FROM metric_results m JOIN runs r USING (run_id) WHERE r.name = $run",
                {"run": run_name},
            ).fetchall()[0][0]
            run_id = int(con.execute("SELECT run_id FROM runs WHERE name = $run", {"run": run_name}).fetchall()[0][0])
            indexed = search_index.is_built(con, run_id)
        missing = [ruleset for ruleset in rulesets if ruleset not in done]
        for ruleset in missing:
            recompute(db, run_name, ruleset)
        if not has_metrics:  # the Metrics page has figures from the first start (heuristic judge)
            compute_and_store(db, run_name, "heuristic")
        if not indexed:  # Triage searches go through the index, as on big runs
            search_index.build_staged(db, run_id)
        if run_name not in names or missing:
            say(f"loaded {run_name}: evaluated under {', '.join(rulesets)}")
            loaded.append(run_name)
    if not loaded:
        say("sample runs already loaded")
    return loaded
