"""What a change of rule set does, in one sentence (pure): the Before/after page's "what changed".

Generated from the two rule sets' difference, never written by hand, so a user's own rule sets
are described as well as the shipped ones: e.g. "t3_aware marks retrieval_check and cites_shlokas
N/A on T3 responses (refusals of out-of-scope requests)".
"""

from __future__ import annotations

from evaluator.rules.model import REFINED_NOUNS, Profile, Rules, RuleSet

T3_WORDS = "T3 responses (refusals of out-of-scope requests)"
TEMPLATE_WORDS = {
    "T1": "T1 = a textual answer (facts from the text, with citations)",
    "T2": "T2 = an interpretive answer (an interpretation, with citations)",
    "T3": "T3 = a refusal of an out-of-scope request, redirecting to what the bot can answer",
}
# Top-level rules whose difference changes verdicts, as a reader would name them.
RULE_FIELDS = {
    "min_score": "the retrieval threshold", "template_routes": "the template routes",
    "refusal": "the refusal patterns", "redirect": "the redirect patterns",
    "substantive": "the substantive-answer patterns", "refusal_phrases": "the refusal phrases",
    "price": "the price pattern", "proper_noun": "the proper-noun pattern",
    "exempt_question_terms": "the exemption of the question's own words", "abstention": "the abstention pack",
}
PROFILE_FIELDS = {
    "checks": "the checks that apply", "citation_pattern": "the citation pattern", "allowlist": "the allowlist",
    "interpretation_markers": "the interpretation markers", "answerability": "the answerability rule",
    "abstention": "the profile's abstention rule", "refusal_phrases": "the bot's refusal phrases",
    "gold_max_words": "the gold-answer length", "not_applicable_reason": "the N/A reason",
}


# Peer tools whose files carry their own grades as the recorded verdicts (runs.source_format), by name.
PEER_TOOLS = {"inspectorraget": "InspectorRAGet", "promptfoo": "promptfoo", "inspect": "Inspect", "ragas": "Ragas",
              "deepeval": "DeepEval", "phoenix": "Phoenix"}


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ruleset_changes(name_b: str, a: RuleSet, b: RuleSet) -> list[str]:
    said = []
    added = [c for c in b.t3_not_applicable if c not in a.t3_not_applicable]
    dropped = [c for c in a.t3_not_applicable if c not in b.t3_not_applicable]
    if added:
        said.append(f"{name_b} marks {_names(added)} N/A on {T3_WORDS}")
    if dropped:
        said.append(f"{name_b} requires {_names(dropped)} on T3 responses again")
    if a.proper_nouns != b.proper_nouns:
        said.append(f"{name_b} uses the refined proper-noun rule (a leading capitalised word such as “The” is "
                    "not part of a name)" if b.proper_nouns == REFINED_NOUNS
                    else f"{name_b} uses the literal proper-noun rule of SPEC §5")
    elif b.proper_nouns == REFINED_NOUNS and set(a.function_words) != set(b.function_words):
        more, fewer = len(set(b.function_words) - set(a.function_words)), len(set(a.function_words) -
                                                                               set(b.function_words))
        said.append(f"{name_b} drops {more} more and {fewer} fewer leading words from proper nouns")
    return said


def _field_changes(a: object, b: object, fields: dict[str, str]) -> list[str]:
    return [words for field, words in fields.items() if getattr(a, field, None) != getattr(b, field, None)]


def describe_change(name_a: str, rules_a: Rules | None, name_b: str, rules_b: Rules,
                    profile: str | None = None, *, recorded_by: str | None = None) -> str:
    """One sentence: what evaluating under `name_b` (of `rules_b`) does differently from `name_a`
    (of `rules_a`; None = the run file's recorded verdicts, compared through `rules_b`'s legacy rule
    set when it has one). `profile` names the run's bot profile, whose settings are compared too.
    `recorded_by` is the run file's format: a peer tool's recorded verdicts are its own scorers'
    grades, which no rule set of ours reproduces."""
    prefix = ""
    if rules_a is None and recorded_by in PEER_TOOLS:
        tool = PEER_TOOLS[recorded_by]
        return (f"A holds the grades {tool} recorded in the run file (its own scorers, kept as checks named "
                f"{recorded_by}:…); B re-evaluates every response under {name_b} with this product's checks. They "
                "measure different things: a verdict that differs is not a change of rules.")
    if rules_a is None:
        if "legacy" not in rules_b.ruleset_names or name_b == "legacy":
            return (f"A holds the verdicts recorded in the run file, from the evaluator that produced it; B "
                    f"re-evaluates every response under {name_b}.")
        prefix = "Against the run file's recorded verdicts (from the old evaluator, as legacy reproduces it): "
        name_a, rules_a = "legacy", rules_b
    said = _ruleset_changes(name_b, rules_a.ruleset(name_a), rules_b.ruleset(name_b))
    other = _field_changes(rules_a, rules_b, RULE_FIELDS)
    if profile and profile in rules_a.profile_names and profile in rules_b.profile_names:
        pa: Profile = rules_a.profile(profile)
        other += _field_changes(pa, rules_b.profile(profile), PROFILE_FIELDS)
    if other:
        said.append(f"its rules file also differs in {_names(other)}")
    if not said:
        return (prefix + f"{name_a} and {name_b} apply the same rules: a verdict that differs comes from the "
                "responses or from reviewers, not from the rules.")
    return prefix + "; ".join(said) + "."
