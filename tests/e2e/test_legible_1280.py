"""At 1280×800 every headline number is whole (issue 31): no st.metric label or value of the PM
pages cut with an ellipsis, and no bar value label drawn too small to read."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import run_cli
from tests.e2e.legible import CUT_METRICS, settled

PROMPTFOO = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "promptfoo_current.json"
CLAPNQ = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "inspectorraget_clapnq.json"

pytestmark = pytest.mark.xdist_group("e2e_legible_1280")  # one store and one server for the module

# Bar value labels Plotly draws (shrunk to their bar's width): their font sizes in px.
BAR_LABEL_SIZES = """() => [...document.querySelectorAll('.js-plotly-plot g.points text')]
  .filter(t => t.textContent.trim() && getComputedStyle(t).display !== 'none' && t.getBBox().width > 0)
  .map(t => parseFloat(t.style.fontSize || getComputedStyle(t).fontSize))"""

PAGES = [
    "?run=ramayana",  # Overview
    "before_after?run=ramayana",
    "compare?run=ramayana",
    "metrics?run=ramayana",
    "metrics?run=four",  # four providers: four cards a row
]


@pytest.fixture(scope="module")
def server(module_store: Path, module_server: str) -> str:
    return module_server


@pytest.fixture(scope="module", autouse=True)
def _runs(module_store: Path) -> None:
    """The promptfoo file (four providers) as run `four` and the ClapNQ file, with TRUST-SCORE for
    every run, before the server starts."""
    run_cli("ingest", str(PROMPTFOO), "--name", "four", db=module_store, check=True)
    run_cli("ingest", str(CLAPNQ), "--name", "clapnq", db=module_store, check=True)
    for run in ("ramayana", "ramayana_v2", "clearpath", "four", "clapnq"):
        run_cli("metrics", "--run", run, db=module_store, check=True)


@pytest.fixture
def laptop(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("path", PAGES)
def test_no_metric_label_or_value_is_cut_at_1280(server, laptop, path, tmp_path):
    laptop.goto(f"{server}/{path}")
    settled(laptop)
    if "metrics" in path or "compare" in path or "before_after" in path:
        expect(laptop.locator('[data-testid="stMetric"]').first).to_be_visible(timeout=30_000)
    if path.endswith("run=four"):
        expect(laptop.locator('[data-testid="stMetricValue"]')).to_have_count(8)  # F1GR and F1AC x 4
    metrics = laptop.evaluate(CUT_METRICS)
    if "before_after" in path:
        assert any(m["text"].startswith("12.5%") and m["text"].endswith("100.0%") for m in metrics), metrics
    cut = [m for m in metrics if m["cut"]]
    if cut:
        laptop.screenshot(path=str(tmp_path / "cut.png"))
    assert not cut, f"{path}: truncated at 1280x800: {cut}"


@pytest.mark.parametrize("path", ["?run=ramayana", "before_after?run=ramayana", "metrics?run=ramayana"])
def test_bar_value_labels_are_readable_or_absent(server, laptop, path):
    laptop.goto(f"{server}/{path}")
    settled(laptop)
    expect(laptop.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    sizes = laptop.evaluate(BAR_LABEL_SIZES)
    if "metrics" not in path:  # these charts have room for their labels
        assert sizes, path
    assert all(size >= 10.5 for size in sizes), (path, sorted(sizes)[:5])


def test_the_human_labels_page_and_the_overrides_tab_are_named_apart(server, laptop):
    laptop.goto(f"{server}/triage?run=ramayana")
    settled(laptop)
    nav = laptop.locator('[data-testid="stSidebarNav"]')
    expect(nav.get_by_text("Human labels", exact=True)).to_be_visible(timeout=30_000)
    expect(nav.get_by_text("Agreement", exact=True)).to_have_count(0)
    expect(laptop.get_by_role("tab", name="Reviewer overrides vs evaluator")).to_be_visible()
    nav.get_by_text("Human labels", exact=True).click()
    expect(laptop.get_by_role("heading", name="Human labels", exact=True)).to_be_visible(timeout=30_000)
