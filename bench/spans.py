"""How far a flag's spans agree with people who marked unsupported text by hand (issue 30 §5).

    python -m bench.spans --data FILE [--flag NAME@RULESET ...] [--profile rag]
    python -m bench.spans --data FILE --flag llm_unsupported_span [--judge-cache STORE.duckdb]

FILE is a ``*_spans.jsonl`` (one answer a line: ``{id, question, provider, answer, retrieved:
[{id, text}], spans: [{start, end, label}], ...}``, ``answer[start:end]`` the marked text), e.g.
``../shared/outside/faithbench_spans.jsonl``. Each answer is evaluated under the rule set (by the
Python reference, spans and all) and, for the tuning half and the held-out half separately
(FaithBench ``batch`` 1-8 / the rest; LFQA ``setting`` webgpt, gpt3_wdoc, gpt3 / the rest; a file
with neither is one half, "all"), printed:

- response level: a response is positive when people marked some text of it; the flag predicts
  positive when it is raised: precision, recall, balanced accuracy;
- character level: the characters people marked against those the flag's spans cover, summed over
  the half: precision, recall, F1;
- ``--flag llm_unsupported_span``: the LLM span judge's spans instead of a rule set's flag (the
  endpoint from ``EVALUATOR_JUDGE_BASE_URL``, ``_MODEL``, ``_API_KEY``, as ``evaluator judge-spans``;
  replies cached in ``--judge-cache``'s judge_cache table, else for this run only);
- the trivial baseline that marks every character of every answer, and each detector score the
  file carries (``detector_scores``: 1 consistent, 0 hallucinated; below 0.5 counts as raised),
  response level only.

Counted as the product counts span labels (evaluator.review.span_agreement, one definition):
spans labelled "Benign..." (unsupported but harmless, FaithBench) are not targets and count neither
way when highlighted, and a response with only benign spans is negative. (The issue's first table
counted highlighted benign text as false positives: its mark-every-character baseline reads 0.228
there, 0.237 here.)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evaluator.core.evaluate import evaluate
from evaluator.core.types import ResponseInput, RetrievedItem
from evaluator.pipeline.judges import InMemoryJudgeCache, JudgeCache, JudgeError
from evaluator.pipeline.judges.llm_spans import JUDGE_FLAGS, LLMSpanJudge
from evaluator.review.span_agreement import HumanMarks, Tally, Truth, truth
from evaluator.rules.load import load_rules
from evaluator.rules.model import Rules

TUNING_SETTINGS = frozenset({"webgpt", "gpt3_wdoc", "gpt3"})  # LFQA-Verification settings to tune on
TUNING_BATCHES = range(1, 9)  # FaithBench batches to tune on
DEFAULT_FLAGS = ("unsupported_claim@grounded", "potential_hallucination@t3_aware")

Prediction = tuple[bool, set[int]]  # (raised, characters marked)


def half_of(row: dict[str, Any]) -> str:
    """'tuning' or 'held-out' (FaithBench batches, LFQA settings); 'all' when the row says neither."""
    batch = row.get("batch")
    if isinstance(batch, int):
        return "tuning" if batch in TUNING_BATCHES else "held-out"
    setting = row.get("setting")
    if isinstance(setting, str):
        return "tuning" if setting in TUNING_SETTINGS else "held-out"
    return "all"


def people(row: dict[str, Any]) -> Truth:
    """What people marked in one answer (the file's merged spans), read as the product reads span
    labels (evaluator.review.span_agreement: benign characters count neither way)."""
    return truth([HumanMarks("people", tuple((int(sp["start"]), int(sp["end"]), sp.get("label"))
                                             for sp in row.get("spans") or ()))])


def _intervals(chars: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(chars):
        if out and out[-1][1] == c:
            out[-1] = (out[-1][0], c + 1)
        else:
            out.append((c, c + 1))
    return out


@dataclass(frozen=True)
class Score:
    n: int
    positives: int
    raised: int
    precision: float | None
    recall: float | None
    balanced_accuracy: float | None
    char_precision: float | None
    char_recall: float | None
    char_f1: float | None


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def score(rows: list[dict[str, Any]], predictions: Iterable[Prediction | bool]) -> Score:
    """Response-level and (for span predictions) character-level agreement with ``people``, counted
    by the product's own tally (evaluator.review.span_agreement.Tally)."""
    tally = Tally()
    chars = True
    for i, (row, pred) in enumerate(zip(rows, predictions, strict=True)):
        if isinstance(pred, bool):
            raised, spans = pred, set()
            chars = False
        else:
            raised, spans = pred
        tally.add(i, raised, _intervals(spans), people(row))
    d = tally.as_dict()
    f1 = d["char_f1"] if d["char_f1"] is not None else 0.0
    return Score(int(d["responses"]), int(d["human_positive"]), int(d["flagged"]), d["precision"], d["recall"],
                 d["balanced_accuracy"], d["char_precision"] if chars else None,
                 d["char_recall"] if chars else None, f1 if chars else None)


def response_of(row: dict[str, Any]) -> ResponseInput:
    retrieved = tuple(RetrievedItem(str(d.get("id", "")), str(d.get("text") or ""), None)
                      for d in row.get("retrieved") or ())
    return ResponseInput(str(row["id"]), str(row.get("question") or ""), str(row.get("provider") or ""),
                         str(row.get("answer") or ""), retrieved=retrieved)


def flag_predictor(flag: str, ruleset: str, rules: Rules, profile: str) -> Callable[[dict[str, Any]], Prediction]:
    def predict(row: dict[str, Any]) -> Prediction:
        ev = evaluate(response_of(row), ruleset=ruleset, rules=rules, profile=profile)
        chars: set[int] = set()
        raised = False
        for f in ev.flags:
            if f.flag == flag:
                raised = True
                for span in f.spans:
                    chars.update(range(span.start, span.end))
        return raised, chars

    return predict


def judge_predictor(judge: LLMSpanJudge) -> Callable[[dict[str, Any]], Prediction]:
    """The LLM span judge's spans of each answer (its flag is raised when it marks any)."""
    def predict(row: dict[str, Any]) -> Prediction:
        resp = response_of(row)
        verdict = judge.spans(resp.question, resp.answer, resp.retrieved)
        return bool(verdict.spans), {c for span in verdict.spans for c in range(span.start, span.end)}

    return predict


def every_character(row: dict[str, Any]) -> Prediction:
    return True, set(range(len(str(row.get("answer") or ""))))


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def table(title: str, lines: list[tuple[str, Score]]) -> str:
    out = [title, f"{'':38} {'n':>4} {'pos':>4} {'raised':>6}  {'P':>5}  {'R':>5}  {'BA':>5}  "
                  f"{'charP':>5}  {'charR':>5}  {'charF1':>6}"]
    for name, s in lines:
        cells = (s.precision, s.recall, s.balanced_accuracy, s.char_precision, s.char_recall)
        out.append(f"{name:38} {s.n:>4} {s.positives:>4} {s.raised:>6}  " + "  ".join(_fmt(c) for c in cells)
                   + f"  {_fmt(s.char_f1):>6}")
    return "\n".join(out)


def run(data: Path, flags: list[str], profile: str, rules: Rules, judge_cache: JudgeCache | None = None) -> str:
    rows = [orjson.loads(line) for line in data.read_bytes().splitlines() if line.strip()]
    judge = None
    if set(flags) & set(JUDGE_FLAGS):  # configured from EVALUATOR_JUDGE_*: asked only when named
        judge = LLMSpanJudge(cache=judge_cache if judge_cache is not None else InMemoryJudgeCache())
    halves: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        halves.setdefault(half_of(row), []).append(row)
    detectors = sorted({k for row in rows for k in (row.get("detector_scores") or {})})
    out = []
    for half in ("tuning", "held-out", "all"):
        part = halves.get(half)
        if not part:
            continue
        lines = []
        for spec in flags:
            if judge is not None and spec in JUDGE_FLAGS:
                predict, label = judge_predictor(judge), f"{spec} ({judge.model})"
            else:
                name, _, ruleset = spec.partition("@")
                predict, label = flag_predictor(name, ruleset or "grounded", rules, profile), \
                    f"{name} ({ruleset or 'grounded'})"
            lines.append((label, score(part, [predict(r) for r in part])))
        lines.append(("mark every character", score(part, [every_character(r) for r in part])))
        for det in detectors:
            kept = [r for r in part if isinstance((r.get("detector_scores") or {}).get(det), (int, float))]
            if kept:
                lines.append((f"detector {det}", score(kept, [float(r["detector_scores"][det]) < 0.5 for r in kept])))
        out.append(table(f"{data.name}: {half} half ({len(part)} answers, profile {profile})", lines))
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a *_spans.jsonl file")
    parser.add_argument("--flag", action="append", help="NAME@RULESET (repeatable); default: "
                        + ", ".join(DEFAULT_FLAGS))
    parser.add_argument("--profile", default="rag")
    parser.add_argument("--rules", type=Path, default=None, help="a rules file (default: the built-in rules)")
    parser.add_argument("--judge-cache", type=Path, default=None,
                        help="a store file whose judge_cache keeps the LLM span judge's replies between runs")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"no file {args.data}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        cache: JudgeCache | None = None
        if args.judge_cache is not None:
            from evaluator.pipeline.metrics.runner import StoreJudgeCache
            from evaluator.store.db import connect

            cache = StoreJudgeCache(stack.enter_context(connect(args.judge_cache)))
        try:
            print(run(args.data, args.flag or list(DEFAULT_FLAGS), args.profile, load_rules(args.rules), cache))
        except JudgeError as exc:
            print(f"the LLM span judge failed: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
