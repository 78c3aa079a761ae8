"""evaluator search-index: build (or drop) the word index that speeds up Triage's text search."""

from __future__ import annotations

import argparse
import sys

from evaluator.cli.common import print_json
from evaluator.pipeline import search_index
from evaluator.store.db import atomic, connect, fetch_value
from evaluator.store.run_lookup import run_id_for

HELP = ("build the word index of a run's answers and comments, so Triage's free-text search reads only "
        "the answers holding the search's words (worth it from about 100k responses)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--drop", action="store_true",
                        help="remove the run's index instead (searches then read every answer)")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    with connect(args.db) as con:
        run_id = run_id_for(con, args.run)
        if args.drop:
            with atomic(con):
                search_index.drop(con, run_id)
        n = fetch_value(con, "SELECT count(*) FROM responses WHERE run_id = $run", {"run": run_id})
    if args.drop:
        summary: dict[str, object] = {"run": args.run, "dropped": True}
        message = f"search index of {args.run} dropped"
    else:
        if sys.stderr.isatty():
            print(f"indexing the words of {n} responses of {args.run} (about a minute per million)…",
                  file=sys.stderr, flush=True)
        built = search_index.build_staged(args.db, run_id)  # holds the store only to copy in and out
        summary = {"run": args.run, "responses": built.responses, "words": built.words,
                   "postings": built.postings, "duration_s": round(built.duration_s, 3)}
        message = (f"search index of {args.run}: {built.responses} responses, {built.words} distinct words, "
                   f"built in {built.duration_s:.2f} s")
    if args.json:
        print_json(summary)
    else:
        print(message)
    return 0
