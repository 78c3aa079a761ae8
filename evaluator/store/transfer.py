"""A whole store moved between back ends and DuckDB releases (issue 32): exported to a folder of
Parquet files, imported into an empty store.

Why a folder and not a direct copy: the PostgreSQL store needs DuckDB 1.4.4 (the only release PyPI's
postgres extension is built for), and DuckDB 1.4.4 cannot open a store file written by DuckDB 2. So a
store file is exported by the default environment and imported by the PostgreSQL one
(`make move-store FROM=FILE TO=postgresql://...` runs both). Parquet is read by every DuckDB release.

The folder holds one Parquet file per table and `manifest.json` (the migrations applied, each table's
row count). An import needs an empty store at the same migrations, writes every table in one
transaction, checks the counts, and draws each id sequence past the ids it brought in.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from evaluator.store import postgres
from evaluator.store.db import applied_versions, atomic, fetch_value, on_server, quote_ident, quote_literal

MANIFEST = "manifest.json"
# Each id sequence and the column whose values it draws (migrations.py makes the sequences).
SEQUENCES = {
    "run_ids": ("runs", "run_id"),
    "response_ids": ("responses", "response_id"),
    "evaluation_ids": ("evaluations", "evaluation_id"),
    "metric_result_ids": ("metric_results", "metric_result_id"),
    "override_ids": ("overrides", "override_id"),
    "annotation_ids": ("annotations", "annotation_id"),
    "span_label_ids": ("span_labels", "span_label_id"),
}
# Kept by the store itself, not moved: its migrations' record (the manifest carries it) and the
# tokens PostgreSQL's saves claim (overrides keep their client_token).
NOT_MOVED = {"schema_migrations", "save_tokens"}


class TransferError(RuntimeError):
    """A folder that cannot be imported here, said with what to do."""


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [row[0] for row in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
        "AND table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1").fetchall()
        if row[0] not in NOT_MOVED]


def export_store(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """Every table of the store into `folder` (made; must be empty), read in one snapshot; the row
    count of each table."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise TransferError(f"{folder}: the folder is not empty; export into a new folder")
    counts = {}
    with atomic(con):  # one snapshot: a save landing meanwhile is in every table or in none
        for table in tables(con):
            counts[table] = int(fetch_value(con, f"SELECT count(*) FROM {quote_ident(table)}"))
            target = quote_literal(str(folder / f"{table}.parquet"))
            con.execute(f"COPY (SELECT * FROM {quote_ident(table)}) TO {target} (FORMAT parquet)")
        manifest = {"migrations": applied_versions(con), "tables": counts, "duckdb": duckdb.__version__}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return counts


def import_store(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """The tables of an exported folder into this store (empty, migrated to the same versions), in one
    transaction; the row count of each table."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        counts: dict[str, int] = {str(k): int(v) for k, v in manifest["tables"].items()}
        versions = [int(v) for v in manifest["migrations"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TransferError(f"{folder / MANIFEST}: not a store export ({exc}); "
                            "make one with `evaluator export-store FOLDER`") from exc
    here = applied_versions(con)
    if versions != here:
        raise TransferError(f"{folder}: exported from a store at migration {max(versions, default=0)}, and this "
                            f"store is at migration {max(here, default=0)}: export and import with the same "
                            "version of the tool")
    present = set(tables(con))
    unknown = sorted(set(counts) - present)
    if unknown:
        raise TransferError(f"{folder}: tables this store does not have: {', '.join(unknown)}")
    busy = [table for table in counts if fetch_value(con, f"SELECT count(*) FROM {quote_ident(table)}")]
    if busy:
        raise TransferError(f"the store already holds {', '.join(busy)}: import into an empty store "
                            "(a new file, or a new PostgreSQL database); nothing was written")
    with atomic(con):
        for table, expected in counts.items():
            source = quote_literal(str(folder / f"{table}.parquet"))
            con.execute(f"INSERT INTO {quote_ident(table)} BY NAME SELECT * FROM read_parquet({source})")
            found = int(fetch_value(con, f"SELECT count(*) FROM {quote_ident(table)}"))
            if found != expected:
                raise TransferError(f"{folder / (table + '.parquet')}: {found} rows, the manifest says {expected}")
        for sequence, (table, column) in SEQUENCES.items():
            if table in counts:
                _draw_past(con, sequence, int(fetch_value(
                    con, f"SELECT coalesce(max({quote_ident(column)}), 0) FROM {quote_ident(table)}")))
    return counts


def _draw_past(con: duckdb.DuckDBPyConnection, sequence: str, highest: int) -> None:
    """Make the sequence's next value follow `highest` (sequences only move forward)."""
    if highest <= 0:
        return
    if on_server(con):  # never backwards
        postgres.execute(con, f"SELECT setval('{sequence}', GREATEST({int(highest)}, last_value)) FROM {sequence}")
    else:  # DuckDB has no setval; no column's default draws from the sequence, so it may be made anew
        con.execute(f"CREATE OR REPLACE SEQUENCE {quote_ident(sequence)} START {int(highest) + 1}")
