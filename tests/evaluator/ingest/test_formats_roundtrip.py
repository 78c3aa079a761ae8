"""Each peer format, once ingested, goes through recompute, export and metrics (real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluator.ingest.test_ingest import value

FORMATS = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
CASES = {
    "inspectorraget": (FORMATS / "inspectorraget_clapnq.json", (), 16),
    "promptfoo": (FORMATS / "promptfoo_results.json", (), 8),
    "inspect": (FORMATS / "inspect_log.json", (), 4),
    "ragas_csv": (FORMATS / "ragas_dataset.csv", ("--map", "question=user_input,answer=response,"
                                                  "retrieved=retrieved_contexts,gold_answers=reference"), 4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ingest_recompute_export_and_metrics(cli, db_path: Path, tmp_path: Path, case: str) -> None:
    path, extra, n = CASES[case]
    cli("ingest", str(path), "--name", case, *extra, db=db_path, check=True)
    cli("recompute", "--run", case, "--ruleset", "t3_aware", db=db_path, check=True)
    out = tmp_path / "export.jsonl"
    cli("export", "--run", case, "--ruleset", "t3_aware", "--out", str(out), db=db_path, check=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == n and all(row["overall"] in ("PASS", "FAIL") for row in rows)
    metrics = json.loads(cli("metrics", "--run", case, "--json", db=db_path, check=True).stdout)
    assert metrics
    assert value(db_path, "SELECT count(*) FROM evaluations e JOIN runs r USING (run_id) "
                          "WHERE r.name = ? AND e.ruleset = 't3_aware'", [case]) == 1


def test_unscored_contexts_raise_no_false_no_context_warning(cli, db_path: Path) -> None:
    cli("ingest", str(CASES["inspectorraget"][0]), "--name", "irg", db=db_path, check=True)
    cli("recompute", "--run", "irg", "--ruleset", "t3_aware", db=db_path, check=True)
    assert value(db_path, "SELECT count(*) FROM flags WHERE flag = 'no_context_warning'") == 0


def test_export_rows_carry_the_source_tools_per_response_metrics(cli, db_path: Path, tmp_path: Path) -> None:
    cli("ingest", str(CASES["inspectorraget"][0]), "--name", "irg", db=db_path, check=True)
    cli("recompute", "--run", "irg", "--ruleset", "t3_aware", db=db_path, check=True)
    out = tmp_path / "export.jsonl"
    cli("export", "--run", "irg", "--ruleset", "t3_aware", "--out", str(out), db=db_path, check=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    stored = value(db_path, "SELECT count(*) FROM responses WHERE json_extract(metadata, '$.metrics') IS NOT NULL")
    assert stored > 0
    with_metrics = [json.loads(row["metrics"]) for row in rows if row["metrics"]]
    assert len(with_metrics) == stored and all(isinstance(m, dict) and m for m in with_metrics)
