"""Offline refusal judge (SPEC §6 ``heuristic``, the default).

An answer is refused when it contains one of the §5 refusal phrases (case-insensitive
substring), matches one of the §4 T3 refusal patterns (regex, case-insensitive), matches the
rules' abstention pack (issue 13: how RAG bots say their documents do not answer; an empty
answer is a refusal when the pack says so; an abstention that hedges a partial answer, after one of
the pack's contrast words in its sentence, does not refuse it), or holds something close to the reference
implementation's refusal flag "I apologize, but I couldn't find an answer" (fuzzy: difflib
ratio over a sliding window of words). A bot profile's own refusal phrases count too.
Curly apostrophes count like straight ones. Pure: no duckdb, no streamlit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from evaluator.pipeline.judges.base import JudgeVerdict
from evaluator.rules.matchers import compile_pattern, compile_rule
from evaluator.rules.model import PatternRule

if TYPE_CHECKING:
    from evaluator.rules.load import Rules

REFERENCE_REFUSAL_FLAG = "I apologize, but I couldn't find an answer"
DEFAULT_FUZZY_THRESHOLD = 0.8

# Apostrophe look-alikes -> "'" (one character for one, so offsets into the answer hold).
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "\uff07": "'"})
# A white-space separated word; group 1 is its core, from its first to its last word
# character or apostrophe (a word without either has no core and is skipped).
_WORD_CORE = re.compile(r"[^\s\w']*([\w'](?:\S*[\w'])?)[^\s\w']*")


def straighten(text: str) -> str:
    """Curly and other look-alike apostrophes replaced by ``'``; length is unchanged."""
    return text.translate(_APOSTROPHES)


def _words(text: str) -> list[tuple[str, int, int]]:
    """(normalised word, start, end) for every white-space separated word of ``text``."""
    return [(m.group(1).lower(), m.start(1), m.end(1)) for m in _WORD_CORE.finditer(straighten(text))]


