"""The rules as data (SPEC §7): what a rules file says, as frozen dataclasses (pure).

``evaluator.rules.load`` reads and validates a file into these; ``evaluator.rules.matchers`` compiles them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatternRule:
    pattern: str
    ignore_case: bool = True


LITERAL_NOUNS = "literal"  # SPEC §5: every match of the proper-noun pattern is a candidate
REFINED_NOUNS = "refined"  # issue 13: leading capitalised function words are not part of a name
PROPER_NOUN_MODES = (LITERAL_NOUNS, REFINED_NOUNS)
NOT_APPLICABLE_TO_BOT = "not applicable to this bot"


@dataclass(frozen=True)
class RuleSet:
    name: str
    t3_not_applicable: tuple[str, ...]
    proper_nouns: str = LITERAL_NOUNS
    function_words: tuple[str, ...] = ()  # dropped from the start of a candidate (refined)
    # the opt-in flags (registered with opt_in=True, e.g. unsupported_claim) raised under this rule set
    extra_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClaimSupport:
    """The ``[flags.unsupported_claim]`` options (issue 30; evaluator/core/support.py uses them)."""

    min_words: int = 3  # a sentence with fewer content words is judged by its numbers only
    max_unsupported: float = 0.3  # share of content words absent from the context that makes it unsupported
    prefix: int = 5  # words are compared by their first ``prefix`` characters (numbers whole)
    numbers: bool = True  # a number absent from the context makes its sentence unsupported
    stop_words: tuple[str, ...] = ()  # lower case; never content words


@dataclass(frozen=True)
class FlagRule:
    name: str
    severity: str
    banner: str


@dataclass(frozen=True)
class Profile:
    name: str
    checks: tuple[str, ...]
    citation_pattern: str  # "" = the bot does not cite
    allowlist: tuple[str, ...]
    interpretation_markers: tuple[str, ...]
    # answers_question follows answerability: an unanswerable question must be refused
    answerability: bool = False
    # refusals are also what the abstention pack and the SPEC §5 phrases say (not only §4 patterns)
    abstention: bool = False
    refusal_phrases: tuple[str, ...] = ()  # this bot's own ways of refusing (literal phrases)
    gold_max_words: int = 0  # compare only gold answers this short (0: every gold answer)
    not_applicable_reason: str = NOT_APPLICABLE_TO_BOT  # for the checks the profile leaves out
    # what this bot's citations cite, for reason strings ("shloka": "no inline shloka citation");
    # "" = said generically ("no inline citation", "the retrieved items")
    citation_noun: str = ""


@dataclass(frozen=True)
class AbstentionPack:
    """How RAG bots say they cannot answer from their documents (issue 13 §3), versioned."""

    version: str = ""
    empty_is_refusal: bool = False
    patterns: tuple[PatternRule, ...] = ()
    # The refusal judge's hedges (issue 28): an abstention that follows one of these contrast words
    # in its sentence ("X is Y. However, the exact date is not mentioned in the document") qualifies
    # a partial answer and does not refuse it, unless the clause before the word is an apology
    # ("I'm sorry, but the document does not say"). Empty: every abstention refuses.
    hedge_markers: tuple[str, ...] = ()
    apology_words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rules:
    name: str
    schema: int
    min_score: float
    template_routes: tuple[tuple[str, str], ...]
    rulesets: tuple[RuleSet, ...]
    refusal: tuple[PatternRule, ...]
    redirect: tuple[PatternRule, ...]
    substantive: tuple[PatternRule, ...]
    refusal_phrases: tuple[str, ...]  # SPEC §5 refusal_detected phrases
    price: PatternRule
    proper_noun: PatternRule
    exempt_question_terms: bool
    flag_rules: tuple[FlagRule, ...]
    profiles: tuple[Profile, ...]
    text: str  # the rules file as read
    source: str  # where it was read from
    hash: str  # sha256 of the canonical content (comments and layout do not count)
    abstention: AbstentionPack = AbstentionPack()
    claim_support: ClaimSupport = ClaimSupport()

    @property
    def refusal_patterns(self) -> tuple[str, ...]:
        """The SPEC §4 refusal regexes (case-insensitive unless marked otherwise)."""
        return tuple(p.pattern for p in self.refusal)

    @property
    def ruleset_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rulesets)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)

    def ruleset(self, name: str) -> RuleSet:
        for r in self.rulesets:
            if r.name == name:
                return r
        raise ValueError(f"unknown rule set {name!r}; {self.source} defines: {', '.join(self.ruleset_names)}")

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise ValueError(f"unknown profile {name!r}; {self.source} defines: {', '.join(self.profile_names)}")

    def flag_rule(self, flag: str) -> FlagRule:
        for f in self.flag_rules:
            if f.name == flag:
                return f
        raise KeyError(flag)

    def severity(self, flag: str) -> str:
        return self.flag_rule(flag).severity

    def banner(self, flag: str) -> str | None:
        """The banner text of a flag, or None when it has none."""
        return self.flag_rule(flag).banner or None
