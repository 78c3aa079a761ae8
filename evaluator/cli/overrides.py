"""evaluator overrides: export a run's reviewer overrides (the full append-only history)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.pipeline.export import export_format, write_table
from evaluator.review.overrides import EXPORT_SQL
from evaluator.store.db import connect
from evaluator.store.run_lookup import run_id_for

HELP = "export a run's reviewer overrides (with question_id and provider) to .jsonl, .csv or .parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--out", required=True, help="output file; the extension picks the format")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    fmt = export_format(out)
    with connect(args.db) as con:
        table = con.sql(EXPORT_SQL, params={"run": run_id_for(con, args.run)}).to_arrow_table()
    tmp = out.with_name(out.name + ".partial")
    write_table(table, tmp, fmt)
    tmp.replace(out)  # never a half-written file under the real name
    print(f"{table.num_rows} overrides -> {out}")
    return 0

