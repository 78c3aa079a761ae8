"""evaluator metrics: TRUST-SCORE (F1GR, F1AC) per provider of a run, stored with components."""

from __future__ import annotations

import argparse
import sys

from evaluator.cli.common import load_rules_arg, print_json, print_table
from evaluator.core.errors import UsageError
from evaluator.pipeline.judges import JUDGE_NAMES, JudgeError
from evaluator.pipeline.metrics.runner import ENGINES, compute_and_store

HELP = "compute F1GR and F1AC per provider of a run (dataset-level metrics, SPEC §6)"
KEYS = ["provider", "f1gr", "f1_ref", "f1_ans", "f1ac", "p_ac", "r_ac",
        "n_answered", "n_refused", "n_answerable", "n_unanswerable"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--judge", choices=JUDGE_NAMES, default="heuristic",
                        help="refusal judge (llm: set EVALUATOR_JUDGE_BASE_URL, _MODEL, _API_KEY)")
    parser.add_argument("--with-overrides", action="store_true",
                        help="use reviewers' 'refused' overrides instead of the judge where they exist")
    parser.add_argument("--rules", help="rules TOML file on top of the built-in rules (the heuristic judge's "
                        "refusal phrases, abstention pack and the run's profile's own refusal phrases)")
    parser.add_argument("--engine", choices=ENGINES, default="sql",
                        help="sql: the heuristic judge decided in DuckDB (Python decides the rows SQL cannot); "
                        "python: the reference path, row by row (other judges always use it)")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    try:
        results = compute_and_store(args.db, args.run, args.judge, args.with_overrides,
                                    rules=load_rules_arg(args.rules) if args.rules else None, engine=args.engine)
    except JudgeError as exc:
        raise UsageError(f"judge {args.judge!r} failed: {exc}") from None
    rows = [{"provider": r.provider, **{k: getattr(r.score, k) for k in KEYS[1:]}} for r in results]
    if args.json:
        print_json(rows)
    elif rows:
        print_table(rows, KEYS)
    else:
        print("the run has no responses", file=sys.stderr)
    return 0
