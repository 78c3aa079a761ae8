"""evaluator.pipeline.sql: the SQL engine decides what the stored Python evaluations decided."""

from __future__ import annotations

import itertools
import json

import pyarrow.compute as pc
import pytest

from evaluator.lab.rule_lab import FieldError, edit
from evaluator.pipeline.sql.engine import VerifyError, decide_in_sql, evaluate_run_sql, verify
from evaluator.rules.load import load_rules
from evaluator.store.db import connect

RULES = load_rules()


def _stored(con, evaluation_id):  # type: ignore[no-untyped-def]
    checks = con.execute("SELECT response_id, check_name, verdict, reason FROM check_results "
                         "WHERE evaluation_id = $e ORDER BY ALL", {"e": evaluation_id}).fetchall()
    flags = con.execute("SELECT response_id, flag, severity FROM flags WHERE evaluation_id = $e ORDER BY ALL",
                        {"e": evaluation_id}).fetchall()
    return checks, flags


def _engine(run):  # type: ignore[no-untyped-def]
    checks = sorted(zip(*(run.checks.column(k).to_pylist() for k in ("response_id", "check_name", "verdict",
                                                                      "reason")), strict=True))
    flags = sorted(zip(*(run.flags.column(k).to_pylist() for k in ("response_id", "flag", "severity")), strict=True))
    return checks, flags


def test_sql_engine_equals_every_stored_python_evaluation_of_the_sample_runs(sample_store):
    with connect(sample_store) as con:
        evaluations = con.execute("SELECT e.evaluation_id, e.run_id, e.ruleset, coalesce(e.profile, r.profile) "
                                  "FROM evaluations e JOIN runs r USING (run_id) WHERE e.ruleset <> 'recorded'"
                                  ).fetchall()
        assert evaluations
        for evaluation_id, run_id, ruleset, profile in evaluations:
            run = evaluate_run_sql(con, run_id, ruleset=ruleset, rules=RULES, profile=profile)
            assert _engine(run) == _stored(con, evaluation_id), (ruleset, profile)


@pytest.mark.parametrize("profile", RULES.profile_names)
@pytest.mark.parametrize("ruleset", RULES.ruleset_names)
def test_sql_engine_agrees_with_python_on_every_profile_and_rule_set(sample_store, ruleset, profile):
    with connect(sample_store) as con:
        for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall():
            run = evaluate_run_sql(con, run_id, ruleset=ruleset, rules=RULES, profile=profile)
            assert verify(con, run, 10**9, ruleset=ruleset, rules=RULES, profile=profile) == run.overall.num_rows


def test_most_sample_rows_are_decided_in_sql(sample_store):
    with connect(sample_store) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clearpath'").fetchone()[0]
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath")
    assert run.n_sql > run.n_python


def test_verify_names_the_first_differing_response_and_check(sample_store):
    with connect(sample_store) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clearpath'").fetchone()[0]
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath")
        first = run.checks.column("response_id")[0].as_py()
        tampered = run.checks.set_column(3, "reason", pc.if_else(
            pc.and_(pc.equal(run.checks.column("response_id"), first),
                    pc.equal(run.checks.column("check_name"), "no_hallucination")),
            "tampered", run.checks.column("reason")))
        with pytest.raises(VerifyError, match=f"response {first}, check no_hallucination"):
            verify(con, type(run)(tampered, run.overall, run.flags, run.n_sql, run.n_python), 10**9,
                   ruleset="t3_aware", rules=RULES, profile="clearpath")


def test_recompute_engine_sql_stores_the_python_verdicts(sample_store, cli):
    python = cli("recompute", "--run", "clearpath", "--ruleset", "refined", "--json", db=sample_store, check=True)
    sql = cli("recompute", "--run", "clearpath", "--ruleset", "refined", "--engine", "sql", "--verify", "1000",
              "--json", db=sample_store, check=True)
    a, b = json.loads(python.stdout)["evaluation_id"], json.loads(sql.stdout)["evaluation_id"]
    with connect(sample_store) as con:
        assert _stored(con, a) == _stored(con, b)
        counts = ("SELECT provider, template_group, target, verdict, n FROM evaluation_counts "
                  "WHERE evaluation_id = $e ORDER BY ALL")
        assert con.execute(counts, {"e": a}).fetchall() == con.execute(counts, {"e": b}).fetchall()


