"""Review page (SPEC §8.5) through Streamlit's AppTest, on a copy of the sample store."""

from __future__ import annotations

import html
import re

from evaluator.review.config import ReviewConfig
from evaluator.review.overrides import add_override
from evaluator.store.db import connect

PAGE = "pages/review.py"


def response_id(query, db, run: str, question_id: str, provider: str) -> int:
    return query(db, "SELECT response_id FROM responses JOIN runs USING (run_id) "
                     "WHERE name = ? AND question_id = ? AND provider = ?", [run, question_id, provider])[0][0]


def evaluation_id(query, db, run: str, ruleset: str) -> int:
    return query(db, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                     "WHERE name = ? AND ruleset = ?", [run, ruleset])[0][0]


def overrides(query, db) -> list[tuple]:
    return query(db, "SELECT response_id, evaluation_id, target, old_value, new_value, reason, reviewer, "
                     "carried_from FROM overrides ORDER BY override_id")


def save_button(app):
    return app.button(key="save_override")


def reason_box(app):
    """The one reason box (its key changes with each save: see pages/review.py _form_keys)."""
    [box] = app.text_area
    return box


def value_choice(app):
    """The radio of the new value for the target being overridden."""
    [choice] = app.radio
    return choice


def choose_another_value(app) -> str:
    """Pick a value other than the current one (the form starts on the current one)."""
    choice = value_choice(app)
    other = next(option for option in choice.options if option != choice.value)
    choice.set_value(other).run()  # the browser reruns on a change too: Save is enabled by it
    return other


def test_a_deep_link_opens_one_response_in_full(make_app, sample_store, query):
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    evaluation = evaluation_id(query, sample_store, "clearpath", "t3_aware")
    app = make_app(sample_store, PAGE, response=rid, evaluation=evaluation)
    texts = [m.value for m in app.markdown]
    assert texts[0].startswith("#### cp-02 · openai")
    assert any(t.startswith('<div class="answer"') and "<mark" in t for t in texts)
    assert any("banner-unverified" in t for t in texts)
    assert any('<table class="retrieved"' in t for t in texts)
    assert any("**no&#95;hallucination** :red-badge[FAIL]" in t for t in texts)
    assert app.sidebar.selectbox(key="url_evaluation").value == evaluation


