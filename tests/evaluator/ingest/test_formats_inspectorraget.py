"""InspectorRAGet experiment files through the real CLI: `evaluator ingest FILE.json`.

The fixture (tests/fixtures/formats/inspectorraget_clapnq.json) is written in the shape of
IBM/InspectorRAGet's schema version 2 (`data/RAG Model Performance.json` migrated): 8 ClapNQ
tasks x 2 models, contexts given by document_id (no scores), answerable and unanswerable
tasks, an algorithmic metric (RougeL), and 3 annotators rating faithfulness and answer
relevance 1-4 with reasons. inspectorraget_v1.json is the version 1 shape of the same data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import ingested_store
from tests.evaluator.ingest.test_ingest import assert_one_error, query, snapshot, value

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
CLAPNQ = FIXTURES / "inspectorraget_clapnq.json"
V1 = FIXTURES / "inspectorraget_v1.json"


@pytest.fixture(scope="module")
def clapnq_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_store(tmp_path_factory, CLAPNQ, "--name", "clapnq")


def test_the_format_is_told_from_the_content(clapnq_store: Path) -> None:
    assert value(clapnq_store, "SELECT source_format FROM runs") == "inspectorraget"


def test_each_result_is_a_response_of_its_model(clapnq_store: Path) -> None:
    rows = query(clapnq_store, "SELECT provider, model, count(*) FROM responses GROUP BY ALL ORDER BY 1")
    assert rows == [("gpt", "GPT-3.5 (Turbo)", 8), ("llama", "Llama (13b-chat)", 8)]


def test_the_question_is_the_last_user_turn_and_its_id_the_task_id(clapnq_store: Path) -> None:
    rows = query(clapnq_store, "SELECT question_id, question FROM questions ORDER BY question_id")
    assert rows[0] == ("ClapNQ::101", "where is the world's largest man made lake")
    assert len(rows) == 8


def test_contexts_by_document_id_are_retrieved_texts_without_scores(clapnq_store: Path) -> None:
    rows = query(clapnq_store, """SELECT c.chunk_id, c.text, rt.score FROM retrieved rt JOIN chunks c USING (chunk_key)
                                  JOIN responses r USING (response_id)
                                  WHERE r.question_id = 'ClapNQ::102' AND r.provider = 'gpt'""")
    assert rows == [("doc-logan", "Mount Logan is the highest mountain in Canada and the second-highest peak in "
                                  "North America, after Denali.", None)]


def test_answerability_sets_answerable(clapnq_store: Path) -> None:
    rows = query(clapnq_store, "SELECT answerable, count(*) FROM responses GROUP BY ALL ORDER BY 1")
    assert rows == [(False, 4), (True, 12)]


def test_text_targets_are_the_gold_answers(clapnq_store: Path) -> None:
    gold = value(clapnq_store, "SELECT gold_answers FROM questions WHERE question_id = 'ClapNQ::102'")
    assert json.loads(gold) == [{"aliases": ["Mount Logan"], "supported": None}]
    assert value(clapnq_store, "SELECT gold_answers FROM questions WHERE question_id = 'ClapNQ::107'") is None


def test_algorithmic_metric_values_are_kept_in_each_response_metadata(clapnq_store: Path) -> None:
    metadata = value(clapnq_store, "SELECT metadata FROM responses WHERE question_id = 'ClapNQ::102' "
                                   "AND provider = 'gpt'")
    assert json.loads(metadata) == {"metrics": {"RougeL": 1.0}}


def test_human_metrics_become_the_run_labels(clapnq_store: Path) -> None:
    rows = query(clapnq_store, "SELECT label, scale, scale_values, description FROM labels ORDER BY label")
    assert [(label, scale, json.loads(values)) for label, scale, values, _ in rows] == [
        ("answer_relevance", "ordinal", ["1", "2", "3", "4"]),
        ("faithfulness", "ordinal", ["1", "2", "3", "4"]),
    ]  # the _reason text metrics give reasons; they are not labels of their own


def test_the_files_names_of_the_values_are_kept_and_shown_with_them(clapnq_store: Path) -> None:
    from evaluator.review.annotations import labels, value_shown

    with duckdb.connect(str(clapnq_store), read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clapnq'").fetchone()[0]
        [faithfulness] = [d for d in labels(con, run_id) if d["label"] == "faithfulness"]
    assert faithfulness["value_names"] == {"1": "No", "2": "Mostly No", "3": "Mostly Yes", "4": "Yes"}
    assert [value_shown(faithfulness, v) for v in ("3", "9", None)] == ["Mostly Yes (3)", "9", ""]


def test_every_rating_is_an_imported_annotation(clapnq_store: Path) -> None:
    rows = query(clapnq_store, "SELECT label, source, count(*), count(DISTINCT annotator) FROM annotations "
                               "GROUP BY ALL ORDER BY 1")
    assert rows == [("answer_relevance", "imported", 48, 3), ("faithfulness", "imported", 48, 3)]


def test_an_annotation_carries_value_number_reason_and_time(clapnq_store: Path) -> None:
    rows = query(clapnq_store, """SELECT a.annotator, a.value, a.value_num, a.reason, epoch(a.created_at)
                                  FROM annotations a JOIN responses r USING (response_id)
                                  WHERE r.question_id = 'ClapNQ::103' AND r.provider = 'llama'
                                    AND a.label = 'faithfulness' ORDER BY a.annotator""")
    assert rows == [
        ("46542882", "1", 1.0, "Not faithful to the passage", 1709545875.0),
        ("46544861", "1", 1.0, "Not faithful to the passage", 1709545935.0),
        ("47200615", "2", 2.0, "Partially faithful to passage", 1709545995.0),
    ]


def test_schema_version_1_ingests_unchanged(cli, db_path: Path) -> None:
    assert cli("ingest", str(V1), db=db_path).returncode == 0
    assert query(db_path, "SELECT question_id, provider, model, answerable, answer FROM responses ORDER BY 1") == [
        ("ClapNQ::201", "mistral", "Mistral", True, " Lake Kariba is the world's largest man-made lake."),
        ("ClapNQ::202", "mistral", "Mistral", False, "It is unanswerable to determine this from the passage."),
    ]
    assert value(db_path, "SELECT count(*) FROM annotations WHERE label = 'faithfulness'") == 6


def test_replacing_the_run_keeps_one_set_of_labels_and_annotations(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(CLAPNQ), "--name", "clapnq", db=db, check=True)
    cli("ingest", str(CLAPNQ), "--name", "clapnq", "--replace", db=db, check=True)
    assert value(db, "SELECT count(*) FROM labels") == 2
    assert value(db, """SELECT count(*) FROM annotations a JOIN responses r USING (response_id)""") == 96
    assert value(db, "SELECT count(*) FROM annotations") == 96  # none left behind by the old run


# Bad input: one message naming the file, the record and the field; the store is unchanged.

def _broken(edit: Any) -> dict[str, Any]:
    doc = json.loads(CLAPNQ.read_text())
    edit(doc)
    return doc


def _drop(mapping: dict[str, Any], key: str) -> None:
    del mapping[key]


BAD_INPUT = [
    ("missing_required_key", lambda d: _drop(d["results"][2], "model_id"), ":3:", "results[2].model_id",
     "missing required field"),
    ("wrong_type", lambda d: d.update(tasks={"a": 1}), ":", "'tasks'", "expected a list, got an object"),
    ("unknown_document_id", lambda d: d["tasks"][3]["contexts"][0].update(document_id="nope"), ":",
     "tasks[3].contexts[0].document_id", "unknown document_id 'nope'"),
    ("bad_answerability", lambda d: d["tasks"][1].update(answerability="MAYBE"), ":",
     "tasks[1].answerability", "got 'MAYBE'"),
    ("unknown_model_id", lambda d: d["results"][5].update(model_id="gpt-5"), ":6:", "results[5].model_id",
     "unknown model_id 'gpt-5'"),
    ("unknown_task_id", lambda d: d["results"][0].update(task_id="ClapNQ::999"), ":1:", "results[0].task_id",
     "unknown task_id"),
    ("rating_off_the_scale", lambda d: d["results"][4]["scores"]["faithfulness"]["46542882"].update(value="5"),
     ":5:", "results[4].scores.faithfulness.46542882.value", "'5' is not one of the metric's values"),
    ("undeclared_metric", lambda d: d["results"][0]["scores"].update(BLEU={"system": {"value": 1}}), ":1:",
     "results[0].scores.BLEU", "not declared"),
]


@pytest.fixture
def base_store(cli, tmp_path: Path) -> Path:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(V1), "--name", "existing", db=db, check=True)
    return db


@pytest.mark.parametrize(("edit", "where", "field", "problem"), [case[1:] for case in BAD_INPUT],
                         ids=[case[0] for case in BAD_INPUT])
def test_bad_input_gets_one_message_and_writes_nothing(
    cli, base_store: Path, tmp_path: Path, edit: Any, where: str, field: str, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken(edit)))
    before = snapshot(base_store)
    result = cli("ingest", str(path), db=base_store)
    assert_one_error(result, f"{path}{where}", field, problem)
    assert snapshot(base_store) == before


def test_malformed_json_gets_one_message_and_writes_nothing(cli, base_store: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(CLAPNQ.read_text()[:-40])
    before = snapshot(base_store)
    assert_one_error(cli("ingest", str(path), db=base_store), str(path), "malformed JSON")
    assert snapshot(base_store) == before


def test_imported_and_typed_ratings_get_the_same_number_for_a_value(cli, db_path: Path, tmp_path: Path) -> None:
    """On a 0/1 scale an imported "0" and a typed "0" are both 0 (not the position 1), so a midpoint
    rule means the same for both."""
    from evaluator.review.annotations import add_annotation
    from evaluator.store.db import connect

    data = json.loads(CLAPNQ.read_text(encoding="utf-8"))
    for metric in data["metrics"]:
        if metric["name"] == "faithfulness":
            metric["values"] = [{"value": "0", "numeric_value": 0}, {"value": "1", "numeric_value": 1}]
    for result in data["results"]:
        for rating in (result.get("scores") or {}).get("faithfulness", {}).values():
            if isinstance(rating, dict) and "value" in rating:
                rating["value"] = "1" if str(rating["value"]) in ("3", "4") else "0"
    path = tmp_path / "binary.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    cli("ingest", str(path), "--name", "binary", db=db_path, check=True)
    with connect(db_path) as con:
        rid = con.execute("SELECT min(response_id) FROM responses").fetchall()[0][0]
        add_annotation(con, rid, "priya", "faithfulness", "0")
        pairs = set(con.execute("SELECT value, value_num, source FROM annotations WHERE label = 'faithfulness'")
                    .fetchall())
    assert ("0", 0.0, "review") in pairs
    assert {(v, n) for v, n, s in pairs if s == "imported"} <= {("0", 0.0), ("1", 1.0)}
    assert {v for v, _, s in pairs if s == "imported"} == {"0", "1"}
