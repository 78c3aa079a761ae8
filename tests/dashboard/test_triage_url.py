"""dashboard.triage_url: a Triage URL query <-> the queue (filters, sort, page size), on the sample store."""

from __future__ import annotations

from urllib.parse import parse_qs

import duckdb

from dashboard.triage_url import QUEUE_KEYS, filters_from_query, parse_queue, queue_query, review_params
from evaluator.queries.triage import TriageFilters


def _t3_aware(con: duckdb.DuckDBPyConnection, run: str) -> int:
    return con.execute("SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                       "WHERE name = ? AND ruleset = 't3_aware'", [run]).fetchone()[0]


def test_a_query_gives_its_filters_sort_and_page_size(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        parsed = filters_from_query(con, {"run": "ramayana", "provider": "claude", "template": "T3",
                                          "verdict": "FAIL", "q": '"King"', "sort": "flags", "size": "25",
                                          "page": "3", "view": "table"})
        evaluation = _t3_aware(con, "ramayana")
    assert parsed == (TriageFilters(evaluation_id=evaluation, provider="claude", template="T3", verdict="FAIL",
                                    text='"King"'), "flags", 25)


def test_an_unknown_run_is_none(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        assert filters_from_query(con, {"run": "no such run"}) is None
        assert filters_from_query(con, {}) is None


def test_values_the_page_would_not_offer_mean_no_filter_and_the_defaults(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        parsed = filters_from_query(con, {"run": "clearpath", "provider": "nobody", "template": "T9",
                                          "verdict": "*", "flag": "made_up", "status": "weird", "sort": "random",
                                          "size": "7", "evaluation": "99999"})
        evaluation = _t3_aware(con, "clearpath")
    assert parsed == (TriageFilters(evaluation_id=evaluation), "needs_review", 50)  # the default sort


def test_the_queue_keeps_the_list_and_the_view_not_the_page():
    query = {"run": "r&1", "verdict": "FAIL", "page": "4", "view": "table", "tab": "x", "sort": "verdict"}
    queue = queue_query(query)
    assert parse_queue(queue) == {"run": "r&1", "verdict": "FAIL", "sort": "verdict", "view": "table"}
    assert set(parse_queue(queue)) <= set(QUEUE_KEYS)


def test_a_review_link_names_the_response_evaluation_and_queue():
    params = review_params(7, 3, {"run": "clearpath", "size": "25", "page": "2"})
    assert params["response"] == "7" and params["evaluation"] == "3"
    assert parse_qs(params["queue"]) == {"run": ["clearpath"], "size": ["25"]}


def test_a_link_from_a_pm_page_brings_review_back_to_that_page_as_it_was():
    from urllib.parse import parse_qsl, urlsplit

    from dashboard.review_origin import review_link, way_back

    link = review_link(7, 3, "compare", {"run_a": "v1 & co", "run_b": "v2"})
    query = dict(parse_qsl(urlsplit(link).query))
    assert (query["response"], query["evaluation"]) == ("7", "3")
    assert way_back(query) == ("pages/compare.py", "Back to Compare runs", {"run_a": "v1 & co", "run_b": "v2"})
    assert way_back({"response": "7"}) is None and way_back({"from": "elsewhere"}) is None
