"""evaluator compare: two runs under one rule set, or one run under two rule sets (the PM pages' figures).

    evaluator compare --run A --against B [--ruleset t3_aware | --recorded]   # Compare runs page
    evaluator compare --run A --recorded --vs-ruleset t3_aware                # Before/after page
    evaluator compare --run A --ruleset legacy --vs-ruleset t3_aware
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import duckdb

from evaluator.cli.common import inert, load_rules_arg, print_json, print_table
from evaluator.core.errors import UsageError
from evaluator.pipeline.evaluations import ensure_evaluation, recorded_evaluation, ruleset_evaluation
from evaluator.queries import before_after, compare
from evaluator.queries.overview import latest_evaluation, rulesets
from evaluator.store.db import connect
from evaluator.store.run_lookup import run_id_for

HELP = "compare two runs under one rule set (pass-rate deltas, McNemar), or a run under two rule sets"
RECORDED = "recorded"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run A (the 'before')")
    parser.add_argument("--against", metavar="RUN_B", help="run B: compare two runs of the same golden set")
    side_a = parser.add_mutually_exclusive_group()
    side_a.add_argument("--ruleset", help="rule set of the verdicts (for two runs: default t3_aware); "
                                          "'recorded' means the run file's verdicts")
    side_a.add_argument("--recorded", action="store_true", help="the verdicts recorded in the run file")
    parser.add_argument("--vs-ruleset", metavar="RULESET",
                        help="compare the run under --ruleset/--recorded (A) with this rule set (B)")
    parser.add_argument("--rules", help="rules TOML file for rule sets that must be computed first")
    parser.add_argument("--with-overrides", action="store_true", help="apply reviewers' overrides")
    parser.add_argument("--limit", type=int, default=20, help="flipped responses to list (default 20)")
    parser.add_argument("--json", action="store_true")


def resolve(con: duckdb.DuckDBPyConnection, run: str, ruleset: str, rules_path: str | None) -> int:
    """The evaluation the pages show for (run, rule set): the newest stored one; computed when there is
    none (legacy / t3_aware) or when a rules file is given."""
    run_id_for(con, run)  # a clear error for an unknown run
    if ruleset == RECORDED:
        return recorded_evaluation(con, run)
    if rules_path is None:
        stored = latest_evaluation(con, run, ruleset)
        if stored is not None:
            return int(stored["evaluation_id"])
    rules = load_rules_arg(rules_path)
    if ruleset in rules.ruleset_names:
        return ruleset_evaluation(con, run, ruleset, rules=rules, progress=sys.stderr.isatty())
    known = ", ".join(rulesets(con, run)) or "none"
    raise UsageError(f"run {run!r} has no evaluation under rule set {ruleset!r} (stored: {known}; "
                     f"computable: {', '.join(rules.ruleset_names)})")


def run(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise UsageError("--limit must be 0 or more")
    side_a = RECORDED if args.recorded else args.ruleset
    if args.against and args.vs_ruleset:
        raise UsageError("give either --against RUN_B (two runs) or --vs-ruleset RULESET (two rule sets), not both")
    if not args.against and not args.vs_ruleset:
        raise UsageError("say what to compare with: --against RUN_B or --vs-ruleset RULESET")
    rules = load_rules_arg(args.rules)
    for run_name, ruleset in ((args.run, side_a or "t3_aware"), (args.against, side_a or "t3_aware"),
                              (args.run, args.vs_ruleset)):
        if run_name and ruleset:
            ensure_evaluation(args.db, run_name, ruleset, rules=rules, any_rules=args.rules is None,
                              progress=sys.stderr.isatty())
    with connect(args.db, read_only=True) as con:
        if args.against:
            if args.against == args.run:
                raise UsageError("--run and --against name the same run; use --vs-ruleset to compare rule sets")
            result = compare_runs(con, args.run, args.against, side_a or "t3_aware", args)
        else:
            if not side_a:
                raise UsageError("say which verdicts are A: --ruleset NAME or --recorded")
            if side_a == args.vs_ruleset:
                raise UsageError(f"A and B are both {side_a!r}: compare two different rule sets")
            result = compare_rulesets(con, args.run, side_a, args.vs_ruleset, args)
    if args.json:
        print_json(result)
    elif result["mode"] == "runs":
        print_runs(result)
    else:
        print_before_after(result)
    return 0


def compare_runs(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, ruleset: str,
                 args: argparse.Namespace) -> dict[str, Any]:
    ida, idb = resolve(con, run_a, ruleset, args.rules), resolve(con, run_b, ruleset, args.rules)
    rates = compare.pass_rates(con, ida, idb, with_overrides=args.with_overrides)
    with compare.RunComparison(con, ida, idb, with_overrides=args.with_overrides) as comparison:
        tests = comparison.mcnemar()
        lists = comparison.flips(limit=args.limit)
    summary = compare.flip_summary(tests)
    return {
        "mode": "runs", "run_a": run_a, "run_b": run_b, "ruleset": ruleset,
        "evaluation_a": ida, "evaluation_b": idb, "with_overrides": args.with_overrides,
        "pairing": compare.pairing(rates, tests),
        "pass_rates": rates,
        "mcnemar": tests,
        **{kind: {**summary[kind], "items": lists[kind]} for kind in compare.FLIP_KINDS},
    }


def compare_rulesets(con: duckdb.DuckDBPyConnection, run: str, ruleset_a: str, ruleset_b: str,
                     args: argparse.Namespace) -> dict[str, Any]:
    ida, idb = resolve(con, run, ruleset_a, args.rules), resolve(con, run, ruleset_b, args.rules)
    timing = before_after.durations(con, ida, idb)
    with before_after.BeforeAfter(con, ida, idb, with_overrides=args.with_overrides) as ba:
        rows = ba.summary()
        changes = ba.check_changes()
        flipped = ba.flips(limit=args.limit) if args.limit else []
    # Only a templated run (T1/T2/T3) has a T3 fix to keep apart from T1/T2: on a run without templates a
    # rule change is meant to move verdicts, so there is no T1/T2 warning (the flips are listed).
    templated = any(r["template"] in ("T1", "T2", "T3") for r in rows)
    outside = before_after.non_t3_changes(rows) if templated else []
    return {
        "mode": "rulesets", "run": run, "with_overrides": args.with_overrides,
        "a": {"ruleset": ruleset_a, "evaluation_id": ida, "duration_s": timing["a_s"]},
        "b": {"ruleset": ruleset_b, "evaluation_id": idb, "duration_s": timing["b_s"]},
        "pass_rates": rows,
        "false_failure_definition": before_after.FALSE_FAILURE_DEFINITION,
        "templated": templated,
        "t1_t2_changed": bool(outside),
        "non_t3_changes": outside,
        "check_changes": changes,
        "flips": {"count": before_after.flip_count(rows), "items": flipped},
        "duration": timing,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ci(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{ci[0]:.1%}, {ci[1]:.1%}]"


def _pp_interval(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}] pp"


def print_runs(result: dict[str, Any]) -> None:
    pairing = result["pairing"]
    print(f"{inert(result['run_a'])} (A) -> {inert(result['run_b'])} (B) under {inert(result['ruleset'])}: "
          f"{pairing['paired']} pairs "
          f"(same question_id + provider), {pairing['only_a']} only in A, {pairing['only_b']} only in B\n")
    print("Pass rates (95% Wilson intervals; delta: Newcombe interval)")
    columns = ["provider", "template", "A", "A 95% CI", "B", "B 95% CI", "delta", "delta 95% CI"]
    print_table([{
        "provider": r["provider"], "template": r["template"], "A": _pct(r["rate_a"]), "A 95% CI": _ci(r["ci_a"]),
        "B": _pct(r["rate_b"]), "B 95% CI": _ci(r["ci_b"]),
        "delta": "-" if r["delta"] is None else f"{r['delta'] * 100:+.1f} pp",
        "delta 95% CI": _pp_interval(r["delta_ci"]),
    } for r in result["pass_rates"]], columns)
    print("\nMcNemar's exact test on paired flips (b = regressions pass->fail, c = fixes fail->pass)")
    print_table(result["mcnemar"], ["provider", "template", "pairs", "both_pass", "both_fail", "regressions", "fixes",
                                    "p_value"])
    for kind in compare.FLIP_KINDS:
        block = result[kind]
        print(f"\n{kind.capitalize()}: {block['count']} ({block['answer_changed']} answer changed, "
              f"{block['same_answer']} same answer)")
        if block["items"]:
            print_table(block["items"], ["question_id", "provider", "template", "cause", "check_diff"])


def print_before_after(result: dict[str, Any]) -> None:
    a, b = result["a"], result["b"]
    print(f"{inert(result['run'])}: A = {inert(a['ruleset'])} (evaluation {a['evaluation_id']}) -> "
          f"B = {inert(b['ruleset'])} (evaluation {b['evaluation_id']})\n")
    if result["t1_t2_changed"]:
        where = ", ".join(f"{inert(r['template'])}/{inert(r['provider'])}: {r['flipped']}"
                          for r in result["non_t3_changes"])
        print(f"WARNING: T1/T2 verdicts changed ({where})\n")
    elif not result["templated"] and result["flips"]["count"]:
        print(f"This run has no templates: {result['flips']['count']} response verdict(s) differ between A and B "
              "(listed below).\n")
    print("Pass rates and false-failure rates")
    print_table([{
        "provider": r["provider"], "template": r["template"], "n": r["n"], "pass A": _pct(r["pass_rate_a"]),
        "pass B": _pct(r["pass_rate_b"]), "false fail A": _pct(r["false_failure_rate_a"]),
        "false fail B": _pct(r["false_failure_rate_b"]), "fail->pass": r["fail_to_pass"],
        "pass->fail": r["pass_to_fail"],
    } for r in result["pass_rates"]], ["provider", "template", "n", "pass A", "pass B", "false fail A", "false fail B",
                                       "fail->pass", "pass->fail"])
    print(f"({result['false_failure_definition']})")
    if result["check_changes"]:
        print("\nCheck verdicts that changed in the flipped responses")
        print_table(result["check_changes"], ["check", "template", "verdict_a", "verdict_b", "responses"])
    flips = result["flips"]
    print(f"\nFlipped responses: {flips['count']}")
    if flips["items"]:
        print_table(flips["items"], ["question_id", "provider", "template", "verdict_a", "verdict_b", "check_diff"])
    timing = result["duration"]
    if timing["ratio"] is None:
        missing = [s["ruleset"] for s in (a, b) if s["duration_s"] is None]
        print(f"\nDuration: none for {', '.join(inert(m) for m in missing)} (recorded verdicts come from the run file)")
    else:
        verdict = "within" if timing["within_limit"] else "OVER"
        print(f"\nDuration: A {timing['a_s']:.2f} s, B {timing['b_s']:.2f} s: B/A = {timing['ratio']:.2f} "
              f"({verdict} the limit of {timing['limit']:.1f})")
