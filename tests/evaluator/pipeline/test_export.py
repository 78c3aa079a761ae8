"""Export writers: formats, and untrusted text that must not become a spreadsheet formula."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evaluator.pipeline.export import write_table


def test_csv_cells_that_would_run_as_formulas_get_a_leading_apostrophe(tmp_path):
    table = pa.table({"reason": ['=HYPERLINK("http://evil.example")', "+1", "-2", "@SUM(A1)", "fine"]})
    path = tmp_path / "o.csv"
    write_table(table, path, "csv")
    assert pacsv.read_csv(path).column("reason").to_pylist() == [
        '\'=HYPERLINK("http://evil.example")', "'+1", "'-2", "'@SUM(A1)", "fine"]


def test_parquet_keeps_text_exactly(tmp_path):
    table = pa.table({"reason": ["=1+1", "plain"]})
    path = tmp_path / "o.parquet"
    write_table(table, path, "parquet")
    assert pq.read_table(path).column("reason").to_pylist() == ["=1+1", "plain"]


# --- the refusal judge's decision per response (issue 13 §3) ------------------------------------------


def _export(cli, db, tmp_path, name="out.jsonl"):
    import json

    out = tmp_path / name
    cli("export", "--run", "clearpath", "--ruleset", "t3_aware", "--out", str(out), db=db, check=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_export_refused_columns_are_empty_before_metrics(cli, db_path, tmp_path):
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "data" / "clearpath_support.jsonl"
    cli("ingest", str(data), "--name", "clearpath", "--profile", "clearpath", db=db_path, check=True)
    rows = _export(cli, db_path, tmp_path)
    assert {(r["refused"], r["refused_by"]) for r in rows} == {(None, None)}


def test_export_carries_the_judge_decision_once_metrics_ran(cli, sample_store, tmp_path):
    import json

    cli("metrics", "--run", "clearpath", db=sample_store, check=True)
    rows = _export(cli, sample_store, tmp_path)
    assert {r["refused_by"] for r in rows} == {"judge"}
    refused = {(r["question_id"], r["provider"]) for r in rows if r["refused"]}
    done = cli("metrics", "--run", "clearpath", "--json", db=sample_store, check=True)
    assert len(refused) == sum(p["n_refused"] for p in json.loads(done.stdout))


def test_export_csv_has_the_refused_columns(cli, sample_store, tmp_path):
    cli("metrics", "--run", "clearpath", db=sample_store, check=True)
    out = tmp_path / "out.csv"
    cli("export", "--run", "clearpath", "--ruleset", "t3_aware", "--out", str(out), db=sample_store, check=True)
    table = pacsv.read_csv(out)
    assert set(table.column("refused_by").to_pylist()) == {"judge"}
