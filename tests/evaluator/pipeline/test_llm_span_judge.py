"""The LLM span judge (issue 30 §3) against a real OpenAI-compatible server on 127.0.0.1: what it
sends, how the substrings it returns become character offsets, and its reply cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluator.core.types import RetrievedItem
from evaluator.pipeline.judges import InMemoryJudgeCache, JudgeReplyError
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG, SPAN_REASON, LLMSpanJudge, parse_reply
from tests.llm_endpoint import FakeEndpoint

CONTEXT = (RetrievedItem("kb-1", "The Pro plan costs €12/month and includes 10 GB of storage.", 0.9),)
QUESTION = "How much is the Pro plan?"


def _judge(endpoint: FakeEndpoint, **kwargs: Any) -> LLMSpanJudge:
    options: dict[str, Any] = {"timeout_s": 0.5, "max_retries": 0, "backoff_s": 0.01}
    options.update(kwargs)
    return LLMSpanJudge(base_url=endpoint.url, model="judge-model", api_key="test-key", **options)


def _reply(*substrings: str) -> tuple[str, str]:
    return ("reply", json.dumps({"unsupported": list(substrings)}, ensure_ascii=False))


def test_offsets_are_code_points_of_the_answer_and_a_repeated_substring_marks_both_places(
        endpoint: FakeEndpoint) -> None:
    answer = "Café Ñandú’s Pro plan costs €45/month. Yes: €45/month buys 10 GB."
    endpoint.script = [_reply("€45/month")]
    verdict = _judge(endpoint).spans(QUESTION, answer, CONTEXT)
    assert [(s.start, s.end) for s in verdict.spans] == [(28, 37), (44, 53)]  # not UTF-8 bytes (33 before it)
    assert {s.text for s in verdict.spans} == {"€45/month"} == {answer[s.start:s.end] for s in verdict.spans}
    assert {(s.kind, s.reason, s.score) for s in verdict.spans} == {(SPAN_FLAG, SPAN_REASON, None)}
    assert verdict.unfound == ()


def test_white_space_and_curly_quotes_are_matched_loosely_when_the_text_is_not_exact(endpoint: FakeEndpoint) -> None:
    answer = "The guide says “open  daily”\nuntil 9 pm, which is wrong."
    endpoint.script = [_reply('"open daily" until 9 pm')]
    (span,) = _judge(endpoint).spans("When is it open?", answer, CONTEXT).spans
    assert (span.start, span.end) == (15, 39)
    assert span.text == "“open  daily”\nuntil 9 pm"


def test_substrings_the_answer_does_not_hold_are_dropped_and_counted_never_placed(endpoint: FakeEndpoint) -> None:
    answer = "The Pro plan costs €45/month."
    endpoint.script = [_reply("costs €50/month", "€45/month", "<script>alert(1)</script>\x1b[2J")]
    verdict = _judge(endpoint).spans(QUESTION, answer, CONTEXT)
    assert [s.text for s in verdict.spans] == ["€45/month"]
    assert verdict.unfound == ("costs €50/month", "<script>alert(1)</script>\x1b[2J")
    assert verdict.listed == 3


def test_the_prompt_holds_the_context_question_and_answer_and_asks_for_json(endpoint: FakeEndpoint) -> None:
    endpoint.script = [_reply()]
    assert _judge(endpoint).spans(QUESTION, "It costs €45.", CONTEXT).spans == ()
    (request,) = endpoint.requests
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "judge-model"
    system, user = (m["content"] for m in request["body"]["messages"])
    assert '{"unsupported": [' in system and "exactly as it is written" in system
    assert "[1] The Pro plan costs €12/month" in user and QUESTION in user and user.endswith("It costs €45.")


def test_a_cached_reply_makes_no_second_request(endpoint: FakeEndpoint) -> None:
    endpoint.script = [_reply("€45")]
    cache = InMemoryJudgeCache()
    first = _judge(endpoint, cache=cache).spans(QUESTION, "It costs €45.", CONTEXT)
    second = _judge(endpoint, cache=cache).spans(QUESTION, "It costs €45.", CONTEXT)  # a fresh judge: the re-run
    assert first == second and len(first.spans) == 1
    assert len(endpoint.requests) == 1
    assert len(cache) == 1


def test_a_reply_that_is_not_the_json_asked_for_is_an_error_and_not_cached(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "The answer looks fine to me."), _reply()]
    cache = InMemoryJudgeCache()
    with pytest.raises(JudgeReplyError, match=r"not the JSON asked for") as info:
        _judge(endpoint, cache=cache).spans(QUESTION, "It costs €45.", CONTEXT)
    assert info.value.reply == "The answer looks fine to me."
    assert len(cache) == 0
    assert _judge(endpoint, cache=cache).spans(QUESTION, "It costs €45.", CONTEXT).spans == ()
    assert len(endpoint.requests) == 2


def test_an_answer_without_retrieved_text_is_not_asked_about(endpoint: FakeEndpoint) -> None:
    assert _judge(endpoint).spans(QUESTION, "It costs €45.", ()).spans == ()
    assert _judge(endpoint).spans(QUESTION, "  ", CONTEXT).spans == ()
    assert endpoint.requests == []


@pytest.mark.parametrize(("reply", "expected"), [
    ('```json\n{"unsupported": ["a", " "]}\n```', ["a"]),
    ('Here you go: {"hallucination list": ["b"]}', ["b"]),
    ('["c"]', ["c"]),
])
def test_parse_reply_reads_a_fenced_object_ragtruths_key_and_a_bare_list(reply: str, expected: list[str]) -> None:
    assert parse_reply(reply) == expected


@pytest.mark.parametrize(("reply", "message"), [
    ('{"unsupported": [1, 2]}', "not a list of strings"),
    ('{"verdict": "fine"}', 'no "unsupported" list'),
    ("{not json}", "not the JSON asked for"),
])
def test_parse_reply_rejects_other_shapes_naming_what_is_wrong(reply: str, message: str) -> None:
    with pytest.raises(JudgeReplyError, match=message):
        parse_reply(reply)
