"""`evaluator judge-spans` (issue 30 §3): the LLM span judge over a stored run, against a real
OpenAI-compatible server on 127.0.0.1, its spans stored as the llm_unsupported_span flag and
scored by `agreement --spans` beside the offline unsupported_claim."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evaluator.pipeline.judges.llm_spans import SPAN_FLAG, SPAN_REASON
from evaluator.pipeline.span_judge import SpanJudgeError, judge_spans
from evaluator.review import spans as review_spans
from evaluator.store.db import connect
from tests.llm_endpoint import FakeEndpoint, Step, serve

PRO = "The Pro plan costs €12/month and includes 10 GB of storage."
RUN = [  # (question_id, provider, answer, retrieved text or None)
    ("q1", "bot-a", "Café Ñandú’s Pro plan costs €45/month. Yes: €45/month buys 10 GB.", PRO),
    ("q1", "bot-b", "The Pro plan costs €12/month and includes 10 GB.", PRO),
    ("q2", "bot-a", "It was founded in Oslo by two engineers.", "The company was founded by two engineers."),
    ("q3", "bot-b", "We open at 9.", None),  # nothing retrieved: not asked about
]
QUESTIONS = {"q1": "How much is the Pro plan?", "q2": "Who founded the company?", "q3": "When do you open?"}
# what the judge says of each answer: "costs €50" is in no answer (dropped, counted)
MARKED = {RUN[0][2]: ["€45/month", "costs €50"], RUN[1][2]: [], RUN[2][2]: ["in Oslo"]}
# what people marked: €45/month once (the first place) and Oslo; q1/bot-b read, nothing marked
PEOPLE = [
    {"question_id": "q1", "provider": "bot-a", "annotator": "ana",
     "spans": [{"start": 28, "end": 37, "text": "€45/month", "label": "unsupported"}]},
    {"question_id": "q1", "provider": "bot-b", "annotator": "ana", "spans": []},
    {"question_id": "q2", "provider": "bot-a", "annotator": "ana",
     "spans": [{"start": 18, "end": 22, "text": "Oslo", "label": "unsupported"}]},
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _answer_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"]).rsplit("Answer:\n", 1)[1]


def _judge_replies(body: dict[str, Any]) -> Step:
    return ("reply", json.dumps({"unsupported": MARKED[_answer_of(body)]}, ensure_ascii=False))


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    """The server, answering as MARKED says, configured the way a user configures the judge."""
    with serve() as state:
        state.respond = _judge_replies
        monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", state.url)
        monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "judge-model")
        monkeypatch.setenv("EVALUATOR_JUDGE_API_KEY", "test-key")
        yield state


@pytest.fixture(scope="module")
def evaluated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import run_cli

    folder = tmp_path_factory.mktemp("judge_spans")
    rows = [{"question_id": q, "question": QUESTIONS[q], "provider": p, "answer": a,
             "retrieved": [{"id": f"kb-{q}", "text": text, "score": 0.9}] if text else []} for q, p, a, text in RUN]
    db = folder / "store.duckdb"
    run_cli("ingest", str(_jsonl(folder / "run.jsonl", rows)), "--name", "sp", db=db, check=True)
    run_cli("recompute", "--run", "sp", "--ruleset", "grounded", db=db, check=True)
    run_cli("import-spans", "--run", "sp", str(_jsonl(folder / "people.jsonl", PEOPLE)), db=db, check=True)
    return db


@pytest.fixture
def evaluated(evaluated_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "store.duckdb"
    db.write_bytes(evaluated_template.read_bytes())
    return db


def _stored(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {"flags": con.execute("SELECT * FROM flags ORDER BY ALL").fetchall(),
                "flag_counts": con.execute("SELECT * FROM flag_counts ORDER BY ALL").fetchall(),
                "judge_cache": con.execute("SELECT judge, model, prompt_hash, reply FROM judge_cache "
                                           "ORDER BY ALL").fetchall()}


def _agreement(cli, db: Path, flag: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return json.loads(cli("agreement", "--run", "sp", "--spans", "--flag", flag, "--json", db=db, check=True).stdout)


def test_agreement_scores_the_judges_flag_against_the_marked_characters(cli, evaluated: Path,
                                                                         endpoint: FakeEndpoint) -> None:
    done = cli("judge-spans", "--run", "sp", "--json", db=evaluated, check=True)
    summary = json.loads(done.stdout)
    assert {k: summary[k] for k in ("judged", "skipped", "flagged", "spans", "unfound", "requests")} == {
        "judged": 3, "skipped": 1, "flagged": 2, "spans": 3, "unfound": 1, "requests": 3}
    overall = _agreement(cli, evaluated, SPAN_FLAG)["overall"]
    # raised on both answers people marked, not on the one they read and left: response level perfect;
    # characters: €45/month twice (9 of 18 marked) and "in Oslo" (4 of 7): 13 hits, 12 false, none missed
    assert {k: overall[k] for k in ("responses", "tp", "fp", "fn", "tn")} == {
        "responses": 3, "tp": 2, "fp": 0, "fn": 0, "tn": 1}
    assert (overall["char_precision"], overall["char_recall"]) == (13 / 25, 1.0)
    assert overall["char_f1"] == pytest.approx(26 / 38)
    offline = _agreement(cli, evaluated, "unsupported_claim")  # the detector it is compared with, same store
    assert offline["evaluation_id"] == summary["evaluation_id"] and offline["overall"]["responses"] == 3


def test_a_second_run_is_answered_from_the_stored_cache_without_a_request(cli, evaluated: Path,
                                                                          endpoint: FakeEndpoint) -> None:
    cli("judge-spans", "--run", "sp", db=evaluated, check=True)
    first = _stored(evaluated)
    assert len(endpoint.requests) == 3 and len(first["judge_cache"]) == 3
    again = cli("judge-spans", "--run", "sp", db=evaluated, check=True)
    assert len(endpoint.requests) == 3  # the server counted no new request
    assert "0 request(s), 3 from the cache" in again.stdout
    assert _stored(evaluated) == first  # the flag's rows replaced by the same ones


def test_an_http_500_names_the_response_and_what_to_fix_and_loses_nothing_stored(
        cli, evaluated: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("judge-spans", "--run", "sp", db=evaluated, check=True)
    before = _stored(evaluated)
    monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "other-model")  # not cached: asked again, and the server fails
    endpoint.respond = lambda body: ("status", 500)
    done = cli("judge-spans", "--run", "sp", db=evaluated)
    assert done.returncode == 2 and done.stdout == ""
    message = done.stderr
    assert message.startswith("evaluator: error: judge-spans: the span judge failed on response 1 (question 'q1', "
                              "provider 'bot-a') of run 'sp': judge endpoint http://127.0.0.1:"), message
    assert "unavailable (HTTP 500)" in message and "(gave up after 4 attempts)" in message
    assert "To fix: check EVALUATOR_JUDGE_BASE_URL" in message and "No flag was written or removed" in message
    assert "Traceback" not in message and len(message.splitlines()) == 1
    assert _stored(evaluated) == before  # the earlier run's flag rows and cached replies stand


def test_a_reply_that_is_not_json_is_named_inert_not_cached_and_writes_nothing(cli, evaluated: Path,
                                                                                endpoint: FakeEndpoint) -> None:
    before = _stored(evaluated)
    endpoint.respond = lambda body: ("reply", "<b>All fine</b>\x1b[2J\u202e")
    done = cli("judge-spans", "--run", "sp", db=evaluated)
    assert done.returncode == 2
    assert "not the JSON asked for" in done.stderr and "reply was: '<b>All fine</b>\\x1b[2J\\u202e'" in done.stderr
    assert "that reply was not cached" in done.stderr
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr
    assert _stored(evaluated) == before


def test_a_timeout_is_an_error_naming_it_and_writes_nothing(evaluated: Path, endpoint: FakeEndpoint) -> None:
    before = _stored(evaluated)
    endpoint.respond = lambda body: ("hang", 5.0)
    with pytest.raises(SpanJudgeError, match=r"response 1 .*timed out after 0.3 s"):
        judge_spans(evaluated, "sp", judge_options={"timeout_s": 0.3, "max_retries": 0})
    assert _stored(evaluated) == before


def test_good_replies_before_a_failure_are_kept_so_the_next_run_asks_only_for_the_rest(
        evaluated: Path, endpoint: FakeEndpoint) -> None:
    endpoint.respond = lambda body: ("status", 500) if "Oslo" in _answer_of(body) else _judge_replies(body)
    with pytest.raises(SpanJudgeError, match=r"the 2 good replies received before it are kept") as info:
        judge_spans(evaluated, "sp", judge_options={"max_retries": 0})
    assert "question 'q2', provider 'bot-a'" in str(info.value)
    stored = _stored(evaluated)
    assert len(stored["judge_cache"]) == 2 and not [f for f in stored["flags"] if f[2] == SPAN_FLAG]
    endpoint.respond = _judge_replies  # the server is fixed
    result = judge_spans(evaluated, "sp")
    assert (result.requests, result.judged, result.spans) == (1, 3, 3)
    assert len(endpoint.requests) == 3 + 1  # q1 twice, the failed q2, then q2 again


def test_without_a_model_configured_nothing_is_asked_and_nothing_written(
        cli, evaluated: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALUATOR_JUDGE_MODEL")
    before = _stored(evaluated)
    done = cli("judge-spans", "--run", "sp", db=evaluated)
    assert done.returncode == 2
    assert "no judge model: pass model= or set EVALUATOR_JUDGE_MODEL" in done.stderr
    assert endpoint.requests == [] and _stored(evaluated) == before


def test_the_judges_spans_are_shown_and_scored_for_an_evaluation_that_stored_no_spans(
        cli, evaluated: Path, endpoint: FakeEndpoint) -> None:
    cli("recompute", "--run", "sp", "--ruleset", "grounded", "--no-spans", db=evaluated, check=True)
    evaluation = json.loads(cli("judge-spans", "--run", "sp", "--json", db=evaluated, check=True).stdout)
    assert _agreement(cli, evaluated, SPAN_FLAG)["overall"]["char_f1"] == pytest.approx(26 / 38)
    with connect(evaluated, read_only=True) as con:
        shown = review_spans.of(con, evaluation["evaluation_id"], [1])[1]
    judged = [s for s in shown if s["kind"] == SPAN_FLAG]
    assert [(s["start"], s["end"], s["text"], s["reason"]) for s in judged] == [
        (28, 37, "€45/month", SPAN_REASON), (44, 53, "€45/month", SPAN_REASON)]
    assert any(s["kind"] != SPAN_FLAG for s in shown)  # the rules' spans, evaluated again, beside them


def test_the_stored_flag_counts_follow_the_judges_flag_each_time_it_is_replaced(
        cli, evaluated: Path, endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    def counts(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        with duckdb.connect(str(db), read_only=True) as con:
            stored = con.execute("SELECT evaluation_id, provider, flag, n FROM flag_counts ORDER BY ALL").fetchall()
            direct = con.execute("""SELECT f.evaluation_id, r.provider, f.flag, count(*) FROM flags f
                                    JOIN responses r USING (response_id) GROUP BY ALL ORDER BY ALL""").fetchall()
        return stored, direct

    cli("judge-spans", "--run", "sp", db=evaluated, check=True)
    stored, direct = counts(evaluated)
    assert stored == direct and any(row[2] == SPAN_FLAG for row in stored)
    monkeypatch.setitem(MARKED, RUN[2][2], [])  # the judge now finds nothing in the Oslo answer
    monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "second-model")  # not cached: asked again
    cli("judge-spans", "--run", "sp", db=evaluated, check=True)
    stored, direct = counts(evaluated)
    assert stored == direct
    assert [row[1:] for row in stored if row[2] == SPAN_FLAG] == [("bot-a", SPAN_FLAG, 1)]
