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
        total, shown, rows = page_and_count(con, filters, 2, page_size=30, sort="response")
        assert (total, shown, len(rows)) == (80, 2, 30)
        assert total == triage.count(con, filters)
        first = page_and_count(con, filters, 1, page_size=30, sort="response")[2]
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


# Triage's orders, restated in Python over every matching row: the reference queue_position is checked against.
PY_SORTS = {
    "response": lambda r: (r["response_id"],),
    "verdict": lambda r: ({"FAIL": 0, "PASS": 1}.get(r["overall"], 2), r["response_id"]),
    "flags": lambda r: (-r["n_flags"], r["response_id"]),
    "provider": lambda r: (r["provider"], r["response_id"]),
    "template": lambda r: (r["template_group"], r["response_id"]),
    "overridden": lambda r: (-(r["n_overrides"] > 0), r["response_id"]),
}


def _reference_order(con: duckdb.DuckDBPyConnection, filters: TriageFilters, sort: str) -> list[int]:
    _, _, rows = page_and_count(con, filters, 1, page_size=100_000)
    flag_counts = dict(con.execute("SELECT response_id, count(*) FROM flags WHERE evaluation_id = ? GROUP BY 1",
                                   [filters.evaluation_id]).fetchall())
    for row in rows:
        row["n_flags"] = flag_counts.get(row["response_id"], 0)
    return [r["response_id"] for r in sorted(rows, key=PY_SORTS[sort])]


def _with_overrides(sample_store) -> None:
    from evaluator.review.config import ReviewConfig
    from evaluator.review.overrides import add_override
    from evaluator.store.db import connect

    with connect(sample_store) as con:
        ids = [r[0] for r in con.execute("SELECT response_id FROM responses JOIN runs USING (run_id) "
                                         "WHERE name = 'ramayana' ORDER BY response_id DESC LIMIT 3").fetchall()]
        for response_id in ids:
            add_override(con, response_id, "overall", "FAIL", "wrong", "alice", config=ReviewConfig())


