"""`python -m evaluator <command>`: one module per subcommand.

Each module defines HELP, add_arguments(parser) and run(args) -> exit code. Errors a user
can fix (bad input, unknown run) exit 2 with one message on stderr naming what to fix.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from evaluator.cli.common import UsageError
from evaluator.readers import InputError
from evaluator.store import StoreBusyError

# Module name -> command name; the order is the order of `--help`.
COMMANDS = {
    "ingest": "ingest",
    "runs": "runs",
    "load_samples": "load-samples",
    "recompute": "recompute",
    "search_index": "search-index",
    "report": "report",
    "export": "export",
    "metrics": "metrics",
    "compare": "compare",
    "gate": "gate",
    "overrides": "overrides",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evaluator", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name, command in COMMANDS.items():
        try:
            module = importlib.import_module(f"evaluator.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"evaluator.cli.{module_name}":
                continue  # a command not built yet
            raise
        command_parser = sub.add_parser(command, help=module.HELP, description=module.HELP)
        command_parser.add_argument("--db", help="store file (default: $EVALUATOR_DB or data/evaluator.duckdb)")
        module.add_arguments(command_parser)
        command_parser.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `evaluator report | head` ends quietly, like other tools
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (InputError, UsageError) as exc:
        print(f"evaluator: error: {exc}", file=sys.stderr)
        return 2
    except StoreBusyError as exc:
        print(f"evaluator: error: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"evaluator: error: {exc}", file=sys.stderr)
        return 2
