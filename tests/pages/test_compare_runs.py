"""Compare-runs page (SPEC §8.3) through AppTest: ramayana vs ramayana_v2, checked against the store."""

from __future__ import annotations

import json
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
    params = dict(at.query_params)
    assert params.pop("flip").isdigit()  # the flip whose answers are shown side by side
    assert params == {"run": "ramayana", "against": "ramayana_v2", "ruleset": "t3_aware"}


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
            assert row["pass A"] == pytest.approx(share(expected["a"]), abs=5e-4)  # rounded to 0.1%
            assert row["pass B"] == pytest.approx(share(expected["b"]), abs=5e-4)
            assert row["Δ (pp)"] == pytest.approx((share(expected["b"]) - share(expected["a"])) * 100)
            assert row["95% CI A"].startswith("[") and row["95% CI A"].endswith("%]")
    t3 = table[(table["provider"] == "openai") & (table["template"] == "T3")].iloc[0]
    assert t3["95% CI A"] == "[67.6%, 100.0%]"  # 8/8 under t3_aware


def test_regressions_and_fixes_listed_with_why_they_flipped(open_page, expected):
    regressions, fixes = (next(df.value for df in open_page(flips=tab).dataframe if "cause" in df.value.columns)
                          for tab in ("Regressions", "Fixes"))
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


# --- flips link to Review, A and B side by side, the open tab and page in the URL --------------------------


def response_ids(db: Path, run: str) -> dict[tuple[str, str], int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("""SELECT question_id, provider, response_id FROM responses
                              WHERE run_id = (SELECT run_id FROM runs WHERE name = ?)""", [run]).fetchall()
    return {(q, p): rid for q, p, rid in rows}


def evaluation_id(db: Path, run: str, ruleset: str = "t3_aware") -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("""SELECT max(e.evaluation_id) FROM evaluations e JOIN runs r USING (run_id)
                              WHERE r.name = ? AND e.ruleset = ?""", [run, ruleset]).fetchall()[0][0]


@pytest.fixture
def many_flips(sample_store, cli, tmp_path) -> Path:
    """Runs `before` and `after`: 30 questions x 2 providers, every recorded verdict PASS -> FAIL (60 regressions),
    the answers of `after` one word different and carrying markup."""
    for name, verdict, word in (("before", "PASS", "thirty"), ("after", "FAIL", "<b>forty</b>")):
        rows = [{"question_id": f"q{k:02d}", "question": f"Question {k}?", "provider": provider,
                 "answer": f"Pro costs {word} dollars a month.", "recorded_checks": {"no_hallucination": verdict}}
                for k in range(30) for provider in ("alpha", "beta")]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
        cli("ingest", str(path), "--name", name, "--profile", "clearpath", db=sample_store, check=True)
    return sample_store


def flips_table(at: AppTest) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if "cause" in df.value.columns)


def test_every_flip_links_both_responses_to_review(open_page, sample_store, expected):
    rows = flips_table(open_page(flips="Fixes"))
    ids_a, ids_b = response_ids(sample_store, "ramayana"), response_ids(sample_store, "ramayana_v2")
    eval_a, eval_b = evaluation_id(sample_store, "ramayana"), evaluation_id(sample_store, "ramayana_v2")
    keys = list(zip(rows["question_id"], rows["provider"], strict=True))
    # each link also names this page, so Review leads back here (&from=compare&from_q=...)
    assert [link.split("&from=compare&from_q=")[0] for link in rows["A"]] == [
        f"./review?response={ids_a[k]}&evaluation={eval_a}" for k in keys]
    assert [link.split("&from=compare&from_q=")[0] for link in rows["B"]] == [
        f"./review?response={ids_b[k]}&evaluation={eval_b}" for k in keys]
    assert all("&from=compare&from_q=" in link for link in [*rows["A"], *rows["B"]])


def test_the_open_tab_is_in_the_url_and_only_it_renders(open_page, expected):
    at = open_page(flips="Fixes")
    fixes = flips_table(at)
    assert sorted(zip(fixes["question_id"], fixes["provider"], strict=True)) == expected["fixes"]
    assert len([df for df in at.dataframe if "cause" in df.value.columns]) == 1


