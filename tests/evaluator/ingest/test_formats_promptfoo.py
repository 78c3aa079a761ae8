"""promptfoo eval output (`promptfoo eval -o results.json`, version 3) through the real CLI.

The fixture (tests/fixtures/formats/promptfoo_results.json) follows promptfoo's documented
output: `{evalId, results: {version, results: [EvaluateResult], stats}, config}`, 4 tests x 2
providers, vars naming the question, its context and the expected output, and two graders per
result (icontains, context-faithfulness).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ingested_store
from tests.evaluator.ingest.test_ingest import assert_one_error, query, recorded_verdicts, snapshot, value

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "promptfoo_results.json"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_store(tmp_path_factory, FIXTURE, "--name", "pf")


def test_the_format_is_told_from_the_content(store: Path) -> None:
    assert value(store, "SELECT source_format FROM runs") == "promptfoo"


def test_provider_label_question_and_answer_are_read(store: Path) -> None:
    rows = query(store, """SELECT r.question_id, r.provider, r.model, q.question, r.answer
                           FROM responses r JOIN questions q USING (run_id, question_id)
                           WHERE r.question_id = 'test-1' ORDER BY r.provider""")
    assert rows == [
        ("test-1", "claude-haiku", "anthropic:messages:claude-3-5-haiku-20241022", "What cells produce insulin?",
         "Insulin is produced by the liver."),
        ("test-1", "gpt-4o-mini", "openai:gpt-4o-mini", "What cells produce insulin?",
         "Beta cells of the pancreatic islets produce insulin."),
    ]


def test_the_context_var_is_retrieved_without_score(store: Path) -> None:
    rows = query(store, """SELECT c.text, rt.score FROM retrieved rt JOIN chunks c USING (chunk_key)
                           JOIN responses r USING (response_id) WHERE r.question_id = 'test-0'""")
    assert {row for row in rows} == {("Mount Logan is the highest mountain in Canada and the second-highest peak "
                                      "in North America, after Denali.", None)}


def test_the_expected_output_var_is_the_gold_answer(store: Path) -> None:
    gold = value(store, "SELECT gold_answers FROM questions WHERE question_id = 'test-2'")
    assert json.loads(gold) == [{"aliases": ["Zurich"], "supported": None}]


def test_a_faithfulness_grade_is_recorded_as_no_hallucination(store: Path) -> None:
    verdicts = recorded_verdicts(store, "pf")
    assert verdicts[("test-1", "claude-haiku", "no_hallucination")] == "FAIL"
    assert verdicts[("test-1", "gpt-4o-mini", "no_hallucination")] == "PASS"


def test_grades_that_map_to_no_check_stay_in_metadata(store: Path) -> None:
    metadata = json.loads(value(store, "SELECT metadata FROM responses WHERE question_id = 'test-2' "
                                       "AND provider = 'claude-haiku'"))
    grades = metadata["promptfoo"]["grades"]
    assert [grade["type"] for grade in grades] == ["icontains", "context-faithfulness"]
    assert grades[0] == {"type": "icontains", "pass": False, "score": 0,
                         "reason": 'Expected output to contain "Zurich"'}
    assert metadata["promptfoo"]["success"] is False


def _broken(edit: Any) -> dict[str, Any]:
    doc = json.loads(FIXTURE.read_text())
    edit(doc)
    return doc


BAD_INPUT = [
    ("missing_provider", lambda d: d["results"]["results"][3].pop("provider"), ":4:",
     "results.results[3].provider", "missing required field"),
    ("wrong_type_vars", lambda d: d["results"]["results"][0].update(vars=["q"]), ":1:", "results.results[0].vars",
     "expected an object, got a list"),
    ("results_not_a_list", lambda d: d["results"].update(results={}), ":", "results.results",
     "expected a list, got an object"),
    ("grade_without_pass", lambda d: d["results"]["results"][1]["gradingResult"]["componentResults"][0].pop("pass"),
     ":2:", "results.results[1].gradingResult.componentResults[0].pass", "expected true or false"),
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


def test_format_named_for_another_shape_is_refused(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    inspect_log = FIXTURE.with_name("inspect_log.json")
    result = cli("ingest", str(inspect_log), "--format", "promptfoo", db=db)
    assert_one_error(result, str(inspect_log), "--format promptfoo was given but this is a inspect file")
    assert not db.exists()
