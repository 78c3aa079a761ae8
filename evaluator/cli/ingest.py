"""evaluator ingest PATH: validate a run file and store it whole, or write nothing."""

from __future__ import annotations

import argparse
import contextlib
import sys

from evaluator.errors import UsageError
from evaluator.ingest import DuplicateRunError, prepare_run, store_run_staged
from evaluator.readers import ALL_FORMATS
from evaluator.staging import staging_folder

HELP = ("ingest a run file (JSONL, JSON, wide or long CSV, Parquet; InspectorRAGet, promptfoo or Inspect AI "
        "JSON; any table through --map); prints the run name")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="the run file")
    parser.add_argument("--name", help="run name (default: the file name without extension)")
    parser.add_argument("--format", choices=ALL_FORMATS,
                        help="file format (default: from the extension; a JSON file's from its content)")
    parser.add_argument("--map", metavar="FIELD=COLUMN,...", dest="column_map",
                        help="read our fields from the file's columns, e.g. "
                             "question=user_input,answer=response,retrieved=retrieved_contexts,gold_answers=reference")
    parser.add_argument("--rules", metavar="FILE",
                        help="rules file whose profiles the run may use (default: the shipped rules)")
    parser.add_argument("--profile", help="bot profile, one the rules define (default: 'ramayana' for runs with "
                                          "templates, else 'rag' when the rules define it, else 'clearpath')")
    parser.add_argument("--replace", action="store_true", help="replace an existing run of the same name")
    parser.add_argument("--drop-overrides", action="store_true",
                        help="with --replace: allow dropping reviewers' overrides and typed ratings of answers "
                             "that changed")


def run(args: argparse.Namespace) -> int:
    # The run's batches wait on the store's disk (not in memory, nor in a /tmp that may be RAM),
    # when the store's folder exists: bad input never creates or touches a store.
    staging = staging_folder(args.db)
    spill_to = staging if staging.parent.is_dir() else None
    try:
        prepared = prepare_run(args.path, name=args.name, fmt=args.format, profile=args.profile,
                               progress=sys.stderr.isatty(), column_map=args.column_map, rules=args.rules,
                               spill_to=spill_to)
        with prepared:
            try:  # built in a staging file; the store is held only to copy it in
                result = store_run_staged(args.db, prepared, replace=args.replace,
                                          drop_overrides=args.drop_overrides)
            except DuplicateRunError as exc:
                raise UsageError(f"{args.path}: {exc}") from None
    finally:
        if spill_to is not None:
            with contextlib.suppress(OSError):
                spill_to.rmdir()  # only when empty: another command may be staging there
    print(result.name)
    return 0
