"""evaluator recompute: evaluate a stored run under a rule set and store the evaluation."""

from __future__ import annotations

import argparse
import sys

from evaluator.cli.common import load_rules_arg, print_json
from evaluator.core.errors import UsageError
from evaluator.pipeline.evaluations import RULESETS
from evaluator.pipeline.recompute import ENGINES, recompute
from evaluator.store.rulesets import saved_rules

HELP = "recompute the six checks and three flags of a run (all providers) and store the evaluation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--ruleset", required=True,
                        help=f"rule set: {', '.join(RULESETS)}, or one your --rules file adds")
    parser.add_argument("--rules", help="rules TOML file, on top of the built-in rules of the SPEC: it may add "
                        "profiles and rule sets")
    parser.add_argument("--profile", help="bot profile to evaluate under (default: the run's, from ingest)")
    parser.add_argument("--workers", type=int, help="evaluation processes (default: by run size)")
    spans = parser.add_mutually_exclusive_group()
    spans.add_argument("--spans", dest="spans", action="store_true", default=None,
                       help="store highlight spans (default for runs up to 100k responses)")
    spans.add_argument("--no-spans", dest="spans", action="store_false",
                       help="store verdicts only; pages compute highlights when shown")
    parser.add_argument("--engine", choices=ENGINES, default="auto",
                        help="python (the reference; stores spans), sql (evaluated inside DuckDB, no stored "
                        "spans, several times less CPU), or auto (default): python when spans are stored, "
                        "else sql")
    parser.add_argument("--verify", type=int, default=0, metavar="N",
                        help="evaluate with the sql engine, then re-evaluate N random responses in Python; "
                        "any difference writes nothing and exits 1")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    rules = load_rules_arg(args.rules)
    if args.ruleset not in rules.ruleset_names:  # a rule set saved in the store (the Rule lab)
        rules = saved_rules(args.db, args.ruleset) or rules
    where = f" (built-in rules + {args.rules})" if args.rules else ""
    if args.ruleset not in rules.ruleset_names:
        raise UsageError(f"unknown rule set {args.ruleset!r}; the rules{where} define: "
                         f"{', '.join(rules.ruleset_names)}")
    if args.profile is not None and args.profile not in rules.profile_names:
        raise UsageError(f"unknown profile {args.profile!r}; the rules{where} define: "
                         f"{', '.join(rules.profile_names)}")
    from evaluator.pipeline.sql.engine import VerifyError

    try:
        result = recompute(args.db, args.run, args.ruleset, rules=rules, with_spans=args.spans,
                           workers=args.workers, progress=sys.stderr.isatty(), profile=args.profile,
                           engine=args.engine, verify_n=args.verify)
    except VerifyError as exc:
        print(f"error: --verify found a difference, nothing was written: {exc}", file=sys.stderr)
        return 1
    summary = {"evaluation_id": result.evaluation_id, "run": result.run, "ruleset": result.ruleset,
               "rules_hash": result.rules_hash, "responses": result.n_responses,
               "duration_s": round(result.duration_s, 3), "engine": result.engine}
    if args.json:
        print_json(summary)
    else:
        print(f"evaluation {result.evaluation_id}: {result.run} under {result.ruleset} "
              f"({result.n_responses} responses in {result.duration_s:.2f} s, rules {result.rules_hash[:12]}, "
              f"{result.engine} engine)")
    return 0
