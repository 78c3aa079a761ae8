"""evaluator.queries.triage: free-text search semantics and one-pass paging, on real DuckDB."""

from __future__ import annotations

import duckdb
import pytest

from evaluator.queries import triage
from evaluator.queries.triage import TriageFilters, page_and_count, search_pattern


def matches(text: str, search: str) -> bool:
    with duckdb.connect() as con:
        return bool(con.execute("SELECT regexp_matches(?, ?)", [text, search_pattern(search)]).fetchone()[0])


@pytest.mark.parametrize(("text", "search"), [
    ("Consult the SHLOKA index", "shloka"),
    ("ÉPOPÉE indienne", "épopée"),
    ("Rama didn\u2019t go", "didn't"),
    ("Rama didn't go", "didn\u2019t"),
    ('He said \u201cdharma\u201d', '"dharma"'),
    ("cost (approx.) $5 * 2 [sic] a|b \\ end", "(approx.) $5 * 2 [sic] a|b \\"),
    ("first line\nsecond line", "line\nsecond"),
])
def test_search_matches_literally_ignoring_case_and_quote_style(text, search):
    assert matches(text, search)


@pytest.mark.parametrize(("text", "search"), [
    ("abc", "a.c"),
    ("aaa", "a*"),
    ("ab", "a|x"),
    ("x", "[x]"),
    ("Q\\E", "\\Q"),
])
def test_regex_characters_in_a_search_are_not_operators(text, search):
    assert not matches(text, search)


def _evaluation(con: duckdb.DuckDBPyConnection, run: str) -> int:
    return con.execute("SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                       "WHERE name = ? AND ruleset = 't3_aware'", [run]).fetchone()[0]


def test_page_and_count_gives_the_total_and_the_page(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"))
        total, shown, rows = page_and_count(con, filters, 2, page_size=30)
        assert (total, shown, len(rows)) == (80, 2, 30)
        assert total == triage.count(con, filters)
        first = page_and_count(con, filters, 1, page_size=30)[2]
        assert [r["response_id"] for r in first] == sorted(r["response_id"] for r in first)
        assert max(r["response_id"] for r in first) < min(r["response_id"] for r in rows)


def test_a_page_past_the_end_shows_the_last_page(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"))
        total, shown, rows = page_and_count(con, filters, 99, page_size=30)
    assert (total, shown, len(rows)) == (80, 3, 20)


def test_no_match_is_page_one_of_nothing(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"), text="no such words anywhere")
        assert page_and_count(con, filters, 5) == (0, 1, [])


def test_search_reads_only_the_evaluations_run(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        run_id = con.execute("SELECT run_id FROM evaluations WHERE evaluation_id = ?", [evaluation]).fetchone()[0]
        _, _, rows = page_and_count(con, TriageFilters(evaluation_id=evaluation, text="Rama"), 1, page_size=500)
        ids = [r["response_id"] for r in rows]
        runs = {r[0] for r in con.execute("SELECT DISTINCT run_id FROM responses WHERE response_id IN "
                                          "(SELECT unnest(?::BIGINT[]))", [ids]).fetchall()}
    assert ids and runs == {run_id}
