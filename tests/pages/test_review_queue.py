"""Review's queue (issue 14): a response opened from a Triage list knows its place in that list,
moves through it, and goes back to the very Triage page it came from. Also the override form's
loop: Save only when something would change, a fresh form after each save, and only the checks
the bot runs. AppTest on a copy of the sample store."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import pytest

PAGE = "pages/review.py"
QUEUE = {"run": "clearpath", "provider": "openai", "sort": "response", "size": "25"}


def clearpath_t3(query, db) -> int:
    return query(db, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                     "WHERE name = 'clearpath' AND ruleset = 't3_aware'")[0][0]


def openai_ids(query, db) -> list[int]:
    """The queue's responses in its order (Triage's response order), read straight from the store."""
    return [row[0] for row in query(db, "SELECT response_id FROM responses JOIN runs USING (run_id) "
                                        "WHERE name = 'clearpath' AND provider = 'openai' ORDER BY response_id")]


@pytest.fixture
def open_in_queue(make_app, sample_store, query):
    """open_in_queue(i, **state) -> (app, ids, evaluation): the queue's i-th response (0-based)."""
    evaluation = clearpath_t3(query, sample_store)
    ids = openai_ids(query, sample_store)
    queue = urlencode({**QUEUE, "evaluation": evaluation})

    def open_(index: int, **state: object):  # type: ignore[no-untyped-def]
        app = make_app(sample_store, PAGE, response=ids[index], evaluation=evaluation, queue=queue,
                       state=state or None)
        return app, ids, evaluation

    return open_


def back_link(app) -> dict[str, str]:  # type: ignore[no-untyped-def]
    [link] = [link for link in app.get("page_link") if link.value == "Back to Triage"]
    return dict(parse_qsl(link.proto.query_string))


def test_the_page_says_where_the_response_is_in_its_queue(open_in_queue):
    app, ids, _ = open_in_queue(2)
    assert f"**Response 3 of {len(ids)}** in this queue" in [m.value for m in app.markdown]


def test_next_opens_the_following_response_and_keeps_queue_and_evaluation(open_in_queue):
    app, ids, evaluation = open_in_queue(2)
    queue = app.query_params["queue"]
    app.button(key="queue_next").click().run()
    assert app.query_params["response"] == str(ids[3])
    assert (app.query_params["queue"], app.query_params["evaluation"]) == (queue, str(evaluation))
    assert f"**Response 4 of {len(ids)}** in this queue" in [m.value for m in app.markdown]


def test_previous_opens_the_response_before(open_in_queue):
    app, ids, _ = open_in_queue(2)
    app.button(key="queue_previous").click().run()
    assert app.query_params["response"] == str(ids[1])


def test_the_ends_of_the_queue_have_no_previous_or_next(open_in_queue):
    first, ids, _ = open_in_queue(0)
    last, _, _ = open_in_queue(len(ids) - 1)
    assert first.button(key="queue_previous").disabled and not first.button(key="queue_next").disabled
    assert last.button(key="queue_next").disabled and not last.button(key="queue_previous").disabled


def test_back_to_triage_returns_to_the_filtered_page_holding_the_response(make_app, sample_store, query):
    evaluation = clearpath_t3(query, sample_store)
    ids = openai_ids(query, sample_store)
    assert len(ids) > 2, "the sample run needs a few openai responses for pages of 2"
    queue = {**QUEUE, "size": "25", "evaluation": str(evaluation)}
    app = make_app(sample_store, PAGE, response=ids[-1], evaluation=evaluation, queue=urlencode(queue))
    page = (len(ids) - 1) // 25 + 1
    assert back_link(app) == {**queue, "page": str(page)}


def test_without_a_queue_back_goes_to_triage_with_the_run_only(make_app, sample_store, query):
    evaluation = clearpath_t3(query, sample_store)
    app = make_app(sample_store, PAGE, response=openai_ids(query, sample_store)[0], evaluation=evaluation)
    assert back_link(app) == {"run": "clearpath", "evaluation": str(evaluation)}
    assert not [b for b in app.button if b.key in ("queue_next", "queue_previous", "save_and_next")]


def test_save_and_next_writes_the_override_and_opens_the_next_response(open_in_queue, sample_store, query):
    app, ids, evaluation = open_in_queue(0, reviewer="Priya")
    [choice] = app.radio
    other = next(option for option in choice.options if option != choice.value)
    choice.set_value(other).run()
    [reason] = app.text_area
    reason.input("checked against the price list")
    app.button(key="save_and_next").click().run()
    assert query(sample_store, "SELECT response_id, evaluation_id, target, new_value, reviewer FROM overrides") == [
        (ids[0], evaluation, "overall", other, "Priya")]
    assert app.query_params["response"] == str(ids[1])


