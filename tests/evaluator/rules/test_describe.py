"""The Before/after sentence is generated from the two rule sets' difference (issue 31)."""

from __future__ import annotations

from evaluator.rules.describe import describe_change
from evaluator.rules.load import load_rules, rules_from_text


def test_shipped_rule_sets() -> None:
    rules = load_rules()
    assert describe_change("legacy", rules, "t3_aware", rules) == (
        "t3_aware marks retrieval_check and cites_shlokas N/A on T3 responses (refusals of out-of-scope requests).")
    assert "refined proper-noun rule" in describe_change("t3_aware", rules, "refined", rules)
    assert describe_change("t3_aware", rules, "t3_aware", rules).endswith("not from the rules.")
    said = describe_change("recorded", None, "t3_aware", rules)
    assert said.startswith("Against the run file's recorded verdicts") and "t3_aware marks" in said


def test_a_user_rule_set_and_other_rule_changes_are_described() -> None:
    base = load_rules()
    text = base.text.replace("min_score = 0.35", "min_score = 0.5") + (
        '\n[rulesets.mine]\nt3_not_applicable = ["cites_shlokas"]\n')
    mine = rules_from_text(text)
    said = describe_change("legacy", base, "mine", mine, "ramayana")
    assert said == ("mine marks cites_shlokas N/A on T3 responses (refusals of out-of-scope requests); its rules "
                    "file also differs in the retrieval threshold.")
