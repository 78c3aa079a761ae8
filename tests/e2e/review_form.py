"""The Review page's override form as a reviewer fills it in (shared by the concurrent-save tests)."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def wait_until(condition, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    """Poll a condition (not a fixed sleep): its first truthy value, or fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def no_error(page: Page) -> None:
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    expect(page.locator('[data-testid="stAlertContentError"]')).to_have_count(0)


def open_form(page: Page, url: str, reviewer: str, reason: str, value: str) -> None:
    """The Review page as a reviewer: name entered, default target (overall), a new value, a reason."""
    page.goto(url)
    expect(page.get_by_role("heading", name="Review")).to_be_visible(timeout=30_000)
    page.get_by_label("Your name", exact=True).fill(reviewer)
    page.get_by_role("button", name="Start reviewing").click()
    expect(page.get_by_text(f"Reviewing as {reviewer}")).to_be_visible(timeout=30_000)
    # Save stays disabled until the choice differs from the current verdict.
    expect(page.get_by_role("button", name="Save override")).to_be_disabled()
    page.locator('[data-testid="stRadio"]').get_by_text(value, exact=True).click()
    expect(page.locator(IDLE)).to_be_attached(timeout=30_000)
    reason_box = page.get_by_label("Reason", exact=True)
    reason_box.fill(reason)
    reason_box.blur()  # commits the text area's value (a rerun)
    expect(page.locator(IDLE)).to_be_attached(timeout=30_000)
    expect(page.get_by_role("button", name="Save override")).to_be_enabled()
    no_error(page)


def save_outcome(page: Page, saved_text: str = "Override saved: ") -> str:
    """After Save: the page says saved or kept as pending, settles, shows no error; which it said."""
    saved, kept = page.get_by_text(saved_text), page.get_by_text("Kept as pending")
    expect(saved.or_(kept)).to_be_visible(timeout=120_000)
    expect(page.locator(IDLE)).to_be_attached(timeout=120_000)
    no_error(page)
    return "saved" if saved.count() else "pending"


def nothing_pending_after_reload(page: Page) -> None:
    """Once the saves are written, the reloaded Review page shows its history and no pending saves."""
    page.reload()
    expect(page.get_by_role("heading", name="Override history")).to_be_visible(timeout=60_000)
    expect(page.locator(IDLE)).to_be_attached(timeout=60_000)
    expect(page.get_by_role("heading", name="Pending saves")).to_have_count(0)
    no_error(page)