def test_save_is_disabled_while_the_choice_is_the_current_verdict(open_in_queue):
    app, _, _ = open_in_queue(0, reviewer="Priya")
    [choice] = app.radio
    assert app.button(key="save_override").disabled and app.button(key="save_and_next").disabled
    choice.set_value(next(o for o in choice.options if o != choice.value)).run()
    assert not app.button(key="save_override").disabled


def test_after_a_save_the_form_starts_from_the_new_verdict(open_in_queue):
    app, _, _ = open_in_queue(0, reviewer="Priya")
    [choice] = app.radio
    other = next(option for option in choice.options if option != choice.value)
    choice.set_value(other).run()
    app.text_area[0].input("a reason")
    app.button(key="save_override").click().run()
    [choice] = app.radio
    assert choice.value == other  # the new effective verdict
    assert app.text_area[0].value == ""
    assert app.button(key="save_override").disabled  # a second press would change nothing


def test_the_verdict_keys_choose_a_value_for_the_selected_check(open_in_queue):
    app, _, _ = open_in_queue(0, reviewer="Priya")
    app.selectbox(key="override_target").set_value("retrieval_check").run()
    app.button(key="choose_NA").click().run()
    assert app.radio[0].value == "N/A"
    app.button(key="choose_FAIL").click().run()
    assert app.radio[0].value == "FAIL"


def test_checks_the_bot_does_not_run_are_not_offered_for_override(open_in_queue):
    app, _, _ = open_in_queue(0, reviewer="Priya")
    # The clearpath profile runs retrieval_check and no_hallucination; the other four are N/A for it.
    assert app.selectbox(key="override_target").options == [
        "Overall verdict", "retrieval_check", "no_hallucination", "Refused (used by the metrics)"]


def test_the_keyboard_is_described_on_the_page(open_in_queue):
    app, _, _ = open_in_queue(0, reviewer="Priya")
    [keyboard] = [c.value for c in app.caption if c.value.startswith("**Keyboard**")]
    assert "`J` / `K`" in keyboard and "`Ctrl+Enter`" in keyboard and "`Alt+R`" in keyboard


def test_a_response_an_override_took_out_of_the_queue_still_leads_on(make_app, sample_store, query):
    evaluation = clearpath_t3(query, sample_store)
    failing = [row[0] for row in query(sample_store, "SELECT response_id FROM response_results WHERE "
                                                     "evaluation_id = ? AND overall = 'FAIL' ORDER BY response_id",
                                       [evaluation])]
    assert len(failing) >= 2
    queue = urlencode({"run": "clearpath", "evaluation": evaluation, "verdict": "FAIL"})
    app = make_app(sample_store, PAGE, response=failing[0], evaluation=evaluation, queue=queue,
                   state={"reviewer": "Priya"})
    app.radio[0].set_value("PASS").run()
    app.text_area[0].input("the price is in the context")
    app.button(key="save_override").click().run()  # now PASS: no longer in a FAIL queue
    assert any("your override took it out" in c.value for c in app.caption)
    app.button(key="queue_next").click().run()
    assert app.query_params["response"] == str(failing[1])


def test_back_to_triage_returns_to_the_view_the_queue_came_from(make_app, sample_store, query):
    evaluation = clearpath_t3(query, sample_store)
    ids = openai_ids(query, sample_store)
    queue = urlencode({**QUEUE, "evaluation": evaluation, "view": "table", "size": "25"})
    app = make_app(sample_store, PAGE, response=ids[0], evaluation=evaluation, queue=queue)
    back = back_link(app)
    assert (back["view"], back["size"], back["page"]) == ("table", "25", "1")


def test_next_goes_on_from_where_the_reviewer_was_when_an_override_re_sorts_the_queue(make_app, sample_store, query):
    """In the default "needs a reviewer" order a response overridden to PASS moves down the list;
    Next still opens the response that followed it when the reviewer opened it (issue 31's walk)."""
    evaluation = clearpath_t3(query, sample_store)
    failing = [row[0] for row in query(sample_store, "SELECT response_id FROM response_results WHERE "
                                                     "evaluation_id = ? AND overall = 'FAIL' ORDER BY response_id",
                                       [evaluation])]
    assert len(failing) >= 2
    queue = urlencode({"run": "clearpath", "evaluation": evaluation, "sort": "needs_review"})
    app = make_app(sample_store, PAGE, response=failing[0], evaluation=evaluation, queue=queue,
                   state={"reviewer": "Priya", "override_target": "overall"})
    assert any(m.value.startswith("**Response 1 of ") for m in app.markdown)
    app.selectbox(key="override_target").set_value("overall").run()
    app.radio[0].set_value("PASS").run()
    app.text_area[0].input("the price is in the context")
    app.button(key="save_override").click().run()  # now PASS: sorted after every failing and flagged one
    assert any("your override moved it in the queue's order" in c.value for c in app.caption)
    app.button(key="queue_next").click().run()
    assert app.query_params["response"] == str(failing[1])
