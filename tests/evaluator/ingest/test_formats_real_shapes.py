"""Peers' files in the shapes the tools really write, read into a real store (in this process:
prepare_run + store_run into a DuckDB file in a temp dir).

The fixtures in tests/fixtures/formats/ are invented content in each tool's real shape:
- inspectorraget_messages.json: schema 2, outputs as chat-message lists, `answerability` filter,
  a human categorical metric (values with display values) plus its `_reason` text metric, an
  algorithmic metric scored by "system";
- promptfoo_v3_http.json: results v3 without the top-level `metadata` block, an HTTP provider
  whose output is a JSON object and an OpenAI provider, one prompt text numbered 0 and 1 per
  provider, component results without their `assertion` (aligned with `testCase.assert`);
- promptfoo_current.json: a 0.121-like file, two labelled prompts, labelled providers, each
  component result carrying its `assertion`, every row failing;
- the Inspect `.eval` zip, built here from the dicts of `eval_parts()` (header.json,
  samples/<id>_epoch_1.json, summaries.json, _journal/start.json);
- ragas_01.csv (pandas' to_csv with the index, contexts as Python reprs, NaN as empty cells) and
  ragas_04.csv (0.2+ column names, no index);
- deepeval_test_run.json: `.deepeval/.latest_test_run.json`'s shape;
- phoenix_llm_spans.jsonl / phoenix_retriever_spans.jsonl: get_spans_dataframe() written as JSON
  lines (flattened attribute keys; LlamaIndex's acomplete > complete LLM span pairs).
"""

from __future__ import annotations

import copy
import datetime
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evaluator.ingest.formats.detect import file_format
from evaluator.ingest.loader import prepare_run, store_run
from evaluator.ingest.readers import InputError
from tests.evaluator.ingest.test_ingest import query, recorded_verdicts, value

FORMATS = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
IRAGET = FORMATS / "inspectorraget_messages.json"
PF_HTTP = FORMATS / "promptfoo_v3_http.json"
PF_CURRENT = FORMATS / "promptfoo_current.json"
RAGAS_01 = FORMATS / "ragas_01.csv"
RAGAS_04 = FORMATS / "ragas_04.csv"
DEEPEVAL = FORMATS / "deepeval_test_run.json"
PHOENIX_LLM = FORMATS / "phoenix_llm_spans.jsonl"
PHOENIX_RETRIEVER = FORMATS / "phoenix_retriever_spans.jsonl"

HTTP = "https://bot.example/query"
OPENAI = "openai:chat:gpt-4o-mini"


# ------------------------------------------------------------------ Inspect .eval, built from its parts

