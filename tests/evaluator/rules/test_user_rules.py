"""A user's rules file on top of the defaults (issue 13 §2): the worked "my own bot" example,
pure and through the real CLI."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.core.evaluate import evaluate
from evaluator.core.types import FAIL, NA, PASS, ResponseInput, RetrievedItem
from evaluator.pipeline.judges.heuristic import HeuristicJudge
from evaluator.rules.load import Rules, load_rules, rules_from_text
from evaluator.rules.merge import merge, to_toml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
MY_BOT = FIXTURES / "my_bot.toml"
MY_RUN = FIXTURES / "my_bot_run.jsonl"


@pytest.fixture(scope="module")
def mine() -> Rules:
    return load_rules(MY_BOT)


def acme(answer: str, **fields: object) -> ResponseInput:
    doc = RetrievedItem("doc-1", "Acme Cloud backups are kept for 30 days.", None)
    return ResponseInput("q", "How long are backups kept?", "acme", answer, retrieved=(doc,), **fields)  # type: ignore[arg-type]


# --- merging -----------------------------------------------------------------------------------


def test_user_file_adds_its_profile_and_keeps_the_default_ones(mine: Rules) -> None:
    assert mine.profile_names == ("ramayana", "clearpath", "rag", "my_bot")


def test_user_file_adds_its_rule_set_and_keeps_the_default_ones(mine: Rules) -> None:
    assert mine.ruleset_names == ("legacy", "t3_aware", "refined", "grounded", "acme_strict")


def test_user_file_leaves_the_other_rules_as_they_are(mine: Rules, rules: Rules) -> None:
    assert (mine.min_score, mine.refusal_phrases, mine.abstention) == (
        rules.min_score, rules.refusal_phrases, rules.abstention)


def test_merged_text_is_complete_and_reads_back_to_the_same_rules(mine: Rules) -> None:
    again = rules_from_text(mine.text, "stored")
    assert again.hash == mine.hash
    assert again.profile("my_bot") == mine.profile("my_bot")


def test_merged_rules_remember_the_user_file(mine: Rules) -> None:
    assert mine.source == str(MY_BOT)


def test_a_user_file_error_names_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('[profiles.mine]\nchecks = ["no_halucination"]\ncitation_pattern = ""\nallowlist = []\n'
                    "interpretation_markers = []\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"typo\.toml: key 'profiles\.mine\.checks\[0\]': unknown check"):
        load_rules(path)


def test_a_user_profile_with_an_unknown_option_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('[profiles.mine]\nchecks = []\ncitation_pattern = ""\nallowlist = []\n'
                    "interpretation_markers = []\nanswerabilty = true\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"key 'profiles\.mine\.answerabilty': unknown key"):
        load_rules(path)


def test_merge_merges_tables_and_replaces_values() -> None:
    base = {"a": {"x": 1, "y": [1]}, "b": 2}
    assert merge(base, {"a": {"y": [2], "z": 3}}) == {"a": {"x": 1, "y": [2], "z": 3}, "b": 2}


scalars = st.one_of(st.text(), st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(), inner, max_size=3)), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=4))
def test_to_toml_reads_back_as_the_same_data(data: dict) -> None:
    assert tomllib.loads(to_toml(data)) == data


# --- the profile's rules -------------------------------------------------------------------------


def test_user_refusal_phrase_answers_an_unanswerable_question(mine: Rules) -> None:
    ev = evaluate(acme("Let me transfer you to billing.", answerable=False), ruleset="t3_aware", rules=mine,
                  profile="my_bot")
    assert ev.check("answers_question").verdict == PASS
    assert [s.text for s in ev.check("answers_question").spans] == ["Let me transfer you"]


def test_user_citation_pattern_is_checked_against_retrieved_ids(mine: Rules) -> None:
    ev = evaluate(acme("Kept for 30 days [doc-1], see [doc-7].", answerable=True), ruleset="t3_aware", rules=mine,
                  profile="my_bot")
    assert ev.check("cites_shlokas").verdict == PASS
    assert ev.check("no_hallucination").verdict == FAIL
    assert "doc-7" in ev.check("no_hallucination").reason


def test_user_allowlist_is_never_a_hallucination(mine: Rules) -> None:
    ev = evaluate(acme("Acme Helpdesk says 30 days [doc-1].", answerable=True), ruleset="t3_aware", rules=mine,
                  profile="my_bot")
    assert ev.check("no_hallucination").verdict == PASS


def test_heuristic_judge_takes_the_profile_refusal_phrases(mine: Rules) -> None:
    judge = HeuristicJudge.from_rules(mine, profile="my_bot")
    assert judge.judge("q", "Please contact a human agent.").refused


# --- through the real CLI ---------------------------------------------------------------------------


@pytest.fixture
def my_store(cli, db_path: Path) -> Path:
    cli("ingest", str(MY_RUN), "--rules", str(MY_BOT), "--profile", "my_bot", db=db_path, check=True)
    return db_path


def export(cli, db: Path, tmp_path: Path, *args: str) -> dict[str, dict]:
    out = tmp_path / "out.jsonl"
    cli("export", "--run", "my_bot_run", *args, "--out", str(out), db=db, check=True)
    return {row["question_id"]: row for row in map(json.loads, out.read_text().splitlines())}


def test_cli_recompute_under_the_user_rule_set(cli, my_store: Path) -> None:
    done = cli("recompute", "--run", "my_bot_run", "--ruleset", "acme_strict", "--rules", str(MY_BOT), "--json",
               db=my_store, check=True)
    assert json.loads(done.stdout)["ruleset"] == "acme_strict"


def test_cli_my_bot_verdicts(cli, my_store: Path, tmp_path: Path) -> None:
    rows = export(cli, my_store, tmp_path, "--ruleset", "acme_strict", "--rules", str(MY_BOT))
    got = {q: (r["answers_question"], r["cites_shlokas"], r["no_hallucination"], r["overall"])
           for q, r in rows.items()}
    assert got == {
        "q1": (PASS, PASS, PASS, PASS),   # answered with the gold answer, cited
        "q2": (PASS, PASS, PASS, PASS),
        "q3": (PASS, PASS, PASS, PASS),
        "q4": (PASS, NA, PASS, PASS),     # unanswerable, refused: the abstention pack
        "q5": (PASS, NA, PASS, PASS),     # unanswerable, refused: the bot's own phrase
        "q6": (FAIL, NA, FAIL, FAIL),     # unanswerable, answered with an invented name
    }


def test_cli_unscored_contexts_raise_no_no_context_warning(cli, my_store: Path, tmp_path: Path) -> None:
    rows = export(cli, my_store, tmp_path, "--ruleset", "t3_aware", "--rules", str(MY_BOT))
    assert not [q for q, r in rows.items() if any(f["flag"] == "no_context_warning" for f in r["flags"])]


def test_cli_user_rule_set_without_its_rules_file_is_a_clear_error(cli, my_store: Path) -> None:
    done = cli("recompute", "--run", "my_bot_run", "--ruleset", "acme_strict", db=my_store)
    assert done.returncode == 2
    assert "unknown rule set 'acme_strict'" in done.stderr
    assert "legacy, t3_aware, refined" in done.stderr


def test_cli_profile_missing_from_the_rules_is_a_clear_error(cli, my_store: Path) -> None:
    done = cli("recompute", "--run", "my_bot_run", "--ruleset", "t3_aware", db=my_store)
    assert done.returncode == 2
    assert "profile 'my_bot', which the rules" in done.stderr


def test_cli_recompute_under_another_profile(cli, my_store: Path, tmp_path: Path) -> None:
    cli("recompute", "--run", "my_bot_run", "--ruleset", "t3_aware", "--profile", "rag", db=my_store, check=True)
    rows = export(cli, my_store, tmp_path, "--ruleset", "t3_aware")
    assert rows["q1"]["cites_shlokas"] == NA  # rag has no citation pattern


def test_cli_metrics_judge_uses_the_profile_refusal_phrases(cli, my_store: Path, tmp_path: Path) -> None:
    cli("metrics", "--run", "my_bot_run", "--rules", str(MY_BOT), db=my_store, check=True)
    rows = export(cli, my_store, tmp_path, "--ruleset", "acme_strict", "--rules", str(MY_BOT))
    assert {q: r["refused"] for q, r in rows.items()} == {
        "q1": False, "q2": False, "q3": False, "q4": True, "q5": True, "q6": False}


def test_the_readme_example_is_the_rules_file_these_tests_run() -> None:
    root = Path(__file__).resolve().parents[3]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## My own bot"):]
    shown = re.search(r"```toml\n(.*?)```", section, re.S)
    assert shown is not None
    fixture = (root / "tests" / "fixtures" / "rules" / "my_bot.toml").read_text(encoding="utf-8")
    assert tomllib.loads(shown.group(1)) == tomllib.loads(fixture)
