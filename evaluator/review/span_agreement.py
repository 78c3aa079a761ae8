"""Span-level agreement (pure): a flag's highlighted characters against the characters people marked.

Human marks come with a label. A label starting with "benign" (FaithBench's "Benign", unsupported
but harmless) marks characters that count neither way: a flag may highlight them or not. The label
``false_alarm`` (a computed span a reviewer says is supported) marks nothing: it records that the
reviewer read the response. Every other label marks unsupported text. With several annotators the
truth is the union of their unsupported marks (less nothing: a character one calls unsupported and
another benign is unsupported).

Per response: the flag is positive when raised, the people when they marked any unsupported
character. Characters: micro-averaged over responses, true positives are highlighted characters
people marked unsupported, false positives highlighted characters they did not mark at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

Interval = tuple[int, int]

BENIGN_PREFIX = "benign"
FALSE_ALARM = "false_alarm"
UNSUPPORTED = "unsupported"


def kind(label: str | None) -> str:
    """unsupported, benign or false_alarm: what a human label means for agreement."""
    text = (label or "").strip().lower()
    if text == FALSE_ALARM:
        return FALSE_ALARM
    return "benign" if text.startswith(BENIGN_PREFIX) else UNSUPPORTED


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals merged: sorted, none empty, none touching another."""
    merged: list[Interval] = []
    for start, end in sorted((s, e) for s, e in intervals if e > s):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(intervals: Sequence[Interval]) -> int:
    return sum(end - start for start, end in intervals)


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Both merged (``union``); their common characters."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Both merged; the characters of ``a`` not in ``b``."""
    out: list[Interval] = []
    for start, end in a:
        cursor = start
        for b_start, b_end in b:
            if b_end <= cursor or b_start >= end:
                continue
            if b_start > cursor:
                out.append((cursor, b_start))
            cursor = max(cursor, b_end)
        if cursor < end:
            out.append((cursor, end))
    return out


@dataclass(frozen=True)
class HumanMarks:
    """One annotator's marks on one response: (start, end, label) each."""

    annotator: str
    spans: tuple[tuple[int, int, str | None], ...] = ()


@dataclass(frozen=True)
class Truth:
    unsupported: list[Interval]
    benign: list[Interval]  # less the unsupported characters

    @property
    def positive(self) -> bool:
        return bool(self.unsupported)


def truth(marks: Iterable[HumanMarks]) -> Truth:
    """What the annotators of one response say together (the union of their marks)."""
    unsupported: list[Interval] = []
    benign: list[Interval] = []
    for mark in marks:
        for start, end, label in mark.spans:
            k = kind(label)
            if k == UNSUPPORTED:
                unsupported.append((start, end))
            elif k == "benign":
                benign.append((start, end))
    bad = union(unsupported)
    return Truth(bad, subtract(union(benign), bad))


@dataclass
class Tally:
    """Counts over responses: the response-level confusion and the character counts."""

    tp: int = 0  # responses: flagged and marked
    fp: int = 0
    fn: int = 0
    tn: int = 0
    char_tp: int = 0
    char_fp: int = 0
    char_fn: int = 0
    response_ids: dict[str, list[int]] = field(default_factory=lambda: {"tp": [], "fp": [], "fn": [], "tn": []})

    def add(self, response_id: int, raised: bool, highlighted: Iterable[Interval], people: Truth) -> None:
        cell = ("tp" if people.positive else "fp") if raised else ("fn" if people.positive else "tn")
        setattr(self, cell, getattr(self, cell) + 1)
        self.response_ids[cell].append(response_id)
        marked = union(highlighted) if raised else []
        counted = subtract(marked, people.benign)
        hit = length(intersect(counted, people.unsupported))
        self.char_tp += hit
        self.char_fp += length(counted) - hit
        self.char_fn += length(people.unsupported) - hit

    def as_dict(self) -> dict[str, object]:
        return {"responses": self.tp + self.fp + self.fn + self.tn, "human_positive": self.tp + self.fn,
                "flagged": self.tp + self.fp, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "precision": ratio(self.tp, self.tp + self.fp), "recall": ratio(self.tp, self.tp + self.fn),
                "balanced_accuracy": balanced_accuracy(self.tp, self.fp, self.fn, self.tn),
                "char_precision": ratio(self.char_tp, self.char_tp + self.char_fp),
                "char_recall": ratio(self.char_tp, self.char_tp + self.char_fn),
                "char_f1": f1(self.char_tp, self.char_fp, self.char_fn)}


def ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def f1(tp: int, fp: int, fn: int) -> float | None:
    return 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else None


def balanced_accuracy(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """The mean of recall on positives and on negatives; None unless both classes occur."""
    if not (tp + fn) or not (tn + fp):
        return None
    return (tp / (tp + fn) + tn / (tn + fp)) / 2


def annotator_f1(marks_by_response: Mapping[int, Sequence[HumanMarks]]) -> list[dict[str, object]]:
    """Pairwise character F1 between annotators over the responses both marked (symmetric: the
    micro F1 of one's unsupported characters against the other's), benign characters left out."""
    pairs: dict[tuple[str, str], list[int]] = {}
    for marks in marks_by_response.values():
        by_name = {m.annotator: truth([m]) for m in marks}
        for a, b in combinations(sorted(by_name), 2):
            ta, tb = by_name[a], by_name[b]
            ignore = union([*ta.benign, *tb.benign])
            sa, sb = subtract(ta.unsupported, ignore), subtract(tb.unsupported, ignore)
            both = length(intersect(sa, sb))
            counts = pairs.setdefault((a, b), [0, 0, 0, 0])
            counts[0] += both
            counts[1] += length(sa) - both
            counts[2] += length(sb) - both
            counts[3] += 1
    return [{"annotator_a": a, "annotator_b": b, "responses": n, "char_f1": f1(tp, only_a, only_b)}
            for (a, b), (tp, only_a, only_b, n) in sorted(pairs.items())]
