"""Agreement statistics (pure): Krippendorff's alpha among annotators, and a check vs the humans.

Alpha is the `krippendorff` package's, fed with value counts per unit (how many annotators gave
each value to a response), which the store aggregates in SQL; a unit rated once cannot be paired
and does not enter alpha. Levels a scale does not allow are None, with the reason why.

Check vs humans: a 2×2 confusion matrix of the check's verdict (PASS/FAIL) against the human
majority (PASS/FAIL), Cohen's kappa, and precision/recall of the check's FAIL (a FAIL is the
check's claim that something is wrong; precision = how often the humans agree, recall = how many
of the humans' failures the check catches).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import krippendorff
import numpy as np

from evaluator.core.registry import CHECK

SCALES = ("nominal", "ordinal", "numeric", "text")
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")
VERDICTS = ("PASS", "FAIL")
OPERATORS = (">=", "<=", "==", ">", "<", "=")
# What a label rates, told from its name (folded: lower case, no separators), and what each check
# decides. A check paired with a label of another kind (answers_question, "was the question
# answered", with answer_relevance, "is the answer on topic") disagrees without being wrong.
LABEL_KINDS = {
    **dict.fromkeys(("faithfulness", "faithful", "groundedness", "grounded", "hallucination"), "faithfulness"),
    **dict.fromkeys(("relevance", "relevant", "answerrelevance", "answerrelevancy", "relevancy"), "relevance"),
    **dict.fromkeys(("answered", "answerable", "answersquestion", "answerability", "correctness", "correct",
                     "answercorrectness", "refusal", "refused"), "answering"),
    **dict.fromkeys(("contextrelevance", "contextprecision", "contextrecall", "retrieval"), "retrieval"),
}
CHECK_KINDS = {CHECK.no_hallucination: "faithfulness", CHECK.answers_question: "answering",
               CHECK.retrieval_check: "retrieval"}
KIND_WORDS = {"faithfulness": "whether the answer is supported by its sources",
              "relevance": "whether the answer is on topic",
              "answering": "whether the question was answered (or rightly refused)",
              "retrieval": "whether the right context was retrieved"}
# Default label -> check mappings when the user gives none: a check only for a label of its own kind
# (so faithfulness -> no_hallucination; relevance has no check of its kind, so no default), PASS when
# an annotator's rating is at least the scale's midpoint.
# (CHECK.x is the registered name: a renamed check fails here at import, not silently later.)
DEFAULT_CHECKS = {
    **dict.fromkeys(("faithfulness", "faithful", "groundedness", "grounded", "hallucination"), CHECK.no_hallucination),
}
NEAR_CONSTANT = 0.95  # a label whose most common value has this share of the ratings barely varies
# The worked example of the --check form, for usage messages.
MAPPING_EXAMPLE = f"{CHECK.no_hallucination}=faithfulness>=3"


class AgreementError(ValueError):
    """A request the statistics cannot answer as asked; the message says what to fix."""


def levels_for(scale: str, numeric_values: bool) -> dict[str, str | None]:
    """Level -> None when alpha at that level is meaningful for the scale, else why it is not."""
    if scale == "text":
        why = "free text has no agreement statistic"
        return dict.fromkeys(LEVELS, why)
    if scale == "nominal":
        return {"nominal": None, "ordinal": "nominal scale: its values have no order",
                "interval": "nominal scale: its values have no order or distance"}
    interval = None if numeric_values else "the scale's values are not numbers"
    return {"nominal": None, "ordinal": None, "interval": interval}


def alpha(value_counts: Any, domain: Sequence[float], level: Level) -> float:
    """Krippendorff's alpha (the package's) from a units × values count matrix (array-like) and the values'
    codes in scale order (ranks for ordinal, numbers for interval). AgreementError when undefined."""
    counts = np.asarray(value_counts, dtype=float).reshape(len(value_counts), len(domain))
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        raise AgreementError("no response was rated by two or more annotators")
    if np.count_nonzero(pairable.sum(axis=0)) < 2:
        raise AgreementError("every rating has the same value, so there is no variation to agree on")
    return float(krippendorff.alpha(value_counts=pairable, value_domain=list(domain), level_of_measurement=level))


@dataclass(frozen=True)
class Mapping:
    """`check=label>=threshold`: the human says PASS when an annotator's rating meets the threshold."""

    check: str
    label: str
    operator: str
    threshold: str

    def __str__(self) -> str:
        return f"{self.check}={self.label}{self.operator}{self.threshold}"


