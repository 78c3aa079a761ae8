"""Compiled rules: ready-to-use matchers, built once per rules hash (pure).

Every pattern is an RE2 pattern (google-re2 here, DuckDB's RE2 in SQL: one meaning). A
case-insensitive pattern is matched as ``(?i:...)`` on the *straightened* answer (curly quotes
replaced by straight ones, length-preserving), so match offsets index the original answer. RE2
matches in time linear in the text: no pattern can hang a recompute or a preview.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

from evaluator.rules.model import REFINED_NOUNS, PatternRule, Profile, Rules
from evaluator.rules.text_norm import norm_term, straighten

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported by the rules loader, not printed by RE2


def re2_source(rule: PatternRule) -> str:
    """The rule's regex as RE2 matches it: on straightened text, ``(?i:...)`` unless case-sensitive."""
    source = straighten(rule.pattern)
    return f"(?i:{source})" if rule.ignore_case else source


def compile_pattern(source: str) -> Any:
    """An RE2 program for ``source``; ``re2.error`` names what RE2 refuses (lookaround, ``\\1``, ...)."""
    return re2.compile(source, _OPTIONS)


def compile_rule(rule: PatternRule) -> Any:
    return compile_pattern(re2_source(rule))


def phrase_rule(phrase: str) -> PatternRule:
    """A literal, case-insensitive phrase; a space matches any run of white space."""
    return PatternRule(r"\s+".join(re.escape(part) for part in straighten(phrase).split()), True)


class Matcher:
    """One pattern, matched with RE2 on straightened text (or its bytes, when ASCII)."""

    __slots__ = ("pattern", "source", "rx")

    def __init__(self, rule: PatternRule) -> None:
        self.pattern = rule.pattern
        self.source = re2_source(rule)
        self.rx = compile_pattern(self.source)

    def search(self, subject: str | bytes, pos: int = 0) -> Any:
        """The first match starting at or after ``pos``."""
        return self.rx.search(subject, pos)

    def finditer(self, subject: str | bytes) -> Iterator[Any]:
        return self.rx.finditer(subject)


class MatcherSet:
    """Several patterns; the set matches if any matches. ``any`` asks RE2 once for the whole list
    (an ``re2.Set``: one pass over the text, however many patterns)."""

    __slots__ = ("matchers", "_set")

    def __init__(self, rules: tuple[PatternRule, ...]) -> None:
        self.matchers = tuple(Matcher(r) for r in rules)
        self._set: Any = None
        if self.matchers:
            candidate = re2.Set.SearchSet(_OPTIONS)
            try:
                for m in self.matchers:
                    candidate.Add(m.source)
                candidate.Compile()
                self._set = candidate
            except re2.error:  # past RE2's memory budget for one program: pattern by pattern
                self._set = None

    def any(self, subject: str | bytes) -> bool:
        """Whether some pattern matches ``subject`` (the straightened text, or its UTF-8 bytes)."""
        if self._set is not None:
            return bool(self._set.Match(subject))
        return any(m.rx.search(subject) is not None for m in self.matchers)

    def __bool__(self) -> bool:
        return bool(self.matchers)

    def search(self, subject: str | bytes) -> Any:
        """Some match (the first pattern's that matches), or None."""
        for matcher in self.matchers:
            hit = matcher.rx.search(subject)
            if hit is not None:
                return hit
        return None

    def finditer(self, subject: str | bytes) -> Iterator[Any]:
        """Every pattern's matches, pattern by pattern."""
        for m in self.matchers:
            yield from m.rx.finditer(subject)


@dataclass(frozen=True)
class CompiledProfile:
    profile: Profile
    checks: frozenset[str]
    citation: Any
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
        citation = compile_pattern(p.citation_pattern) if p.citation_pattern else None
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
