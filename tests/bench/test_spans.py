"""bench/spans.py (issue 30 §5): a flag's spans against human-marked spans, per half."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.spans import every_character, half_of, main, people, score

CONTEXT = [{"id": "d1", "text": "Poseidon grossed $ 181,674,817 on a budget of $ 160 million."}]
SUPPORTED = "Poseidon grossed $181,674,817 on a budget of $160 million."
MADE_UP = "Poseidon grossed $181,674,817. Critics praised its stunning visual effects."


def row(answer: str, spans: list[tuple[int, int, str]], **more: object) -> dict:  # type: ignore[type-arg]
    return {"id": f"r{len(answer)}", "question": "", "provider": "p", "answer": answer, "retrieved": CONTEXT,
            "spans": [{"start": s, "end": e, "text": answer[s:e], "label": label} for s, e, label in spans], **more}


def test_benign_spans_are_not_targets() -> None:
    r = row(MADE_UP, [(0, 8, "Benign"), (31, 38, "Unwanted.Extrinsic")])
    assert people(r).unsupported == [(31, 38)] and people(r).benign == [(0, 8)]


def test_highlighted_benign_text_counts_neither_way() -> None:
    rows = [row("abcdefghij", [(0, 5, "Unwanted"), (5, 10, "Benign")])]
    got = score(rows, [(True, set(range(10)))])
    assert (got.char_precision, got.char_recall) == (1.0, 1.0)


def test_halves_follow_the_batch_or_the_setting() -> None:
    assert [half_of({"batch": 8}), half_of({"batch": 9}), half_of({"setting": "gpt3"}),
            half_of({"setting": "alpaca"}), half_of({})] == ["tuning", "held-out", "tuning", "held-out", "all"]


def test_response_and_character_scores() -> None:
    rows = [row("abcdefghij", [(0, 5, "Unwanted")]), row("klmnopqrst", [])]
    # the first raised and marking 3 of its 5 marked characters and 1 unmarked one; the second raised too
    got = score(rows, [(True, {0, 1, 2, 7}), (True, {0})])
    assert (got.precision, got.recall, got.balanced_accuracy) == (0.5, 1.0, 0.5)
    assert (got.char_precision, got.char_recall) == (0.6, 0.6)
    assert got.char_f1 == pytest.approx(0.6)


def test_marking_every_character_has_the_marked_share_as_precision() -> None:
    rows = [row("abcdefghij", [(0, 5, "Unwanted")]), row("klmnopqrst", [])]
    got = score(rows, [every_character(r) for r in rows])
    assert (got.char_precision, got.char_recall, got.balanced_accuracy) == (0.25, 1.0, 0.5)


def test_a_detector_score_is_judged_at_the_response_level_only() -> None:
    rows = [row("abc", [(0, 1, "Unwanted")]), row("def", [])]
    got = score(rows, [True, False])
    assert got.balanced_accuracy == 1.0 and got.char_f1 is None


def test_the_command_prints_each_half_with_the_flag_the_baseline_and_the_detectors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made_up_at = MADE_UP.index("Critics")
    rows = [row(SUPPORTED, [], batch=1, detector_scores={"judge": 0.9}),
            row(MADE_UP, [(made_up_at, len(MADE_UP), "Unwanted.Extrinsic")], batch=1, detector_scores={"judge": 0.1}),
            row(MADE_UP, [(made_up_at, len(MADE_UP), "Unwanted.Extrinsic")], batch=12,
                detector_scores={"judge": 0.8})]
    data = tmp_path / "toy_spans.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["--data", str(data)]) == 0
    out = capsys.readouterr().out
    tuning, held = out.split("\n\n")
    assert "tuning half (2 answers" in tuning and "held-out half (1 answers" in held
    flag_line = next(line for line in tuning.splitlines() if line.startswith("unsupported_claim (grounded)"))
    assert flag_line.split()[-4:] == ["1.000", "1.000", "1.000", "1.000"]  # BA and character P, R, F1
    assert any(line.startswith("detector judge") for line in held.splitlines())
    assert any(line.startswith("mark every character") for line in held.splitlines())


def test_the_llm_span_judge_is_scored_beside_the_offline_flag_and_its_replies_cached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.llm_endpoint import serve

    made_up_at = MADE_UP.index("Critics")
    rows = [row(SUPPORTED, []), row(MADE_UP, [(made_up_at, len(MADE_UP), "Unwanted.Extrinsic")])]
    data = tmp_path / "toy_spans.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["--data", str(data), "--flag", "llm_unsupported_span", "--flag", "unsupported_claim@grounded",
            "--judge-cache", str(tmp_path / "cache.duckdb")]
    with serve() as endpoint:
        endpoint.respond = lambda body: ("reply", json.dumps(
            {"unsupported": [MADE_UP[made_up_at:]] if "Critics" in body["messages"][-1]["content"] else []}))
        monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", endpoint.url)
        monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "judge-model")
        assert main(args) == 0
        first = capsys.readouterr().out
        assert main(args) == 0  # again: every reply from the cache file
        assert capsys.readouterr().out == first
        assert len(endpoint.requests) == 2
    judged = next(line for line in first.splitlines() if line.startswith("llm_unsupported_span (judge-model)"))
    assert judged.split()[-4:] == ["1.000", "1.000", "1.000", "1.000"]  # BA and character P, R, F1
    assert any(line.startswith("unsupported_claim (grounded)") for line in first.splitlines())
