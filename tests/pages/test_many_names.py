"""Every page on a run of 20k providers and on 10 kB names (issue 15), through AppTest.

Charts draw at most TOP_N providers and sum the others in one "… and N more providers" entry,
tables page through the providers in SQL, provider filters offer the top names plus "type to
filter", long names are cut for display (in full in the table cell or the tooltip) and markup in
a name stays text. Speed is not asserted here: `python -m bench.many_names` times the pages at
100k providers; 20k is the smallest run here that is far past every bound (TOP_N, the 100 options
of a picker, a page of the table) and takes seconds to build (issue 29: tests in ten minutes).

The store is built once for the module through the real CLI, in-process: run `many` (20,005
providers: 20k with one response each, five with 16–20), run `many_b` (the same questions and
providers, other answers) and run `long` (300 providers whose 10 kB names differ only at the end).
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.names import NAME_WIDTH, TOP_N
from tests.conftest import run_cli

# Under pytest-xdist the module's tests run on one worker: they share the module's store.
pytestmark = pytest.mark.xdist_group("many_names")

OVERVIEW, BEFORE_AFTER, COMPARE = "pages/overview.py", "pages/before_after.py", "pages/compare.py"
METRICS, TRIAGE, REVIEW = "pages/metrics.py", "pages/triage.py", "pages/review.py"

SINGLES = 20_000  # providers with one response each
LONG = "L" * 10_000 + "-provider"  # a 10 kB provider name, among the top providers
MARKUP = '<img src=x onerror="alert(1)"> **bold** [click](javascript:alert(1)) :red[red]'
HEAVY = [(LONG, 20), (MARKUP, 19), ("heavy-2", 18), ("heavy-3", 17), ("heavy-4", 16)]  # most responses first
N_PROVIDERS = SINGLES + len(HEAVY)
LONG_RUN = 300  # run `long`: every provider name 10 kB, alike but for the end
LONGEST_TEXT = 2_000  # no text body, chart string or option may be longer: a 10 kB name never is shown whole


def _question(k: int, qid: str) -> dict[str, Any]:
    template = ("T1", "T2", "T3")[k % 3]
    return {"question_id": qid, "question": f"Question {k}: what did Rama do?", "expected_template": template,
            "template": template, "answerable": template != "T3"}


def _response(k: int, qid: str, provider: str, good: bool) -> dict[str, Any]:
    row = {**_question(k, qid), "provider": provider}
    if row["template"] == "T3":
        row["answer"] = "I am sorry, but that is beyond my scope: I discuss the Ramayana only."
        row["retrieved"] = []
    else:
        chunk = f"Bala-Kanda {k % 50 + 1}.1"
        row["answer"] = (f"Rama went to the forest with Sita [{chunk}]." if good
                         else "The scholar Martin Keller sold it for $20 in 1990.")
        row["retrieved"] = [{"id": chunk, "text": "Rama went to the forest with Sita.", "score": 0.8}]
        if row["template"] == "T1":
            row["gold_answers"] = [["Rama"]]
    row["recorded_checks"] = {"cites_shlokas": "FAIL" if row["template"] == "T3" else "PASS"}
    return row


def rows(variant: int) -> Iterator[dict[str, Any]]:
    """Run `many` (variant 0) or `many_b` (variant 1): the same question ids and providers."""
    for i in range(SINGLES):
        k = i % 1000
        yield _response(k, f"q{k:04d}", f"p-{i:06d}", (i + variant) % 4 != 0)
    for provider, count in HEAVY:
        for k in range(count):
            qid = "Q" * 10_000 + f"-{k}" if provider == LONG else f"q{k:04d}"  # 10 kB question ids too
            yield _response(k, qid, provider, (k + variant) % 3 != 0)


def long_rows() -> Iterator[dict[str, Any]]:
    for i in range(LONG_RUN):
        yield _response(i, "Q" * 10_000 + f"-{i:03d}", "P" * 10_000 + f"-{i:03d}", i % 4 != 0)


def write(path: Path, records: Iterator[dict[str, Any]]) -> Path:
    with path.open("wb") as out:
        out.writelines(orjson.dumps(record) + b"\n" for record in records)
    return path


def cli(db: Path, *args: str) -> None:
    """The real CLI, in this process (tests.conftest.run_cli)."""
    result = run_cli(*args, db=db)
    assert result.returncode == 0, f"evaluator {' '.join(args)} exited {result.returncode}:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def many_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("many_names")
    db = folder / "many.duckdb"
    for name, records in (("many", rows(0)), ("many_b", rows(1)), ("long", long_rows())):
        cli(db, "ingest", str(write(folder / f"{name}.jsonl", records)), "--name", name)
        cli(db, "recompute", "--run", name, "--ruleset", "t3_aware")
    cli(db, "metrics", "--run", "many")
    cli(db, "metrics", "--run", "long")
    return db


# --- what a page sent to the browser ---------------------------------------------------------------


def charts(app: AppTest) -> list[dict[str, Any]]:
    return [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def categories(spec: dict[str, Any], axis: str = "x") -> set[str]:
    return {str(v) for trace in spec["data"] for v in trace.get(axis) or () if isinstance(v, str)}


def selects(app: AppTest) -> list[Any]:
    return [*app.selectbox, *app.sidebar.selectbox]


def texts(app: AppTest, rendered: Any) -> list[str]:
    return rendered(app) + [str(e.value) for e in app.get("markdown")]


def frame_with(app: AppTest, *columns: str) -> Any:
    for element in app.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def assert_bounded(app: AppTest, rendered: Any, *, options: int = TOP_N + 2) -> None:
    """Nothing on the page grows with the run: charts, selects, text bodies and tables stay small,
    and markup from a name never reaches them as markup."""
    for spec in charts(app):
        assert len(spec["data"]) <= 2 * TOP_N, "one trace per provider?"
        for axis in ("x", "y"):
            assert len(categories(spec, axis)) <= TOP_N + 1
        assert len({trace.get("name") for trace in spec["data"]}) <= TOP_N + 1
        assert len(spec["layout"].get("annotations", ())) <= TOP_N + 1
        for text in strings(spec):
            assert len(text) <= LONGEST_TEXT
            assert "<img" not in text and "<b>" not in text  # Plotly reads a few tags in labels
    for select in selects(app):
        assert len(select.options) <= options  # "all", the top names, the one in the URL
    for text in texts(app, rendered):
        assert len(text) <= LONGEST_TEXT
        assert not re.search(r"(?<!\\)<img", text)  # escaped: "\<img" in Markdown, "&lt;img" in HTML
    for frame in app.dataframe:
        assert len(frame.value) <= 4 * (TOP_N + 1) * 6  # a page of providers x templates x checks


def pager(app: AppTest) -> Any:
    found = app.get("pagination")
    assert found, "no pagination on the page"
    return found[0]


def provider_options(app: AppTest, key: str) -> list[str]:
    return list(app.sidebar.selectbox(key=key).options)


# --- the pages ---------------------------------------------------------------------------------------


def test_overview_draws_the_top_providers_and_sums_the_rest(make_app, many_store, rendered):
    app = make_app(many_store, OVERVIEW, run="many")
    assert_bounded(app, rendered)
    rest = f"… and {N_PROVIDERS - TOP_N:,} more providers"  # the chart follows the run picked: `many`
    pass_rates = charts(app)[0]
    labels = categories(pass_rates, "y")  # horizontal bars: providers on the y axis
    assert rest in labels and len(labels) == TOP_N + 1
    assert all(len(html.unescape(label)) <= NAME_WIDTH for label in labels if label != rest)
    assert "heavy-2" in labels and any(label.startswith("&lt;img src=x") for label in labels)  # escaped
    table = frame_with(app, "run", "provider", "pass_rate")
    assert LONG in set(table["provider"])  # the full name is in the table cell
    assert MARKUP in set(table["provider"])  # as data, never as markup
    assert rest in set(table["provider"])
    many = table[table["run"] == "many"]
    assert many["n"].sum() == N_PROVIDERS - len(HEAVY) + sum(n for _, n in HEAVY)  # nobody is lost
    assert pager(app).num_pages == math.ceil(N_PROVIDERS / TOP_N)  # the providers of the run picked
    checks = charts(app)[1]
    panels = {a["text"] for a in checks["layout"]["annotations"]}
    assert f"… and {N_PROVIDERS - 4:,} more providers" in panels and len(panels) == 5


def test_overview_pages_through_the_providers_in_sql(make_app, many_store, rendered):
    app = make_app(many_store, OVERVIEW, run="many")
    pager(app).set_value(2).run()
    assert not app.exception, [e.value for e in app.exception]
    table = frame_with(app, "run", "provider", "pass_rate")
    shown = [p for p in dict.fromkeys(table["provider"]) if not p.startswith("…")]
    # five heavy providers, then one response each by name: page 2 holds p-000015 … p-000034
    assert shown == [f"p-{i:06d}" for i in range(15, 35)]
    assert_bounded(app, rendered)


def test_overview_filters_the_providers_by_typing(make_app, many_store, rendered):
    app = make_app(many_store, OVERVIEW, run="many", providers="p-0143")
    table = frame_with(app, "run", "provider", "pass_rate")
    shown = [p for p in dict.fromkeys(table["provider"]) if not p.startswith("…")]
    assert shown == [f"p-0143{i:02d}" for i in range(TOP_N)]
    assert pager(app).num_pages == 5  # p-014300 … p-014399
    assert_bounded(app, rendered)


def test_before_after_bounds_the_chart_the_table_and_the_provider_filter(make_app, many_store, rendered):
    app = make_app(many_store, BEFORE_AFTER, run="many")
    assert_bounded(app, rendered)
    assert app.query_params["a"] == "recorded" and app.query_params["b"] == "t3_aware"
    rest = f"… and {N_PROVIDERS - TOP_N:,} more providers"
    assert rest in categories(charts(app)[0])
    table = frame_with(app, "provider", "template", "pass_rate_a", "pass_rate_b")
    assert {"(all)", LONG, MARKUP, rest} <= set(table["provider"])
    totals = table[table["provider"] == "(all)"]
    assert totals["n"].sum() == table[table["provider"] != "(all)"]["n"].sum()  # the rest row keeps every response
    options = provider_options(app, "url_flip_provider")
    assert len(options) == TOP_N + 1 and all(len(o) <= NAME_WIDTH for o in options)
    assert pager(app).num_pages == math.ceil(N_PROVIDERS / TOP_N)


def test_before_after_flips_of_a_provider_outside_the_top(make_app, many_store, query, rendered):
    (provider,) = query(many_store, """
        SELECT r.provider FROM responses r JOIN runs x USING (run_id)
        JOIN evaluations a ON a.run_id = x.run_id AND a.ruleset = 'recorded'
        JOIN evaluations b ON b.run_id = x.run_id AND b.ruleset = 't3_aware'
        JOIN response_results ra ON ra.evaluation_id = a.evaluation_id AND ra.response_id = r.response_id
        JOIN response_results rb ON rb.evaluation_id = b.evaluation_id AND rb.response_id = r.response_id
        WHERE x.name = 'many' AND ra.overall <> rb.overall AND r.provider >= 'p-010000'
        ORDER BY r.provider LIMIT 1""")[0]
    app = make_app(many_store, BEFORE_AFTER, run="many", flip_provider=provider)
    assert app.sidebar.selectbox(key="url_flip_provider").value == provider
    flips = frame_with(app, "question_id", "provider", "verdict")
    assert list(flips["provider"]) == [provider]
    assert_bounded(app, rendered)


def test_compare_runs_bounds_the_chart_and_both_tables(make_app, many_store, rendered):
    app = make_app(many_store, COMPARE, run="many", against="many_b")
    assert_bounded(app, rendered)
    rest = f"… and {N_PROVIDERS - TOP_N:,} more providers"
    assert rest in categories(charts(app)[0])
    rates = frame_with(app, "provider", "template", "n A", "n B")
    tests = frame_with(app, "provider", "template", "pairs", "regressions")
    for table in (rates, tests):
        assert rest in set(table["provider"]) and LONG in set(table["provider"])
        assert table["provider"].nunique() <= TOP_N + 2  # the page, the rest, "(all)"
    everything = tests[(tests["provider"] == "(all)") & (tests["template"] == "(all)")].iloc[0]
    assert everything["pairs"] == N_PROVIDERS - len(HEAVY) + sum(n for _, n in HEAVY)
    assert pager(app).num_pages == math.ceil(N_PROVIDERS / TOP_N)


def test_metrics_shows_cards_and_charts_for_a_few_and_pages_the_tables(make_app, many_store, rendered):
    app = make_app(many_store, METRICS, run="many")
    assert_bounded(app, rendered)
    assert len(app.metric) <= 2 * 8  # F1GR and F1AC cards for at most eight providers
    assert len(charts(app)) <= 1 + 4  # all runs, and a confusion matrix for at most four providers
    matrix = frame_with(app, "provider", "refused_unanswerable", "answered_answerable")
    assert len(matrix) == TOP_N and matrix["provider"].iloc[0] == LONG
    components = next(df.value for df in app.dataframe if "F1 refused" in df.value.index)
    assert len(components.columns) == TOP_N
    assert {p.num_pages for p in app.get("pagination")} == {math.ceil((N_PROVIDERS + LONG_RUN) / TOP_N),
                                                           math.ceil(N_PROVIDERS / TOP_N)}
    header = next(m for m in app.markdown if "LLLL" in m.value)
    assert len(header.value) < 100 and LONG in header.proto.help  # cut, and whole in the tooltip


def test_triage_offers_the_top_providers_and_type_to_filter(make_app, many_store, rendered):
    app = make_app(many_store, TRIAGE, run="many")
    assert_bounded(app, rendered)
    options = provider_options(app, "url_provider")
    assert options[0] == "All providers" and len(options) == TOP_N + 1
    assert all(len(o) <= NAME_WIDTH for o in options)
    assert any(f"{TOP_N} of {N_PROVIDERS:,} providers" in c.value for c in app.sidebar.caption)
    app = make_app(many_store, TRIAGE, run="many", provider_filter="p-0143")
    assert provider_options(app, "url_provider")[1:] == [f"p-0143{i:02d}" for i in range(TOP_N)]
    assert_bounded(app, rendered)


def test_triage_keeps_a_provider_from_the_url_outside_the_top(make_app, many_store, rendered):
    app = make_app(many_store, TRIAGE, run="many", provider="p-014321")
    assert app.sidebar.selectbox(key="url_provider").value == "p-014321"
    assert any(m.value == "**1** matching response" for m in app.markdown)
    assert_bounded(app, rendered)
    app = make_app(many_store, TRIAGE, run="many", provider="no such provider")
    assert app.query_params["provider"] == "*"  # an unknown name falls back to all providers


def test_triage_cards_cut_long_names_and_keep_them_in_the_tooltip(make_app, many_store, rendered):
    app = make_app(many_store, TRIAGE, run="many", provider=LONG)
    heads = [m for m in app.markdown if "LLL" in m.value]
    assert len(heads) == 20
    for head in heads:
        assert len(head.value) < 400
        assert LONG in head.proto.help and "Q" * 10_000 in head.proto.help
    assert_bounded(app, rendered)


def test_triage_agreement_tab_pages_its_pass_rates(make_app, many_store, rendered):
    app = make_app(many_store, TRIAGE, run="many", tab="Reviewer overrides vs evaluator")
    rates = frame_with(app, "provider", "template", "pass_rate", "pass_rate_effective")
    assert rates["provider"].nunique() == TOP_N + 1
    assert pager(app).num_pages == math.ceil(N_PROVIDERS / TOP_N)
    assert_bounded(app, rendered)


def test_review_picker_lists_a_few_responses_and_filters_by_typing(make_app, many_store, rendered):
    app = make_app(many_store, REVIEW, run="many")
    picker = app.selectbox[0]
    assert len(picker.options) == 100
    assert any("type a question id or provider" in c.value for c in app.caption)
    app = make_app(many_store, REVIEW, run="many", find="p-014321")
    assert len(app.selectbox[0].options) == 1 and "p-014321" in app.selectbox[0].options[0]
    app = make_app(many_store, REVIEW, run="long")
    options = app.selectbox[0].options
    assert len(options) == 100 == len(set(options))  # the names' ends tell them apart
    assert all(len(o) <= 30 + 30 + 80 + 6 for o in options)
    assert_bounded(app, rendered, options=100)


def test_review_of_a_response_with_10_kb_names(make_app, many_store, query, rendered):
    (response_id,) = query(many_store, "SELECT min(response_id) FROM responses WHERE provider = ?", [LONG])[0]
    app = make_app(many_store, REVIEW, response=response_id)
    heading = next(m for m in app.markdown if m.value.startswith("#### "))
    assert len(heading.value) < 200
    assert LONG in heading.proto.help and "Q" * 10_000 + "-0" in heading.proto.help
    details = json.loads(app.json[0].proto.body)
    assert details["provider"] == LONG  # in full, as data
    assert_bounded(app, rendered)


@pytest.mark.parametrize("page", [OVERVIEW, METRICS, TRIAGE])
def test_names_cut_alike_stay_apart(make_app, many_store, rendered, page):
    """Run `long`: 300 providers of 10 kB that differ only in their last characters."""
    app = make_app(many_store, page, run="long")
    assert_bounded(app, rendered)
    if page == TRIAGE:
        options = provider_options(app, "url_provider")[1:]
        assert len(options) == TOP_N == len(set(options))  # the ends tell them apart
    else:
        for spec in charts(app):
            for axis in ("x", "y"):
                names = [v for v in categories(spec, axis) if v.startswith("PPP")]
                assert len(names) == len(set(names))
