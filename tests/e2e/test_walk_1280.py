"""The reviewer's and the PM's day at 1280×800 in real headless Chromium (issue 31's "Done when"),
on the sample runs and on a run imported from each peer format the product reads.

For each run: Triage (opens on what needs a reviewer) → "Review these" → Review of a failing
response → the failing check overridden with the keyboard only (`p`, Alt+R, the reason, Ctrl+Enter)
→ `j` to the next response; then the PM's pages (Overview, Metrics, Before/after, Compare). Every
page is screenshotted and must show no Streamlit exception box and no metric cut with an ellipsis
(tests/e2e/legible.py, the check test_legible_1280.py uses too).

One store (the samples plus one run per peer file, each recomputed under t3_aware and scored by
`metrics` once) and one server for the module. Screenshots go to the module's temp dir, or to
$WALK_SCREENSHOTS when set (to look at them).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pytest
from playwright.sync_api import Page, expect

from tests.conftest import run_cli
from tests.e2e.legible import assert_whole, settled
from tests.evaluator.ingest.test_formats_real_shapes import write_eval

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
# run name -> the files `ingest` reads (None: the Inspect .eval zip, built at test time)
PEER_RUNS: dict[str, list[Path] | None] = {
    "inspectorraget": [FORMATS / "inspectorraget_clapnq.json"],
    "promptfoo": [FORMATS / "promptfoo_current.json"],
    "inspect_json": [FORMATS / "inspect_log.json"],
    "inspect_eval": None,
    "ragas": [FORMATS / "ragas_04.csv"],
    "deepeval": [FORMATS / "deepeval_test_run.json"],
    "phoenix": [FORMATS / "phoenix_llm_spans.jsonl", FORMATS / "phoenix_retriever_spans.jsonl"],
}
SAMPLE_RUNS = ["ramayana", "clearpath"]
PM_PAGES = {"": "Overview", "metrics": "Metrics", "before_after": "Before/after", "compare": "Compare runs"}
REASON = "a false positive: the context says it"

pytestmark = pytest.mark.xdist_group("e2e_walk_1280")  # one store and one server for the module


@pytest.fixture(scope="module")
def walk_store(module_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample store plus one run per peer file, each recomputed under t3_aware, with TRUST-SCORE
    for every run, before the server starts."""
    folder = tmp_path_factory.mktemp("peer_files")
    for name, paths in PEER_RUNS.items():
        files = paths or [write_eval(folder / "ferry.eval")]
        run_cli("ingest", *map(str, files), "--name", name, db=module_store, check=True)
        run_cli("recompute", "--run", name, "--ruleset", "t3_aware", db=module_store, check=True)
    for name in [*SAMPLE_RUNS, *PEER_RUNS]:
        run_cli("metrics", "--run", name, db=module_store, check=True)
    return module_store


