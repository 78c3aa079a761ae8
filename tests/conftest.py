"""Shared fixtures: real DuckDB files in temp dirs and the real CLI.

The CLI runs two ways, both through its real entry point (`evaluator.cli.main`):

- `cli` / `run_cli`: in this process, as `python -m evaluator ARGS` would run it (same arguments,
  working directory and environment; stdout and stderr captured as text; the exit code from its
  return value, `SystemExit` or an uncaught exception). A process start costs more than most
  commands take, and most tests are about what a command does, not about the process.
- `cli_process` / `run_cli_process`: a real `python -m evaluator` subprocess, for tests about the
  process boundary: other processes holding or waiting for the store at the same time, signals,
  kill -9, a process's environment or standard input.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import glob
import io
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = ROOT / "data"


def _command(args: tuple[str, ...], db: Path | None) -> list[str]:
    command = [sys.executable, "-m", "evaluator", *args]
    if db is not None:
        command[4:4] = ["--db", str(db)]
    return command


def _checked(command: list[str], result: subprocess.CompletedProcess, check: bool) -> subprocess.CompletedProcess:
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return result


def run_cli_process(*args: str, db: Path | None = None, check: bool = False,
                    **kwargs) -> subprocess.CompletedProcess:
    """`python -m evaluator ARGS` in a subprocess, exactly as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    command = _command(args, db)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, **kwargs)
    return _checked(command, result, check)


def _text(buffer: io.BytesIO, errors: str) -> str:
    """What `subprocess.run(text=True)` makes of a stream's bytes (universal newlines)."""
    return io.TextIOWrapper(io.BytesIO(buffer.getvalue()), encoding="utf-8", errors=errors).read()


def run_cli(*args: str, db: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """`python -m evaluator ARGS` run in this process through the CLI's own entry point, as the
    subprocess would run it: EVALUATOR_DB unset, the repository as working directory, stdout and
    stderr captured (not terminals), the exit code what the process would exit with. What a command
    sets process-wide (signal handlers, the store's waiting defaults) is put back afterwards; the
    store itself is closed by then (evaluator.store.db closes the file when its last cursor is)."""
    from evaluator.cli import main
    from evaluator.store import db as store

    command = _command(args, db)
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    waiting = (store._WAITING.timeout_s, store._WAITING.on_wait, store._WAITING.label)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGPIPE)}
    saved_env = os.environ.get("EVALUATOR_DB")
    cwd = os.getcwd()
    os.environ.pop("EVALUATOR_DB", None)
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                returncode = main(command[3:])
            except SystemExit as exc:  # argparse, SIGTERM's handler: what the process would exit with
                if exc.code is None or isinstance(exc.code, int):
                    returncode = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    returncode = 1
            except Exception:  # the interpreter prints the traceback and exits 1
                traceback.print_exc()
                returncode = 1
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        os.chdir(cwd)
        if saved_env is not None:
            os.environ["EVALUATOR_DB"] = saved_env
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        store.set_waiting(timeout_s=waiting[0], on_wait=waiting[1], label=waiting[2])
    result = subprocess.CompletedProcess(command, returncode, _text(out, "strict"), _text(err, "backslashreplace"))
    return _checked(command, result, check)


def ingested_store(tmp_path_factory: pytest.TempPathFactory, path: Path, *args: str) -> Path:
    """A new store holding `path` ingested through the real CLI (extra ingest arguments in `args`),
    for module-scoped fixtures of tests that only read it."""
    db = tmp_path_factory.mktemp(path.stem) / "store.duckdb"
    run_cli("ingest", str(path), *args, db=db, check=True)
    return db


@pytest.fixture(scope="session", autouse=True)
def _components_scanned_once() -> Iterator[None]:
    """Streamlit's AppTest scans every installed package for Streamlit components each time an
    AppTest is made (about 0.4 s, every page test); a real server scans once, when it starts. The
    installed packages do not change while the tests run, so the scan is made once per process."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # another Streamlit: nothing to share
        yield
        return
    original = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.cache(original)
    try:
        yield
    finally:
        manifest_scanner.scan_component_manifests = original


@pytest.fixture
def cli():
    """cli(*args, db=None, check=False): the CLI in this process (see the module docstring)."""
    return run_cli


@pytest.fixture
def cli_process():
    """cli_process(*args, db=None, check=False, **subprocess_run_kwargs): the CLI as a subprocess."""
    return run_cli_process


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture(scope="session")
def sample_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three sample runs loaded and evaluated once per session (through the real CLI)."""
    path = tmp_path_factory.mktemp("samples") / "samples.duckdb"
    run_cli("load-samples", db=path, check=True)
    return path


@pytest.fixture
def sample_store(sample_store_template: Path, tmp_path: Path) -> Path:
    """A private copy of the sample store, so a test may write to it."""
    path = tmp_path / "samples.duckdb"
    shutil.copy(sample_store_template, path)
    return path


