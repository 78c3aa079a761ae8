"""evaluator export-store: the whole store into a folder of Parquet files (to move it elsewhere)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.cli.common import print_json
from evaluator.core.errors import UsageError
from evaluator.review import pending
from evaluator.store.db import connect
from evaluator.store.transfer import TransferError, export_store

HELP = ("write every table of the store into FOLDER as Parquet files, with a manifest: `import-store` puts "
        "them into another store (a PostgreSQL database, a store file of another DuckDB release)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="a new or empty folder")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    try:
        waiting = pending.pending(args.db)
        if waiting:
            raise TransferError(f"{len(waiting)} reviewer save(s) are still pending, not yet in the store: start the "
                                "dashboard once (it writes them) or wait for it, then export; stop the dashboards "
                                "and CI jobs writing to this store while you move it")
        # an older store is migrated first (as the pages do): the import's store is made at this version
        with connect(args.db, read_only=True, upgrade=True) as con:
            counts = export_store(con, folder)
    except TransferError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print_json({"folder": str(folder), "tables": counts})
    else:
        print(f"exported {len(counts)} tables ({counts.get('responses', 0)} responses, "
              f"{counts.get('overrides', 0)} overrides) to {folder}")
    return 0
