"""Inspect AI eval logs (JSON) through the real CLI.

The fixture (tests/fixtures/formats/inspect_log.json) follows inspect_ai's EvalLog: `eval`
(task, model), `results`, and `samples` with chat-message inputs, string and list targets,
`output.completion`, a `model_graded_fact` score (C/I/N) and a numeric `rouge` score, and the
retrieved passage in the sample's metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ingested_store
from tests.evaluator.ingest.test_ingest import assert_one_error, query, recorded_verdicts, snapshot, value

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "inspect_log.json"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_store(tmp_path_factory, FIXTURE, "--name", "insp")


def test_the_format_is_told_from_the_content(store: Path) -> None:
    assert value(store, "SELECT source_format FROM runs") == "inspect"


def test_samples_are_responses_of_the_eval_model(store: Path) -> None:
    rows = query(store, """SELECT r.question_id, r.provider, r.model, q.question, r.answer
                           FROM responses r JOIN questions q USING (run_id, question_id) ORDER BY r.source_line""")
    assert rows[1] == ("2", "openai/gpt-4o", "gpt-4o-2024-08-06", "What is the highest mountain in Canada?",
                       "Denali is the highest mountain in Canada.")
    assert [row[0] for row in rows] == ["1", "2", "3", "q-4"]


def test_a_list_target_is_one_gold_answer_with_aliases(store: Path) -> None:
    gold = value(store, "SELECT gold_answers FROM questions WHERE question_id = '3'")
    assert json.loads(gold) == [{"aliases": ["beta cells", "beta cells of the pancreatic islets"],
                                 "supported": None}]


def test_the_metadata_context_is_retrieved_without_score(store: Path) -> None:
    rows = query(store, """SELECT c.text, rt.score FROM retrieved rt JOIN chunks c USING (chunk_key)
                           JOIN responses r USING (response_id) WHERE r.question_id = '1'""")
    assert rows == [("Lake Kariba is the world's largest man-made lake and reservoir by volume. It lies along the "
                     "border between Zambia and Zimbabwe.", None)]


def test_graded_fact_scores_are_recorded_as_answers_question(store: Path) -> None:
    # N (no answer) fails, as Inspect's own accuracy counts it 0 (issue 28: the pass counts are the log's)
    verdicts = recorded_verdicts(store, "insp")
    assert [verdicts[(q, "openai/gpt-4o", "answers_question")] for q in ("1", "2", "3", "q-4")] == [
        "PASS", "FAIL", "PASS", "FAIL"]


def test_a_numeric_score_of_a_scorer_we_do_not_know_is_a_score_not_a_verdict(store: Path) -> None:
    verdicts = recorded_verdicts(store, "insp")
    assert not any(check == "inspect:rouge" for (_q, _p, check) in verdicts)


def test_scores_and_metadata_are_kept(store: Path) -> None:
    metadata = json.loads(value(store, "SELECT metadata FROM responses WHERE question_id = '2'"))
    assert metadata["inspect"]["scores"]["rouge"] == {"value": 0.1}
    assert metadata["inspect"]["metadata"] == {"source": "clapnq"}


def _broken(edit: Any) -> dict[str, Any]:
    doc = json.loads(FIXTURE.read_text())
    edit(doc)
    return doc


BAD_INPUT = [
    ("missing_model", lambda d: d["eval"].pop("model"), ":", "eval.model", "missing required field"),
    ("missing_output", lambda d: d["samples"][2].pop("output"), ":3:", "samples[2].output", "missing required field"),
    ("wrong_type_input", lambda d: d["samples"][0].update(input=7), ":1:", "samples[0].input", "expected a string"),
    ("no_samples", lambda d: d.pop("samples"), ":", "samples", "--no-log-samples"),
    ("score_without_value", lambda d: d["samples"][1]["scores"].update(match={"answer": "x"}), ":2:",
     "samples[1].scores.match", "expected an object {value"),
]


@pytest.mark.parametrize(("edit", "where", "field", "problem"), [case[1:] for case in BAD_INPUT],
                         ids=[case[0] for case in BAD_INPUT])
def test_bad_input_gets_one_message_and_writes_nothing(
    cli, tmp_path: Path, edit: Any, where: str, field: str, problem: str
) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(FIXTURE), "--name", "existing", db=db, check=True)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken(edit)))
    before = snapshot(db)
    assert_one_error(cli("ingest", str(path), db=db), f"{path}{where}", field, problem)
    assert snapshot(db) == before


def test_the_logs_own_pass_count_comes_from_its_accuracy_also_without_scored_samples() -> None:
    # older logs (inspect_ai 0.3.9x) give completed_samples and no scored_samples
    from evaluator.ingest.formats.inspect_log import read

    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    doc["results"] = {"total_samples": 4, "completed_samples": 4, "scores": [
        {"name": "model_graded_fact", "scorer": "model_graded_fact", "params": {},
         "metrics": {"accuracy": {"name": "accuracy", "value": 0.75, "params": {}}}}]}
    assert read(FIXTURE, doc).file_passed == (3, 1)
