"""evaluator gate: fail CI (exit 1) when a run's pass rate misses a threshold.

    evaluator gate --run RUN [--ruleset t3_aware] --min-pass-rate T3=0.9 [--min-pass-rate T1=0.8 ...] [--provider P]

Every provider of the run must meet every threshold (or only --provider). A template with no
responses for a provider misses: a gate cannot pass on figures it does not have.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evaluator.cli.common import load_rules_arg, print_json
from evaluator.cli.compare import RECORDED, resolve
from evaluator.core.errors import UsageError
from evaluator.pipeline.evaluations import ensure_evaluation
from evaluator.queries.overview import pass_rate_counts
from evaluator.store.db import connect

HELP = "exit 1 when a run's pass rate per template misses a threshold (for CI); prints what missed"
TEMPLATES = ("T1", "T2", "T3", "none", "all")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--ruleset", default="t3_aware", help="rule set of the verdicts (default t3_aware)")
    source.add_argument("--recorded", action="store_true", help="the verdicts recorded in the run file")
    parser.add_argument("--rules", help="rules TOML file, when the rule set must be computed first")
    parser.add_argument("--min-pass-rate", action="append", required=True, metavar="TEMPLATE=RATE",
                        help="e.g. T3=0.9 or T3=90%% (templates T1, T2, T3, none, all); repeat for more")
    parser.add_argument("--provider", help="gate this provider only (default: every provider of the run)")
    parser.add_argument("--with-overrides", action="store_true", help="apply reviewers' overrides")
    parser.add_argument("--json", action="store_true")


def parse_threshold(text: str) -> tuple[str, float]:
    template, sep, value = text.partition("=")
    template = template.strip()
    canonical = {t.lower(): t for t in TEMPLATES}.get(template.lower())
    if not sep or canonical is None:
        raise UsageError(f"--min-pass-rate {text!r}: expected TEMPLATE=RATE with TEMPLATE one of "
                         f"{', '.join(TEMPLATES)}, e.g. T3=0.9")
    value = value.strip()
    try:
        rate = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise UsageError(f"--min-pass-rate {text!r}: {value!r} is not a number") from None
    if not 0 <= rate <= 1:
        raise UsageError(f"--min-pass-rate {text!r}: the rate must be between 0 and 1 (or 0% and 100%)")
    return canonical, rate


def run(args: argparse.Namespace) -> int:
    thresholds = [parse_threshold(t) for t in args.min_pass_rate]
    ruleset = RECORDED if args.recorded else args.ruleset
    ensure_evaluation(args.db, args.run, ruleset, rules=load_rules_arg(args.rules), any_rules=args.rules is None,
                      progress=sys.stderr.isatty())
    with connect(args.db, read_only=True) as con:
        evaluation_id = resolve(con, args.run, ruleset, args.rules)
        counts = pass_rate_counts(con, [evaluation_id], with_overrides=args.with_overrides)
    providers = sorted({row["provider"] for row in counts})
    if args.provider is not None:
        if args.provider not in providers:
            raise UsageError(f"run {args.run!r} has no provider {args.provider!r} (providers: {', '.join(providers)})")
        providers = [args.provider]
    results = []
    for template, minimum in thresholds:
        for provider in providers:
            rows = [r for r in counts if r["provider"] == provider and template in ("all", r["template"])]
            n, passed = sum(int(r["n"]) for r in rows), sum(int(r["passed"]) for r in rows)
            rate = passed / n if n else None
            results.append({"template": template, "provider": provider, "min_pass_rate": minimum, "n": n,
                            "passed": passed, "pass_rate": rate, "ok": rate is not None and rate >= minimum})
    missed = [r for r in results if not r["ok"]]
    if args.json:
        print_json({"run": args.run, "ruleset": ruleset, "evaluation_id": evaluation_id, "ok": not missed,
                    "results": results})
    else:
        report(args.run, ruleset, results, missed)
    return 1 if missed else 0


def report(run_name: str, ruleset: str, results: list[dict[str, Any]], missed: list[dict[str, Any]]) -> None:
    for r in results:
        if r["pass_rate"] is None:
            line = f"no {r['template']} responses, so no pass rate to hold to {r['min_pass_rate']:.1%}"
        else:
            relation = ">=" if r["ok"] else "<"
            line = f"pass rate {r['pass_rate']:.1%} ({r['passed']}/{r['n']}) {relation} {r['min_pass_rate']:.1%}"
        print(f"{'ok  ' if r['ok'] else 'MISS'}  {r['template']:<4}  {r['provider']:<12}  {line}")
    verdict = f"{len(missed)} of {len(results)} thresholds missed" if missed else f"all {len(results)} thresholds met"
    print(f"gate {run_name} under {ruleset}: {verdict}")
