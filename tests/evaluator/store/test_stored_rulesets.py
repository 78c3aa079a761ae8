"""Saved rule sets: append-only named versions with their hash, and the CLI finding them."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.lab import rule_lab as lab
from evaluator.queries.overview import rulesets
from evaluator.rules.load import load_rules, rules_from_text
from evaluator.store import rulesets as stored_rulesets
from evaluator.store.db import connect


def lab_text(name: str, refusal: str = "the text (states|says)") -> str:
    values = lab.form_values(load_rules(), "ramayana")
    values["refusal_patterns"] = f"{values['refusal_patterns']}\n{refusal}"
    return lab.edit(load_rules(), "ramayana", values).text_as(name, "t3_aware")


def rows(db: Path) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute("SELECT name, version, rules_hash, rules_text, created_at, created_by "
                           "FROM saved_rulesets ORDER BY name, version").fetchall()


def test_saving_again_adds_a_version_and_keeps_the_first(db_path: Path) -> None:
    with connect(db_path) as con:
        first = stored_rulesets.save(con, "strict", lab_text("strict"), created_by="pm")
        second = stored_rulesets.save(con, "strict", lab_text("strict", "says the text"))
    assert (first.version, second.version) == (1, 2)
    stored = rows(db_path)
    assert [r[1] for r in stored] == [1, 2]
    assert stored[0][2:4] == (first.rules_hash, first.rules_text)
    assert stored[0][5] == "pm"


def test_a_version_stores_the_hash_of_its_rules(db_path: Path) -> None:
    text = lab_text("strict")
    with connect(db_path) as con:
        saved = stored_rulesets.save(con, "strict", text)
    assert saved.rules_hash == rules_from_text(text).hash
    assert saved.rules().ruleset_names[-1] == "strict"


@pytest.mark.parametrize("name", ["", "with space", "semi;colon", "é", "x" * 65, "t3_aware", "recorded"])
def test_bad_names_are_refused_and_nothing_is_written(db_path: Path, name: str) -> None:
    with connect(db_path) as con, pytest.raises(ValueError, match="^name: "):
        stored_rulesets.save(con, name, lab_text("strict"))
    assert rows(db_path) == []


def test_a_text_without_the_named_rule_set_is_refused(db_path: Path) -> None:
    with connect(db_path) as con, pytest.raises(ValueError, match="does not define rule set 'other'"):
        stored_rulesets.save(con, "other", lab_text("strict"))
    assert rows(db_path) == []


def test_latest_version_is_found_by_name(db_path: Path) -> None:
    with connect(db_path) as con:
        stored_rulesets.save(con, "strict", lab_text("strict"))
        second = stored_rulesets.save(con, "strict", lab_text("strict", "says the text"))
        assert stored_rulesets.version_of(con, "strict") == second
        assert stored_rulesets.names(con) == ["strict"]
        assert stored_rulesets.version_of(con, "missing") is None


def test_cli_recompute_finds_a_rule_set_saved_in_the_store(sample_store: Path, cli) -> None:  # type: ignore[no-untyped-def]
    with connect(sample_store) as con:
        saved = stored_rulesets.save(con, "strict", lab_text("strict"))
    result = cli("recompute", "--run", "ramayana", "--ruleset", "strict", "--json", db=sample_store)
    assert result.returncode == 0, result.stderr
    with connect(sample_store, read_only=True) as con:
        stored = con.execute("SELECT ruleset, rules_hash FROM evaluations ORDER BY evaluation_id DESC LIMIT 1"
                             ).fetchall()
        assert stored == [("strict", saved.rules_hash)]
        assert "strict" in rulesets(con, "ramayana")  # what Before/after and Compare offer
