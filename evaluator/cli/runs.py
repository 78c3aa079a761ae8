"""evaluator runs: list the stored runs."""

from __future__ import annotations

import argparse

from evaluator.cli.common import print_json, print_table
from evaluator.queries.runs import RUN_COLUMNS, list_runs
from evaluator.store.db import connect

HELP = "list runs: name, profile, source file, ingested at, responses, providers, questions"
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    with connect(args.db) as con:
        runs = list_runs(con)
    if args.json:
        print_json(runs)
    elif runs:
        print_table(runs, RUN_COLUMNS)
    else:
        print("no runs yet: evaluator ingest FILE")
    return 0
