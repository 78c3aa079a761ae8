"""Pages while another process (the CLI) holds the store: they wait and carry on by themselves,
and a reviewer's save is kept as pending, never lost and never an error."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from evaluator.review import pending

PAGE = "pages/review.py"
SAVE_WAIT_S = 2.0  # pages/review.py: how long a save waits for the store before it stays pending
def _rid(query, db: Path) -> int:  # type: ignore[no-untyped-def]
    return query(db, "SELECT response_id FROM responses JOIN runs USING (run_id) "
                     "WHERE name = 'clearpath' AND question_id = 'cp-02' AND provider = 'openai'")[0][0]


def test_a_page_waits_for_the_store_and_then_renders_without_an_error(make_app, sample_store, query, hold_store):
    rid = _rid(query, sample_store)
    holder = hold_store(sample_store, "evaluator ingest")
    released = threading.Timer(2.0, holder.release)  # the CLI finishes while the page waits
    released.start()
    try:
        started = time.monotonic()
        app = make_app(sample_store, PAGE, response=rid)
        waited = time.monotonic() - started
    finally:
        released.join()
    assert not app.exception and not app.error
    assert app.markdown[0].value.startswith("#### cp-02 · openai")
    assert waited >= 1.5  # it really waited for the holder rather than failing or reading around it


def test_a_save_while_the_store_is_busy_is_kept_as_pending_and_lands_later(make_app, sample_store, query,
                                                                           hold_store):
    rid = _rid(query, sample_store)
    app = make_app(sample_store, PAGE, response=rid, state={"reviewer": "Priya"})
    app.selectbox(key="override_target").select("overall").run()  # it opens on the failing check
    app.radio[0].set_value("PASS").run()  # the form starts on the current verdict, FAIL
    app.text_area[0].input("a price the context supports")
    holder = hold_store(sample_store, "evaluator ingest")
    try:
        app.button(key="save_override").click()
        # Released after the save has given up waiting (SAVE_WAIT_S): the page's rerun then waits its turn.
        released = threading.Timer(SAVE_WAIT_S + 1.5, holder.release)
        released.start()
        app.run()
        released.join()
    finally:
        holder.release()
    assert not app.exception and not app.error
    assert any("Kept as pending" in i.value for i in app.info)
    deadline = time.monotonic() + 30
    while pending.pending(sample_store) and time.monotonic() < deadline:
        time.sleep(0.1)  # the dashboard's background writer lands it once the store is free
    rows = query(sample_store, "SELECT target, new_value, reviewer, reason FROM overrides WHERE response_id = ?", [rid])
    assert rows == [("overall", "PASS", "Priya", "a price the context supports")]


def test_a_save_the_store_refused_is_shown_with_its_reason(make_app, sample_store, query):
    rid = _rid(query, sample_store)
    other_run = query(sample_store, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                                    "WHERE name = 'ramayana'")[0][0]
    token = pending.submit(sample_store, {"kind": "override", "response_id": rid, "target": "overall",
                                          "new_value": "FAIL", "reason": "r", "reviewer": "Priya",
                                          "evaluation_id": other_run})
    assert pending.apply(sample_store, [token])[0].state == "failed"
    app = make_app(sample_store, PAGE, response=rid)
    [error] = app.error
    assert "Not saved" in error.value and "is not an evaluation of this response" in error.value
