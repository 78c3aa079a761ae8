"""Compiled rules: ready-to-use matchers, built once per rules hash (pure).

Matching semantics: a case-insensitive pattern is matched with ``re.IGNORECASE`` on the
*straightened* answer (curly quotes replaced by straight ones with a length-preserving
character map), so match offsets index the original answer. For speed, each
case-insensitive pattern also gets a case-folded twin (``evaluator.rules.regex_fold``) that runs
without IGNORECASE on a length-preserving case-folded copy of the text: a necessary
condition that is checked first; the IGNORECASE pattern then confirms from the twin's
match position.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from evaluator.core.text_norm import norm_term, straighten
from evaluator.rules.model import REFINED_NOUNS, PatternRule, Profile, Rules
from evaluator.rules.regex_fold import fast_plain, folded_twin


def compile_rule(rule: PatternRule) -> re.Pattern[str]:
    """The rule's regex as it is matched: on straightened text, IGNORECASE unless case-sensitive."""
    return re.compile(straighten(rule.pattern), re.IGNORECASE if rule.ignore_case else 0)


def phrase_rule(phrase: str) -> PatternRule:
    """A literal, case-insensitive phrase; a space matches any run of white space."""
    return PatternRule(r"\s+".join(re.escape(part) for part in straighten(phrase).split()), True)


class Matcher:
    """One pattern, matched on straightened text ``qn``; ``folded`` is
    ``casefold_aligned(qn)`` (or None). Matches are exactly those of ``rx`` on ``qn``.

    Speed: text lacking the pattern's keyword is skipped with ``str.__contains__``; a
    case-insensitive pattern first runs its folded twin (fast, no IGNORECASE) on
    ``folded`` and ``rx`` only confirms from the twin's match position."""

    __slots__ = ("pattern", "rx", "fast", "twin", "keyword", "folded_keyword")

    def __init__(self, rule: PatternRule) -> None:
        source = straighten(rule.pattern)
        self.pattern = rule.pattern
        self.rx = compile_rule(rule)
        self.twin: re.Pattern[str] | None = None
        self.folded_keyword: str | None = None
        self.keyword: str | None = None
        if rule.ignore_case:
            self.fast = self.rx
            twin = folded_twin(source)
            if twin is not None:
                self.twin, self.folded_keyword = twin
        else:
            self.fast, self.keyword = fast_plain(source)

    def search(self, qn: str, folded: str | None, pos: int = 0) -> re.Match[str] | None:
        """The first match starting at or after ``pos``."""
        twin = self.twin
        if twin is None or folded is None:
            kw = self.keyword
            if kw is not None and kw not in qn:
                return None
            return self.fast.search(qn, pos)
        kw = self.folded_keyword
        if kw is not None and kw not in folded:
            return None
        m = twin.search(folded, pos)
        if m is None:
            return None
        return self.rx.search(qn, m.start())

    def finditer(self, qn: str, folded: str | None) -> Iterator[re.Match[str]]:
        """Same matches as ``rx.finditer(qn)``."""
        if self.twin is None or folded is None:
            kw = self.keyword
            if kw is None or kw in qn:
                yield from self.fast.finditer(qn)
            return
        pos, n = 0, len(qn)
        while pos <= n:
            m = self.search(qn, folded, pos)
            if m is None:
                return
            if m.end() == m.start():  # empty-match stepping: let re do it from here
                yield from self.rx.finditer(qn, m.start())
                return
            yield m
            pos = m.end()