def test_without_an_identity_the_override_form_is_disabled(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"))
    assert save_button(app).disabled
    assert reason_box(app).disabled
    assert any("read-only" in i.value for i in app.info)


def test_a_reviewer_name_is_entered_once_per_session(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"))
    app.text_input(key="reviewer_input").input("Priya")
    [start] = [b for b in app.button if b.label == "Start reviewing"]
    start.click().run()
    assert app.session_state["reviewer"] == "Priya"
    assert not reason_box(app).disabled and not value_choice(app).disabled
    assert any(m.value == "Reviewing as **Priya**" for m in app.markdown)


def test_an_override_with_a_reason_is_saved_and_becomes_the_effective_verdict(make_app, sample_store, query):
    rid = response_id(query, sample_store, "ramayana", "q34", "openai")
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")
    app = make_app(sample_store, PAGE, response=rid, evaluation=legacy, state={"reviewer": "alice"})
    app.selectbox(key="override_target").set_value("cites_shlokas").run()
    value_choice(app).set_value("N/A").run()
    reason_box(app).input("A T3 refusal needs no citation")
    save_button(app).click().run()
    # the check name is escaped (a run file may name its own checks)
    assert [html.unescape(s.value) for s in app.success] == ["Override saved: cites_shlokas → N/A."]
    assert overrides(query, sample_store) == [
        (rid, legacy, "cites_shlokas", "FAIL", "N/A", "A T3 refusal needs no citation", "alice", None)]
    assert any("**cites&#95;shlokas** :gray-badge[N/A] (computed :red-badge[FAIL], overridden)" in m.value
               for m in app.markdown)
    assert any(m.value.startswith("Effective verdict  \n:green-badge[PASS] :violet-badge[overridden]")
               for m in app.markdown)
    history = app.dataframe[0].value
    assert history[["reviewer", "target", "old_value", "new_value", "reason"]].values.tolist() == [
        ["alice", "cites_shlokas", "FAIL", "N/A", "A T3 refusal needs no citation"]]
    assert reason_box(app).value == ""  # ready for the next one


def test_an_override_without_a_reason_is_refused_with_a_clear_error(make_app, sample_store, query):
    rid = response_id(query, sample_store, "ramayana", "q34", "openai")
    app = make_app(sample_store, PAGE, response=rid, state={"reviewer": "alice"})
    choose_another_value(app)
    reason_box(app).input("   ")
    save_button(app).click().run()
    assert [e.value for e in app.error] == ["an override needs a reason: say why the verdict is wrong"]
    assert overrides(query, sample_store) == []


def test_overrides_are_appended_and_the_history_keeps_them_all(make_app, sample_store, query):
    rid = response_id(query, sample_store, "ramayana", "q34", "openai")
    legacy = evaluation_id(query, sample_store, "ramayana", "legacy")  # computes FAIL for this refusal
    app = make_app(sample_store, PAGE, response=rid, evaluation=legacy, state={"reviewer": "alice"})
    app.selectbox(key="override_target").set_value("overall").run()  # it opens on the failing check
    for value, reason in (("PASS", "proper refusal"), ("FAIL", "second thoughts")):
        value_choice(app).set_value(value).run()
        reason_box(app).input(reason)
        save_button(app).click().run()
    assert [row[2:6] for row in overrides(query, sample_store)] == [
        ("overall", "FAIL", "PASS", "proper refusal"), ("overall", "PASS", "FAIL", "second thoughts")]
    assert len(app.dataframe[0].value) == 2


def test_the_refused_label_can_be_overridden(make_app, sample_store, query):
    rid = response_id(query, sample_store, "ramayana", "q34", "openai")
    app = make_app(sample_store, PAGE, response=rid, state={"reviewer": "alice"})
    app.selectbox(key="override_target").set_value("refused").run()
    new = choose_another_value(app)
    reason_box(app).input("declines the drawing request")
    save_button(app).click().run()
    # The old value is the judge's stored decision (load-samples computes the metrics).
    [(judged,)] = query(sample_store, """SELECT mr.refused FROM metric_responses mr
                                         WHERE mr.response_id = ?""", [rid])
    old = "REFUSED" if judged else "NOT REFUSED"
    assert [row[2:5] for row in overrides(query, sample_store)] == [("refused", old, new)]


def test_with_a_reviewers_list_others_are_read_only(make_app, sample_store, query, monkeypatch):
    monkeypatch.setenv("EVALUATOR_REVIEWERS", "bob,carol")
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"),
                   state={"reviewer": "alice"})
    assert any("not on the reviewers list" in w.value for w in app.warning)
    assert save_button(app).disabled


def test_a_logged_in_user_reviews_under_their_login(make_app, sample_store, query):
    rid = response_id(query, sample_store, "ramayana", "q34", "openai")
    app = make_app(sample_store, PAGE, response=rid, user={"is_logged_in": True, "email": "carol@example.com"})
    assert not app.text_input  # no name to type
    assert any(html.unescape(m.value).replace("<span></span>", "") == "Reviewing as **carol@example.com**"
               for m in app.markdown)
    choose_another_value(app)
    reason_box(app).input("fine")
    save_button(app).click().run()
    assert overrides(query, sample_store)[0][6] == "carol@example.com"


def test_when_login_is_configured_a_logged_out_user_cannot_override(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"),
                   user={"is_logged_in": False}, state={"reviewer": "mallory"})
    assert save_button(app).disabled
    assert app.button(key="login").label == "Log in"


def test_a_carried_override_is_offered_and_applied_in_a_later_run(make_app, sample_store, query):
    # An answer that is identical in both sample runs.
    earlier, later = query(sample_store, """
        SELECT a.response_id, b.response_id FROM responses a
        JOIN runs ra ON ra.run_id = a.run_id AND ra.name = 'ramayana'
        JOIN responses b ON b.question_id = a.question_id AND b.provider = a.provider
                        AND b.answer_hash = a.answer_hash
        JOIN runs rb ON rb.run_id = b.run_id AND rb.name = 'ramayana_v2'
        ORDER BY a.response_id LIMIT 1""")[0]
    with connect(sample_store) as con:
        source = add_override(con, earlier, "overall", "PASS", "checked by hand", "alice", config=ReviewConfig())
    app = make_app(sample_store, PAGE, response=later, state={"reviewer": "bob"})
    offer = [m.value for m in app.markdown if "carried from run" in m.value]
    assert offer and "carried from run **ramayana**" in offer[0]
    app.button(key=f"carry_{source}").click().run()
    last = overrides(query, sample_store)[-1]
    assert (last[0], last[2], last[4], last[6], last[7]) == (later, "overall", "PASS", "bob", source)
    assert last[5] == "carried from run ramayana: checked by hand"
    assert app.dataframe[0].value["carried_from_run"].tolist() == ["ramayana"]
    assert not [m.value for m in app.markdown if "carried from run **" in m.value]  # no longer offered


def test_opened_without_a_response_it_offers_a_picker(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, run="clearpath")
    [picker] = [s for s in app.selectbox if s.label == "Response"]
    first = query(sample_store, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                "WHERE name = 'clearpath'")[0][0]
    picker.set_value(first).run()
    assert app.query_params["response"] == str(first)
    assert app.markdown[0].value.startswith("#### cp-01")


def test_an_unknown_response_id_is_a_clear_error(make_app, sample_store):
    app = make_app(sample_store, PAGE, response=999999)
    assert [e.value for e in app.error] == ["No response with id 999999 in this store."]


def test_untrusted_text_is_rendered_escaped(make_app, hostile_store, query, rendered):
    rid = response_id(query, hostile_store, "hostile", "x-01", "openai")
    app = make_app(hostile_store, PAGE, response=rid, state={"reviewer": "<img src=x onerror=alert(1)>"})
    texts = rendered(app)
    assert not any("<script" in t.lower() or "<img" in t.lower() for t in texts)
    joined = "\n".join(texts)
    for escaped in ("&lt;script&gt;alert&#40;&#39;question&#39;&#41;&lt;/script&gt;",
                    "&lt;script&gt;window&#46;&#95;&#95;pwned=", "&lt;img src=x onerror=",
                    "&#91;click me&#93;&#40;javascript&#58;alert&#40;1&#41;&#41;",
                    "&lt;script&gt;alert&#40;&#39;comment&#39;&#41;", "kb-&lt;1&gt;",
                    "Reviewing as **&lt;img src=x onerror=alert&#40;1&#41;&gt;**"):
        assert escaped in joined, escaped


def test_the_browser_is_told_to_remember_the_reviewers_name(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"),
                   state={"reviewer": "<img src=x> Zoë"})
    [script] = [h.value for h in app.html if "document.cookie" in h.value]
    assert script.startswith('<script>document.cookie = "evaluator_reviewer=%3Cimg%20src%3Dx%3E%20Zo%C3%AB; path=/;')


def test_change_forgets_the_remembered_name(make_app, sample_store, query):
    app = make_app(sample_store, PAGE, response=response_id(query, sample_store, "ramayana", "q34", "openai"),
                   state={"reviewer": "Priya"})
    app.button(key="change_reviewer").click().run()
    assert [h.value for h in app.html if "document.cookie" in h.value] == [
        '<script>document.cookie = "evaluator_reviewer=; path=/; max-age=0; SameSite=Lax";</script>']
    assert app.text_input(key="reviewer_input")  # asks for a name again


def test_the_override_form_opens_on_the_failing_check_so_p_corrects_a_false_positive(make_app, sample_store, query):
    # cp-02 / openai: no_hallucination FAIL on an unverified price (the usual false positive)
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    evaluation = evaluation_id(query, sample_store, "clearpath", "t3_aware")
    app = make_app(sample_store, PAGE, response=rid, evaluation=evaluation, state={"reviewer": "alice"})
    assert app.selectbox(key="override_target").value == "no_hallucination"
    app.button(key="choose_PASS").click().run()  # what the P key clicks
    reason_box(app).input("the price is on the pricing page")
    save_button(app).click().run()
    assert [row[2:5] for row in overrides(query, sample_store)] == [("no_hallucination", "FAIL", "PASS")]
    # the overall verdict follows the checks: no separate overall override was needed
    assert any(m.value.startswith("Effective verdict") and "PASS" in m.value for m in app.markdown)


def test_h_and_l_step_through_the_checks_and_p_sets_the_one_chosen(make_app, sample_store, query):
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    evaluation = evaluation_id(query, sample_store, "clearpath", "t3_aware")
    app = make_app(sample_store, PAGE, response=rid, evaluation=evaluation, state={"reviewer": "alice"})
    targets = app.selectbox(key="override_target").options  # labels: Overall verdict, retrieval_check, ...
    assert app.selectbox(key="override_target").value == "no_hallucination"
    assert (app.button(key="target_-1").proto.shortcut, app.button(key="target_+1").proto.shortcut) == ("h", "l")
    app.button(key="target_-1").click().run()  # what H clicks
    assert app.selectbox(key="override_target").value == "retrieval_check"
    app.button(key="target_+1").click().run()  # L
    app.button(key="target_+1").click().run()
    assert app.selectbox(key="override_target").value == "refused"
    app.button(key="target_+1").click().run()  # round the list, back to the first
    assert app.selectbox(key="override_target").value == "overall" and targets[0] == "Overall verdict"
    app.button(key="target_+1").click().run()
    assert app.selectbox(key="override_target").value == "retrieval_check"
    app.button(key="choose_FAIL").click().run()  # F sets the check chosen, not the one the form opened on
    reason_box(app).input("the items retrieved are about another plan")
    save_button(app).click().run()
    assert [row[2:5] for row in overrides(query, sample_store)] == [("retrieval_check", "PASS", "FAIL")]


def test_the_override_form_opens_on_the_overall_verdict_when_no_check_fails(make_app, sample_store, query):
    rid = query(sample_store, """SELECT rr.response_id FROM response_results rr JOIN responses r USING (response_id)
                                 JOIN runs USING (run_id) WHERE runs.name = 'clearpath' AND rr.overall = 'PASS'
                                 ORDER BY 1 LIMIT 1""")[0][0]
    app = make_app(sample_store, PAGE, response=rid, state={"reviewer": "alice"})
    assert app.selectbox(key="override_target").value == "overall"


def test_opened_from_compare_review_leads_back_to_compare_as_it_was(make_app, sample_store, query):
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    evaluation = evaluation_id(query, sample_store, "clearpath", "t3_aware")
    app = make_app(sample_store, PAGE, response=rid, evaluation=evaluation, **{
        "from": "compare", "from_q": "run_a=ramayana&run_b=ramayana_v2"})
    [back] = [link.proto for link in app.get("page_link") if link.proto.label == "Back to Compare runs"]
    assert back.page == "compare"
    assert "run_a=ramayana" in back.query_string and "run_b=ramayana_v2" in back.query_string
    assert [link.proto.label for link in app.get("page_link") if link.proto.page == "triage"] == ["Triage"]


def test_an_unsupported_span_is_shown_beside_the_closest_retrieved_sentence(make_app, sample_store, query, cli):
    cli("recompute", "--run", "clearpath", "--ruleset", "grounded", db=sample_store, check=True)
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    grounded = evaluation_id(query, sample_store, "clearpath", "grounded")
    app = make_app(sample_store, PAGE, response=rid, evaluation=grounded)
    [block] = [html.unescape(m.value) for m in app.markdown if 'class="closest-context"' in m.value]
    assert "Clearpath Teams is $29/month per seat, so a team of 5 would pay $145/month." in block
    assert "closest in the context: “Clearpath Teams costs $29/month per seat, with a minimum of 3 seats.”" in block
    assert "Unsupported parts and the closest sentence of the retrieved context" in [c.value for c in app.caption]


def test_no_closest_sentences_are_shown_without_unsupported_spans(make_app, sample_store, query):
    rid = response_id(query, sample_store, "clearpath", "cp-02", "openai")
    t3_aware = evaluation_id(query, sample_store, "clearpath", "t3_aware")
    app = make_app(sample_store, PAGE, response=rid, evaluation=t3_aware)
    assert not [m.value for m in app.markdown if 'class="closest-context"' in m.value]


def test_unsupported_spans_and_their_closest_sentences_are_rendered_escaped(make_app, hostile_store, query, cli,
                                                                            rendered):
    cli("recompute", "--run", "hostile", "--ruleset", "grounded", db=hostile_store, check=True)
    rid = response_id(query, hostile_store, "hostile", "x-01", "openai")
    grounded = evaluation_id(query, hostile_store, "hostile", "grounded")
    app = make_app(hostile_store, PAGE, response=rid, evaluation=grounded)
    [block] = [t for t in rendered(app) if 'class="closest-context"' in t]
    assert "<script" not in block.lower() and "<img" not in block.lower()
    assert "&lt;img src=x onerror=" in block and "kb-&lt;1&gt;" in block


def test_the_answers_unverified_name_is_marked_where_a_passage_holds_part_of_it(make_app, sample_store, query):
    """The answer says "Sync Bridge Pro" (flagged: no passage holds it); the passages say "Sync Bridge":
    marked there, so the reviewer sees the near match at a glance (issue 31)."""
    rid = query(sample_store, "SELECT response_id FROM responses JOIN runs USING (run_id) WHERE name = 'clearpath' "
                              "AND answer LIKE '%Sync Bridge Pro%' ORDER BY response_id LIMIT 1")[0][0]
    app = make_app(sample_store, PAGE, response=rid)
    [table] = [m.value for m in app.markdown if m.value.startswith('<table class="retrieved"')]
    assert re.findall(r'<mark data-kinds="unverified_term"[^>]*>([^<]*)</mark>', table) == ["Sync Bridge"] * 4
    assert "part of “Sync Bridge Pro”" in table
    assert any("(or part of it), in the passage" in m.value for m in app.markdown)  # its legend