def test_the_engine_reports_its_progress_up_to_done(sample_store):
    shares: list[float] = []
    with connect(sample_store, read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'ramayana'").fetchall()[0][0]
        evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana", on_progress=shares.append)
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
    assert shares and shares[-1] == 1.0
    assert all(0.0 <= a <= b <= 1.0 for a, b in itertools.pairwise(shares))


def test_a_subset_of_the_run_is_evaluated_as_in_the_whole_run(sample_store):
    with connect(sample_store, read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'ramayana'").fetchall()[0][0]
        whole = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana")
        ids = sorted(whole.overall.column("response_id").to_pylist())[::3]
        part = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana", only=ids)
    assert sorted(part.overall.column("response_id").to_pylist()) == ids
    wanted = set(ids)
    rows = [r for r in whole.checks.to_pylist() if r["response_id"] in wanted]
    assert sorted(part.checks.to_pylist(), key=lambda r: (r["response_id"], r["check_name"])) == \
        sorted(rows, key=lambda r: (r["response_id"], r["check_name"]))


def test_a_pattern_re2_refuses_is_refused_when_the_rules_load(sample_store):
    # Nested counts multiply past RE2's limit of 1,000 repetitions: one engine's refusal is both's.
    toml = "[flags.potential_hallucination]\nproper_noun_pattern = '\\b(?:[A-Z][a-z]{1,20} ){2,60}'\n"
    with pytest.raises(FieldError) as err:
        edit(RULES, "ramayana", {}, toml)
    assert "proper_noun_pattern" in err.value.message and "rules patterns are RE2" in err.value.message


def _outcomes(con, evaluation_id):  # type: ignore[no-untyped-def]
    return con.execute("SELECT response_id, overall, is_t3, template_group FROM response_results "
                       "WHERE evaluation_id = $e ORDER BY ALL", {"e": evaluation_id}).fetchall()


@pytest.mark.parametrize("verify_args", [(), ("--verify", "3")], ids=["no-verify", "verify-a-sample"])
def test_recompute_engine_sql_decided_on_the_store_stores_the_python_outcomes(sample_store, cli, verify_args):
    # SQL decides on the store itself; only the rows it leaves to Python (and a --verify sample)
    # are copied out: what is stored must still be the reference's, outcome by outcome
    python = cli("recompute", "--run", "clearpath", "--ruleset", "t3_aware", "--engine", "python", "--json",
                 db=sample_store, check=True)
    sql = cli("recompute", "--run", "clearpath", "--ruleset", "t3_aware", "--engine", "sql", *verify_args,
              "--json", db=sample_store, check=True)
    a, b = json.loads(python.stdout)["evaluation_id"], json.loads(sql.stdout)["evaluation_id"]
    with connect(sample_store) as con:
        assert _stored(con, a) == _stored(con, b)
        assert _outcomes(con, a) == _outcomes(con, b)
        assert con.execute("SELECT n_responses, with_spans FROM evaluations WHERE evaluation_id = $e",
                           {"e": b}).fetchone() == (len(_outcomes(con, a)), False)


@pytest.mark.parametrize("workers", [2, 0])
def test_the_rows_sql_leaves_to_python_are_evaluated_in_a_process_pool_as_by_the_reference(sample_store, monkeypatch,
                                                                                         workers):
    # --workers 2 (by default from PYTHON_PARALLEL_FROM rows on): the Python path's pool evaluates
    # them, in batches of at most two here so that both workers get some; 0 or 1: this process
    from evaluator.pipeline import recompute as recompute_module

    monkeypatch.setattr(recompute_module, "BATCH_ROWS", 2)
    python = recompute_module.recompute(sample_store, "clearpath", "t3_aware", engine="python")
    sql = recompute_module.recompute(sample_store, "clearpath", "t3_aware", engine="sql", workers=workers)
    with connect(sample_store) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clearpath'").fetchall()[0][0]
        left = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath").n_python
        assert left > 1
        assert _stored(con, python.evaluation_id) == _stored(con, sql.evaluation_id)
        assert _outcomes(con, python.evaluation_id) == _outcomes(con, sql.evaluation_id)


@pytest.mark.parametrize("chunk_rows", [1, 7])
def test_a_run_decided_in_chunks_is_decided_as_in_one_query(sample_store, chunk_rows):
    with connect(sample_store) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clearpath'").fetchall()[0][0]
        whole = decide_in_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath")
        shares: list[float] = []
        chunked = decide_in_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath",
                                chunk_rows=chunk_rows, on_progress=shares.append)
    assert whole.overall.num_rows > chunk_rows  # more than one chunk
    assert chunked.checks.equals(whole.checks) and chunked.flags.equals(whole.flags)
    assert chunked.overall.equals(whole.overall) and chunked.undecided == whole.undecided
    assert shares == sorted(shares) and shares[-1] == 1.0


@pytest.mark.parametrize("profile", RULES.profile_names)
def test_the_verdicts_alone_are_those_of_the_whole_evaluation(sample_store, profile):
    from evaluator.core.types import CHECK_NAMES
    from evaluator.pipeline.sql.engine import evaluate_verdicts

    with connect(sample_store, read_only=True) as con:
        for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall():
            whole = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile=profile)
            ids = sorted(whole.overall.column("response_id").to_pylist())
            for only in (None, ids[1::2]):
                got = evaluate_verdicts(con, run_id, ruleset="t3_aware", rules=RULES, profile=profile, only=only)
                wanted = ids if only is None else only
                assert sorted(got) == wanted
                overall = dict(zip(*(whole.overall.column(k).to_pylist() for k in ("response_id", "overall")),
                                   strict=True))
                by_check = {(r["response_id"], r["check_name"]): r["verdict"] for r in whole.checks.to_pylist()}
                for rid in wanted:
                    assert got[rid] == tuple(by_check[(rid, c)] for c in CHECK_NAMES)
                    assert ("FAIL" not in got[rid]) == (overall[rid] == "PASS")