@pytest.fixture(scope="session")
def run_100k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 100k-response run file from bench.generate (deterministic), generated once for the whole
    test run: pytest-xdist's workers share it through the run's common temp folder, under a lock."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "run_100k.jsonl"
    with (shared / "run_100k.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker generates; the others wait for it
        if not out.exists():
            partial = out.with_suffix(f".partial-{os.getpid()}")
            subprocess.run([sys.executable, "-m", "bench.generate", "--rows", "100000", "--out", str(partial)],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True,
                           timeout=600)
            partial.rename(out)
    return out


# Columns that record when a row was written: two stores holding the same data differ only there.
TIMESTAMPS = {"ingested_at", "created_at", "applied_at"}


def store_rows(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows as text (timestamps left out), sorted: equal for stores holding the same data."""
    from evaluator.store.db import connect

    out = {}
    with connect(db, read_only=True) as con:
        tables = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1").fetchall()]
        for table in tables:
            columns = [row[0] for row in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $table "
                "ORDER BY ordinal_position", {"table": table}).fetchall() if row[0] not in TIMESTAMPS]
            select = ", ".join(f'"{c}"::VARCHAR' for c in columns)
            out[table] = sorted(con.execute(f'SELECT {select} FROM "{table}"').fetchall(), key=repr)
    return out


# Another process that holds the store for writing (as a CLI command does, with its label) until
# released: pages, saves and the CLI must wait for it.
HOLDER = """
import sys
sys.path.insert(0, sys.argv[2])
from evaluator.store.db import connect, set_waiting
set_waiting(label=sys.argv[3])
with connect(sys.argv[1]) as con:
    print("held", flush=True)
    sys.stdin.readline()
"""


class StoreHolder:
    def __init__(self, db: Path, label: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(ROOT), label],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("go\n")
            self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0


@pytest.fixture
def hold_store():  # type: ignore[no-untyped-def]
    """hold_store(db, label="evaluator recompute") -> a StoreHolder; released at the latest after the test."""
    holders: list[StoreHolder] = []

    def hold(db: Path, label: str = "evaluator recompute") -> StoreHolder:
        holders.append(StoreHolder(db, label))
        return holders[-1]

    yield hold
    for holder in holders:
        holder.release()


# --- a real PostgreSQL server (issue 32) --------------------------------------------------------


def postgres_binary(name: str) -> str | None:
    """A PostgreSQL program: on PATH, else in Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda f: int(Path(f).parent.name), reverse=True):
        if os.access(Path(folder) / name, os.X_OK):
            return str(Path(folder) / name)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server of this test session: `initdb` and `pg_ctl start` in a temp folder, on a
    free 127.0.0.1 port, stopped (and its folder removed) at the end; yields its URL without a
    database name. Skipped only when PostgreSQL's programs are not installed (`make test` installs
    them from Debian where it is root with apt). PostgreSQL refuses to run as root: as root the
    server runs as the `postgres` user (else `nobody`), in a folder of the system's temporary folder
    (pytest's own is private to root)."""
    initdb, pg_ctl = postgres_binary("initdb"), postgres_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed here (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin): "
                    "the PostgreSQL store's tests need it; `make test` installs Debian's package as root with apt")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            account = pwd.getpwnam("nobody")
        base = Path(tempfile.mkdtemp(prefix="evaluator-pg-"))
        os.chown(base, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", account.pw_name, "--"]
    else:
        base = tmp_path_factory.mktemp("postgres")
    data, log = base / "data", base / "server.log"
    try:
        subprocess.run([*as_user, initdb, "-D", str(data), "-U", "evaluator", "-A", "trust", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120)
        for attempt in range(3):  # the port is free when picked; another process may take it first
            port = _free_port()
            started = subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60",
                                      "-o", f"-h 127.0.0.1 -p {port} -k {base} -F -c max_connections=200",
                                      "start"], capture_output=True, text=True, timeout=120)
            if started.returncode == 0:
                break
            if attempt == 2:
                raise RuntimeError(f"PostgreSQL did not start: {started.stderr}\n{log.read_text(errors='replace')}")
        yield f"postgresql://evaluator@127.0.0.1:{port}"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=120)
        if as_user:
            shutil.rmtree(base, ignore_errors=True)


def new_database(server: str) -> str:
    """A fresh, empty database on the session's server; its URL."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    psql = postgres_binary("psql")
    assert psql is not None, "PostgreSQL's psql is not installed beside initdb"
    subprocess.run([psql, f"{server}/postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", f'CREATE DATABASE "{name}"'],
                   check=True, capture_output=True, timeout=60)
    return f"{server}/{name}"


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """A fresh, empty PostgreSQL database of the session's server (its URL): a store not made yet."""
    return new_database(postgres_server)


def postgres_extension_missing() -> str | None:
    """Why this DuckDB cannot open a PostgreSQL store, or None when it can."""
    from evaluator.store.postgres import ServerStoreError, extension_directory

    try:
        extension_directory()
    except ServerStoreError as exc:
        return str(exc)
    return None


def samples_database(request: pytest.FixtureRequest) -> str:
    """A database of the session's server holding the sample runs (loaded and evaluated by the CLI), for
    a module's fixture; skipped, saying so, before any server starts where this DuckDB has no extension."""
    missing = postgres_extension_missing()
    if missing:
        pytest.skip(missing)
    url = new_database(request.getfixturevalue("postgres_server"))
    run_cli("load-samples", db=url, check=True)  # type: ignore[arg-type]
    return url


@pytest.fixture(params=["file", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store not made yet, on each back end in turn: a file in the test's temp folder, and a fresh
    PostgreSQL database (`--db postgresql://...`). The PostgreSQL case needs DuckDB's postgres
    extension, which PyPI has for DuckDB 1.4.4 only: under DuckDB 2 it is skipped, saying so (make
    test runs these tests again in .venv-pg, on DuckDB 1.4.4 with the extension)."""
    if request.param == "file":
        return str(tmp_path / "store.duckdb")
    missing = postgres_extension_missing()
    if missing:
        pytest.skip(missing)
    return str(request.getfixturevalue("pg_url"))
