"""`evaluator ingest FILE --map field=column,...`: any JSONL/CSV/Parquet, e.g. a Ragas dataset.

The fixture (tests/fixtures/formats/ragas_dataset.csv) has Ragas' columns: user_input,
retrieved_contexts (a JSON list per cell; one row holds the Python list pandas writes),
response, reference; no question ids and no providers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ingested_store
from tests.evaluator.ingest.test_ingest import assert_one_error, query, snapshot, value

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "ragas_dataset.csv"
RAGAS_MAP = "question=user_input,answer=response,retrieved=retrieved_contexts,gold_answers=reference"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_store(tmp_path_factory, FIXTURE, "--map", RAGAS_MAP)


def test_a_ragas_csv_ingests_as_one_provider_named_after_the_file(store: Path) -> None:
    assert query(store, "SELECT provider, count(*) FROM responses GROUP BY ALL") == [("ragas_dataset", 4)]


def test_question_ids_come_from_the_question_text(store: Path) -> None:
    ids = [row[0] for row in query(store, "SELECT question_id FROM responses ORDER BY source_line")]
    assert len(set(ids)) == 4 and all(qid.startswith("q-") for qid in ids)


def test_a_list_of_strings_is_retrieved_texts_without_scores(store: Path) -> None:
    rows = query(store, """SELECT r.source_line, rt.rank, left(c.text, 11), rt.score FROM retrieved rt
                           JOIN chunks c USING (chunk_key) JOIN responses r USING (response_id) ORDER BY 1, 2""")
    assert rows == [(2, 1, "Lake Kariba", None), (3, 1, "Mount Logan", None), (3, 2, "Lake Kariba", None),
                    (4, 1, "Insulin is ", None)]  # line 4 holds a Python list; line 5 an empty one


def test_the_reference_is_the_gold_answer(store: Path) -> None:
    gold = value(store, "SELECT gold_answers FROM questions WHERE question = 'What cells produce insulin?'")
    assert json.loads(gold) == [{"aliases": ["beta cells"], "supported": None}]


def test_a_parquet_file_with_list_columns_ingests_with_a_map(cli, tmp_path: Path) -> None:
    path = tmp_path / "ragas.parquet"
    pq.write_table(pa.table({"query": ["Where did Dada start?"], "response": ["In Zurich."],
                             "contexts": [["Dada began in Zurich.", "It spread to Paris."]], "bot": ["rag-bot"]}), path)
    db = tmp_path / "store.duckdb"
    cli("ingest", str(path), "--map", "question=query,answer=response,retrieved=contexts,provider=bot",
        db=db, check=True)
    assert value(db, "SELECT provider FROM responses") == "rag-bot"
    assert value(db, "SELECT count(*) FROM retrieved WHERE score IS NULL") == 2


def test_a_jsonl_file_ingests_with_a_map(cli, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"id": "7", "q": "Why?", "a": "Because.", "ctx": ["Because it is."]}) + "\n")
    db = tmp_path / "store.duckdb"
    cli("ingest", str(path), "--map", "question_id=id,question=q,answer=a,retrieved=ctx", db=db, check=True)
    assert query(db, "SELECT question_id, answer FROM responses") == [("7", "Because.")]


def test_an_unknown_field_in_the_map_is_one_error(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(FIXTURE), "--map", "question=user_input,contexts=retrieved_contexts", db=db)
    assert_one_error(result, "--map: field 'contexts'", "unknown field")
    assert not db.exists()


def test_a_missing_source_column_is_one_error_naming_it(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(FIXTURE.with_name("inspect_log.json")), db=db, check=True)
    before = snapshot(db)
    result = cli("ingest", str(FIXTURE), "--map", "question=query,answer=response", db=db)
    assert_one_error(result, f"{FIXTURE}:2: field 'query'", "no such column", "user_input")
    assert snapshot(db) == before


def test_a_malformed_list_cell_is_one_error_naming_line_and_column(cli, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('user_input,retrieved_contexts,response,reference\nWhy?,"[""unclosed",Because.,x\n')
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(path), "--map", RAGAS_MAP, db=db)
    assert_one_error(result, f"{path}:2: field 'retrieved_contexts'", "expected a JSON list")
    assert not db.exists()
