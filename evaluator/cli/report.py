"""evaluator report: pass rates per provider x template, check verdict counts, flag counts."""

from __future__ import annotations

import argparse
import sys

from evaluator.cli.common import load_rules_arg, print_json, print_table
from evaluator.pipeline.evaluations import RULESETS, ensure_evaluation, evaluation_for
from evaluator.queries.report import report
from evaluator.store.db import connect

HELP = "report pass rates, check verdicts and flags of a run under a rule set or its recorded verdicts"


def add_verdict_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    # no argparse choices: a --rules file may add rule sets (checked against the loaded rules)
    source.add_argument("--ruleset", help=f"verdicts recomputed under this rule set ({', '.join(RULESETS)}, "
                        "or one your --rules file adds)")
    source.add_argument("--recorded", action="store_true", help="the verdicts recorded in the run file")
    parser.add_argument("--rules", help="rules TOML file (default: the built-in rules)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    add_verdict_source(parser)
    parser.add_argument("--with-overrides", action="store_true", help="apply reviewers' overrides")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    rules = None if args.recorded else load_rules_arg(args.rules)
    if not args.recorded:
        ensure_evaluation(args.db, args.run, args.ruleset, rules=rules, progress=sys.stderr.isatty())
    with connect(args.db, read_only=True) as con:
        evaluation_id = evaluation_for(con, args.run, ruleset=args.ruleset, recorded=args.recorded,
                                       rules=rules, progress=sys.stderr.isatty())
        result = report(con, evaluation_id, with_overrides=args.with_overrides)
    if args.json:
        print_json(result)
        return 0
    print("Pass rates")
    print_table(result["pass_rates"], ["provider", "template", "n", "passed", "pass_rate"])
    print("\nChecks")
    print_table(result["checks"], ["provider", "template", "check", "pass", "fail", "na"])
    print("\nFlags")
    print_table(result["flags"], ["provider", "flag", "count"])
    return 0
