"""Before/after page (SPEC §8.2) through AppTest on the sample store: the T3 fix, told in numbers."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

PAGE = Path(__file__).resolve().parents[2] / "pages" / "before_after.py"


@pytest.fixture
def open_page(sample_store, monkeypatch):
    def _open(**query: str) -> AppTest:
        monkeypatch.setenv("EVALUATOR_DB", str(sample_store))
        at = AppTest.from_file(str(PAGE), default_timeout=60)
        at.query_params.update(query)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open


def metric(at: AppTest, label_start: str):
    found = [m for m in at.metric if m.label.startswith(label_start)]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def test_recorded_to_t3_aware_reads_t3_from_one_in_eight_to_all(open_page):
    at = open_page()
    assert at.query_params == {"run": "ramayana", "a": "recorded", "b": "t3_aware",
                               "flip_provider": "(all)", "flip_template": "(all)"}
    t3 = metric(at, "T3 pass rate")
    assert t3.value == "12.5% → 100.0%"
    assert t3.delta == "+87.5 pp"
    assert metric(at, "T3 false-failure rate").value == "87.5% → 0.0%"
    for template in ("T1", "T2"):
        before, after = metric(at, f"{template} pass rate").value.split(" → ")
        assert before == after
        assert metric(at, f"{template} pass rate").delta == "no change"


def test_per_provider_table_side_by_side(open_page):
    table = frame_with(open_page(), "provider", "template", "pass_rate_a", "pass_rate_b")
    for provider in ("openai", "claude", "(all)"):
        row = table[(table["provider"] == provider) & (table["template"] == "T3")].iloc[0]
        assert (row["pass_rate_a"], row["pass_rate_b"]) == (0.125, 1.0)
        assert (row["false_failure_rate_a"], row["false_failure_rate_b"]) == (0.875, 0.0)
    others = table[table["template"] != "T3"]
    assert (others["pass_rate_a"] == others["pass_rate_b"]).all()
    assert (others["fail_to_pass"] + others["pass_to_fail"] == 0).all()


def test_defines_the_false_failure_rate_on_the_page(open_page):
    captions = " ".join(c.value for c in open_page().caption)
    assert "False-failure rate" in captions and "share of all responses" in captions


def test_no_t1_t2_change_means_no_error_box(open_page):
    at = open_page()
    assert not at.error
    assert any("No T1/T2 verdict changed" in s.value for s in at.success)


def test_flipped_responses_show_the_check_diff_and_the_reviewer_comments(open_page):
    at = open_page()
    assert any(s.value == "Flipped responses (14)" for s in at.subheader)
    flips = frame_with(at, "question_id", "check_diff", "comment")
    assert len(flips) == 14
    assert (flips["template"] == "T3").all()
    assert (flips["verdict"] == "FAIL → PASS").all()
    assert flips["check_diff"].str.contains("cites_shlokas FAIL → N/A", regex=False).all()
    assert flips["comment"].str.contains("correctly refused the request and did not cite shlokas").any()
    changes = frame_with(at, "check", "change", "responses").set_index(["check", "change"])
    assert changes.loc[("cites_shlokas", "FAIL → N/A"), "responses"] == 14


def test_flip_filters_live_in_the_url(open_page):
    at = open_page(flip_provider="claude")
    flips = frame_with(at, "question_id", "check_diff")
    assert len(flips) == 7 and set(flips["provider"]) == {"claude"}
    assert any(s.value == "Flipped responses (7)" for s in at.subheader)


def test_recorded_has_no_duration_and_the_page_says_so(open_page):
    at = open_page()
    assert metric(at, "A: recorded").value == "—"
    assert any("recorded verdicts come from the run file" in i.value for i in at.info)


def test_legacy_to_t3_aware_compares_durations(open_page, sample_store):
    at = open_page(a="legacy")
    with duckdb.connect(str(sample_store), read_only=True) as con:
        legacy, t3 = (con.execute(
            """SELECT e.duration_s FROM evaluations e JOIN runs r USING (run_id)
               WHERE r.name = 'ramayana' AND e.ruleset = ? ORDER BY e.evaluation_id DESC LIMIT 1""", [name]
        ).fetchall()[0][0] for name in ("legacy", "t3_aware"))
    assert metric(at, "A: legacy").value == f"{legacy:.2f} s"
    verdicts = [s.value for s in at.success] + [e.value for e in at.error]
    assert any(f"{t3 / legacy:.2f}×" in v for v in verdicts)
    assert metric(at, "T3 pass rate").value.endswith("→ 100.0%")


def test_a_changed_t1_verdict_raises_a_loud_error(open_page, sample_store):
    with duckdb.connect(str(sample_store)) as con:  # simulate a fix that also changed a T1 verdict
        con.execute(
            """UPDATE response_results SET overall = CASE overall WHEN 'PASS' THEN 'FAIL' ELSE 'PASS' END
               WHERE evaluation_id = (SELECT max(e.evaluation_id) FROM evaluations e JOIN runs r USING (run_id)
                                      WHERE r.name = 'ramayana' AND e.ruleset = 't3_aware')
                 AND response_id = (SELECT min(rr.response_id) FROM response_results rr
                                    JOIN evaluations e USING (evaluation_id) JOIN runs r USING (run_id)
                                    WHERE r.name = 'ramayana' AND e.ruleset = 't3_aware'
                                      AND rr.template_group = 'T1')"""
        )
    at = open_page()
    assert len(at.error) == 1
    assert "1 T1/T2 verdict(s) changed" in at.error[0].value


def test_same_evaluation_twice_asks_for_two(open_page):
    at = open_page(a="t3_aware", b="t3_aware")
    assert any("same evaluation" in w.value for w in at.warning)


def test_untrusted_comments_are_data_not_markup(open_page, sample_store):
    with duckdb.connect(str(sample_store)) as con:
        con.execute("""UPDATE responses SET comment = '<img src=x onerror=alert(1)> **bold**'
                       WHERE question_id = 'q34' AND run_id = (SELECT run_id FROM runs WHERE name = 'ramayana')""")
    at = open_page()
    flips = frame_with(at, "question_id", "comment")
    assert (flips["comment"] == "<img src=x onerror=alert(1)> **bold**").sum() == 2
    rendered = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not any("onerror" in text for text in rendered)


def response_ids(db, run: str) -> dict[tuple[str, str], int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("""SELECT question_id, provider, response_id FROM responses
                              WHERE run_id = (SELECT run_id FROM runs WHERE name = ?)""", [run]).fetchall()
    return {(q, p): rid for q, p, rid in rows}


def evaluation_id(db, run: str, ruleset: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("""SELECT max(e.evaluation_id) FROM evaluations e JOIN runs r USING (run_id)
                              WHERE r.name = ? AND e.ruleset = ?""", [run, ruleset]).fetchall()[0][0]


def test_every_flip_links_to_its_response_in_review(open_page, sample_store):
    flips = frame_with(open_page(), "question_id", "check_diff", "review")
    ids, after = response_ids(sample_store, "ramayana"), evaluation_id(sample_store, "ramayana", "t3_aware")
    expected = [f"./review?response={ids[q, p]}&evaluation={after}"
                for q, p in zip(flips["question_id"], flips["provider"], strict=True)]
    # each link also names this page, so Review leads back here (&from=before_after&from_q=...)
    assert [link.split("&from=before_after&from_q=")[0] for link in flips["review"]] == expected
    assert all("&from=before_after&from_q=" in link for link in flips["review"])


def test_legacy_as_a_says_why_the_recorded_verdicts_differ(open_page, sample_store):
    at = open_page(a="legacy")
    (told,) = [i.value for i in at.info if "legacy recompute" in i.value]
    # question 7 of the story (q39): recorded PASS, legacy FAIL — and why, from the legacy check reasons
    assert told.startswith("**T3**: the recorded verdicts pass 2 response(s) (question q39)")
    assert "cites_shlokas PASS → FAIL: no inline shloka citation" in told.replace("\\_", "_")  # md() escapes _
    table = frame_with(at, "recorded", "recomputed", "because")
    ids, legacy = response_ids(sample_store, "ramayana"), evaluation_id(sample_store, "ramayana", "legacy")
    assert sorted(link.split("&from=")[0] for link in table["review"]) == sorted(
        f"./review?response={ids['q39', p]}&evaluation={legacy}" for p in ("openai", "claude"))


def test_recorded_as_a_needs_no_legacy_explanation(open_page):
    at = open_page()
    assert not [i for i in at.info if "legacy recompute" in i.value]


def test_pass_rates_show_one_decimal_and_no_cell_shows_none(open_page):
    at = open_page()
    table = next(df for df in at.dataframe if "pass_rate_a" in df.value.columns)
    columns = json.loads(table.proto.columns)
    for column in ("pass_rate_a", "pass_rate_b", "false_failure_rate_a", "false_failure_rate_b"):
        assert columns[column]["type_config"]["format"] == "percent"
        assert columns[column]["type_config"]["step"] == 0.001  # one decimal, like fmt.percent
    flips = frame_with(at, "question_id", "reviewer")
    assert (flips["reviewer"] == "—").all()  # no reviewer override: a dash, not None
    assert all(df.proto.placeholder == "—" for df in at.dataframe)


# --- issue 31: what the rule-set change does, in one generated sentence; T1/T2/T3 in words ---------------


def test_one_sentence_says_what_the_rule_set_change_does(open_page):
    at = open_page(run="ramayana", a="legacy", b="t3_aware")
    [said] = [i.value for i in at.info if "What changes" in i.value]
    assert "t3\\_aware marks retrieval\\_check and cites\\_shlokas N/A on T3 responses" in said
    at = open_page(run="ramayana", a="t3_aware", b="legacy")
    [said] = [i.value for i in at.info if "What changes" in i.value]
    assert "legacy requires retrieval\\_check and cites\\_shlokas on T3 responses again" in said
    at = open_page(run="ramayana")  # recorded -> t3_aware: said through legacy, which reproduces the file
    [said] = [i.value for i in at.info if "What changes" in i.value]
    assert "recorded verdicts" in said and "t3\\_aware marks" in said


def test_templates_are_said_in_words(open_page):
    at = open_page(run="ramayana")
    [caption] = [c.value for c in at.caption if c.value.startswith("Templates:")]
    assert "T1 = a textual answer" in caption and "T3 = a refusal of an out-of-scope request" in caption
    assert metric(at, "T3 pass rate").label == "T3 pass rate (refusal, 16 responses)"


def test_a_peer_tools_own_grades_are_not_told_as_false_failures(open_page, sample_store):
    """promptfoo's own grades (recorded) against t3_aware: the sentence says they are different measures
    and the false-failure rate is read as disagreement (issue 31's walk on a peer run)."""
    from tests.conftest import run_cli

    promptfoo = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "promptfoo_current.json"
    run_cli("ingest", str(promptfoo), "--name", "pf", db=sample_store, check=True)
    run_cli("recompute", "--run", "pf", "--ruleset", "t3_aware", db=sample_store, check=True)
    at = open_page(run="pf")
    [said] = [i.value for i in at.info if "What changes" in i.value]
    assert "grades promptfoo recorded in the run file" in said and "legacy" not in said and "T3" not in said
    assert any("promptfoo's own grades" in w.value and "not a false failure" in w.value for w in at.warning)
    assert not any("own grades" in w.value for w in open_page(run="ramayana").warning)


def test_counts_are_shown_with_thousands_separators(open_page, number_formats) -> None:
    shown = number_formats(open_page(run="ramayana"))
    for column in ("n", "fail_to_pass", "pass_to_fail", "responses"):
        assert shown.get(column) == "localized", (column, shown)
