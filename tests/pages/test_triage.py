"""Triage page (SPEC §8.4) through Streamlit's AppTest, on a copy of the sample store."""

from __future__ import annotations

import html
import re

from evaluator.review.config import ReviewConfig
from evaluator.review.overrides import add_override
from evaluator.store.db import atomic, connect

PAGE = "pages/triage.py"


def answers(app) -> list[str]:
    return [m.value for m in app.markdown if m.value.startswith('<div class="answer"')]


def match_count(app) -> int:
    [line] = [m.value for m in app.markdown if m.value.endswith(("matching response", "matching responses"))]
    return int(re.match(r"\*\*([\d,]+)\*\*", line).group(1).replace(",", ""))


def evaluation_id(query, db, run: str, ruleset: str) -> int:
    return query(db, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                     "WHERE name = ? AND ruleset = ?", [run, ruleset])[0][0]


def test_lists_a_runs_responses_50_per_page_with_a_count(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="ramayana")
    total = query(sample_store, "SELECT count(*) FROM responses JOIN runs USING (run_id) WHERE name = 'ramayana'")
    assert match_count(app) == total[0][0] == 80
    assert len(answers(app)) == 50
    assert any("Page <b>1</b> of 2" in m.value for m in app.markdown)


def test_next_goes_to_page_two_and_the_page_is_in_the_url(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana")
    first_page = answers(app)
    app.button(key="next_top").click().run()
    assert app.query_params["page"] == "2"
    assert len(answers(app)) == 30
    assert set(answers(app)).isdisjoint(first_page)
    assert app.button(key="next_top").disabled


def test_a_shared_link_opens_on_its_page(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", page=2)
    assert len(answers(app)) == 30


def test_a_link_past_the_last_page_opens_the_last_page(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", page=99)
    assert len(answers(app)) == 30
    assert any("Page <b>2</b> of 2" in m.value for m in app.markdown)


def test_changing_a_filter_goes_back_to_page_one(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", page=2)
    app.sidebar.selectbox(key="url_provider").set_value("openai").run()
    assert app.query_params["page"] == "1"
    assert match_count(app) == 40 and len(answers(app)) == 40


def test_filter_by_flag_shows_only_flagged_responses_with_the_banner(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", flag="potential_hallucination")
    flagged = query(sample_store, """SELECT count(DISTINCT f.response_id) FROM flags f
                                     JOIN evaluations e USING (evaluation_id) JOIN runs USING (run_id)
                                     WHERE name = 'clearpath' AND f.flag = 'potential_hallucination'""")[0][0]
    assert flagged > 0 and match_count(app) == flagged
    banners = [m.value for m in app.markdown if "banner-unverified" in m.value]
    assert len(banners) == flagged
    assert all("Some details in this response could not be verified against our documentation."
               in html.unescape(b.replace("<wbr>", "")) for b in banners)


def test_no_context_responses_show_the_yellow_banner(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", flag="no_context_warning")
    assert match_count(app) > 0
    # A card's banners are slim one-line strips (issue 31's compact cards); Review keeps the st.warning.
    banners = [m.value for m in app.markdown if 'class="banner-no-context"' in m.value]
    assert len(banners) == match_count(app)
    assert all("This response was generated without supporting documentation." in html.unescape(b) for b in banners)


def test_flagged_answers_have_their_spans_highlighted_with_a_legend(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="clearpath", flag="potential_hallucination")
    for answer in answers(app):
        assert re.search(r'<mark data-kinds="[^"]*(unverified_price|proper_noun)', answer)
    assert any("Unverified price" in m.value or "Unverified proper noun" in m.value for m in app.markdown
               if m.value.startswith('<div style="font-size:0.85rem'))


def test_filter_by_check_and_verdict(make_app, sample_store, query):
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=legacy, check="cites_shlokas", verdict="FAIL")
    expected = query(sample_store, "SELECT count(*) FROM check_results WHERE evaluation_id = ? "
                                   "AND check_name = 'cites_shlokas' AND verdict = 'FAIL'", [legacy])[0][0]
    assert expected > 0 and match_count(app) == expected


def test_filter_by_check_verdict_together_with_provider_and_template(make_app, sample_store, query):
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=legacy, provider="openai", template="T3",
                   check="cites_shlokas", verdict="FAIL")
    assert match_count(app) == 8  # legacy fails every T3 refusal on cites_shlokas


def test_filter_by_provider_and_template(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="ramayana", provider="claude", template="T3")
    assert match_count(app) == 8  # SPEC §4: eight T3 questions, answered by each provider
    assert all("· claude" in m.value for m in app.markdown if m.value.startswith("**q"))


def test_paradox_filter_finds_failing_rows_whose_comment_says_correct(make_app, sample_store, query):
    recorded = evaluation_id(query, sample_store, "ramayana", "recorded")
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=recorded, paradox=1)
    assert match_count(app) == 14  # SPEC §4: 7 of 8 T3 questions fail for both providers
    assert all(":red-badge[FAIL]" in m.value for m in app.markdown if m.value.startswith("**q"))


def test_paradox_phrases_are_configurable(make_app, sample_store, query, monkeypatch):
    monkeypatch.setenv("EVALUATOR_PARADOX_PHRASES", "evaluator artefact")
    recorded = evaluation_id(query, sample_store, "ramayana", "recorded")
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=recorded, paradox=1)
    assert match_count(app) == 2  # only Q8's comment calls the failure an evaluator artefact


def test_free_text_search_matches_question_answer_or_comment(make_app, sample_store, query):
    rows = query(sample_store, """SELECT q.question, r.answer, r.comment FROM responses r JOIN runs USING (run_id)
                                  JOIN questions q USING (run_id, question_id) WHERE name = 'ramayana'""")
    expected = sum(any("shloka" in (text or "").lower() for text in row) for row in rows)
    app = make_app(sample_store, PAGE, run="ramayana", q="SHLOKA")
    assert 0 < match_count(app) == expected


def test_free_text_search_is_a_bound_parameter(make_app, sample_store):
    hostile = make_app(sample_store, PAGE, run="ramayana", q="'; DROP TABLE responses; --")
    assert match_count(hostile) == 0
    wildcard = make_app(sample_store, PAGE, run="ramayana", q="%")
    assert match_count(wildcard) == 0  # % is a literal character, not a wildcard


def test_search_box_writes_the_url(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="clearpath")
    app.sidebar.text_input(key="url_q").input("student").run()
    assert app.query_params["q"] == "student"
    assert 0 < match_count(app) < 32


def test_override_status_filter(make_app, sample_store, query):
    response_id = query(sample_store, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                      "WHERE name = 'clearpath'")[0][0]
    with connect(sample_store) as con:
        add_override(con, response_id, "overall", "PASS", "checked by hand", "alice", config=ReviewConfig())
    app = make_app(sample_store, PAGE, run="clearpath", status="overridden")
    assert match_count(app) == 1
    assert ":violet-badge[overridden]" in [m.value for m in app.markdown if m.value.startswith("**cp")][0]
    assert match_count(make_app(sample_store, PAGE, run="clearpath", status="not_overridden")) == 31


def test_each_response_links_to_review_with_its_ids(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath", flag="potential_hallucination")
    links = [link for link in app.get("page_link") if link.proto.label == "Review"]
    assert len(links) == match_count(app)
    assert {link.proto.page for link in links} == {"review"}  # the Review page's url path
    assert all(re.search(r"response=\d+&evaluation=\d+&queue=", link.proto.query_string) for link in links)


def test_agreement_tab_shows_overturn_rates(make_app, sample_store, query):
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")
    failing = query(sample_store, """SELECT c.response_id FROM check_results c JOIN response_results rr
                                     USING (evaluation_id, response_id) WHERE c.evaluation_id = ?
                                     AND c.check_name = 'cites_shlokas' AND c.verdict = 'FAIL'
                                     AND rr.template_group = 'T3' ORDER BY 1 LIMIT 2""", [legacy])
    with connect(sample_store) as con:
        add_override(con, failing[0][0], "cites_shlokas", "N/A", "T3", "alice", legacy, config=ReviewConfig())
        add_override(con, failing[1][0], "cites_shlokas", "FAIL", "agreed", "alice", legacy, config=ReviewConfig())
    app = make_app(sample_store, PAGE, run="ramayana", evaluation=legacy, tab="Reviewer overrides vs evaluator")
    assert not answers(app)  # only the open tab runs
    frame = app.dataframe[0].value
    [row] = frame[frame["check"] == "cites_shlokas"].to_dict("records")
    assert row["template"] == "T3"
    assert (row["fail_reviewed"], row["fail_overturned"], row["false_failure_rate"]) == (2, 1, 0.5)


def test_the_agreement_tab_does_not_run_while_the_responses_tab_is_open(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana")
    assert len(answers(app)) == 50
    assert not app.dataframe


def test_untrusted_text_is_rendered_escaped(make_app, hostile_store, rendered):
    app = make_app(hostile_store, PAGE, run="hostile")
    texts = rendered(app)
    assert not any("<script" in t.lower() or "<img" in t.lower() for t in texts)
    joined = "\n".join(texts)
    for escaped in ("&lt;script&gt;alert&#40;&#39;question&#39;&#41;&lt;/script&gt;",  # question
                    "&lt;script&gt;window&#46;&#95;&#95;pwned=",                                  # answer
                    "&lt;img src=x onerror=",                                          # answer and chunk
                    "&#91;click me&#93;&#40;javascript&#58;alert&#40;1&#41;&#41;",     # markdown link
                    "&#42;&#42;bold&#42;&#42;", "&#36;x^2&#36;",                          # bold, math
                    "&lt;script&gt;alert&#40;&#39;comment&#39;&#41;",                   # comment
                    "kb-&lt;1&gt;", "&lt;b&gt;gpt&lt;/b&gt;"):                           # chunk id, model
        assert escaped in joined, escaped
    assert '<mark data-kinds="unverified_price"' in joined  # highlights still work on hostile text


def test_a_big_run_searched_without_an_index_says_how_to_build_one(make_app, sample_store, monkeypatch):
    from evaluator.pipeline import search_index

    monkeypatch.setattr("evaluator.queries.triage.INDEX_WORTH_IT_FROM", 50)  # ramayana has 80 responses
    command = "python -m evaluator search-index --run ramayana"
    indexed = make_app(sample_store, PAGE, run="ramayana", q="Rama")
    assert not [c for c in indexed.sidebar.code if c.value == command]
    with connect(sample_store) as con, atomic(con):
        search_index.drop(con, con.execute("SELECT run_id FROM runs WHERE name = 'ramayana'").fetchall()[0][0])
    searched = make_app(sample_store, PAGE, run="ramayana", q="Rama")
    assert [c.value for c in searched.sidebar.code] == [command]
    assert match_count(searched) == match_count(indexed) > 0
    assert not make_app(sample_store, PAGE, run="ramayana").sidebar.code  # no search, no advice


def test_the_overrides_tab_and_the_human_labels_page_have_distinct_names(make_app, sample_store):
    app = make_app(sample_store, PAGE, run="ramayana", tab="Reviewer overrides vs evaluator")
    assert "Reviewer overrides vs evaluator" in [s.value for s in app.subheader]
