"""evaluator import-store: a folder written by export-store into an empty store."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.cli.common import print_json
from evaluator.core.errors import UsageError
from evaluator.store.db import connect
from evaluator.store.transfer import TransferError, import_store

HELP = ("put a folder written by `export-store` into this store (a new file or an empty PostgreSQL "
        "database), in one transaction: every run, evaluation, override and annotation, ids kept")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="a folder written by export-store")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    try:
        with connect(args.db) as con:
            counts = import_store(con, folder)
    except TransferError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print_json({"folder": str(folder), "tables": counts})
    else:
        print(f"imported {len(counts)} tables ({counts.get('responses', 0)} responses, "
              f"{counts.get('overrides', 0)} overrides) from {folder}")
    return 0
