"""One definition per check (issue 16 §1): each check and flag carries its SQL form beside its
Python form, and the SQL engine is built from those forms only."""

from __future__ import annotations

import pytest

from evaluator.registry import REGISTRY, check_entries, flag_entries
from evaluator.rules import load_rules
from evaluator.sql.compile import compile_run, sql_case


def test_every_check_and_flag_has_an_sql_form() -> None:
    missing = [e.name for e in (*check_entries(), *flag_entries()) if e.sql is None]
    assert missing == []


@pytest.mark.parametrize("profile", ["ramayana", "clearpath", "rag"])
def test_the_compiled_query_holds_each_registered_form_as_the_column_named_after_it(profile: str) -> None:
    rules = load_rules()
    plan = compile_run(rules, "t3_aware", profile)
    assert plan is not None
    case = sql_case(rules, "t3_aware", profile)
    applied = rules.profile(profile).checks
    for entry in (*check_entries(), *flag_entries()):
        if entry.kind == "flag" or entry.name in applied:
            assert f"  {entry.sql(case)} AS {entry.name}" in plan.sql, entry.name


def test_a_check_without_an_sql_form_leaves_every_row_to_python() -> None:
    REGISTRY.register("check", "plugin_without_sql", lambda ctx: None, order=999)
    try:
        assert compile_run(load_rules(), "t3_aware", "ramayana") is None
    finally:
        REGISTRY.unregister("check", "plugin_without_sql")
    assert compile_run(load_rules(), "t3_aware", "ramayana") is not None


def test_only_checks_and_flags_take_an_sql_form() -> None:
    with pytest.raises(ValueError, match="only checks and flags have an SQL form"):
        REGISTRY.register("metric", "m_with_sql", lambda rows: 0, granularity="query", sql=lambda q: "1")
