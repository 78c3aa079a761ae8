"""evaluator annotations: export a run's current human ratings (one row per response, annotator and label)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.pipeline.export import export_format
from evaluator.review.annotations import export_sql
from evaluator.store.db import connect, fetch_value, quote_literal
from evaluator.store.run_lookup import run_id_for

HELP = ("export a run's current human ratings (question_id, provider, annotator, label, value, reason, "
        "created_at, source) to .jsonl, .csv or .parquet")
COPY_FORMATS = {"jsonl": "json", "csv": "csv", "parquet": "parquet"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--out", required=True, help="output file; the extension picks the format")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    fmt = export_format(out)
    tmp = out.with_name(out.name + ".partial")
    with connect(args.db, read_only=True) as con:
        params = {"run": run_id_for(con, args.run)}
        sql = export_sql(csv_safe=fmt == "csv")
        # COPY cannot bind its file name: the one literal is quoted by the store's helper.
        con.execute(f"COPY ({sql}) TO {quote_literal(str(tmp))} (FORMAT {COPY_FORMATS[fmt]})", params)
        rows = fetch_value(con, f"SELECT count(*) FROM ({sql})", params)
    tmp.replace(out)  # never a half-written file under the real name
    print(f"{rows} annotations -> {out}")
    return 0
