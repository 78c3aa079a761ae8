"""One definition per check (issue 16 §1): each check and flag carries its SQL form beside its
Python form, and the SQL engine is built from those forms only."""

from __future__ import annotations

import pytest

from evaluator.core.registry import REGISTRY, check_entries, flag_entries
from evaluator.pipeline.sql.compile import compile_run, sql_case
from evaluator.rules.load import load_rules

NO_RETRIEVAL = "{'v': 'N/A', 'r': 'the run records no retrieval'}"


def test_every_check_and_flag_has_an_sql_form() -> None:
    missing = [e.name for e in (*check_entries(), *flag_entries()) if e.sql is None]
    assert missing == []


@pytest.mark.parametrize("ruleset", ["t3_aware", "grounded"])
@pytest.mark.parametrize("profile", ["ramayana", "clearpath", "rag"])
def test_the_compiled_query_holds_each_registered_form_as_the_column_named_after_it(profile: str,
                                                                                   ruleset: str) -> None:
    rules = load_rules()
    plan = compile_run(rules, ruleset, profile)
    assert plan is not None
    case = sql_case(rules, ruleset, profile)
    applied = rules.profile(profile).checks
    for entry in (*check_entries(), *flag_entries()):
        if entry.opt_in and entry.name not in rules.ruleset(ruleset).extra_flags:  # issue 30: not raised here
            assert f"  NULL AS {entry.name}" in plan.sql, entry.name
        elif entry.kind == "flag" or entry.name in applied:
            column = entry.sql(case)
            if entry.needs_retrieval:  # issue 28: decided only where the run records retrieval
                column = (f"CASE WHEN NOT retrieval_recorded THEN {NO_RETRIEVAL} ELSE {column} END"
                          if entry.kind == "check" else f"CASE WHEN retrieval_recorded THEN {column} END")
            assert f"  {column} AS {entry.name}" in plan.sql, entry.name


def test_the_checks_and_flags_that_need_the_retrieved_items_are_registered_so() -> None:
    needing = {(e.kind, e.name) for e in (*check_entries(), *flag_entries()) if e.needs_retrieval}
    assert needing == {("check", "retrieval_check"), ("check", "no_hallucination"),
                       ("flag", "no_context_warning"), ("flag", "potential_hallucination"),
                       ("flag", "unsupported_claim")}


def test_only_checks_and_flags_can_need_the_retrieved_items() -> None:
    with pytest.raises(ValueError, match="only checks and flags can need the retrieved items"):
        REGISTRY.register("metric", "m_needing_retrieval", lambda rows: 0, granularity="query", needs_retrieval=True)


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
