"""`python -m evaluator <command>`: one module per subcommand.

Each module defines HELP, add_arguments(parser) and run(args) -> exit code. Errors a user
can fix (bad input, unknown run) exit 2 with one message on stderr naming what to fix.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import signal
import sys
import threading
from collections.abc import Sequence

from evaluator.cli.common import InertStdout, inert
from evaluator.core.errors import UsageError
from evaluator.ingest.readers import InputError
from evaluator.store.db import NewerStoreFileError, StoreBusyError, is_server, resolve_db_path, set_waiting
from evaluator.store.postgres import ServerStoreError
from evaluator.store.staging import RunChangedError

CREATES_STORE = {"ingest", "load-samples", "import-store"}  # every other command needs a store that exists

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
    "judge_spans": "judge-spans",
    "compare": "compare",
    "gate": "gate",
    "overrides": "overrides",
    "annotations": "annotations",
    "import_spans": "import-spans",
    "agreement": "agreement",
    "export_store": "export-store",
    "import_store": "import-store",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; ``only``: a command name, whose module alone is imported (each imports
    what its command needs: all of them together cost a tenth of a second at every start)."""
    parser = argparse.ArgumentParser(prog="evaluator", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name, command in COMMANDS.items():
        if only is not None and command != only:
            continue
        try:
            module = importlib.import_module(f"evaluator.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"evaluator.cli.{module_name}":
                continue  # a command not built yet
            raise
        command_parser = sub.add_parser(command, help=module.HELP, description=module.HELP)
        command_parser.add_argument("--db", help="store file, or a PostgreSQL store postgresql://user@host:port/dbname "
                                    "(default: $EVALUATOR_DB or data/evaluator.duckdb)")
        command_parser.add_argument(
            "--wait", type=float, metavar="SECONDS",
            help="how long to wait while another program (the dashboard, another command) uses the store "
                 "(default: $EVALUATOR_WAIT or 600)")
        module.add_arguments(command_parser)
        command_parser.set_defaults(handler=module.run)
    return parser


class WaitLine:
    """The CLI's progress line while it waits for the store: rewritten in place on a terminal,
    one line every 10 s otherwise (logs of CI jobs)."""

    def __init__(self) -> None:
        self.stream = sys.stderr  # the terminal itself: this line's own \x1b[K must act
        self.tty = self.stream.isatty()
        self.last_line = -10.0

    def __call__(self, waited: float, holder: str | None) -> None:
        text = f"waiting for the store ({inert(holder or 'another program')} is using it)… {waited:.0f} s"
        if self.tty:
            print(f"\r{text}\x1b[K", end="", file=self.stream, flush=True)
        elif waited - self.last_line >= 10:
            self.last_line = waited
            print(text, file=self.stream, flush=True)


MESSAGE_BREAKS = "\n\t"  # an error message may run over lines; nothing else in it may act on the terminal
_TERMINATED_BY: list[int] = []  # the signal ending the command, once one is


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM ends a command the way an error does: `finally` blocks run, so an open
    transaction rolls back, worker processes end and the staging file is removed. A second
    SIGTERM meanwhile ends the process at once (the next command removes what is left)."""
    del frame
    _TERMINATED_BY.append(signum)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `evaluator report | head` ends quietly, like other tools
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if threading.current_thread() is threading.main_thread():  # only there can Python set handlers
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    argv = list(sys.argv[1:] if argv is None else argv)
    # The first argument names the command (the top level has no options but --help).
    args = build_parser(argv[0] if argv and argv[0] in COMMANDS.values() else None).parse_args(argv)
    if args.wait is not None and args.wait < 0:
        print("evaluator: error: --wait: give a number of seconds >= 0", file=sys.stderr)
        return 2
    if args.command not in CREATES_STORE and not is_server(args.db):
        path = resolve_db_path(args.db)
        if not path.exists():  # say so, and create nothing: no empty store, no lock files
            print(f"evaluator: error: no store at {inert(path)}: {args.command} reads a store and creates none. "
                  f"Check --db or EVALUATOR_DB, or ingest a run first: evaluator ingest FILE --db "
                  f"{inert(shlex.quote(str(path)))}", file=sys.stderr)
            return 2
    set_waiting(timeout_s=args.wait, on_wait=WaitLine(), label=f"evaluator {args.command}")
    stdout, stderr = sys.stdout, sys.stderr
    # names from files print inert, always (a progress bar's \r rewrites its own line on stderr)
    sys.stdout = InertStdout(stdout)  # type: ignore[assignment]
    sys.stderr = InertStdout(stderr, keep="\n\t\r")  # type: ignore[assignment]
    try:
        return int(args.handler(args) or 0)
    except (InputError, UsageError, NewerStoreFileError, ServerStoreError) as exc:
        print(f"evaluator: error: {inert(exc, keep=MESSAGE_BREAKS)}", file=sys.stderr)
        return 2
    except (StoreBusyError, RunChangedError) as exc:
        print(f"evaluator: error: {inert(exc, keep=MESSAGE_BREAKS)}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"evaluator: error: {inert(exc, keep=MESSAGE_BREAKS)}", file=sys.stderr)
        return 2
    except Exception as exc:
        import duckdb  # loaded already by any command that reached the store

        if isinstance(exc, duckdb.ConstraintException) and not _TERMINATED_BY:
            # every write runs in one transaction (store.atomic): the refusal rolled that one back
            print(f"evaluator: error: the store refused a write, which was rolled back: {exc}", file=sys.stderr)
            return 1
        if not _TERMINATED_BY:
            raise
        # SIGTERM came while DuckDB ran a query: DuckDB stops the query and raises its own
        # "Query interrupted" in place of our SystemExit. It is the same termination.
        return 128 + _TERMINATED_BY[0]
    finally:
        sys.stdout, sys.stderr = stdout, stderr
