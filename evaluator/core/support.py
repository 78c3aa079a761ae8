"""Which parts of an answer its retrieved context supports (pure): the offline, deterministic
detector behind the ``unsupported_claim`` flag (issue 30).

The answer is cut into sentences (``SENTENCE_END``); each sentence's content words (tokens that
are not stop words, of at least ``MIN_TOKEN`` characters or holding a digit) are looked up in
the set of the retrieved items' words (the question's words support nothing). A word
is compared by its first ``prefix`` characters (a crude stemmer: "grossed"/"grosses", "budget"/
"budgets" share it), a number as a whole ("1,000" and "1000" are one number; "$ 160 million"
and "$160 million" hold the same words). A sentence is unsupported when

- it has at least ``min_words`` content words and at least ``max_unsupported`` of them are not
  in the context (its support score is the share that is), or
- with ``numbers``, it holds a number the context does not hold (support score 0).

The options are the rules' ``[flags.unsupported_claim]`` (evaluator.rules.model.ClaimSupport).

Every step is one the SQL engine takes the same way on clean ASCII text
(evaluator/pipeline/sql/compile.py ``_unsupported_ctes``): lower case, digit groups joined
(``DIGIT_GROUP``), tokens ``[a-z0-9]+`` (here ``[^\\W_]+``, equal on ASCII), sentences split at
``SENTENCE_END``; the flag is raised when some sentence is unsupported. Spans and reasons are
Python's alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluator.rules.model import ClaimSupport

# Where a sentence ends: a full stop, question or exclamation mark (closing quotes or brackets may
# follow it) before white space, or a line break. RE2 and Python's re read it the same.
SENTENCE_END = "[.!?][\"')\\]]*[\\t\\n\\f\\r ]+|\\n"
# Digits grouped by commas ("181,674,817") are one number: the comma between two digits goes.
DIGIT_GROUP = "([0-9]),([0-9])"
MIN_TOKEN = 3  # a word shorter than this is no content word (unless it holds a digit)

_SENTENCE_END = re.compile(SENTENCE_END)
_DIGIT_GROUP = re.compile(DIGIT_GROUP)
_TOKEN = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=64)
def _stop_set(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(words)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of the answer (``answer[start:end]``) and how far the context supports it."""

    start: int
    end: int
    n_words: int  # content words
    missing: tuple[str, ...]  # content words (as the answer writes them, lower case) not in the context
    missing_numbers: tuple[str, ...]  # numbers not in the context
    unsupported: bool

    @property
    def score(self) -> float:
        """The share of its content words the context holds (0 when a number is missing)."""
        if self.missing_numbers:
            return 0.0
        return 1.0 - len(self.missing) / self.n_words if self.n_words else 1.0


def tokens(text: str) -> list[str]:
    """The words of ``text``: lower case, digit groups joined (SQL: regexp_extract_all over
    regexp_replace(lower(x), DIGIT_GROUP, '\\1\\2', 'g') with '[a-z0-9]+')."""
    low = text.lower()
    if "," in low:
        low = _DIGIT_GROUP.sub(r"\1\2", low)
    return _TOKEN.findall(low)


def _has_digit(token: str) -> bool:
    return not token.isalpha() and any(c.isdigit() for c in token)  # most words are letters only


def key(token: str, prefix: int) -> str:
    """What a word is compared by: a number whole, any other word by its first ``prefix`` characters."""
    return token if _has_digit(token) else token[:prefix]


def is_content(token: str, stop_words: frozenset[str]) -> bool:
    return (len(token) >= MIN_TOKEN or _has_digit(token)) and token not in stop_words


def context_keys(texts: Iterable[str], prefix: int) -> frozenset[str]:
    """The keys of every word of ``texts``."""
    out: set[str] = set()
    for text in texts:
        out |= text_keys(text, prefix)
    return frozenset(out)


@functools.lru_cache(maxsize=16384)
def text_keys(text: str, prefix: int) -> frozenset[str]:
    """The keys of every word of one text (kept: many responses retrieve the same items)."""
    return frozenset(key(t, prefix) for t in set(tokens(text)))


def sentences(answer: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``answer`` (SQL: string_split_regex(answer, SENTENCE_END)),
    trimmed of surrounding white space; sentences with no text at all are left out."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(answer):
        out.append((start, m.start() + len(m.group().rstrip(" \t\n\f\r"))))
        start = m.end()
    out.append((start, len(answer)))
    trimmed = []
    for s, e in out:
        piece = answer[s:e]
        lead = len(piece) - len(piece.lstrip())
        tail = len(piece.rstrip())
        if tail > lead:
            trimmed.append((s + lead, s + tail))
    return trimmed


def judge(answer: str, context: frozenset[str], params: ClaimSupport, *, first_only: bool = False) -> list[Sentence]:
    """Each sentence of ``answer`` judged against ``context`` (``context_keys``); with
    ``first_only``, stop at the first unsupported sentence and return only that one."""
    out = []
    prefix, stop = params.prefix, _stop_set(params.stop_words)
    for start, end in sentences(answer):
        words = [t for t in tokens(answer[start:end]) if is_content(t, stop)]
        missing = tuple(t for t in words if key(t, prefix) not in context)
        numbers = tuple(t for t in missing if _has_digit(t)) if params.numbers else ()
        share = len(missing) / len(words) if words else 0.0
        bad = bool(numbers) or (len(words) >= params.min_words and share >= params.max_unsupported)
        sentence = Sentence(start, end, len(words), missing, numbers, bad)
        if first_only:
            if bad:
                return [sentence]
            continue
        out.append(sentence)
    return out


def reason(sentence: Sentence, limit: int = 5) -> str:
    """What the context does not hold, for a reviewer: the missing numbers, else the missing words."""
    def listed(words: tuple[str, ...]) -> str:
        seen = list(dict.fromkeys(words))
        shown = ", ".join(f"'{w}'" for w in seen[:limit])
        return shown + (f" and {len(seen) - limit} more" if len(seen) > limit else "")

    if sentence.missing_numbers:
        return f"not in the retrieved context: number {listed(sentence.missing_numbers)}"
    return (f"{len(sentence.missing)} of {sentence.n_words} content words not in the retrieved context: "
            f"{listed(sentence.missing)}")


@dataclass(frozen=True, slots=True)
class Closest:
    """The context sentence nearest an unsupported span: ``passages[item][start:end]``, holding
    ``share`` of the span's content words (compared by key, as the detector compares them)."""

    item: int
    start: int
    end: int
    share: float


def _content_keys(text: str, params: ClaimSupport) -> set[str]:
    stop = _stop_set(params.stop_words)
    return {key(t, params.prefix) for t in tokens(text) if is_content(t, stop)}


def share_held(claim: str, sentence: str, params: ClaimSupport) -> float | None:
    """The share of ``claim``'s content words that ``sentence`` holds (None: it has none)."""
    wanted = _content_keys(claim, params)
    return len(wanted & text_keys(sentence, params.prefix)) / len(wanted) if wanted else None


def closest(claim: str, passages: Sequence[str], params: ClaimSupport) -> Closest | None:
    """The sentence of ``passages`` that holds most of ``claim``'s content words (the earliest on a
    tie), for a reviewer checking an unsupported span against what was retrieved; None when no
    sentence shares one."""
    wanted = _content_keys(claim, params)
    if not wanted:
        return None
    best: Closest | None = None
    most = 0
    for item, passage in enumerate(passages):
        for start, end in sentences(passage):
            held = len(wanted & text_keys(passage[start:end], params.prefix))
            if held > most:
                most, best = held, Closest(item, start, end, held / len(wanted))
    return best