@pytest.fixture(scope="module")
def server(walk_store: Path, module_server: str) -> str:
    """The module's server, started once the runs are in its store."""
    return module_server


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ["WALK_SCREENSHOTS"]) if os.environ.get("WALK_SCREENSHOTS") else \
        tmp_path_factory.mktemp("walk_screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def laptop(browser) -> Page:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


def failing_evaluation(db: Path, run: str) -> tuple[int, int]:
    """(evaluation, its number of failing responses) to review: the t3_aware one when it fails a check,
    else the run file's recorded verdicts (a promptfoo file whose own grades fail, say)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            """SELECT e.evaluation_id, count(DISTINCT cr.response_id) FILTER (WHERE cr.verdict = 'FAIL')
               FROM evaluations e JOIN runs USING (run_id) LEFT JOIN check_results cr USING (evaluation_id)
               WHERE runs.name = ? GROUP BY e.evaluation_id, e.ruleset
               ORDER BY e.ruleset = 't3_aware' DESC, e.evaluation_id DESC""", [run]).fetchall()
    return next(((e, n) for e, n in rows if n), (0, 0))


def failing_checks(db: Path, evaluation_id: int, response_id: int) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [row[0] for row in con.execute(
            "SELECT check_name FROM check_results WHERE evaluation_id = ? AND response_id = ? AND verdict = 'FAIL'",
            [evaluation_id, response_id]).fetchall()]


def overrides_of(db: Path, response_id: int) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT target, old_value, new_value, reason, reviewer FROM overrides "
                           "WHERE response_id = ? ORDER BY override_id", [response_id]).fetchall()


def response_in(url: str) -> int:
    found = re.search(r"[?&]response=(\d+)", url)
    assert found, url
    return int(found.group(1))


def start_reviewing(page: Page, name: str) -> None:
    expect(page.get_by_role("textbox", name="Your name")).to_be_visible(timeout=30_000)
    settled(page)
    page.get_by_role("textbox", name="Your name").fill(name)
    page.get_by_role("button", name="Start reviewing").click()
    expect(page.get_by_text(f"Reviewing as {name}")).to_be_visible(timeout=30_000)
    settled(page)


@pytest.mark.parametrize("run", [*SAMPLE_RUNS, *PEER_RUNS])
def test_the_reviewers_and_the_pms_walk_at_1280(walk_store: Path, server: str, laptop: Page, shots: Path,
                                                  run: str) -> None:
    evaluation_id, n_failing = failing_evaluation(walk_store, run)
    assert n_failing, f"run {run} fails no check in any evaluation: nothing for the reviewer's walk"

    # Triage opens on what needs a reviewer: a failing response first.
    laptop.goto(f"{server}/triage?run={run}&evaluation={evaluation_id}")
    expect(laptop.locator("div.answer").first).to_be_visible(timeout=30_000)
    settled(laptop)
    expect(laptop.get_by_role("link", name="Review these")).to_be_visible()  # drawn (for the screenshot)
    assert_whole(laptop, f"{run}: Triage", shots / f"{run}-1-triage.png")
    first_card = laptop.locator('[class*="st-key-triage_card_"]').first
    expect(first_card.get_by_text("FAIL", exact=True).first).to_be_visible()

    # Review of that response, from the queue.
    laptop.get_by_role("link", name="Review these").click()
    expect(laptop.get_by_text(re.compile(r"Response 1 of \d+"))).to_be_visible(timeout=30_000)
    start_reviewing(laptop, "Priya")
    response_id = response_in(laptop.url)
    failing = failing_checks(walk_store, evaluation_id, response_id)
    assert failing, f"{run}: the queue's first response fails no check"
    target = laptop.get_by_role("combobox", name="What to override")
    expect(target).to_have_value(re.compile("|".join(re.escape(c) for c in failing)))
    check = target.input_value()
    assert_whole(laptop, f"{run}: Review", shots / f"{run}-2-review.png")

    # The check's false positive: one key, the reason, save; then on to the next response.
    save_enabled = laptop.locator(".st-key-save_override button:enabled")
    expect(save_enabled).to_have_count(0)
    laptop.keyboard.press("p")
    expect(save_enabled).to_have_count(1, timeout=30_000)
    settled(laptop)
    laptop.keyboard.press("Alt+r")
    reason_box = laptop.get_by_role("textbox", name="Reason", exact=True)
    expect(reason_box).to_be_focused()
    laptop.keyboard.type(REASON)
    expect(reason_box).to_have_value(REASON)
    laptop.keyboard.press("Control+Enter")
    expect(laptop.get_by_text(f"Override saved: {check} → PASS.")).to_be_visible(timeout=30_000)
    assert overrides_of(walk_store, response_id) == [(check, "FAIL", "PASS", REASON, "Priya")]
    settled(laptop)
    assert_whole(laptop, f"{run}: Review after the save", shots / f"{run}-3-saved.png")
    laptop.keyboard.press("j")
    expect(laptop).not_to_have_url(re.compile(rf"[?&]response={response_id}(&|$)"), timeout=30_000)
    expect(laptop.get_by_text(re.compile(r"Response \d+ of \d+"))).to_be_visible(timeout=30_000)
    settled(laptop)

    # The PM's pages on the same run.
    for path, title in PM_PAGES.items():
        laptop.goto(f"{server}/{path}?run={run}")
        expect(laptop.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=30_000)
        settled(laptop)
        assert_whole(laptop, f"{run}: {title}", shots / f"{run}-4-{path or 'overview'}.png")


# --- Triage at 1280×800: compact cards, and no control under the table's toolbar (issue 31) ---------

TYPICAL_CARD_PX = 180  # a card with one failing check and a flag's banner (it was ~360 px before)
CARDS = """() => [...document.querySelectorAll('[class*="st-key-triage_card_"]')].map(card => ({
  height: card.getBoundingClientRect().height,
  failing: card.querySelectorAll('.check-line').length,
  banners: card.querySelectorAll('[role=alert]').length,
  chips: [...card.querySelectorAll('.check-chip')].map(chip => chip.title)}))"""


def test_a_typical_triage_card_is_compact_and_keeps_every_check_reachable(server: str, laptop: Page) -> None:
    laptop.goto(f"{server}/triage?run=clearpath&flag=potential_hallucination")
    expect(laptop.locator('[class*="st-key-triage_card_"]').first).to_be_visible(timeout=30_000)
    settled(laptop)
    links = laptop.locator('[class*="st-key-triage_card_"] [data-testid="stPageLink"] a')  # drawn, not placeholders
    expect(links).to_have_count(laptop.locator('[class*="st-key-triage_card_"]').count())
    assert laptop.evaluate("document.fonts.ready.then(() => document.fonts.status)") == "loaded"  # the app's fonts
    cards = laptop.evaluate(CARDS)
    typical = [card for card in cards if card["failing"] == 1 and card["banners"] == 1]
    assert typical, cards
    assert max(card["height"] for card in typical) <= TYPICAL_CARD_PX, sorted(c["height"] for c in typical)
    # the passing and N/A checks are chips whose tooltip gives the verdict and the reason
    assert all(chip.split(": ")[1].startswith(("PASS — ", "N/A — ")) for card in typical for chip in card["chips"])
    assert all(len(card["chips"]) == 5 for card in typical)  # the clearpath bot's six checks, one failing


def test_the_tables_toolbar_covers_neither_review_these_nor_the_pager(server: str, laptop: Page) -> None:
    laptop.goto(f"{server}/triage?run=ramayana&view=table")  # 80 responses: a pager above the table
    grid = laptop.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible(timeout=30_000)
    settled(laptop)
    box = grid.bounding_box()
    assert box is not None
    for row in (0, 1):  # the row markers at the left edge select rows
        laptop.mouse.click(box["x"] + 12, box["y"] + 35 * (row + 1) + 17)
        expect(laptop.get_by_text(f"{row + 1} selected")).to_be_visible(timeout=30_000)
    grid.hover()
    toolbar = laptop.locator('[data-testid="stElementToolbar"]').first
    expect(toolbar).to_be_visible()
    bar = toolbar.bounding_box()
    assert bar is not None
    for control in (laptop.get_by_role("link", name="Review these"), laptop.get_by_role("button", name="Next →").first):
        expect(control).to_be_visible()
        other = control.bounding_box()
        assert other is not None
        apart = (bar["x"] + bar["width"] <= other["x"] or other["x"] + other["width"] <= bar["x"]
                 or bar["y"] + bar["height"] <= other["y"] or other["y"] + other["height"] <= bar["y"])
        assert apart, (bar, other)
