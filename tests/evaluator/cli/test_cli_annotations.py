"""`evaluator annotations --run R --out FILE`: one row per current rating, format from the extension."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evaluator.review import annotations
from evaluator.store.db import connect, fetch_value
from tests.annotated_store import HOSTILE_REASON, annotate

COLUMNS = ["question_id", "provider", "annotator", "label", "value", "reason", "created_at", "source", "response_id"]


@pytest.fixture
def annotated(sample_store: Path) -> Path:
    annotate(sample_store, "clearpath", limit=8)
    return sample_store


def current_count(db: Path) -> int:
    with connect(db, read_only=True) as con:
        return int(fetch_value(con, "SELECT count(*) FROM (SELECT DISTINCT response_id, annotator, label "
                                    "FROM annotations)"))


def test_jsonl_export_has_one_row_per_current_rating_with_question_and_provider(cli, annotated: Path,
                                                                                tmp_path: Path) -> None:
    out = tmp_path / "ratings.jsonl"
    result = cli("annotations", "--run", "clearpath", "--out", str(out), db=annotated, check=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == current_count(annotated) and f"{len(rows)} annotations" in result.stdout
    assert list(rows[0]) == COLUMNS and rows[0]["source"] == "imported"


def test_a_newer_rating_replaces_the_older_one_in_the_export(cli, annotated: Path, tmp_path: Path) -> None:
    with connect(annotated) as con:
        response_id = int(fetch_value(con, "SELECT min(response_id) FROM annotations"))
        annotations.add_annotation(con, response_id, "ann_a", "faithfulness", "1", "changed my mind")
    out = tmp_path / "ratings.parquet"
    cli("annotations", "--run", "clearpath", "--out", str(out), db=annotated, check=True)
    rows = [r for r in pq.read_table(out).to_pylist()
            if r["response_id"] == response_id and r["annotator"] == "ann_a" and r["label"] == "faithfulness"]
    assert [(r["value"], r["reason"], r["source"]) for r in rows] == [("1", "changed my mind", "review")]


def test_csv_export_defuses_spreadsheet_formulas(cli, annotated: Path, tmp_path: Path) -> None:
    with connect(annotated) as con:
        response_id = int(fetch_value(con, "SELECT min(response_id) FROM annotations"))
        annotations.add_annotation(con, response_id, "=cmd|' /C calc'!A0", "faithfulness", "2", HOSTILE_REASON)
    out = tmp_path / "ratings.csv"
    cli("annotations", "--run", "clearpath", "--out", str(out), db=annotated, check=True)
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == current_count(annotated)
    mine = [r for r in rows if r["annotator"].startswith("'=cmd")]
    assert [r["reason"] for r in mine] == [HOSTILE_REASON]
    assert not any(v.startswith(("=", "+", "-", "@")) for r in rows for v in r.values())


def test_an_unknown_run_exits_2_and_writes_no_file(cli, annotated: Path, tmp_path: Path) -> None:
    out = tmp_path / "ratings.jsonl"
    result = cli("annotations", "--run", "nope", "--out", str(out), db=annotated)
    assert result.returncode == 2 and "no run named 'nope'" in result.stderr and not out.exists()


def test_an_unknown_extension_exits_2(cli, annotated: Path, tmp_path: Path) -> None:
    result = cli("annotations", "--run", "clearpath", "--out", str(tmp_path / "ratings.xlsx"), db=annotated)
    assert result.returncode == 2 and "use a .jsonl, .csv or .parquet file name" in result.stderr
