"""Compare-runs page (SPEC §8.3) through AppTest: ramayana vs ramayana_v2, checked against the store."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

PAGE = Path(__file__).resolve().parents[2] / "pages" / "compare.py"


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


def verdicts(db: Path, run: str, ruleset: str = "t3_aware") -> dict[tuple[str, str], tuple[str, str, str]]:
    """(question_id, provider) -> (overall, template group, answer hash), read straight from the store."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            """SELECT r.question_id, r.provider, rr.overall, rr.template_group, r.answer_hash
               FROM response_results rr JOIN responses r USING (response_id)
               WHERE rr.evaluation_id = (SELECT max(e.evaluation_id) FROM evaluations e JOIN runs x USING (run_id)
                                         WHERE x.name = ? AND e.ruleset = ?)""",
            [run, ruleset],
        ).fetchall()
    return {(q, p): (overall, template, answer) for q, p, overall, template, answer in rows}


def exact_p(b: int, c: int) -> float:
    n = b + c
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.fixture
def expected(sample_store):
    a, b = verdicts(sample_store, "ramayana"), verdicts(sample_store, "ramayana_v2")
    pairs = sorted(set(a) & set(b))
    regressions = [k for k in pairs if a[k][0] == "PASS" and b[k][0] == "FAIL"]
    fixes = [k for k in pairs if a[k][0] == "FAIL" and b[k][0] == "PASS"]
    return {"a": a, "b": b, "pairs": pairs, "regressions": regressions, "fixes": fixes}


def test_defaults_compare_ramayana_with_its_v2_under_t3_aware(open_page):
    at = open_page()
    assert at.query_params == {"run": "ramayana", "against": "ramayana_v2", "ruleset": "t3_aware"}


def test_mcnemar_on_the_paired_flips(open_page, expected):
    at = open_page()
    b, c = len(expected["regressions"]), len(expected["fixes"])
    assert b + c > 0  # the prompt change flipped something
    assert metric(at, "Regressions (pass → fail)") == str(b)
    assert metric(at, "Fixes (fail → pass)") == str(c)
    p = exact_p(b, c)
    assert metric(at, "McNemar exact p (all pairs)") == (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")
    tests = frame_with(at, "pairs", "regressions", "fixes", "p_value")
    overall = tests[(tests["provider"] == "(all)") & (tests["template"] == "(all)")].iloc[0]
    assert (overall["pairs"], overall["regressions"], overall["fixes"]) == (len(expected["pairs"]), b, c)
    assert overall["p_value"] == pytest.approx(exact_p(b, c))
    for provider in ("openai", "claude"):
        row = tests[(tests["provider"] == provider) & (tests["template"] == "(all)")].iloc[0]
        pb = sum(1 for k in expected["regressions"] if k[1] == provider)
        pc = sum(1 for k in expected["fixes"] if k[1] == provider)
        assert (row["regressions"], row["fixes"], row["p_value"]) == (pb, pc, pytest.approx(exact_p(pb, pc)))


def test_pass_rate_deltas_with_wilson_intervals(open_page, expected):
    table = frame_with(open_page(), "provider", "template", "pass A", "pass B", "95% CI A", "Δ (pp)")
    for provider in ("openai", "claude"):
        for template in ("T1", "T2", "T3"):
            def share(side: dict, provider: str = provider, template: str = template) -> float:
                cells = [v for k, v in side.items() if k[1] == provider and v[1] == template]
                return sum(v[0] == "PASS" for v in cells) / len(cells)

            row = table[(table["provider"] == provider) & (table["template"] == template)].iloc[0]
            assert row["pass A"] == pytest.approx(share(expected["a"]))
            assert row["pass B"] == pytest.approx(share(expected["b"]))
            assert row["Δ (pp)"] == pytest.approx((share(expected["b"]) - share(expected["a"])) * 100)
            assert row["95% CI A"].startswith("[") and row["95% CI A"].endswith("%]")
    t3 = table[(table["provider"] == "openai") & (table["template"] == "T3")].iloc[0]
    assert t3["95% CI A"] == "[67.6%, 100.0%]"  # 8/8 under t3_aware


def test_regressions_and_fixes_listed_with_why_they_flipped(open_page, expected):
    at = open_page()
    lists = [df.value for df in at.dataframe if "cause" in df.value.columns]
    assert len(lists) == 2
    regressions, fixes = lists
    assert sorted(zip(regressions["question_id"], regressions["provider"], strict=True)) == expected["regressions"]
    assert sorted(zip(fixes["question_id"], fixes["provider"], strict=True)) == expected["fixes"]
    for frame, kind in ((regressions, expected["regressions"]), (fixes, expected["fixes"])):
        for _, row in frame.iterrows():
            key = (row["question_id"], row["provider"])
            changed = expected["a"][key][2] != expected["b"][key][2]
            assert row["cause"] == ("answer changed" if changed else row["cause"])
            assert "→" in row["check_diff"]
        assert len(frame) == len(kind)


def test_a_verdict_flipped_by_the_rules_alone_says_so(open_page, sample_store, expected):
    same_answer = next(k for k in expected["pairs"] if expected["a"][k][2] == expected["b"][k][2]
                       and expected["a"][k][0] == expected["b"][k][0] == "PASS")
    with duckdb.connect(str(sample_store)) as con:  # B's evaluation ran with other rules and failed it
        evaluation_b = con.execute(
            """SELECT max(e.evaluation_id) FROM evaluations e JOIN runs r USING (run_id)
               WHERE r.name = 'ramayana_v2' AND e.ruleset = 't3_aware'"""
        ).fetchall()[0][0]
        con.execute("UPDATE evaluations SET rules_hash = 'other-rules' WHERE evaluation_id = ?", [evaluation_b])
        con.execute(
            """UPDATE response_results SET overall = 'FAIL' WHERE evaluation_id = ? AND response_id =
               (SELECT response_id FROM responses r JOIN runs x USING (run_id)
                WHERE x.name = 'ramayana_v2' AND r.question_id = ? AND r.provider = ?)""",
            [evaluation_b, *same_answer],
        )
    at = open_page()
    regressions = next(df.value for df in at.dataframe if "cause" in df.value.columns)
    row = regressions[(regressions["question_id"] == same_answer[0]) & (regressions["provider"] == same_answer[1])]
    assert list(row["cause"]) == ["same answer — only the rules changed"]
    assert metric(at, "Regressions (pass → fail)") == str(len(expected["regressions"]) + 1)


def test_choosing_another_run_and_rule_set_updates_the_url(open_page):
    at = open_page()
    at.selectbox(key="url_ruleset").set_value("legacy").run()
    assert at.query_params["ruleset"] == "legacy"
    at.selectbox(key="url_against").set_value("clearpath").run()
    assert at.query_params["against"] == "clearpath"
    assert at.query_params["ruleset"] == "t3_aware"  # the only rule set both runs have
    assert not at.exception


def test_runs_of_different_golden_sets_are_flagged(open_page):
    at = open_page(run="ramayana", against="clearpath")
    assert any("not runs of the same golden set" in w.value for w in at.warning)