@pytest.mark.parametrize("sort", list(PY_SORTS))
def test_queue_position_agrees_with_sorting_every_match_in_python(sample_store, sort):
    _with_overrides(sample_store)
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"))
        order = _reference_order(con, filters, sort)
        assert len(order) == 80
        for index, response_id in enumerate(order, start=1):
            position = triage.queue_position(con, filters, sort, response_id, page_size=25)
            assert position == triage.QueuePosition(
                index=index, total=80, previous_id=order[index - 2] if index > 1 else None,
                next_id=order[index] if index < 80 else None, page=(index - 1) // 25 + 1)


def test_queue_position_of_the_first_and_last_have_no_neighbour_beyond_the_ends(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"), provider="claude", template="T3")
        order = _reference_order(con, filters, "verdict")
        first = triage.queue_position(con, filters, "verdict", order[0], page_size=50)
        last = triage.queue_position(con, filters, "verdict", order[-1], page_size=50)
    assert (first.index, first.previous_id, first.next_id) == (1, None, order[1])
    assert (last.index, last.total, last.next_id, last.previous_id) == (8, 8, None, order[-2])


def test_queue_position_of_a_filtered_out_response_is_none(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        openai = con.execute("SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                             "WHERE name = 'ramayana' AND provider = 'openai'").fetchone()[0]
        filters = TriageFilters(evaluation_id=evaluation, provider="claude")
        assert triage.queue_position(con, filters, "response", openai, page_size=50) is None


def test_queue_position_names_the_triage_page_at_its_page_size(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "ramayana"))
        order = _reference_order(con, filters, "provider")
        assert triage.queue_position(con, filters, "provider", order[50], page_size=25).page == 3
        assert triage.queue_position(con, filters, "provider", order[50], page_size=50).page == 2


@pytest.mark.parametrize("sort", list(PY_SORTS))
def test_a_sorted_page_is_the_slice_of_the_sorted_matches(sample_store, sort):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        filters = TriageFilters(evaluation_id=_evaluation(con, "clearpath"))
        order = _reference_order(con, filters, sort)
        _, _, rows = page_and_count(con, filters, 2, page_size=10, sort=sort)
    assert [r["response_id"] for r in rows] == order[10:20]


@pytest.mark.parametrize(("search", "terms"), [
    ("King Dasharatha", ["King Dasharatha"]),
    ('"Dasharatha"', ["Dasharatha"]),
    ("\u201cKing Dasharatha\u201d", ["King Dasharatha"]),
    ('"King Dasharatha" Rama', ["King Dasharatha", "Rama"]),
    ('5" screen', ['5" screen']),  # one quote is no phrase: a literal
    ("didn't", ["didn't"]),  # single quotes never delimit phrases
    ("   ", []),
])
def test_search_terms_take_double_quoted_phrases_straight_or_curly(search, terms):
    assert triage.search_terms(search) == terms


def test_every_quoted_phrase_must_occur(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        both = triage.count(con, TriageFilters(evaluation_id=evaluation, text='"King Dasharatha" "Kausalya"'))
        king = triage.count(con, TriageFilters(evaluation_id=evaluation, text='"King Dasharatha"'))
        kausalya = triage.count(con, TriageFilters(evaluation_id=evaluation, text="Kausalya"))
    assert 0 < both <= min(king, kausalya) and both < max(king, kausalya)


def test_search_matches_give_spans_of_every_term_ignoring_case():
    text = "King DASHARATHA ruled; Rama\u2019s father was king Dasharatha."
    spans = triage.search_matches(text, "\u201cking dasharatha\u201d \"Rama's\"")
    assert [(text[s["start"]:s["end"]], s["kind"]) for s in spans] == [
        ("King DASHARATHA", "search_match"), ("king Dasharatha", "search_match"), ("Rama\u2019s", "search_match")]


def test_triage_opens_on_failing_responses_then_flagged_ones_then_the_rest(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        evaluation = _evaluation(con, "clearpath")
        filters = TriageFilters(evaluation_id=evaluation)
        _, _, rows = page_and_count(con, filters, 1, page_size=100)
        flagged = {r[0] for r in con.execute("SELECT DISTINCT response_id FROM flags WHERE evaluation_id = ?",
                                             [evaluation]).fetchall()}
        overall = dict(con.execute("SELECT response_id, overall FROM response_results WHERE evaluation_id = ?",
                                   [evaluation]).fetchall())
    ranks = [0 if overall[r["response_id"]] == "FAIL" else 1 if r["response_id"] in flagged else 2 for r in rows]
    assert ranks == sorted(ranks) and {0, 2} <= set(ranks)
    ids = [r["response_id"] for r in rows]
    assert ids == [i for _, i in sorted(zip(ranks, ids, strict=True))]  # response order within each group


@pytest.mark.parametrize("max_listed", [512, 1])
def test_a_check_override_that_clears_the_only_failure_makes_the_response_pass_in_triage(sample_store, max_listed,
                                                                                         monkeypatch):
    """The overridden responses are named one parameter each (past MAX_LISTED, one bound list): either
    way the effective overall verdict follows the overridden check."""
    from evaluator.review.config import ReviewConfig
    from evaluator.review.overrides import add_override
    from evaluator.store import sql_params
    from evaluator.store.db import connect

    monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
    with connect(sample_store) as con:
        evaluation = _evaluation(con, "ramayana")
        cleared = con.execute(
            """SELECT response_id FROM check_results WHERE evaluation_id = ?
               GROUP BY response_id HAVING count(*) FILTER (WHERE verdict = 'FAIL') = 1
               ORDER BY response_id LIMIT 1""", [evaluation]).fetchall()[0][0]
        failed = con.execute("""SELECT response_id FROM response_results WHERE evaluation_id = ? AND overall = 'PASS'
                                ORDER BY response_id LIMIT 1""", [evaluation]).fetchall()[0][0]
        failing = con.execute("SELECT check_name FROM check_results WHERE evaluation_id = ? AND response_id = ? "
                              "AND verdict = 'FAIL'", [evaluation, cleared]).fetchall()[0][0]
        add_override(con, cleared, failing, "PASS", "the check was wrong", "alice", config=ReviewConfig())
        add_override(con, failed, "overall", "FAIL", "wrong", "alice", config=ReviewConfig())
        _, _, rows = page_and_count(con, TriageFilters(evaluation_id=evaluation), 1, page_size=100_000)
    by_id = {r["response_id"]: r for r in rows}
    assert (by_id[cleared]["overall"], by_id[cleared]["computed_overall"], by_id[cleared]["overridden"]) == (
        "PASS", "FAIL", True)
    assert (by_id[failed]["overall"], by_id[failed]["computed_overall"], by_id[failed]["overridden"]) == (
        "FAIL", "PASS", True)
    assert sum(r["overridden"] for r in rows) == 2


FILTER_CASES = [{}, {"verdict": "FAIL"}, {"check": "answers_question", "verdict": "PASS"},
                {"flag": "refusal_detected"}, {"provider": "claude"}, {"template": "T3"},
                {"override_status": "overridden"}, {"override_status": "not_overridden"},
                {"override_status": "carried"}, {"paradox": True}, {"text": "Rama"}]


@pytest.mark.parametrize("sort", list(triage.SORTS))
def test_the_responses_rows_are_joined_only_where_read_and_the_order_is_the_same(sample_store, sort):
    _with_overrides(sample_store)
    with duckdb.connect(str(sample_store), read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        for case in FILTER_CASES:
            filters = TriageFilters(evaluation_id=evaluation, **case)
            lean, lean_params = triage._query(con, filters, sort=sort)
            joined, joined_params = triage._query(con, filters, sort=sort, rows=True)
            order = f" ORDER BY {triage.order_by(sort)}"
            ids = con.execute(lean.replace("__COLUMNS__", "eff.response_id") + order, lean_params).fetchall()
            assert ids == con.execute(joined.replace("__COLUMNS__", "eff.response_id") + order,
                                      joined_params).fetchall(), case
            reads_responses = sort == "provider" or bool({"provider", "paradox"} & set(case)) or \
                case.get("override_status") == "carried"
            assert ("JOIN responses r ON" in lean) == reads_responses, case
            assert "JOIN questions q ON" not in lean and "JOIN questions q ON" in joined
