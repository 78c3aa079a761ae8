"""Overview page (SPEC §8.1) through AppTest on the sample store: the figures it renders, and its URL state."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

PAGE = Path(__file__).resolve().parents[2] / "pages" / "overview.py"


@pytest.fixture
def open_page(sample_store, monkeypatch):
    def _open(db: Path = sample_store, **query: str) -> AppTest:
        monkeypatch.setenv("EVALUATOR_DB", str(db))
        at = AppTest.from_file(str(PAGE), default_timeout=60)
        at.query_params.update(query)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def rate(df: pd.DataFrame, run: str, provider: str, template: str) -> pd.Series:
    rows = df[(df["run"] == run) & (df["provider"] == provider) & (df["template"] == template)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_defaults_to_t3_aware_and_puts_the_view_in_the_url(open_page):
    at = open_page()
    assert at.query_params == {"run": "ramayana", "eval": "t3_aware"}
    runs = frame_with(at, "name", "evaluations")
    assert list(runs["name"]) == ["ramayana", "ramayana_v2", "clearpath"]
    assert runs.set_index("name").loc["ramayana", "evaluations"] == "recorded, legacy, t3_aware"


def test_pass_rates_per_run_provider_and_template_under_t3_aware(open_page):
    rates = frame_with(open_page(**{"with": ["ramayana_v2", "clearpath"]}), "run", "provider", "template", "pass_rate")
    for provider in ("openai", "claude"):
        t3 = rate(rates, "ramayana", provider, "T3")
        assert (t3["n"], t3["passed"], t3["pass_rate"]) == (8, 8, 1.0)
        assert t3["ci_low"] == pytest.approx(0.6756, abs=5e-4)  # shown rounded to 67.6%
    assert set(rates["run"]) == {"ramayana", "ramayana_v2", "clearpath"}
    assert set(rates[rates["run"] == "clearpath"]["template"]) == {"no template"}


def test_recorded_verdicts_from_the_url_show_t3_at_one_in_eight(open_page):
    at = open_page(run="ramayana", eval="recorded", **{"with": ["ramayana_v2", "clearpath"]})
    rates = frame_with(at, "run", "pass_rate")
    for provider in ("openai", "claude"):
        t3 = rate(rates, "ramayana", provider, "T3")
        assert (t3["passed"], t3["n"], t3["pass_rate"]) == (1, 8, 0.125)
    assert set(rates["run"]) == {"ramayana"}
    assert any("Not evaluated under recorded: ramayana_v2, clearpath" in c.value.replace("\\_", "_")
               for c in at.caption)  # md() escapes the _ of run names
    checks = frame_with(at, "check", "PASS", "FAIL", "N/A")
    cites = checks[(checks["check"] == "cites_shlokas") & (checks["template"] == "T3")]
    assert list(cites["FAIL"]) == [7, 7] and list(cites["PASS"]) == [1, 1]


def test_per_check_counts_under_t3_aware(open_page, sample_store):
    checks = frame_with(open_page(), "check", "PASS", "FAIL", "N/A")
    t3 = checks[checks["template"] == "T3"].set_index(["provider", "check"])
    for provider in ("openai", "claude"):
        assert t3.loc[(provider, "cites_shlokas"), "N/A"] == 8
        assert t3.loc[(provider, "retrieval_check"), "N/A"] == 8
    with duckdb.connect(str(sample_store), read_only=True) as con:
        expected = con.execute(
            """SELECT count(*) FROM check_results c JOIN evaluations e USING (evaluation_id)
               JOIN runs r USING (run_id) WHERE r.name = 'ramayana' AND e.ruleset = 't3_aware'
                 AND c.verdict = 'FAIL'"""
        ).fetchall()[0][0]
    assert checks["FAIL"].sum() == expected


def test_flag_counts_match_the_store(open_page, sample_store):
    at = open_page()
    flags = next(df.value for df in at.dataframe if "no_context_warning" in df.value.index)
    with duckdb.connect(str(sample_store), read_only=True) as con:
        rows = con.execute(
            """SELECT r.provider, f.flag, count(*) FROM flags f JOIN responses r USING (response_id)
               WHERE f.evaluation_id = (SELECT max(e.evaluation_id) FROM evaluations e JOIN runs x USING (run_id)
                                        WHERE x.name = 'ramayana' AND e.ruleset = 't3_aware')
               GROUP BY ALL"""
        ).fetchall()
    assert rows
    for provider, flag, count in rows:
        assert flags.loc[flag, provider] == count


def test_recorded_verdicts_take_flags_from_a_computed_evaluation(open_page):
    at = open_page(eval="recorded")
    assert any("Recorded verdicts carry no flags" in c.value for c in at.caption)


def test_changing_the_evaluation_and_the_overrides_toggle_updates_the_url(open_page):
    at = open_page()
    at.selectbox(key="url_eval").set_value("legacy").run()
    assert at.query_params["eval"] == "legacy"
    at.toggle(key="url_overrides").set_value(True).run()
    assert at.query_params["overrides"] == "1"
    assert not at.exception


def test_with_overrides_a_reviewer_verdict_changes_the_pass_rate(open_page, sample_store):
    with duckdb.connect(str(sample_store)) as con:
        response_id = con.execute(
            """SELECT r.response_id FROM responses r JOIN runs x USING (run_id)
               WHERE x.name = 'ramayana' AND r.provider = 'openai' AND r.question_id = 'q34'"""
        ).fetchall()[0][0]
        con.execute(
            """INSERT INTO overrides VALUES (1001, ?, NULL, 'overall', 'PASS', 'FAIL', 'not a proper refusal',
                                             'qa', now(), NULL, NULL)""",
            [response_id],
        )
    plain = rate(frame_with(open_page(), "run", "pass_rate"), "ramayana", "openai", "T3")
    assert plain["pass_rate"] == 1.0
    at = open_page(overrides="1")
    assert at.toggle(key="url_overrides").value is True
    overridden = rate(frame_with(at, "run", "pass_rate"), "ramayana", "openai", "T3")
    assert (overridden["passed"], overridden["pass_rate"]) == (7, 0.875)
    assert rate(frame_with(at, "run", "pass_rate"), "ramayana", "claude", "T3")["pass_rate"] == 1.0


def test_a_store_without_evaluations_says_how_to_get_one(tmp_path, cli, open_page):
    run = tmp_path / "bare.jsonl"
    run.write_text('{"question_id": "q1", "question": "Q?", "provider": "p", "answer": "A"}\n')
    db = tmp_path / "bare.duckdb"
    cli("ingest", str(run), db=db, check=True)
    at = open_page(db)
    assert any("recompute" in info.value for info in at.info)


def test_names_from_run_files_are_shown_literally_not_as_markdown(open_page, sample_store, cli, tmp_path):
    name = "[click me](https://evil.example)"
    run = tmp_path / "odd.jsonl"
    run.write_text('{"question_id": "q1", "question": "Q?", "provider": "![x](https://evil.example/t.png)", '
                   '"answer": "A"}\n')
    cli("ingest", str(run), "--name", name, "--profile", "clearpath", db=sample_store, check=True)
    cli("recompute", "--run", name, "--ruleset", "t3_aware", db=sample_store, check=True)
    at = open_page(run=name)
    assert at.query_params["run"] == name
    texts = [s.value for s in at.subheader] + [c.value for c in at.caption] + [i.value for i in at.info]
    # Escaped Markdown (dashboard.common.md: how it keeps the URL from autolinking is its own business)
    assert any(text.startswith("Checks of \\[click me\\]\\(https") for text in texts)
    assert not any("](https://evil" in text for text in texts)
    rates = frame_with(at, "run", "provider", "pass_rate")
    assert name in set(rates["run"])  # the data itself is shown as is, in the table


# --- the charts follow the run picker, stay readable with ten runs, and show one percent format ------------


def charts(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def pass_rate_chart(at: AppTest) -> dict:
    return charts(at)[0]


def trace_runs(spec: dict) -> set[str]:
    return {trace["name"] for trace in spec["data"]}


@pytest.fixture
def ten_runs(sample_store, cli, tmp_path) -> Path:
    """The sample store plus nine small runs with recorded verdicts: ten runs under `recorded`."""
    rows = [{"question_id": f"q{k}", "question": f"Question {k}?", "provider": provider, "answer": "An answer.",
             "recorded_checks": {"retrieval_check": "PASS" if (k + i) % 2 else "FAIL", "no_hallucination": "PASS"}}
            for i, provider in enumerate(("alpha", "beta")) for k in range(4)]
    for n in range(1, 10):
        path = tmp_path / f"small-{n}.jsonl"  # one content per run: the same file twice is refused
        path.write_text("\n".join(json.dumps({**row, "run_no": n}) for row in rows) + "\n")
        cli("ingest", str(path), "--name", f"run-{n:02d}", "--profile", "clearpath", db=sample_store, check=True)
    return sample_store


def test_the_pass_rate_chart_and_table_follow_the_run_picker(open_page):
    at = open_page(run="clearpath")
    assert trace_runs(pass_rate_chart(at)) == {"clearpath"}
    assert set(frame_with(at, "run", "pass_rate")["run"]) == {"clearpath"}
    at = open_page(run="ramayana_v2")
    assert trace_runs(pass_rate_chart(at)) == {"ramayana_v2"}


def test_other_runs_chosen_in_the_sidebar_join_the_chart_and_stay_in_the_url(open_page):
    at = open_page(run="clearpath")
    at.sidebar.multiselect(key="url_with").set_value(["ramayana"]).run()
    assert at.query_params["with"] in (["ramayana"], "ramayana")  # AppTest keeps a one-item list as its item
    assert trace_runs(pass_rate_chart(at)) == {"clearpath", "ramayana"}


def test_ten_runs_are_horizontal_bars_and_the_chart_grows_with_them(open_page, ten_runs):
    others = [f"run-{n:02d}" for n in range(1, 10)]
    one = pass_rate_chart(open_page(ten_runs, run="ramayana", eval="recorded"))
    ten = pass_rate_chart(open_page(ten_runs, run="ramayana", eval="recorded", **{"with": others}))
    assert trace_runs(ten) == {"ramayana", *others}
    assert {trace["orientation"] for trace in ten["data"]} == {"h"}  # bars side by side, not slivers
    panels: dict[str, int] = {}
    for trace in ten["data"]:
        panels[trace["xaxis"]] = panels.get(trace["xaxis"], 0) + len(trace["y"])
    assert max(panels.values()) == 9  # the nine small runs share the 'no template' panel
    assert ten["layout"]["height"] >= 22 * max(panels.values())  # ~22 px a bar, whatever the runs
    assert ten["layout"]["height"] > one["layout"]["height"]


def test_percentages_show_one_decimal_in_tables(open_page):
    at = open_page()
    table = next(df for df in at.dataframe if "pass_rate" in df.value.columns)
    columns = json.loads(table.proto.columns)
    for column in ("pass_rate", "ci_low", "ci_high"):
        # Streamlit's percent format shows the step's decimals minus two: exactly one (87.5%, 100.0%)
        assert columns[column]["type_config"] == {"type": "number", "format": "percent", "step": 0.001}
    texts = {text for trace in pass_rate_chart(at)["data"] for text in trace.get("text") or ()}
    assert "100.0%" in texts


def test_no_cell_shows_none(open_page):
    at = open_page()
    for table in at.dataframe:
        assert table.proto.placeholder == "—"
        assert not table.value.isna().any().any(), table.value


def test_counts_are_shown_with_thousands_separators(open_page, number_formats) -> None:
    """Every count column of the page's tables is shown in the reader's locale (1,000,000), not as 1000000."""
    shown = number_formats(open_page(run="ramayana"))
    for column in ("responses", "providers", "questions", "n", "passed", "PASS", "FAIL", "N/A"):
        assert shown.get(column) == "localized", (column, shown)
