"""evaluator export: one row per response with verdicts, reasons, spans and flags."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluator.cli.common import load_rules_arg
from evaluator.pipeline.evaluations import RULESETS, ensure_evaluation, evaluation_for
from evaluator.pipeline.export import export_format, export_rows, write_export
from evaluator.queries.report import flags_evaluation_id
from evaluator.store.db import connect

HELP = "export a run's verdicts (one row per response) to .jsonl, .csv or .parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    source = parser.add_mutually_exclusive_group(required=True)
    # no argparse choices: a --rules file may add rule sets (checked against the loaded rules)
    source.add_argument("--ruleset", help=f"verdicts recomputed under this rule set ({', '.join(RULESETS)}, "
                        "or one your --rules file adds)")
    source.add_argument("--recorded", action="store_true", help="the verdicts recorded in the run file")
    parser.add_argument("--rules", help="rules TOML file on top of the built-in rules")
    parser.add_argument("--out", required=True, help="output file; the extension picks the format")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    fmt = export_format(out)
    rules = None if args.recorded else load_rules_arg(args.rules)
    if not args.recorded:
        ensure_evaluation(args.db, args.run, args.ruleset, rules=rules, progress=sys.stderr.isatty())
    with connect(args.db, read_only=True) as con:
        evaluation_id = evaluation_for(con, args.run, ruleset=args.ruleset, recorded=args.recorded,
                                       rules=rules, progress=sys.stderr.isatty())
        tmp = out.with_name(out.name + ".partial")
        count = write_export(export_rows(con, evaluation_id, flags_evaluation_id(con, evaluation_id)), tmp, fmt)
        tmp.replace(out)  # a failed export never leaves a half-written file under the real name
    print(f"{count} responses -> {out}")
    return 0
