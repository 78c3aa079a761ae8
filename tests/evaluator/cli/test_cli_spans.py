"""evaluator import-spans and agreement --spans: people's marks in, a flag scored against them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RUN = [
    {"question_id": "q1", "question": "How much is the Pro plan?", "provider": "bot-a",
     "answer": "The Pro plan costs $45/month and includes 10 GB."},
    {"question_id": "q1", "question": "How much is the Pro plan?", "provider": "bot-b",
     "answer": "The Pro plan costs $12/month and includes 10 GB."},
    {"question_id": "q2", "question": "Who founded the company?", "provider": "bot-a",
     "answer": "It was founded in Oslo by two engineers."},
]
CONTEXT = {"q1": "The Pro plan costs $12/month and includes 10 GB of storage.",
           "q2": "The company was founded by two engineers."}
# ana: one line per response (the documented shape); ben: the public *_spans.jsonl shape
SPANS = [
    {"question_id": "q1", "provider": "bot-a", "annotator": "ana",
     "spans": [{"start": 19, "end": 28, "text": "$45/month", "label": "unsupported"}]},
    {"question_id": "q1", "provider": "bot-b", "annotator": "ana", "spans": []},
    {"question_id": "q2", "provider": "bot-a", "annotator": "ana",
     "spans": [{"start": 18, "end": 22, "text": "Oslo", "label": "unsupported"}]},
    {"id": "q1", "provider": "bot-a", "spans": [{"start": 19, "end": 22}],
     "annotators": {"ben": [{"start": 19, "end": 22, "text": "$45", "label": "Unwanted.Intrinsic"}]}},
    {"id": "q2", "provider": "bot-a", "spans": [], "annotators": {"ben": []}},
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def evaluated(cli, db_path: Path, tmp_path: Path) -> Path:
    rows = [{**r, "retrieved": [{"id": f"kb-{r['question_id']}", "text": CONTEXT[r["question_id"]], "score": 0.9}]}
            for r in RUN]
    cli("ingest", str(_jsonl(tmp_path / "run.jsonl", rows)), "--name", "sp", "--profile", "clearpath",
        db=db_path, check=True)
    cli("recompute", "--run", "sp", "--ruleset", "t3_aware", db=db_path, check=True)
    return db_path


def test_import_spans_reads_both_shapes_and_says_what_it_took(cli, evaluated, tmp_path):
    done = cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "spans.jsonl", SPANS)), db=evaluated, check=True)
    assert done.stdout.strip() == "3 span(s) of 2 annotator(s) on 3 response(s) -> run 'sp'"


def test_agreement_scores_the_flag_against_the_marked_characters(cli, evaluated, tmp_path):
    cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "spans.jsonl", SPANS)), db=evaluated, check=True)
    out = json.loads(cli("agreement", "--run", "sp", "--spans", "--flag", "potential_hallucination", "--json",
                         db=evaluated, check=True).stdout)
    overall = out["overall"]
    # flagged: $45/month on q1/bot-a (9 characters, all marked); missed: Oslo (4); q1/bot-b clean and unflagged
    assert {k: overall[k] for k in ("responses", "human_positive", "flagged", "tp", "fp", "fn", "tn")} == {
        "responses": 3, "human_positive": 2, "flagged": 1, "tp": 1, "fp": 0, "fn": 1, "tn": 1}
    assert (overall["precision"], overall["recall"], overall["balanced_accuracy"]) == (1.0, 0.5, 0.75)
    assert (overall["char_precision"], overall["char_recall"]) == (1.0, 9 / 13)
    assert overall["char_f1"] == pytest.approx(18 / 22)
    by_provider = {p["provider"]: p for p in out["providers"]}
    assert by_provider["bot-a"]["balanced_accuracy"] is None  # no unmarked response of bot-a to score
    assert by_provider["bot-b"]["tn"] == 1
    # ana marked $45/month and Oslo, ben $45 and nothing on q2: 3 shared characters of 3 + 13
    assert out["annotators"] == [{"annotator_a": "ana", "annotator_b": "ben", "responses": 2,
                                  "char_f1": pytest.approx(6 / 16)}]


def test_agreement_table_names_each_provider_and_the_whole(cli, evaluated, tmp_path):
    cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "spans.jsonl", SPANS)), db=evaluated, check=True)
    text = cli("agreement", "--run", "sp", "--spans", "--flag", "potential_hallucination", db=evaluated,
               check=True).stdout
    lines = text.splitlines()
    assert lines[1].split()[:4] == ["provider", "responses", "human_positive", "flagged"]
    assert [line.split()[0] for line in lines[2:5]] == ["bot-a", "bot-b", "(all)"]
    assert "Annotators' pairwise character F1" in text


def test_spans_without_a_flag_name_the_flags_to_choose_from(cli, evaluated):
    done = cli("agreement", "--run", "sp", "--spans", db=evaluated)
    assert done.returncode == 2
    assert "--spans needs --flag" in done.stderr and "potential_hallucination" in done.stderr


def test_a_span_beyond_the_answer_is_refused_naming_line_and_field_and_nothing_is_written(cli, evaluated, tmp_path):
    bad = [SPANS[0], {"question_id": "q2", "provider": "bot-a", "annotator": "ana",
                      "spans": [{"start": 30, "end": 90, "label": "unsupported"}]}]
    path = _jsonl(tmp_path / "spans.jsonl", bad)
    done = cli("import-spans", "--run", "sp", str(path), db=evaluated)
    assert done.returncode == 2
    assert f"{path}:2: field 'spans[0]': [30, 90) is not a span of the answer (40 characters" in done.stderr
    out = json.loads(cli("agreement", "--run", "sp", "--spans", "--flag", "potential_hallucination", "--json",
                         db=evaluated, check=True).stdout)
    assert out["overall"]["responses"] == 0  # the good first line was not kept either


def test_a_span_whose_text_differs_from_the_answer_is_refused(cli, evaluated, tmp_path):
    bad = [{"question_id": "q2", "provider": "bot-a", "annotator": "ana",
            "spans": [{"start": 18, "end": 22, "text": "Rome", "label": "unsupported"}]}]
    done = cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "s.jsonl", bad)), db=evaluated)
    assert done.returncode == 2
    assert "field 'spans[0].text': the answer holds 'Oslo' at [18, 22), not 'Rome'" in done.stderr


def test_a_line_for_a_response_the_run_lacks_is_refused(cli, evaluated, tmp_path):
    bad = [{"question_id": "q9", "provider": "bot-a", "annotator": "ana", "spans": []}]
    done = cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "s.jsonl", bad)), db=evaluated)
    assert done.returncode == 2
    assert ":1: field 'question_id': the run has no response to 'q9' by 'bot-a'" in done.stderr


def test_a_blank_annotator_name_is_refused_naming_the_field(cli, evaluated, tmp_path):
    bad = [{"id": "q1", "provider": "bot-a", "annotators": {" ": [{"start": 19, "end": 22}]}}]
    done = cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "s.jsonl", bad)), db=evaluated)
    assert done.returncode == 2
    assert ":1: field 'annotators': an annotator's name must be a non-empty string" in done.stderr


def test_a_bad_span_under_an_annotator_is_named_there(cli, evaluated, tmp_path):
    bad = [{"id": "q1", "provider": "bot-a", "annotators": {"ben": [{"start": 40, "end": 99}]}}]
    done = cli("import-spans", "--run", "sp", str(_jsonl(tmp_path / "s.jsonl", bad)), db=evaluated)
    assert done.returncode == 2 and ":1: field 'annotators.ben[0]': [40, 99) is not a span" in done.stderr


def test_a_reviewers_span_marks_follow_a_replaced_run_and_go_with_a_deleted_one(cli, evaluated, tmp_path):
    from evaluator.review.span_labels import add_span_label
    from evaluator.store.db import connect

    with connect(evaluated) as con:
        rid = con.execute("SELECT response_id FROM responses WHERE question_id = 'q2'").fetchone()[0]
        add_span_label(con, rid, "ana", 18, 22, "unsupported")
    rows = [{**r, "retrieved": [{"id": f"kb-{r['question_id']}", "text": CONTEXT[r["question_id"]], "score": 0.9}]}
            for r in RUN]
    rows[0]["answer"] += " Changed."  # q1/bot-a changes; q2/bot-a, which holds the mark, does not
    cli("ingest", str(_jsonl(tmp_path / "run2.jsonl", rows)), "--name", "sp", "--profile", "clearpath",
        "--replace", db=evaluated, check=True)
    with connect(evaluated) as con:
        [(question, text)] = con.execute(
            """SELECT r.question_id, substr(r.answer, s.span_start + 1, s.span_end - s.span_start)
               FROM span_labels s JOIN responses r USING (response_id)""").fetchall()
        assert (question, text) == ("q2", "Oslo")
        assert con.execute("SELECT count(*) FROM span_labels WHERE response_id NOT IN "
                           "(SELECT response_id FROM responses)").fetchone()[0] == 0