MAPPING_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*=\s*(.+?)\s*(>=|<=|==|>|<|=)\s*([^<>=\s].*?)\s*$")


def parse_mapping(text: str) -> Mapping:
    """`CHECK=LABEL>=VALUE` (see MAPPING_EXAMPLE) -> Mapping; AgreementError naming the expected form."""
    match = MAPPING_RE.match(text or "")
    if match is None:
        raise AgreementError(f"--check {text!r}: write CHECK=LABEL>=VALUE, e.g. {MAPPING_EXAMPLE} "
                             f"(operators: {', '.join(OPERATORS)})")
    check, label, operator, threshold = match.groups()
    return Mapping(check, label, "==" if operator == "=" else operator, threshold)


def fold(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def default_mapping(label: str, scale: str, values: Sequence[str]) -> Mapping | None:
    """The documented default for a label (see DEFAULT_CHECKS), or None: PASS at or above the
    midpoint of the scale (numbers: (min + max) / 2; ordered words: the middle value upwards)."""
    check = DEFAULT_CHECKS.get(fold(label))
    if check is None or scale not in ("ordinal", "numeric") or not values:
        return None
    numbers = numeric_values(values)
    if numbers is not None:
        midpoint = (min(numbers) + max(numbers)) / 2
        return Mapping(check, label, ">=", _number_text(midpoint))
    return Mapping(check, label, ">=", values[len(values) // 2])


def kind_mismatch(check: str, label: str) -> str | None:
    """Why a check and a label measure different things (None when they are of one kind, or either
    kind is unknown)."""
    check_kind, label_kind = CHECK_KINDS.get(check), LABEL_KINDS.get(fold(label))
    if check_kind is None or label_kind is None or check_kind == label_kind:
        return None
    return (f"{label} rates {KIND_WORDS[label_kind]}; {check} decides {KIND_WORDS[check_kind]}. They measure "
            "different things, so a disagreement here need not mean the check is wrong.")


def near_constant(label: str, value_counts: Sequence[tuple[str, int]]) -> str | None:
    """Why agreement with a label that barely varies says little (None when it varies enough):
    `value_counts` are (value, ratings) pairs."""
    total = sum(n for _, n in value_counts)
    if not total:
        return None
    value, top = max(value_counts, key=lambda pair: pair[1])
    if top / total < NEAR_CONSTANT:
        return None
    return (f"{top:,} of {total:,} ratings of {label} are “{value}”: a label that is nearly constant cannot tell "
            "a good check from a bad one, so kappa, precision and recall against it say little.")


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def numeric_values(values: Iterable[str]) -> list[float] | None:
    """The values as finite numbers, or None when any is not a number."""
    out = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(number):
            return None
        out.append(number)
    return out


@dataclass(frozen=True)
class Confusion:
    """Counts of (check verdict, human majority): pass_pass = check PASS and humans PASS, …"""

    pass_pass: int
    pass_fail: int
    fail_pass: int
    fail_fail: int

    @property
    def n(self) -> int:
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail

    def cell(self, check: str, human: str) -> int:
        return int(getattr(self, f"{check.lower()}_{human.lower()}"))

    def kappa(self) -> float | None:
        """Cohen's kappa: (observed − chance agreement) / (1 − chance); None when undefined."""
        n = self.n
        if n == 0:
            return None
        observed = (self.pass_pass + self.fail_fail) / n
        check_pass, human_pass = self.pass_pass + self.pass_fail, self.pass_pass + self.fail_pass
        chance = (check_pass * human_pass + (n - check_pass) * (n - human_pass)) / (n * n)
        return None if chance == 1 else (observed - chance) / (1 - chance)

    def precision(self) -> float | None:
        """Of the check's FAILs, the share the humans also fail."""
        flagged = self.fail_fail + self.fail_pass
        return self.fail_fail / flagged if flagged else None

    def recall(self) -> float | None:
        """Of the humans' FAILs, the share the check fails too."""
        failed = self.fail_fail + self.pass_fail
        return self.fail_fail / failed if failed else None

    def as_dict(self) -> dict[str, Any]:
        return {"matrix": {f"check_{c}": {f"human_{h}": self.cell(c, h) for h in VERDICTS} for c in VERDICTS},
                "n": self.n, "kappa": self.kappa(), "precision_fail": self.precision(),
                "recall_fail": self.recall()}