def test_answers_a_and_b_side_by_side_with_the_changed_words_marked(open_page, many_flips):
    at = open_page(run="before", against="after")
    a_html, b_html = (h.proto.body for h in at.get("html"))
    assert '<del style="' in a_html and ">thirty</del>" in a_html
    assert '<ins style="' in b_html and ">&lt;b&gt;forty&lt;/b&gt;</ins>" in b_html  # changed, and inert
    assert "<b>" not in b_html
    assert "Pro costs " in a_html and "Pro costs " in b_html  # unchanged words unmarked
    assert any("1 word(s) only in A" in c.value for c in at.caption)


def test_the_flip_shown_side_by_side_is_kept_in_the_url(open_page, many_flips):
    ids = response_ids(many_flips, "before")
    at = open_page(run="before", against="after", flip=str(ids["q01", "beta"]))
    assert at.selectbox(key="url_flip").value == str(ids["q01", "beta"])
    assert at.query_params["flip"] == str(ids["q01", "beta"])


def test_the_flip_page_is_in_the_url(open_page, many_flips):
    first = flips_table(open_page(run="before", against="after"))
    at = open_page(run="before", against="after", regressions_page="3")
    assert at.get("pagination")[0].value == 3
    third = flips_table(at)
    assert len(first) == 20 == len(third)  # 60 regressions, 20 a page
    assert set(first["question_id"]).isdisjoint(third["question_id"])
    at.get("pagination")[0].set_value(2).run()  # the browser writes it to the URL (bind="query-params")
    second = flips_table(at)
    assert len(second) == 20 and set(second["question_id"]).isdisjoint(third["question_id"])


def test_runs_that_share_no_question_say_exactly_that(open_page):
    at = open_page(run="ramayana", against="clearpath")
    (warning,) = [w.value for w in at.warning]
    assert "share no question" in warning
    assert not [i for i in at.info if "No pair flipped" in i.value]
    assert any("runs share no question" in c.value for c in at.caption)


def test_percentages_show_one_decimal(open_page):
    at = open_page()
    table = next(df for df in at.dataframe if "pass A" in df.value.columns)
    columns = json.loads(table.proto.columns)
    assert columns["pass A"]["type_config"] == {"type": "number", "format": "percent", "step": 0.001}
    assert metric(at, "Pass rate, all responses").count("%") == 2
    assert all(len(part.split(".")[1]) == 2 for part in metric(at, "Pass rate, all responses").split(" → "))


def test_a_flip_of_another_tab_in_the_url_shows_the_first_flip_without_a_warning(open_page):
    at = open_page(flips="Fixes", flip="999999999")
    assert not [w.value for w in at.warning if "does not exist" in w.value]
    picker = next(s for s in at.selectbox if s.label == "Answers side by side")
    assert picker.index == 0


# --- issue 31: never an unrelated run by default, no headline delta between unrelated runs -------------


def test_run_b_defaults_to_a_run_that_shares_questions(open_page):
    at = open_page(run="ramayana_v2")
    assert at.query_params["against"] == "ramayana"  # not clearpath, which comes first by nothing
    at = open_page(run="clearpath")  # no other run shares a question with clearpath
    (warning,) = [w.value for w in at.warning]
    assert "share no question" in warning and "No other run in the store shares a question" in warning


def test_runs_that_share_no_question_get_no_headline_delta(open_page):
    at = open_page(run="ramayana", against="clearpath")
    assert not at.metric  # no "Pass rate … → …, -x pp" between unrelated runs
    assert "no headline delta" in at.warning[0].value
    related = open_page(run="ramayana", against="ramayana_v2")
    assert [m.label for m in related.metric][:1] == ["Pass rate, all responses"]


def test_no_rule_set_in_common_names_the_run_without_one(open_page, sample_store, cli, tmp_path):
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps({"question_id": "q1", "question": "Q?", "provider": "openai", "answer": "A."}) + "\n")
    cli("ingest", str(path), "--name", "my run;x", db=sample_store, check=True)  # no recorded verdicts
    for query in ({"run": "ramayana", "against": "my run;x"}, {"run": "my run;x", "against": "ramayana"}):
        at = open_page(**query)
        (info,) = [i.value for i in at.info]
        assert "my run;x has no evaluation" in info.replace("\\", ""), info
        assert "recompute --run 'my run;x' --ruleset t3_aware" in info, info  # the real name, shell-quoted
        assert "--run ramayana" not in info and "--run RUN" not in info and "only no" not in info


def test_counts_are_shown_with_thousands_separators(open_page, number_formats) -> None:
    shown = number_formats(open_page(run="ramayana", against="ramayana_v2"))
    for column in ("n A", "n B", "regressions", "fixes", "both_pass", "both_fail"):
        assert shown.get(column) == "localized", (column, shown)