def eval_parts() -> dict[str, Any]:
    """The members of an Inspect `.eval` log (log format version 2) of two yes/no samples of
    openai/gpt-5: sample 1 answered "No" (target "Yes", scored I), sample 2 "Yes" (scored C).
    Each assistant message holds a reasoning part before its text part, as reasoning models'
    replies do."""
    spec = {"eval_id": "kT3sQ9vW", "run_id": "Rr2wX7", "created": "2025-09-01T12:00:00+00:00",
            "task": "ferry_yes_no", "task_id": "ferry_yes_no@1", "task_version": 0, "task_file": "ferry.py",
            "task_args": {}, "dataset": {"name": "ferry", "samples": 2, "sample_ids": [1, 2], "shuffled": False},
            "model": "openai/gpt-5", "model_args": {}, "config": {}, "packages": {"inspect_ai": "0.3.130"}}

    def sample(sample_id: int, question: str, answer: str, reasoning: str, score: str) -> dict[str, Any]:
        content = [{"type": "reasoning", "reasoning": reasoning, "signature": "x", "redacted": False},
                   {"type": "text", "text": answer}]
        return {
            "id": sample_id, "epoch": 1, "input": question, "target": "Yes",
            "messages": [{"id": f"m{sample_id}a", "role": "user", "content": question, "source": "input"},
                         {"id": f"m{sample_id}b", "role": "assistant", "content": content, "source": "generate",
                          "model": "gpt-5-2025-08-07"}],
            "output": {"model": "gpt-5-2025-08-07",
                       "choices": [{"message": {"role": "assistant", "content": copy.deepcopy(content),
                                                "source": "generate"}, "stop_reason": "stop"}],
                       "completion": answer,
                       "usage": {"input_tokens": 40, "output_tokens": 90, "total_tokens": 130}},
            "scores": {"match": {"value": score, "answer": answer, "explanation": answer}},
            "metadata": {}, "store": {}, "events": [], "model_usage": {}, "uuid": f"uuid-{sample_id}",
        }

    first = sample(1, "Does the Port Alder ferry run on public holidays? Answer Yes or No.", "No", "", "I")
    second = sample(2, "Can bicycles be taken on the Port Alder ferry? Answer Yes or No.", "Yes",
                    "The fares list a charge for bicycles, so they are carried.", "C")
    plan = {"name": "plan", "steps": [{"solver": "generate", "params": {}}], "config": {}}
    header = {
        "version": 2, "status": "success", "eval": spec, "plan": plan,
        "results": {"total_samples": 2, "completed_samples": 2,
                    "scores": [{"name": "match", "scorer": "match", "scored_samples": 2, "unscored_samples": 0,
                                "params": {}, "metrics": {"accuracy": {"name": "accuracy", "value": 0.5,
                                                                       "params": {}}}}]},
        "stats": {"started_at": "2025-09-01T12:00:00+00:00", "completed_at": "2025-09-01T12:00:09+00:00",
                  "model_usage": {"openai/gpt-5": {"input_tokens": 80, "output_tokens": 180,
                                                   "total_tokens": 260}}},
    }
    summaries = [{"id": s["id"], "epoch": 1, "input": s["input"], "target": s["target"], "scores": s["scores"],
                  "metadata": {}, "completed": True} for s in (first, second)]
    return {"_journal/start.json": {"version": 2, "eval": spec, "plan": plan},
            "samples/1_epoch_1.json": first, "samples/2_epoch_1.json": second,
            "summaries.json": summaries, "header.json": header}


