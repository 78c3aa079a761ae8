"""evaluator load-samples: put the sample runs of data/ into an empty store."""

from __future__ import annotations

import argparse

from evaluator.ingest.samples import load_samples
from evaluator.store.db import resolve_db
from evaluator.store.postgres import redacted

HELP = "load the sample runs of data/ into the store if it has no runs yet, and evaluate them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options besides --db


def run(args: argparse.Namespace) -> int:
    load_samples(args.db)
    print(f"store: {redacted(str(resolve_db(args.db)))}")
    return 0
