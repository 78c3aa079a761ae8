"""The reviewer's loop in real Chromium (issue 14): open a filtered Triage list as a queue, review
three responses with the keyboard only, go back to the same Triage page; the browser remembers
the reviewer's name in a new tab."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import duckdb
import pytest
from playwright.sync_api import expect

from tests.e2e.legible import settled

# One store and one server for the module: only the first test writes (its three overrides).
pytestmark = pytest.mark.xdist_group("e2e_review_queue")

# In response order (the queue's order is Triage's sort; its default puts flagged responses first).
FILTERS = {"run": "clearpath", "provider": "openai", "verdict": "PASS", "sort": "response"}
REASONS = ["just a refusal, fine for a jargon question", "wrong: the price is not in the context",
           "keys j k f r n p typed here stay text"]


def overrides(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT response_id, target, new_value, reason, reviewer FROM overrides "
                           "ORDER BY override_id").fetchall()


def queue_ids(db: Path) -> list[int]:
    """The queue's responses (openai, computed PASS under the t3_aware rules), in Triage's response order."""
    with duckdb.connect(str(db), read_only=True) as con:
        return [row[0] for row in con.execute(
            """SELECT r.response_id FROM responses r JOIN runs USING (run_id)
               JOIN response_results rr ON rr.response_id = r.response_id
               JOIN evaluations e ON e.evaluation_id = rr.evaluation_id AND e.ruleset = 't3_aware'
               WHERE runs.name = 'clearpath' AND r.provider = 'openai' AND rr.overall = 'PASS'
               ORDER BY r.response_id""").fetchall()]


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def start_reviewing(page, name: str) -> None:  # type: ignore[no-untyped-def]
    expect(page.get_by_role("textbox", name="Your name")).to_be_visible(timeout=30_000)
    settled(page)
    page.get_by_role("textbox", name="Your name").fill(name)
    page.get_by_role("button", name="Start reviewing").click()
    expect(page.get_by_text(f"Reviewing as {name}")).to_be_visible(timeout=30_000)


def test_three_responses_reviewed_with_the_keyboard_then_back_to_the_same_triage_page(
        module_store, module_server, page):
    ids = queue_ids(module_store)
    triage = f"{module_server}/triage?" + "&".join(f"{k}={v}" for k, v in FILTERS.items())
    page.goto(triage)
    review_these = page.get_by_role("link", name="Review these")
    expect(review_these).to_be_visible(timeout=30_000)
    review_these.click()
    expect(page.get_by_text(f"Response 1 of {len(ids)}")).to_be_visible(timeout=30_000)
    start_reviewing(page, "Priya")
    keys = 0
    for number, reason in enumerate(REASONS):
        expect(page).to_have_url(re.compile(rf"[?&]response={ids[number]}(&|$)"), timeout=30_000)
        expect(page.get_by_text(re.compile(r"Response \d+ of \d+"))).to_be_visible(timeout=30_000)
        settled(page)
        save_enabled = page.locator(".st-key-save_override button:enabled")
        expect(save_enabled).to_have_count(0)  # nothing chosen yet that would change the verdict
        page.keyboard.press("f")  # FAIL for the overall verdict
        expect(save_enabled).to_have_count(1, timeout=30_000)
        settled(page)
        page.keyboard.press("Alt+r")  # into the reason box
        reason_box = page.get_by_role("textbox", name="Reason")
        expect(reason_box).to_be_focused()
        page.keyboard.type(reason)  # letters that are shortcuts elsewhere are just text here
        expect(reason_box).to_have_value(reason)
        page.keyboard.press("Control+Enter")  # save from the reason box
        expect(page.get_by_text("Override saved: overall → FAIL.")).to_be_visible(timeout=30_000)
        page.keyboard.press("j")  # next response
        keys += 4
    assert [row[0] for row in overrides(module_store)] == ids[:3]
    assert overrides(module_store) == [(rid, "overall", "FAIL", reason, "Priya")
                                       for rid, reason in zip(ids[:3], REASONS, strict=True)]
    assert keys == 12  # f, Alt+R, Ctrl+Enter, j per response, plus the reason's text

    expect(page).to_have_url(re.compile(rf"[?&]response={ids[3]}(&|$)"), timeout=30_000)
    page.get_by_role("link", name="Back to Triage").click()
    expect(page).to_have_url(re.compile(r"/triage\?"), timeout=30_000)
    back = query_of(page.url)
    assert {k: back.get(k) for k in FILTERS} == FILTERS
    assert back.get("page") == "1"


def test_the_reviewers_name_is_remembered_in_a_new_tab(module_store, module_server, page):
    review = f"{module_server}/review?response={queue_ids(module_store)[0]}"
    page.goto(review)
    start_reviewing(page, "Zoë <b>O'Brien</b>")
    expect(page.get_by_text("Reviewing as Zoë <b>O'Brien</b>")).to_be_visible()
    other = page.context.new_page()  # same browser, new tab: a new Streamlit session
    other.goto(review)
    expect(other.get_by_text("Reviewing as Zoë <b>O'Brien</b>")).to_be_visible(timeout=30_000)
    expect(other.get_by_role("textbox", name="Your name")).to_have_count(0)
    other.reload()
    expect(other.get_by_text("Reviewing as Zoë <b>O'Brien</b>")).to_be_visible(timeout=30_000)
