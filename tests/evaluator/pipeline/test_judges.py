"""Refusal judges (SPEC §6): the offline heuristic and the LLM judge against a real local server."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from evaluator.pipeline.judges import (
    HeuristicJudge,
    InMemoryJudgeCache,
    JudgeConfigError,
    JudgeReplyError,
    JudgeUnavailableError,
    LLMJudge,
    make_judge,
)
from evaluator.pipeline.judges.llm import build_messages, parse_reply
from tests.llm_endpoint import FakeEndpoint

# SPEC §5 refusal phrases and §4 T3 refusal patterns, as the heuristic's parameters.
SPEC_PHRASES = (
    "i cannot",
    "i can't",
    "i don't have information",
    "i don't have enough information",
    "i do not have",
    "i'm not sure",
    "i am not sure",
    "i'm unable to",
    "i am unable to",
    "outside my knowledge",
    "beyond my scope",
    "not able to help",
    "cannot assist with",
    "no information available",
    "unfortunately, i don't",
    "i apologize, but i",
    "i'm sorry, but i don't",
)
SPEC_PATTERNS = (
    r"outside (my|the) scope",
    r"cannot (help|assist|answer)",
    r"falls outside",
    r"not (within|in) my (scope|purview)",
    r"beyond (my|the) scope",
    r"i('m| am) (designed|meant|built) to",
    r"i('d| would) be happy to help with",
    r"instead,? (i can|i could)",
    r"however,? i can",
)


@pytest.fixture
def heuristic() -> HeuristicJudge:
    return HeuristicJudge(SPEC_PHRASES, SPEC_PATTERNS)


# ---------------------------------------------------------------- heuristic judge


def test_heuristic_refuses_on_a_spec_phrase_case_insensitively(heuristic: HeuristicJudge) -> None:
    verdict = heuristic.judge("q", "Sorry. I CANNOT share that.")
    assert verdict.refused
    assert verdict.span == "I CANNOT"


def test_heuristic_treats_curly_apostrophes_like_straight_ones(heuristic: HeuristicJudge) -> None:
    verdict = heuristic.judge("q", "I don\u2019t have information about that pricing tier.")
    assert verdict.refused
    assert verdict.span == "I don\u2019t have information"  # span is the answer's own text


def test_heuristic_refuses_on_a_t3_refusal_pattern(heuristic: HeuristicJudge) -> None:
    answer = "Career advice falls outside my scope as a Ramayana interpreter."
    verdict = heuristic.judge("q", answer)
    assert verdict.refused
    assert verdict.span is not None and verdict.span in answer


def test_heuristic_matches_the_reference_refusal_flag_fuzzily() -> None:
    judge = HeuristicJudge((), ())  # no phrases: only the fuzzy flag can fire
    verdict = judge.judge("q", "I apologise, but I could not find an answer in the documents.")
    assert verdict.refused
    assert verdict.span == "I apologise, but I could not find an answer"


def test_heuristic_fuzzy_flag_accepts_curly_apostrophes() -> None:
    judge = HeuristicJudge((), ())
    assert judge.judge("q", "I apologize, but I couldn\u2019t find an answer to your question.").refused


@pytest.mark.parametrize(
    "answer",
    [
        "The capital of France is Paris [1].",
        "I apologize for the delay, but I found an answer: Paris.",
        "I couldn't find a better example than Rama's exile [Ayodhya-Kanda 31.25].",
        "",
    ],
)
def test_heuristic_does_not_refuse_substantive_answers(heuristic: HeuristicJudge, answer: str) -> None:
    verdict = heuristic.judge("q", answer)
    assert not verdict.refused
    assert verdict.span is None


def test_heuristic_from_default_rules_refuses_a_spec_phrase() -> None:
    judge = make_judge("heuristic")
    assert judge.name == "heuristic"
    assert judge.judge("q", "Unfortunately, I don\u2019t know.").refused


def test_make_judge_rejects_an_unknown_name() -> None:
    with pytest.raises(JudgeConfigError, match="unknown judge 'oracle'"):
        make_judge("oracle")


# ---------------------------------------------------------------- reply parsing


def test_parse_reply_reads_reasoning_span_and_judgement() -> None:
    verdict = parse_reply('Reasoning: It declines.\nSpan: "I can\'t help"\nJudgement: REFUSED')
    assert (verdict.refused, verdict.reasoning, verdict.span) == (True, "It declines.", "I can't help")


def test_parse_reply_tolerates_markdown_and_reads_span_none_as_none() -> None:
    verdict = parse_reply("**Reasoning:** Answers fully.\n**Span:** None\n**Judgement:** NOT REFUSED")
    assert (verdict.refused, verdict.span) == (False, None)


def test_parse_reply_rejects_a_last_judgement_that_is_neither_value() -> None:
    with pytest.raises(JudgeReplyError, match="MAYBE"):
        parse_reply("Judgement: REFUSED\nJudgement: MAYBE")


# ---------------------------------------------------------------- LLM judge over real HTTP


def _llm(endpoint: FakeEndpoint, **kwargs: Any) -> LLMJudge:
    options: dict[str, Any] = {"timeout_s": 0.5, "max_retries": 2, "backoff_s": 0.01}
    options.update(kwargs)
    return LLMJudge(base_url=endpoint.url, model="judge-model", api_key="test-key", **options)


def test_llm_judge_reads_refused(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "Reasoning: It declines.\nSpan: I cannot help\nJudgement: REFUSED")]
    verdict = _llm(endpoint).judge("Can you draw Rama?", "I cannot help with drawing.")
    assert verdict.refused
    assert verdict.span == "I cannot help"


def test_llm_judge_reads_not_refused(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "Reasoning: Direct answer.\nSpan: None\nJudgement: NOT REFUSED")]
    verdict = _llm(endpoint).judge("Capital of France?", "Paris.")
    assert not verdict.refused


def test_llm_judge_sends_the_question_answer_and_definition_to_the_chat_endpoint(
    endpoint: FakeEndpoint,
) -> None:
    endpoint.script = [("reply", "Judgement: NOT REFUSED")]
    _llm(endpoint).judge("Capital of France?", "Paris is the capital.")
    (request,) = endpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "judge-model"
    assert request["auth"] == "Bearer test-key"
    prompt = "\n".join(m["content"] for m in request["body"]["messages"])
    assert "Paris is the capital." in prompt and "Capital of France?" in prompt
    assert "even if information follows" in prompt and "NOT REFUSED" in prompt


def test_llm_judge_last_judgement_line_wins(endpoint: FakeEndpoint) -> None:
    endpoint.script = [
        (
            "reply",
            "Reasoning: first thought\nJudgement: NOT REFUSED\nReasoning: on reflection\nJudgement: REFUSED",
        )
    ]
    verdict = _llm(endpoint).judge("q", "a")
    assert verdict.refused
    assert verdict.reasoning == "on reflection"


def test_llm_judge_raises_on_a_garbage_reply_with_the_reply_text(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "I think it is fine?")]
    with pytest.raises(JudgeReplyError) as info:
        _llm(endpoint).judge("q", "a")
    assert info.value.reply == "I think it is fine?"


def test_llm_judge_does_not_cache_a_garbage_reply(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "garbage"), ("reply", "Judgement: REFUSED")]
    judge = _llm(endpoint, cache=InMemoryJudgeCache())
    with pytest.raises(JudgeReplyError):
        judge.judge("q", "a")
    assert judge.judge("q", "a").refused
    assert len(endpoint.requests) == 2


def test_llm_judge_retries_a_429_then_succeeds(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("status", 429), ("reply", "Judgement: REFUSED")]
    assert _llm(endpoint).judge("q", "a").refused
    assert len(endpoint.requests) == 2


def test_llm_judge_gives_up_on_persistent_5xx_naming_endpoint_and_status(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("status", 503)] * 3
    with pytest.raises(JudgeUnavailableError) as info:
        _llm(endpoint, max_retries=2).judge("q", "a")
    assert info.value.status == 503
    assert endpoint.url in str(info.value) and "503" in str(info.value)
    assert len(endpoint.requests) == 3


def test_llm_judge_does_not_retry_a_client_error(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("status", 401), ("reply", "Judgement: REFUSED")]
    with pytest.raises(JudgeUnavailableError) as info:
        _llm(endpoint).judge("q", "a")
    assert info.value.status == 401
    assert len(endpoint.requests) == 1


def test_llm_judge_times_out_retries_then_raises(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("hang", 5.0)] * 2
    started = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match="timed out") as info:
        _llm(endpoint, timeout_s=0.5, max_retries=1).judge("q", "a")
    elapsed = time.monotonic() - started
    assert info.value.status is None
    assert endpoint.url in str(info.value)
    assert len(endpoint.requests) == 2
    assert 1.0 <= elapsed < 4.0  # two 0.5 s timeouts, not the 5 s hang


def test_llm_judge_cache_hit_makes_no_second_request(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "Judgement: REFUSED")]
    cache = InMemoryJudgeCache()
    first = _llm(endpoint, cache=cache).judge("q", "a")
    second = _llm(endpoint, cache=cache).judge("q", "a")  # a fresh judge: the re-run
    assert first == second
    assert len(endpoint.requests) == 1


def test_llm_judge_cache_is_keyed_by_judge_model_and_prompt_hash(endpoint: FakeEndpoint) -> None:
    endpoint.script = [("reply", "Judgement: REFUSED")]
    cache = InMemoryJudgeCache()
    _llm(endpoint, cache=cache).judge("q", "a")
    expected_hash = hashlib.sha256(
        json.dumps(
            build_messages("q", "a"), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        ).encode()
    ).hexdigest()
    assert cache.get("llm", "judge-model", expected_hash) == "Judgement: REFUSED"
    assert len(cache) == 1


def test_llm_judge_takes_its_configuration_from_the_environment(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", endpoint.url)
    monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("EVALUATOR_JUDGE_API_KEY", "env-key")
    endpoint.script = [("reply", "Judgement: NOT REFUSED")]
    assert not LLMJudge(timeout_s=0.5).judge("q", "a").refused
    assert endpoint.requests[0]["body"]["model"] == "env-model"


def test_llm_judge_without_a_model_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALUATOR_JUDGE_MODEL", raising=False)
    with pytest.raises(JudgeConfigError, match="EVALUATOR_JUDGE_MODEL"):
        LLMJudge(base_url="http://127.0.0.1:9/v1")


def test_heuristic_from_rules_refuses_an_empty_answer() -> None:
    verdict = HeuristicJudge.from_rules().judge("q", " \n ")
    assert verdict.refused
    assert "empty answer" in verdict.reasoning


def test_heuristic_from_rules_refuses_an_abstention() -> None:
    assert HeuristicJudge.from_rules().judge("q", "The context does not mention the director.").refused