def write_eval(path: Path, parts: dict[str, Any] | None = None, *,
               compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """An `.eval` zip at `path` of `parts` (default: eval_parts()); bytes values are written as they are."""
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, part in (eval_parts() if parts is None else parts).items():
            archive.writestr(name, part if isinstance(part, bytes) else json.dumps(part))
    return path


# ------------------------------------------------------------------ stores

def stored(db: Path, path: Path, **prepare: Any) -> Path:
    """`path` ingested into the store `db` (created when needed), as `evaluator ingest` does."""
    with prepare_run(path, **prepare) as run:
        store_run(db, run)
    return db


def new_store(factory: pytest.TempPathFactory, path: Path, **prepare: Any) -> Path:
    return stored(factory.mktemp(path.stem) / "store.duckdb", path, **prepare)


def metadata_of(db: Path, question_id: str, provider: str | None = None) -> dict[str, Any]:
    sql = "SELECT metadata FROM responses WHERE question_id = ?" + (" AND provider = ?" if provider else "")
    return json.loads(value(db, sql, [question_id, provider] if provider else [question_id]))


def retrieved_texts(db: Path, question_id: str) -> list[str]:
    rows = query(db, """SELECT c.text FROM retrieved rt JOIN chunks c USING (chunk_key)
                        JOIN responses r USING (response_id) WHERE r.question_id = ? ORDER BY rt.rank""",
                 [question_id])
    return [row[0] for row in rows]


def overall_verdicts(db: Path) -> list[str]:
    rows = query(db, """SELECT rr.overall FROM response_results rr JOIN evaluations e USING (evaluation_id)
                        WHERE e.ruleset = 'recorded' ORDER BY rr.response_id""")
    return [row[0] for row in rows]


# ------------------------------------------------------------------ InspectorRAGet, chat-message outputs

@pytest.fixture(scope="module")
def iraget(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, IRAGET)


def test_inspectorraget_is_told_from_the_content(iraget: Path) -> None:
    assert value(iraget, "SELECT source_format FROM runs") == "inspectorraget"


def test_inspectorraget_message_list_outputs_become_the_assistant_text(iraget: Path) -> None:
    doc = json.loads(IRAGET.read_text())
    expected = {(r["task_id"], r["model_id"]): r["output"][-1]["content"] for r in doc["results"]}
    rows = query(iraget, "SELECT question_id, provider, answer FROM responses")
    assert {(q, p): answer for q, p, answer in rows} == expected
    assert not any(answer.lstrip().startswith(("[", "{")) for _, _, answer in rows)


def test_inspectorraget_the_question_is_the_last_user_turn(iraget: Path) -> None:
    assert value(iraget, "SELECT question FROM questions WHERE question_id = 'harbour-q2'") == (
        "Can I bring my dog on board?")


def test_inspectorraget_answerability_is_read(iraget: Path) -> None:
    rows = query(iraget, "SELECT DISTINCT question_id, answerable FROM responses ORDER BY 1")
    assert rows == [("harbour-q1", True), ("harbour-q2", False), ("harbour-q3", True)]


def test_inspectorraget_contexts_are_retrieved_by_document(iraget: Path) -> None:
    rows = query(iraget, """SELECT DISTINCT r.question_id, c.chunk_id FROM retrieved rt JOIN chunks c USING (chunk_key)
                            JOIN responses r USING (response_id) ORDER BY 1""")
    assert rows == [("harbour-q1", "harbour-timetable-3"), ("harbour-q2", "harbour-fares-1"),
                    ("harbour-q3", "harbour-history-7")]


def test_inspectorraget_human_ratings_are_annotations_one_per_rating_given(iraget: Path) -> None:
    # 6 results x 2 annotators, less the one rating ann-omar left empty (harbour-q3, granite-8b)
    assert value(iraget, "SELECT count(*) FROM annotations WHERE source = 'imported'") == 11
    rows = query(iraget, """SELECT a.annotator FROM annotations a JOIN responses r USING (response_id)
                            WHERE r.question_id = 'harbour-q3' AND r.provider = 'granite-8b'""")
    assert rows == [("ann-ruth",)]


def test_inspectorraget_the_human_metric_is_a_label_with_the_files_values(iraget: Path) -> None:
    rows = query(iraget, "SELECT label, scale, scale_values, description FROM labels")
    assert [(label, scale, json.loads(values), description) for label, scale, values, description in rows] == [
        ("appropriateness", "ordinal", ["1", "2", "3", "4"],
         "The response answers the question as the passages allow.")]


def test_inspectorraget_a_rating_keeps_its_value_reason_and_time(iraget: Path) -> None:
    rows = query(iraget, """SELECT a.annotator, a.label, a.value, a.value_num, a.reason, a.created_at
                            FROM annotations a JOIN responses r USING (response_id)
                            WHERE r.question_id = 'harbour-q1' AND r.provider = 'mixtral-8x7b' ORDER BY 1""")
    moment = datetime.datetime(2024, 3, 4, 10, 12, 27)  # 1709547087 + 60 s, UTC
    assert rows == [("ann-omar", "appropriateness", "2", 2.0, "Wrong day.", moment),
                    ("ann-ruth", "appropriateness", "1", 1.0, "Gives the weekday time.", moment)]


def test_inspectorraget_an_empty_reason_is_no_reason(iraget: Path) -> None:
    reason = value(iraget, """SELECT a.reason FROM annotations a JOIN responses r USING (response_id)
                              WHERE r.question_id = 'harbour-q1' AND r.provider = 'granite-8b'
                                AND a.annotator = 'ann-omar'""")
    assert reason is None


def test_inspectorraget_the_algorithmic_metric_scored_by_system_stays_in_metadata(iraget: Path) -> None:
    assert metadata_of(iraget, "harbour-q2", "mixtral-8x7b") == {"metrics": {"rouge_l": 0.08}}


# ------------------------------------------------------------------ promptfoo v3 without metadata, HTTP provider

@pytest.fixture(scope="module")
def pf_http(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, PF_HTTP, name="pf")


def test_promptfoo_v3_without_metadata_is_told_from_the_content(pf_http: Path) -> None:
    assert value(pf_http, "SELECT source_format FROM runs") == "promptfoo"


def test_promptfoo_http_answer_is_the_answer_fields_text(pf_http: Path) -> None:
    rows = query(pf_http, "SELECT question_id, answer FROM responses WHERE provider = ? ORDER BY 1", [HTTP])
    assert rows == [("test-0", "Call 110 to reach the police in Germany."),
                    ("test-1", "The fire brigade answers on 112."),
                    ("test-2", "Yes, calls to the non-emergency line are free.")]


def test_promptfoo_http_output_keeps_the_rest_in_metadata(pf_http: Path) -> None:
    kept = metadata_of(pf_http, "test-0", HTTP)["promptfoo"]["output"]
    assert kept == {"links": ["https://help.example/police"], "metadata": {"retrieval_ms": 41, "index": "help-v2"}}


def test_promptfoo_a_string_output_is_the_answer_as_it_is(pf_http: Path) -> None:
    assert value(pf_http, "SELECT answer FROM responses WHERE question_id = 'test-1' AND provider = ?",
                 [OPENAI]) == "You can reach the fire brigade on 110."
    assert "output" not in metadata_of(pf_http, "test-1", OPENAI)["promptfoo"]


def test_promptfoo_two_providers_of_one_prompt_text_are_two_providers(pf_http: Path) -> None:
    # promptIdx is 0 for one provider and 1 for the other, but it is one prompt: no label added
    rows = query(pf_http, "SELECT provider, model, count(*) FROM responses GROUP BY ALL ORDER BY 1")
    assert rows == [(HTTP, HTTP, 3), (OPENAI, OPENAI, 3)]


def test_promptfoo_recorded_overall_counts_equal_the_files_stats(pf_http: Path) -> None:
    stats = json.loads(PF_HTTP.read_text())["results"]["stats"]
    verdicts = overall_verdicts(pf_http)
    assert (verdicts.count("PASS"), verdicts.count("FAIL")) == (stats["successes"], stats["failures"])


def test_promptfoo_overall_is_the_rows_success(pf_http: Path) -> None:
    rows = query(pf_http, """SELECT x.question_id, x.provider, rr.overall FROM response_results rr
                             JOIN responses x USING (response_id) ORDER BY 1, 2""")
    assert rows == [("test-0", HTTP, "PASS"), ("test-0", OPENAI, "PASS"), ("test-1", HTTP, "PASS"),
                    ("test-1", OPENAI, "FAIL"), ("test-2", HTTP, "PASS"), ("test-2", OPENAI, "FAIL")]


def test_promptfoo_components_without_assertion_take_the_tests_asserts(pf_http: Path) -> None:
    verdicts = recorded_verdicts(pf_http, "pf")
    assert {check: verdict for (q, p, check), verdict in verdicts.items()
            if q == "test-1" and p == OPENAI and check.startswith("promptfoo:")} == {
        "promptfoo:contains": "FAIL", "promptfoo:javascript": "PASS"}
    assert verdicts[("test-2", OPENAI, "promptfoo:icontains")] == "FAIL"


def test_promptfoo_grades_in_metadata_name_their_assertion_type(pf_http: Path) -> None:
    grades = metadata_of(pf_http, "test-1", OPENAI)["promptfoo"]["grades"]
    assert [(grade["type"], grade["pass"]) for grade in grades] == [("contains", False), ("javascript", True)]


def test_promptfoo_without_context_vars_records_no_retrieval(pf_http: Path) -> None:
    assert query(pf_http, "SELECT DISTINCT retrieval_recorded FROM responses") == [(False,)]
    assert value(pf_http, "SELECT count(*) FROM retrieved") == 0


# ------------------------------------------------------------------ promptfoo 0.121-like

@pytest.fixture(scope="module")
def pf_current(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, PF_CURRENT, name="pfc")


def test_promptfoo_current_providers_are_labels_with_their_prompt_label(pf_current: Path) -> None:
    rows = query(pf_current, "SELECT provider, model, count(*) FROM responses GROUP BY ALL ORDER BY 1")
    assert rows == [("haiku [friendly]", "anthropic:messages:claude-3-5-haiku-latest", 2),
                    ("haiku [terse]", "anthropic:messages:claude-3-5-haiku-latest", 2),
                    ("mini [friendly]", "openai:chat:gpt-4.1-mini", 2),
                    ("mini [terse]", "openai:chat:gpt-4.1-mini", 2)]


def test_promptfoo_current_every_failing_row_is_a_recorded_fail(pf_current: Path) -> None:
    stats = json.loads(PF_CURRENT.read_text())["results"]["stats"]
    verdicts = overall_verdicts(pf_current)
    assert (verdicts.count("PASS"), verdicts.count("FAIL")) == (stats["successes"], stats["failures"]) == (0, 8)


def test_promptfoo_current_grades_come_from_the_components_assertion(pf_current: Path) -> None:
    verdicts = recorded_verdicts(pf_current, "pfc")
    regex = {(q, p): v for (q, p, check), v in verdicts.items() if check == "promptfoo:regex"}
    rubric = {(q, p): v for (q, p, check), v in verdicts.items() if check == "promptfoo:llm-rubric"}
    assert len(regex) == len(rubric) == 8
    assert set(regex.values()) == {"FAIL"}
    assert {q: v for (q, _), v in rubric.items()} == {"test-0": "FAIL", "test-1": "PASS"}


# ------------------------------------------------------------------ Inspect .eval

@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval(tmp_path_factory.mktemp("eval") / "ferry.eval")


@pytest.fixture(scope="module")
def inspect_store(tmp_path_factory: pytest.TempPathFactory, eval_log: Path) -> Path:
    return new_store(tmp_path_factory, eval_log, name="insp")


def test_inspect_eval_is_told_from_the_content(inspect_store: Path) -> None:
    assert value(inspect_store, "SELECT source_format FROM runs") == "inspect"


def test_an_eval_zip_with_an_unknown_extension_is_told_as_inspect(eval_log: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "log.bin"
    renamed.write_bytes(eval_log.read_bytes())
    assert file_format(renamed, None) == "inspect"


def test_inspect_samples_are_responses_of_the_eval_model(inspect_store: Path) -> None:
    rows = query(inspect_store, """SELECT r.question_id, r.provider, r.model, q.question FROM responses r
                                   JOIN questions q USING (run_id, question_id) ORDER BY 1""")
    model = ("openai/gpt-5", "gpt-5-2025-08-07")
    assert rows == [
        ("1", *model, "Does the Port Alder ferry run on public holidays? Answer Yes or No."),
        ("2", *model, "Can bicycles be taken on the Port Alder ferry? Answer Yes or No."),
    ]


def test_inspect_answer_is_the_text_part_only(inspect_store: Path) -> None:
    assert query(inspect_store, "SELECT question_id, answer FROM responses ORDER BY 1") == [("1", "No"), ("2", "Yes")]


def test_inspect_answer_read_from_the_choice_leaves_the_reasoning_out(tmp_path: Path) -> None:
    parts = eval_parts()
    for name in ("samples/1_epoch_1.json", "samples/2_epoch_1.json"):
        del parts[name]["output"]["completion"]  # the answer then comes from the first choice's content
    db = stored(tmp_path / "store.duckdb", write_eval(tmp_path / "no_completion.eval", parts))
    assert query(db, "SELECT question_id, answer FROM responses ORDER BY 1") == [("1", "No"), ("2", "Yes")]


def test_inspect_score_i_is_a_fail_of_answers_question_and_of_inspect_match(inspect_store: Path) -> None:
    verdicts = recorded_verdicts(inspect_store, "insp")
    assert verdicts[("1", "openai/gpt-5", "answers_question")] == "FAIL"
    assert verdicts[("1", "openai/gpt-5", "inspect:match")] == "FAIL"


def test_inspect_score_c_is_a_pass(inspect_store: Path) -> None:
    verdicts = recorded_verdicts(inspect_store, "insp")
    assert (verdicts[("2", "openai/gpt-5", "answers_question")], verdicts[("2", "openai/gpt-5", "inspect:match")]) == (
        "PASS", "PASS")


def test_inspect_target_is_the_gold_answer(inspect_store: Path) -> None:
    gold = value(inspect_store, "SELECT gold_answers FROM questions WHERE question_id = '1'")
    assert json.loads(gold) == [{"aliases": ["Yes"], "supported": None}]


# ------------------------------------------------------------------ Ragas

@pytest.fixture(scope="module")
def ragas_01(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, RAGAS_01)


@pytest.fixture(scope="module")
def ragas_04(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, RAGAS_04)


def _question_id(db: Path, question: str) -> str:
    return str(value(db, "SELECT question_id FROM questions WHERE question = ?", [question]))


def test_ragas_both_column_namings_are_told_from_the_header(ragas_01: Path, ragas_04: Path) -> None:
    assert (value(ragas_01, "SELECT source_format FROM runs"), value(ragas_04, "SELECT source_format FROM runs")) == (
        "ragas", "ragas")


def test_ragas_01_columns_are_question_answer_and_ground_truth(ragas_01: Path) -> None:
    rows = query(ragas_01, """SELECT q.question, r.answer, q.gold_answers FROM responses r
                              JOIN questions q USING (run_id, question_id) ORDER BY r.source_line""")
    assert [(q, a, json.loads(g)) for q, a, g in rows][0] == (
        "How long is the warranty on the Kettle K2?", "The K2 has a two-year warranty.",
        [{"aliases": ["Two years from purchase."], "supported": None}])
    assert len(rows) == 3


def test_ragas_04_columns_are_user_input_response_and_reference(ragas_04: Path) -> None:
    rows = query(ragas_04, """SELECT q.question, r.answer, q.gold_answers FROM responses r
                              JOIN questions q USING (run_id, question_id) ORDER BY r.source_line""")
    assert [(q, a, json.loads(g)) for q, a, g in rows] == [
        ("Which platform does the 8:12 to Linden leave from?", "It leaves from platform 4.",
         [{"aliases": ["Platform 4"], "supported": None}]),
        ("Is there step-free access at Linden?", "Yes, there are lifts to both platforms.",
         [{"aliases": ["Yes, lifts serve both platforms."], "supported": None}]),
    ]


def test_ragas_repr_contexts_become_retrieved_items(ragas_01: Path) -> None:
    # pandas writes a list cell as its Python repr: single quotes, and double quotes around an item
    # holding an apostrophe; json.loads fails on both
    question_id = _question_id(ragas_01, "Can I return an opened kettle?")
    assert retrieved_texts(ragas_01, question_id) == [
        "Opened items may be returned within 30 days if they are undamaged.",
        "It's the buyer's duty to return the item in its original packaging.",
        "Refunds are paid to the original card.",
    ]


def test_ragas_repr_contexts_count_per_response(ragas_01: Path) -> None:
    rows = query(ragas_01, """SELECT r.source_line, count(rt.rank) FROM responses r
                              LEFT JOIN retrieved rt USING (response_id) GROUP BY ALL ORDER BY 1""")
    assert rows == [(2, 2), (3, 3), (4, 1)]


def test_ragas_04_repr_contexts_become_retrieved_items(ragas_04: Path) -> None:
    question_id = _question_id(ragas_04, "Which platform does the 8:12 to Linden leave from?")
    assert retrieved_texts(ragas_04, question_id) == ["The 8:12 service to Linden departs from platform 4.",
                                                      "Platform 4 is reached by the east footbridge."]


def test_ragas_01_metrics_are_in_metadata_with_empty_cells_as_null(ragas_01: Path) -> None:
    question_id = _question_id(ragas_01, "Can I return an opened kettle?")
    assert metadata_of(ragas_01, question_id) == {"metrics": {
        "faithfulness": None, "answer_relevancy": 0.9512, "context_precision": 0.5, "context_recall": 0.6667,
        "harmfulness": 0.0}}


def test_ragas_01_the_pandas_index_is_not_kept(ragas_01: Path) -> None:
    rows = query(ragas_01, "SELECT metadata FROM responses")
    assert all(set(json.loads(row[0])) == {"metrics"} for row in rows)


def test_ragas_04_metrics_are_in_metadata_with_empty_cells_as_null(ragas_04: Path) -> None:
    # The first row's factual_correctness cell is empty (NaN): the column is still a metric.
    first = _question_id(ragas_04, "Which platform does the 8:12 to Linden leave from?")
    second = _question_id(ragas_04, "Is there step-free access at Linden?")
    assert metadata_of(ragas_04, first) == {"metrics": {"faithfulness": 1.0, "factual_correctness(mode=f1)": None}}
    assert metadata_of(ragas_04, second) == {"metrics": {"faithfulness": None, "factual_correctness(mode=f1)": 0.67}}


def test_ragas_a_reference_empty_on_the_first_row_is_still_the_later_rows_gold(tmp_path: Path) -> None:
    path = tmp_path / "no_first_reference.csv"
    path.write_text("user_input,retrieved_contexts,response,reference,faithfulness\n"
                    "Which gate for the 9:05?,['Gate 3 serves the 9:05.'],Gate 3.,,1.0\n"
                    "Is there a lounge?,['The lounge is past gate 5.'],Past gate 5.,Yes; past gate 5.,0.5\n")
    db = stored(tmp_path / "store.duckdb", path)
    gold = value(db, "SELECT gold_answers FROM questions WHERE question = 'Is there a lounge?'")
    assert gold is not None and json.loads(gold) == [{"aliases": ["Yes; past gate 5."], "supported": None}]


def test_ragas_provider_is_the_run_name_by_default(ragas_04: Path) -> None:
    assert query(ragas_04, "SELECT DISTINCT provider FROM responses") == [("ragas_04",)]


def test_ragas_provider_option_names_the_provider(tmp_path: Path) -> None:
    db = stored(tmp_path / "store.duckdb", RAGAS_01, provider="kettle-bot-v2")
    assert query(db, "SELECT DISTINCT provider FROM responses") == [("kettle-bot-v2",)]


def test_ragas_records_no_verdicts(ragas_01: Path) -> None:
    assert value(ragas_01, "SELECT count(*) FROM evaluations WHERE ruleset = 'recorded'") == 0


# ------------------------------------------------------------------ DeepEval

@pytest.fixture(scope="module")
def deepeval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, DEEPEVAL, name="de")


def test_deepeval_is_told_from_the_content(deepeval: Path) -> None:
    assert value(deepeval, "SELECT source_format FROM runs") == "deepeval"


def test_deepeval_recorded_overall_equals_tests_passed_and_failed(deepeval: Path) -> None:
    data = json.loads(DEEPEVAL.read_text())["testRunData"]
    verdicts = overall_verdicts(deepeval)
    assert (verdicts.count("PASS"), verdicts.count("FAIL")) == (data["testPassed"], data["testFailed"])


def test_deepeval_each_metrics_success_is_a_check_of_its_own(deepeval: Path) -> None:
    verdicts = recorded_verdicts(deepeval, "de")
    assert {(q, check): v for (q, _, check), v in verdicts.items() if check.startswith("deepeval:")} == {
        ("test_case_0", "deepeval:Faithfulness"): "PASS",
        ("test_case_0", "deepeval:answer correctness [GEval]"): "PASS",
        ("test_case_1", "deepeval:Faithfulness"): "PASS",
        ("test_case_1", "deepeval:answer correctness [GEval]"): "FAIL",
    }


def test_deepeval_faithfulness_is_also_no_hallucination(deepeval: Path) -> None:
    verdicts = recorded_verdicts(deepeval, "de")
    assert verdicts[("test_case_1", "de", "no_hallucination")] == "PASS"


def test_deepeval_the_case_success_is_the_overall_verdict(deepeval: Path) -> None:
    rows = query(deepeval, "SELECT x.question_id, rr.overall FROM response_results rr JOIN responses x USING "
                           "(response_id) ORDER BY 1")
    assert rows == [("test_case_0", "PASS"), ("test_case_1", "FAIL")]


def test_deepeval_retrieval_is_the_retrieval_context(deepeval: Path) -> None:
    case = json.loads(DEEPEVAL.read_text())["testRunData"]["testCases"][1]
    assert retrieved_texts(deepeval, "test_case_1") == case["retrievalContext"]
    assert len(case["retrievalContext"]) == 3


def test_deepeval_question_answer_and_expected_output(deepeval: Path) -> None:
    rows = query(deepeval, """SELECT q.question, r.answer, q.gold_answers FROM responses r
                              JOIN questions q USING (run_id, question_id) WHERE r.question_id = 'test_case_1'""")
    assert [(q, a, json.loads(g)) for q, a, g in rows] == [(
        "Do groups need to book a guided tour?", "Guided tours start at 11:00 and need no booking.",
        [{"aliases": ["Yes, groups of more than ten must book in advance."], "supported": None}])]


def test_deepeval_provider_is_the_run_name(deepeval: Path) -> None:
    assert query(deepeval, "SELECT DISTINCT provider FROM responses") == [("de",)]


# ------------------------------------------------------------------ Phoenix

@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, PHOENIX_LLM, name="p", more_paths=[PHOENIX_RETRIEVER])


