"""evaluator ingest PATH: validate a run file and store it whole, or write nothing."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from evaluator.core.errors import UsageError
from evaluator.core.registry import check_entries, flag_entries
from evaluator.ingest.loader import DuplicateRunError, PreparedRun, prepare_run, store_run
from evaluator.ingest.readers import ALL_FORMATS
from evaluator.pipeline.judges.base import preview
from evaluator.store.staging import staging_folder

HELP = ("ingest a run file (JSONL, JSON, wide or long CSV, Parquet; the files of InspectorRAGet, promptfoo, "
        "Inspect AI, DeepEval, Ragas and Phoenix, told from their content; any table through --map); "
        "prints the run name, and on stderr what it understood")
SHOWN = 60  # characters of a name from the file shown in the summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="+", metavar="PATH",
                        help="the run file (Phoenix: its LLM and RETRIEVER span exports, one run)")
    parser.add_argument("--name", help="run name (default: the file name without extension)")
    parser.add_argument("--format", choices=ALL_FORMATS, help="file format (default: told from the content)")
    parser.add_argument("--map", metavar="FIELD=COLUMN,...", dest="column_map",
                        help="read our fields from the file's columns, e.g. "
                             "question=user_input,answer=response,retrieved=retrieved_contexts,gold_answers=reference")
    parser.add_argument("--provider", help="provider of a file that names none (Ragas, DeepEval, a table "
                                           "without a provider column; default: the run name)")
    parser.add_argument("--answer-path", metavar="FIELD[.FIELD...]",
                        help="where a provider's JSON-object output keeps the answer (default: the first of "
                             "answer, output, text, content, response holding text)")
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
    path, *more = args.path
    try:
        prepared = prepare_run(path, name=args.name, fmt=args.format, profile=args.profile,
                               progress=sys.stderr.isatty(), column_map=args.column_map, rules=args.rules,
                               spill_to=spill_to, provider=args.provider, answer_path=args.answer_path,
                               more_paths=more)
        with prepared:
            try:  # read and validated first: the store is held only for the run's one transaction
                result = store_run(args.db, prepared, replace=args.replace, drop_overrides=args.drop_overrides)
            except DuplicateRunError as exc:
                raise UsageError(f"{path}: {exc}") from None
            sys.stderr.write("".join(f"  {line}\n" for line in summary_lines(prepared, prepared.summary())))
    finally:
        if spill_to is not None:
            with contextlib.suppress(OSError):
                spill_to.rmdir()  # only when empty: another command may be staging there
    print(result.name)
    return 0


def _shown(text: object) -> str:
    return preview(str(text), SHOWN)  # names come from the file: control characters made visible


def summary_lines(prepared: PreparedRun, summary: dict[str, Any]) -> list[str]:
    """What ingest understood of the file, one line a fact."""
    understood = prepared.understood
    fmt = prepared.fmt + (f" ({_shown(understood.version)})" if understood.version else "")
    providers = summary["providers"]
    shown = ", ".join(f"{_shown(name)} ({n})" for name, n in list(providers.items())[:8])
    more = f", … {len(providers) - 8} more" if len(providers) > 8 else ""
    lines = [f"format: {fmt}; profile: {prepared.profile}",
             f"responses: {prepared.n_responses} from {len(providers)} provider(s): {shown}{more}"]
    for field, n in understood.answer_fields.items():
        lines.append(f"answer: the '{_shown(field)}' field of {n} JSON output(s); the rest kept in metadata")
    unknown = summary["unknown_retrieval"]
    if unknown:
        checks = ", ".join(e.name for e in check_entries() if e.needs_retrieval)
        flags = ", ".join(e.name for e in flag_entries() if e.needs_retrieval)
        which = "the file records none" if unknown == prepared.n_responses else \
            f"{summary['retrieved_items']} item(s); {unknown} response(s) record none"
        lines.append(f"retrieval: {which}; for those, {checks} are N/A and {flags} are not raised")
    else:
        lines.append(f"retrieval: {summary['retrieved_items']} retrieved item(s)")
    if summary["recorded_responses"]:
        lines.append(f"recorded verdicts (report --recorded): {summary['recorded_responses']} response(s), "
                     f"{summary['recorded_pass']} PASS / {summary['recorded_fail']} FAIL overall"
                     + (f"; the file's own summary: {understood.file_passed[0]} passed / "
                        f"{understood.file_passed[1]} failed" if understood.file_passed else ""))
        grades = summary["tool_grades"]
        if grades:
            lines.append(f"the tool's own grades, kept as checks: {', '.join(_shown(g) for g in grades[:10])}"
                         + (f", … {len(grades) - 10} more" if len(grades) > 10 else ""))
    else:
        lines.append("recorded verdicts: none in the file")
    if summary["labels"] or summary["ratings"]:
        lines.append(f"human labels: {summary['labels']}, ratings: {summary['ratings']}")
    lines.extend(f"ignored: {_shown(what)}" for what in understood.ignored)
    return lines