class HeuristicJudge:
    """Phrase-, pattern- and fuzzy-flag-based refusal judge, parametrised by its lists."""

    name = "heuristic"
    model = "rules"  # cache/metric key companion of ``name``; the heuristic has no model

    def __init__(
        self,
        refusal_phrases: Iterable[str],
        refusal_patterns: Iterable[str | Any] = (),
        *,
        fuzzy_flags: Iterable[str] = (REFERENCE_REFUSAL_FLAG,),
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
        abstention_patterns: Iterable[str | Any] = (),
        abstention_version: str = "",
        empty_is_refusal: bool = False,
        hedge_markers: Iterable[str] = (),
        apology_words: Iterable[str] = (),
    ) -> None:
        if not 0.0 < fuzzy_threshold <= 1.0:
            raise ValueError(f"fuzzy_threshold must be in (0, 1], got {fuzzy_threshold}")
        self.refusal_phrases = tuple(refusal_phrases)
        self.refusal_patterns = tuple(refusal_patterns)
        self.fuzzy_flags = tuple(fuzzy_flags)
        self.fuzzy_threshold = fuzzy_threshold
        self._phrases = [
            (p, _compiled(re.escape(straighten(p)), True)) for p in self.refusal_phrases if p
        ]
        # A string pattern is case-insensitive; a compiled one (RE2) keeps its own flags.
        self._patterns = [(p.pattern, p) if not isinstance(p, str) else (p, _compiled(p, True))
                          for p in self.refusal_patterns]
        self._flags = [(f, [w for w, _, _ in _words(f)]) for f in self.fuzzy_flags]
        self.abstention_version = abstention_version
        self.empty_is_refusal = empty_is_refusal
        self._abstention = [(p.pattern, p) if not isinstance(p, str) else (p, _compiled(p, True))
                            for p in abstention_patterns]
        self.hedge_markers = tuple(w for w in hedge_markers if w.strip())
        self._hedge = _words_rx(self.hedge_markers)
        self._apology = _words_rx(tuple(w for w in apology_words if w.strip()))

    @classmethod
    def from_rules(cls, rules: Rules | None = None, *, profile: str | None = None, **kwargs: Any) -> HeuristicJudge:
        """Build from a ``Rules`` object (default: the shipped rules file): the §5 phrases and
        the ``profile``'s own refusal phrases, the §4 patterns, the abstention pack."""
        if rules is None:
            from evaluator.rules.load import load_rules

            rules = load_rules()
        own = rules.profile(profile).refusal_phrases if profile is not None else ()
        phrases = tuple(rules.refusal_phrases) + tuple(p for p in own if p not in rules.refusal_phrases)
        patterns = [_compiled(r.pattern, r.ignore_case) for r in rules.refusal]
        pack = rules.abstention
        kwargs.setdefault("abstention_patterns", [_compiled(r.pattern, r.ignore_case) for r in pack.patterns])
        kwargs.setdefault("abstention_version", pack.version)
        kwargs.setdefault("empty_is_refusal", pack.empty_is_refusal)
        kwargs.setdefault("hedge_markers", pack.hedge_markers)
        kwargs.setdefault("apology_words", pack.apology_words)
        return cls(phrases, patterns, **kwargs)

    @property
    def phrase_texts(self) -> tuple[str, ...]:
        """The phrases as matched: straightened, non-empty, case-insensitive literals."""
        return tuple(straighten(p) for p, _ in self._phrases)

    @property
    def regexes(self) -> tuple[Any, ...]:
        """The compiled patterns any match of which refuses: the refusal patterns, and the
        abstention pack's unless the judge knows hedges (then see ``hedged_regexes``)."""
        firm = tuple(rx for _, rx in self._patterns)
        return firm if self._hedge is not None else firm + tuple(rx for _, rx in self._abstention)

    @property
    def hedged_regexes(self) -> tuple[Any, ...]:
        """The abstention patterns whose matches refuse unless they hedge (empty without hedges)."""
        return tuple(rx for _, rx in self._abstention) if self._hedge is not None else ()

    @property
    def flag_words(self) -> tuple[tuple[str, ...], ...]:
        """The fuzzy refusal flags as the judge's normalised words (empty flags left out)."""
        return tuple(tuple(words) for _, words in self._flags if words)

    def judge(self, question: str, answer: str) -> JudgeVerdict:
        text = straighten(answer)
        for phrase, rx in self._phrases:
            m = rx.search(text)
            if m:
                return JudgeVerdict(True, f"refusal phrase {phrase!r}", answer[m.start() : m.end()])
        for pattern, rx in self._patterns:
            m = rx.search(text)
            if m:
                return JudgeVerdict(True, f"refusal pattern {pattern!r}", answer[m.start() : m.end()])
        if self.empty_is_refusal and not answer.strip():
            return JudgeVerdict(True, f"empty answer (abstention pack {self.abstention_version})", None)
        asked: frozenset[str] | None = None  # the question's content words, once a hedge needs them
        for _pattern, rx in self._abstention:
            for m in rx.finditer(text):
                if self._hedge is not None and asked is None:
                    asked = content_words(question)
                if not self._hedges(text, m.start(), asked or frozenset()):
                    return JudgeVerdict(True, f"abstention pattern of pack {self.abstention_version}: "
                                              f"{answer[m.start() : m.end()]!r}", answer[m.start() : m.end()])
        fuzzy = self._fuzzy_match(answer)
        if fuzzy is not None:
            flag, ratio, span = fuzzy
            return JudgeVerdict(True, f"close to refusal flag {flag!r} (similarity {ratio:.2f})", span)
        return JudgeVerdict(False, "no refusal phrase, pattern, abstention or refusal flag found", None)

    def _hedges(self, text: str, start: int, asked: frozenset[str]) -> bool:
        """Does the abstention at ``start`` hedge a partial answer? Its sentence, before it, holds a
        contrast word that no apology precedes and that some answer comes before ("X. However, the
        exact date is not mentioned in the document", not "I'm sorry, but the document does not
        say" nor "However, the context does not say"), and what the sentence says
        is missing, after that word, is not what was asked (a content word of the question:
        "The score was 3-1, but the passage does not give the attendance" refuses "What was the
        attendance?")."""
        if self._hedge is None:
            return False
        sentence = max(text.rfind(end, 0, start) for end in SENTENCE_ENDS) + 1
        ends = [i for i in (text.find(end, start) for end in SENTENCE_ENDS) if i >= 0]
        sentence_end = min(ends) if ends else len(text)
        for marker in self._hedge.finditer(text, sentence, start):
            if self._apology is not None and self._apology.search(text, sentence, marker.start()):
                continue
            if len(content_words(text[:marker.start()]) - PLEASANTRIES) < PARTIAL_ANSWER_WORDS:
                return False  # nothing answered before the contrast ("However, the context does not say")
            return not content_words(text[marker.end():sentence_end]) & asked
        return False

    def _fuzzy_match(self, answer: str) -> tuple[str, float, str] | None:
        """Best window of words (flag length ± 2) whose similarity reaches the threshold."""
        words = _words(answer)
        best: tuple[str, float, str] | None = None
        for flag, flag_words in self._flags:
            if not flag_words:
                continue
            target = " ".join(flag_words)
            n = len(flag_words)
            # Cheap pre-filter: a window sharing under half of the flag's words is skipped.
            vocab = set(flag_words)
            hits = [0]
            for w, _, _ in words:
                hits.append(hits[-1] + (w in vocab))
            min_hits = max(1, n // 2)
            for size in range(max(1, n - 2), n + 3):
                for i in range(0, len(words) - size + 1):
                    if hits[i + size] - hits[i] < min_hits:
                        continue
                    window = words[i : i + size]
                    matcher = difflib.SequenceMatcher(None, target, " ".join(w for w, _, _ in window))
                    if matcher.real_quick_ratio() < self.fuzzy_threshold:
                        continue
                    if matcher.quick_ratio() < self.fuzzy_threshold:
                        continue
                    ratio = matcher.ratio()
                    if ratio >= self.fuzzy_threshold and (best is None or ratio > best[1]):
                        best = (flag, ratio, answer[window[0][1] : window[-1][2]])
        return best


SENTENCE_ENDS = (".", "!", "?", "\n")  # what ends a sentence, for the hedges
# Words too common in questions to say what was asked (with words under four letters).
QUESTION_WORDS = frozenset({
    "what", "when", "where", "which", "whom", "whose", "does", "were", "will", "would", "could", "should",
    "shall", "might", "must", "have", "been", "being", "this", "that", "these", "those", "with", "from",
    "into", "about", "there", "their", "they", "them", "than", "then", "also", "some", "many", "much", "more",
    "most", "such", "very", "just", "only"
})
_CONTENT_WORD = re.compile(r"[a-z0-9']+")
# A partial answer before a hedge says something: this many content words, not counting pleasantries.
PARTIAL_ANSWER_WORDS = 3
PLEASANTRIES = frozenset({"hello", "sure", "happy", "glad", "help", "thanks", "thank", "great", "question",
                          "certainly", "course", "searched", "looked", "checked", "context", "document",
                          "documents", "provided", "information", "based", "passage", "article", "text"})


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: lower case, four letters or more, not
    QUESTION_WORDS."""
    return frozenset(w for w in _CONTENT_WORD.findall(straighten(text).lower())
                     if len(w) >= 4 and w not in QUESTION_WORDS)


def _words_rx(words: tuple[str, ...]) -> Any | None:
    """Any of ``words`` as a whole word (or words), case-insensitive; None for no words."""
    if not words:
        return None
    return compile_pattern(r"(?i:\b(?:" + "|".join(r"\s+".join(map(re.escape, straighten(w).split())) for w in words)
                           + r")\b)")


def _compiled(pattern: str, ignore_case: bool) -> Any:
    return compile_rule(PatternRule(pattern, ignore_case))
