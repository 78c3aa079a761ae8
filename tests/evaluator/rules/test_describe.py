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


def test_a_peer_tools_recorded_grades_are_not_told_as_the_old_evaluator() -> None:
    """An Inspect or promptfoo file's recorded verdicts are that tool's own grades: no rule set of ours
    reproduces them, and their T3 rule says nothing about them (issue 31's walk, Before/after)."""
    rules = load_rules()
    said = describe_change("recorded", None, "t3_aware", rules, "rag", recorded_by="inspect")
    assert said.startswith("A holds the grades Inspect recorded in the run file")
    assert "inspect:" in said and "legacy" not in said and "T3" not in said
    assert describe_change("recorded", None, "t3_aware", rules, recorded_by="jsonl").startswith(
        "Against the run file's recorded verdicts")
