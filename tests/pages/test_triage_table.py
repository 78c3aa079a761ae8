"""Triage's table view, sorting, page size, paging messages, bulk actions and quoted search (AppTest)."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs

from evaluator.queries.triage import TriageFilters, first_id
from evaluator.store.db import connect

PAGE = "pages/triage.py"
REVIEWER = {"reviewer": "priya"}


def table(app):
    [frame] = [d.value for d in app.dataframe]
    return frame


def select(app, rows: list[int]):
    app.session_state["triage_table"] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    return app.run()


def overrides(query, db, since: int = 0) -> list[tuple]:
    return query(db, "SELECT response_id, target, old_value, new_value, reason, reviewer, client_token "
                     "FROM overrides WHERE override_id > ? ORDER BY override_id", [since])


def evaluation_id(query, db, run: str, ruleset: str = "t3_aware") -> int:
    return query(db, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                     "WHERE name = ? AND ruleset = ?", [run, ruleset])[0][0]


def test_the_table_view_has_one_row_per_response_with_its_columns(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", view="table")
    frame = table(app)
    assert len(frame) == 50
    # Review first (long flag names never push it off-screen), and the question itself (issue 31)
    assert list(frame.columns) == ["review", "question id", "question", "provider", "template", "verdict",
                                   "failing checks", "flags", "overridden"]
    assert frame["question"].str.len().max() <= 80 and frame["question"].str.len().min() > 0
    assert not [m for m in app.markdown if m.value.startswith('<div class="answer"')]  # no cards


def test_the_table_shows_no_none_cells_and_says_no_template(make_app, sample_store):
    frame = table(make_app(sample_store, PAGE, run="clearpath", view="table"))
    assert set(frame["template"]) == {"no template"}
    assert not frame.isna().any().any()
    assert "None" not in frame.astype(str).to_numpy()


def test_each_table_row_opens_its_response_in_review_with_the_queue(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", view="table", verdict="FAIL")
    frame = table(app)
    for link in frame["review"]:
        path, _, query_string = link.partition("?")
        params = parse_qs(query_string)
        assert path == "./review"
        assert params["evaluation"] == [str(evaluation_id(query, sample_store, "clearpath"))]
        queue = parse_qs(params["queue"][0])
        assert queue["run"] == ["clearpath"] and queue["verdict"] == ["FAIL"] and "page" not in queue


def test_sort_by_verdict_puts_failing_responses_first(make_app, sample_store):
    frame = table(make_app(sample_store, PAGE, run="clearpath", view="table", sort="verdict"))
    verdicts = list(frame["verdict"])
    assert "FAIL" in verdicts and verdicts == sorted(verdicts, key=lambda v: v != "FAIL")


def test_sort_by_flags_puts_the_most_flagged_first(make_app, sample_store):
    frame = table(make_app(sample_store, PAGE, run="clearpath", view="table", sort="flags"))
    counts = [len(f.split(", ")) if f else 0 for f in frame["flags"]]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_choosing_a_sort_writes_it_to_the_url_and_starts_at_page_one(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", view="table", page=2)
    app.selectbox(key="url_sort").set_value("provider").run()
    assert app.query_params["sort"] == "provider" and app.query_params["page"] == "1"
    assert list(table(app)["provider"]) == sorted(table(app)["provider"])


def test_the_page_size_comes_from_the_url(make_app, sample_store):
    assert len(table(make_app(sample_store, PAGE, run="ramayana", view="table", size=25))) == 25
    assert len(table(make_app(sample_store, PAGE, run="ramayana", view="table", size=250))) == 80


def test_the_default_page_size_is_50_and_choosing_one_writes_the_url(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", view="table")
    assert app.query_params["size"] == "50"
    app.selectbox(key="url_size").set_value(25).run()
    assert app.query_params["size"] == "25" and len(table(app)) == 25


def test_a_page_past_the_last_says_so_and_fixes_the_url(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", page=999)
    assert app.warning[0].value == "Page 999 does not exist; showing the last page (2)."
    assert app.query_params["page"] == "2"


def test_a_page_that_is_not_a_number_says_so(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", page="abc")
    assert app.warning[0].value == "“abc” is not a page number; showing page 1."
    assert app.query_params["page"] == "1"


def test_the_bottom_next_button_brings_the_reader_to_the_top(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana")
    app.button(key="next_bottom").click().run()
    assert app.query_params["page"] == "2"
    assert any("scrollTo" in h.proto.body for h in app.get("html"))


def test_review_these_opens_the_first_response_of_the_sorted_list(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", sort="verdict", page=1)
    [link] = [link for link in app.get("page_link") if link.proto.label == "Review these"]
    params = parse_qs(link.proto.query_string)
    with connect(sample_store, read_only=True) as con:
        first = first_id(con, TriageFilters(evaluation_id=evaluation_id(query, sample_store, "clearpath")), "verdict")
    assert params["response"] == [str(first)]
    assert parse_qs(params["queue"][0])["sort"] == ["verdict"]


def test_bulk_confirm_writes_each_rows_computed_verdict_in_one_save(make_app, sample_store, query):
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=legacy, view="table", template="T3", state=REVIEWER)
    ids = [int(parse_qs(link.partition("?")[2])["response"][0]) for link in table(app)["review"]][:3]
    select(app, [0, 1, 2])
    app.radio(key="bulk_action").set_value("confirm")
    app.selectbox(key="bulk_target").set_value("cites_shlokas")
    app.text_input(key="bulk_reason").input("legacy rules, as computed").run()
    app.button(key="bulk_apply").click().run()
    rows = overrides(query, sample_store)
    computed = dict(query(sample_store, "SELECT response_id, verdict FROM check_results WHERE evaluation_id = ? "
                                        "AND check_name = 'cites_shlokas'", [legacy]))
    assert sorted(r[0] for r in rows) == sorted(ids)
    assert all(r[1] == "cites_shlokas" and r[3] == computed[r[0]] == r[2] for r in rows)
    assert {(r[4], r[5]) for r in rows} == {("legacy rules, as computed", "priya")}
    assert len({r[6] for r in rows}) == 1  # one save, one token
    shown = [html.unescape(s.value) for s in app.success]  # the message is escaped: check names are data
    assert shown == ["Saved 3 overrides: cites_shlokas of 3 responses."]


def test_bulk_override_sets_one_value_with_one_reason_exactly_once(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", view="table", verdict="FAIL", state=REVIEWER)
    ids = [int(parse_qs(link.partition("?")[2])["response"][0]) for link in table(app)["review"]][:2]
    select(app, [0, 1])
    app.radio(key="bulk_action").set_value("set")
    app.selectbox(key="bulk_target").set_value("overall").run()
    app.radio(key="bulk_value_overall").set_value("PASS")
    app.text_input(key="bulk_reason").input("prices are on the pricing page").run()
    app.button(key="bulk_apply").click().run()
    rows = overrides(query, sample_store)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (i, "overall", "FAIL", "PASS", "prices are on the pricing page") for i in ids]
    assert [s.value for s in app.success] == ["Saved 2 overrides: Overall verdict of 2 responses."]
    app.run()  # a rerun writes nothing again
    assert len(overrides(query, sample_store)) == 2
    assert not [s for s in app.success]


def test_a_bulk_action_without_a_reason_writes_nothing_and_says_why(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", view="table", state=REVIEWER)
    select(app, [0, 1])
    app.button(key="bulk_apply").click().run()
    assert overrides(query, sample_store) == []
    assert [e.value for e in app.error] == ["an override needs a reason: say why the verdict is wrong"]


def test_a_bulk_action_asks_for_the_reviewers_name_first(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="clearpath", view="table")
    select(app, [0])
    assert "bulk_apply" not in [b.key for b in app.button]
    assert [t.label for t in app.text_input if t.key == "reviewer_input"] == ["Your name"]


def test_bulk_targets_leave_out_checks_the_bot_does_not_apply(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="clearpath", view="table", state=REVIEWER)
    select(app, [0])
    assert app.selectbox(key="bulk_target").options == ["Overall verdict", "retrieval_check", "no_hallucination"]


def count(app) -> int:
    [line] = [m.value for m in app.markdown if m.value.endswith(("matching response", "matching responses"))]
    return int(line.split("**")[1].replace(",", ""))


def test_a_quoted_word_finds_what_the_bare_word_finds(make_app, sample_store):
    bare = count(make_app(sample_store, PAGE, run="ramayana", q="Dasharatha"))
    assert bare == 9
    assert count(make_app(sample_store, PAGE, run="ramayana", q='"Dasharatha"')) == bare
    assert count(make_app(sample_store, PAGE, run="ramayana", q="\u201cDasharatha\u201d")) == bare


def test_a_quoted_phrase_matches_the_phrase(make_app, sample_store):
    assert count(make_app(sample_store, PAGE, run="ramayana", q='"King Dasharatha"')) == 3
    assert count(make_app(sample_store, PAGE, run="ramayana", q="\u201cking dasharatha\u201d")) == 3


def test_search_matches_are_highlighted_in_the_answer(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", q='"King Dasharatha"')
    marked = [m.value for m in app.markdown if m.value.startswith('<div class="answer"')]
    assert len(marked) == 3
    # Each answer's "King Dasharatha" is marked as a search match (in pieces where another span overlaps it).
    for answer in marked:
        pieces = re.findall(r'<mark data-kinds="[^"]*search_match[^"]*"[^>]*>([^<]*)</mark>', answer)
        assert "".join(pieces) == "King Dasharatha"


def test_search_matches_are_highlighted_in_the_question(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", q="“Rama’s father”")
    questions = [m.value for m in app.markdown if m.value.startswith('<div class="question"')]
    assert questions and all('data-kinds="search_match"' in m and "father</mark>" in m for m in questions)