def test_the_verdicts_alone_include_the_rows_python_decides(sample_store):
    from evaluator.pipeline.sql.engine import evaluate_verdicts

    with connect(sample_store, read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = 'clearpath'").fetchall()[0][0]
        whole = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath")
        assert whole.n_python > 0
        got = evaluate_verdicts(con, run_id, ruleset="t3_aware", rules=RULES, profile="clearpath")
    assert len(got) == whole.n_sql + whole.n_python


def test_a_subset_is_evaluated_without_importing_pandas(sample_store):
    import subprocess
    import sys

    code = ("import sys, duckdb\n"
            "from evaluator.rules.load import load_rules\n"
            "from evaluator.pipeline.sql.engine import evaluate_verdicts\n"
            f"con = duckdb.connect({str(sample_store)!r}, read_only=True)\n"
            "run_id = con.execute(\"SELECT run_id FROM runs WHERE name = 'ramayana'\").fetchall()[0][0]\n"
            "ids = [r[0] for r in con.execute('SELECT response_id FROM responses WHERE run_id = $r', "
            "{'r': run_id}).fetchall()][::2]\n"
            "got = evaluate_verdicts(con, run_id, ruleset='t3_aware', rules=load_rules(), profile='ramayana', "
            "only=ids)\n"
            "assert sorted(got) == sorted(ids)\n"
            "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("chosen", [("answers_question", "follows_template"), ("retrieval_check",),
                                    ("no_hallucination",), ()])
def test_the_verdicts_of_some_checks_are_those_of_the_whole_evaluation(sample_store, chosen):
    from evaluator.core.types import CHECK_NAMES
    from evaluator.pipeline.sql.engine import evaluate_verdicts

    with connect(sample_store, read_only=True) as con:
        for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall():
            whole = evaluate_verdicts(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana")
            some = evaluate_verdicts(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana",
                                     checks=frozenset(chosen))
            assert some.keys() == whole.keys()
            for rid, verdicts in some.items():
                if None in verdicts:  # decided in SQL: just the chosen checks
                    assert verdicts == tuple(v if c in chosen else None
                                             for c, v in zip(CHECK_NAMES, whole[rid], strict=True))
                else:  # decided by the Python reference: every check
                    assert verdicts == whole[rid]