class MatcherSet:
    """Several patterns; the set matches if any matches."""

    __slots__ = ("matchers", "_plan")

    def __init__(self, rules: tuple[PatternRule, ...]) -> None:
        self.matchers = tuple(Matcher(r) for r in rules)
        self._plan = tuple((m.folded_keyword, m.twin, m.rx, m.keyword, m.fast) for m in self.matchers)

    def __bool__(self) -> bool:
        return bool(self.matchers)

    def search(self, qn: str, folded: str | None, absent: set[str] | None = None) -> re.Match[str] | None:
        """Some match (the first pattern's that matches), or None. ``absent`` collects the
        folded keywords known to be missing from this text (shared across sets)."""
        if folded is None:
            for matcher in self.matchers:
                hit = matcher.search(qn, None)
                if hit is not None:
                    return hit
            return None
        if absent is None:
            absent = set()
        for kw, twin, rx, plain_kw, fast in self._plan:  # Matcher.search, inlined: this is the hot loop
            if twin is not None:
                if kw is not None:
                    if kw in absent:
                        continue
                    if kw not in folded:
                        absent.add(kw)
                        continue
                candidate = twin.search(folded)
                if candidate is None:
                    continue
                found = rx.search(qn, candidate.start())
            else:
                if plain_kw is not None and plain_kw not in qn:
                    continue
                found = fast.search(qn)
            if found is not None:
                return found
        return None

    def finditer(self, qn: str, folded: str | None) -> Iterator[re.Match[str]]:
        """Every pattern's matches, pattern by pattern."""
        for m in self.matchers:
            yield from m.finditer(qn, folded)


@dataclass(frozen=True)
class CompiledProfile:
    profile: Profile
    checks: frozenset[str]
    citation: re.Pattern[str] | None
    citation_has_id: bool
    allowlist: frozenset[str]  # normalised with norm_term
    markers: MatcherSet
    refusals: MatcherSet  # the profile's own refusal phrases


@dataclass(frozen=True)
class CompiledRules:
    rules: Rules
    refusal: MatcherSet
    redirect: MatcherSet
    substantive: MatcherSet
    refusal_phrases: MatcherSet
    price: Matcher
    proper_noun: Matcher
    routes: dict[str, str]
    t3_na: dict[str, frozenset[str]]
    profiles: dict[str, CompiledProfile]
    severities: dict[str, str]
    abstention: MatcherSet
    # rule set -> lower-cased function words a refined proper noun drops from its start (None: literal)
    function_words: dict[str, frozenset[str] | None]

    def refined_nouns(self, ruleset: str) -> frozenset[str] | None:
        return self.function_words.get(ruleset)

    def profile(self, name: str) -> CompiledProfile:
        try:
            return self.profiles[name]
        except KeyError:
            self.rules.profile(name)  # raises the helpful ValueError
            raise

    def t3_not_applicable(self, ruleset: str) -> frozenset[str]:
        try:
            return self.t3_na[ruleset]
        except KeyError:
            self.rules.ruleset(ruleset)
            raise


_COMPILED: dict[str, CompiledRules] = {}


def compiled(rules: Rules) -> CompiledRules:
    """Matchers for ``rules``, built once per rules hash (per process)."""
    done = _COMPILED.get(rules.hash)
    if done is not None:
        return done
    profiles = {}
    for p in rules.profiles:
        citation = re.compile(p.citation_pattern) if p.citation_pattern else None
        profiles[p.name] = CompiledProfile(
            profile=p,
            checks=frozenset(p.checks),
            citation=citation,
            citation_has_id=citation is not None and "id" in citation.groupindex,
            allowlist=frozenset(norm_term(a) for a in p.allowlist),
            markers=MatcherSet(tuple(phrase_rule(m) for m in p.interpretation_markers)),
            refusals=MatcherSet(tuple(phrase_rule(m) for m in p.refusal_phrases)),
        )
    done = CompiledRules(
        rules=rules,
        refusal=MatcherSet(rules.refusal),
        redirect=MatcherSet(rules.redirect),
        substantive=MatcherSet(rules.substantive),
        refusal_phrases=MatcherSet(tuple(phrase_rule(p) for p in rules.refusal_phrases)),
        price=Matcher(rules.price),
        proper_noun=Matcher(rules.proper_noun),
        routes={k.lower(): v.lower() for k, v in rules.template_routes},
        t3_na={r.name: frozenset(r.t3_not_applicable) for r in rules.rulesets},
        profiles=profiles,
        severities={f.name: f.severity for f in rules.flag_rules},
        abstention=MatcherSet(rules.abstention.patterns),
        function_words={r.name: frozenset(w.lower() for w in r.function_words) if r.proper_nouns == REFINED_NOUNS
                        else None for r in rules.rulesets},
    )
    if len(_COMPILED) > 64:
        _COMPILED.clear()
    _COMPILED[rules.hash] = done
    return done
