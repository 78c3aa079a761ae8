"""Span marks in real Chromium: a reviewer selects text of an answer on Review and marks it
unsupported; the mark holds exactly the selected text, and the Agreement page's span figures
change from "no span labels" to the figures the CLI computes on the same store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from dashboard.fmt import percent
from evaluator.store.db import connect
from tests.e2e.legible import settled

pytestmark = pytest.mark.xdist_group("e2e_span_marks")

# The middle of a word's first letter in the first piece of the answer that is (or is not) a highlighted flag span.
WORD_AT = """(el, flagged) => {
  const piece = [...el.children].find((c) => (c.tagName === "MARK") === flagged && /[A-Za-z]{3}/.test(c.textContent));
  const text = piece.firstChild, i = text.textContent.search(/[A-Za-z]{3}/);
  const r = document.createRange(); r.setStart(text, i); r.setEnd(text, i + 1);
  const b = r.getBoundingClientRect();
  return {x: b.x + b.width / 2, y: b.y + b.height / 2};
}"""


def flagged_response(db: Path) -> int:
    with connect(db, read_only=True) as con:
        return int(con.execute(
            """SELECT min(f.response_id) FROM flags f JOIN responses r USING (response_id) JOIN runs USING (run_id)
               WHERE runs.name = 'clearpath' AND f.flag = 'potential_hallucination'""").fetchone()[0])


def mark_word(page, flagged: bool) -> str:  # type: ignore[no-untyped-def]
    """Double-click a word inside (or outside) the highlighted span, mark it unsupported; the selected text."""
    settled(page)  # a rerun still drawing would move the word from under the pointer
    answer = page.get_by_test_id("span-marker-answer")
    answer.scroll_into_view_if_needed()
    point = answer.evaluate(WORD_AT, flagged)
    page.mouse.dblclick(point["x"], point["y"])
    page.wait_for_function("() => String(document.getSelection()).trim().length > 0")
    selected = page.evaluate("() => String(document.getSelection()).trim()")
    expect(page.get_by_text(f"Selected: “{selected}”")).to_be_visible()
    page.get_by_role("button", name="Mark unsupported").click()
    expect(page.get_by_text(f"Marked unsupported: “{selected}”.")).to_be_visible(timeout=30_000)
    return selected


def test_marking_text_on_review_changes_the_span_figures_on_agreement(module_server, module_store, page, cli):
    response_id = flagged_response(module_store)
    page.goto(f"{module_server}/agreement?run=clearpath&span_flag=potential_hallucination")
    expect(page.get_by_text("No span labels in this run yet")).to_be_visible(timeout=60_000)

    page.goto(f"{module_server}/review?run=clearpath&response={response_id}")
    page.get_by_role("textbox", name="Your name").fill("Priya")
    page.get_by_role("button", name="Start reviewing").click()
    expect(page.get_by_text("Reviewing as Priya")).to_be_visible(timeout=30_000)
    inside, outside = mark_word(page, flagged=True), mark_word(page, flagged=False)
    with connect(module_store, read_only=True) as con:
        marked = con.execute(
            "SELECT substr(r.answer, s.span_start + 1, s.span_end - s.span_start), s.annotator "
            "FROM span_labels s JOIN responses r USING (response_id) ORDER BY span_label_id").fetchall()
    assert marked == [(inside, "Priya"), (outside, "Priya")]

    figures = json.loads(cli("agreement", "--run", "clearpath", "--spans", "--flag", "potential_hallucination",
                             "--json", db=module_store, check=True).stdout)["overall"]
    assert figures["responses"] == 1 and figures["tp"] == 1 and 0 < figures["char_precision"] < 1
    page.goto(f"{module_server}/agreement?run=clearpath&span_flag=potential_hallucination")
    metrics = page.get_by_test_id("stMetric")
    expect(metrics.filter(has_text="Responses marked")).to_contain_text("1", timeout=60_000)
    expect(metrics.filter(has_text="Character precision")).to_contain_text(percent(figures["char_precision"]))
    expect(metrics.filter(has_text="Character recall")).to_contain_text(percent(figures["char_recall"]))
    expect(metrics.filter(has_text="Character F1")).to_contain_text(f"{figures['char_f1']:.3f}")


def test_a_reviewer_scrolled_down_review_sees_that_the_page_waits_for_the_store(module_server, module_store, page,
                                                                                hold_store):
    response_id = flagged_response(module_store)
    page.goto(f"{module_server}/review?run=clearpath&response={response_id}")
    history = page.get_by_role("heading", name="Override history")
    expect(history).to_be_visible(timeout=60_000)
    history.scroll_into_view_if_needed()
    holder = hold_store(module_store, "evaluator ingest")
    try:
        page.keyboard.press("r")  # Streamlit's rerun key: the page reads the store again, and must wait
        notice = page.locator(".store-wait")
        expect(notice).to_be_in_viewport(timeout=30_000)
        expect(notice).to_contain_text(re.compile(r"Waiting for the store: evaluator ingest\b.* is using it"))
        assert notice.evaluate("el => getComputedStyle(el).position") == "fixed"  # wherever the page is scrolled
    finally:
        holder.release()
    expect(page.locator(".store-wait")).to_have_count(0, timeout=60_000)