@pytest.fixture(scope="module")
def phoenix_llm_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_store(tmp_path_factory, PHOENIX_LLM)


def _traces(path: Path) -> list[str]:
    spans = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return list(dict.fromkeys(span["context.trace_id"] for span in spans))


def test_phoenix_one_response_per_outermost_llm_span(phoenix: Path) -> None:
    rows = query(phoenix, "SELECT question_id, provider, json_extract_string(metadata, '$.phoenix.name') "
                          "FROM responses ORDER BY source_line")
    assert rows == [(trace, "gpt-4o-mini", "OpenAI.acomplete") for trace in _traces(PHOENIX_LLM)]


def test_phoenix_answer_is_the_outputs_text(phoenix: Path) -> None:
    first = _traces(PHOENIX_LLM)[0]
    assert value(phoenix, "SELECT answer FROM responses WHERE question_id = ?", [first]) == (
        "It covers seven consecutive nights in partner huts.")


def test_phoenix_question_is_what_the_rag_prompt_asks(phoenix: Path) -> None:
    first = _traces(PHOENIX_LLM)[0]
    question = value(phoenix, "SELECT question FROM questions WHERE question_id = ?", [first])
    assert question == "How many nights does the Alpine pass cover?"


def test_phoenix_the_whole_prompt_is_kept_in_metadata(phoenix: Path) -> None:
    first = _traces(PHOENIX_LLM)[0]
    prompt = metadata_of(phoenix, first)["phoenix"]["prompt"]
    assert prompt.startswith("Context information is below.")
    assert prompt.rstrip().endswith("Query: How many nights does the Alpine pass cover?\nAnswer:")


