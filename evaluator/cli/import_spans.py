"""evaluator import-spans: people's span labels (the characters they marked unsupported) into a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.review.span_labels import import_spans
from evaluator.store.db import connect
from evaluator.store.run_lookup import run_id_for

HELP = ("import span labels from JSONL ({question_id, provider, annotator, spans: [{start, end, label}]} a line, "
        "or the *_spans.jsonl shape with annotators) into a run, all or nothing; "
        "then: evaluator agreement --spans --flag F")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("file", type=Path, help="span labels (.jsonl)")


def run(args: argparse.Namespace) -> int:
    with connect(args.db) as con:
        counts = import_spans(con, run_id_for(con, args.run), args.file)
    print(f"{counts['spans']} span(s) of {counts['annotators']} annotator(s) on {counts['responses']} response(s) "
          f"-> run {args.run!r}")
    return 0