def test_phoenix_a_prompt_that_asks_no_query_is_the_question_whole() -> None:
    from evaluator.ingest.formats.phoenix import asked

    assert asked("As a validation expert, assess the risks of this system.") is None
    assert asked("Use the context.\n\nctx\n\nQuestion: who wrote it?\nHelpful Answer:") == "who wrote it?"


def test_phoenix_a_response_gets_its_traces_documents(phoenix: Path) -> None:
    first, second, _ = _traces(PHOENIX_LLM)
    rows = query(phoenix, """SELECT r.question_id, rt.rank, c.chunk_id, c.text, rt.score FROM retrieved rt
                             JOIN chunks c USING (chunk_key) JOIN responses r USING (response_id)
                             ORDER BY r.source_line, rt.rank""")
    assert rows == [
        (first, 1, "hut-pass-2", "The Alpine pass covers seven consecutive nights in any partner hut.", 0.83),
        (first, 2, "hut-rules-1", "Huts open from mid-June to the end of September.", 0.41),
        (second, 1, "hut-dogs-4", "Dogs are welcome in the Edelweiss hut only, on a lead.", 0.77),
    ]


def test_phoenix_a_trace_whose_retriever_found_nothing_retrieved_nothing(phoenix: Path) -> None:
    third = _traces(PHOENIX_LLM)[2]
    assert value(phoenix, "SELECT retrieval_recorded FROM responses WHERE question_id = ?", [third]) is True
    assert retrieved_texts(phoenix, third) == []


def test_phoenix_llm_file_alone_records_no_retrieval(phoenix_llm_only: Path) -> None:
    assert query(phoenix_llm_only, "SELECT count(*), bool_or(retrieval_recorded) FROM responses") == [(3, False)]


def test_phoenix_retriever_file_alone_is_refused_naming_it() -> None:
    with pytest.raises(InputError) as caught:
        prepare_run(PHOENIX_RETRIEVER)
    assert caught.value.path == str(PHOENIX_RETRIEVER)
    assert "ingest the export of LLM spans too" in str(caught.value)


def test_phoenix_files_are_told_from_their_content() -> None:
    assert (file_format(PHOENIX_LLM, None), file_format(PHOENIX_RETRIEVER, None)) == ("phoenix", "phoenix")
