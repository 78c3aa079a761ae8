"""Reviewers' saves that are never lost: a journal beside the store, applied exactly once.

A Save is first written to `STORE.pending/<token>.json` (written whole, fsync'd, renamed into
place), then applied to the store with its token (`overrides.add_override(client_token=…)`),
so it is written once whoever applies it and however often: the page at once when the store is
free, else the background drainer when it frees up (another process, such as the CLI, may hold
the store for a while), or the next dashboard to start after a crash. Afterwards the file is
renamed `<token>.done` (holding the override id; kept a day so a page can still say "saved"),
or `<token>.failed` with the reason when the store refuses it (the response was deleted by a
replace, say) — the only way a save does not land, and it is shown to the reviewer.

A store in PostgreSQL keeps the journal in its own table (pending_saves: state pending, done or
failed), not in files: dashboard replicas on other hosts share no folder, and the database is never
held by another process the way a file is. Applying is the same: once per token, whoever applies it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from evaluator.review.annotations import AnnotationError, add_annotation
from evaluator.review.config import ReviewConfig, load_review_config
from evaluator.review.overrides import (
    OverrideError,
    OverrideSpec,
    add_override,
    add_overrides,
    allowed_values,
    apply_carried,
)
from evaluator.review.span_labels import SpanLabelError, add_span_label
from evaluator.store.db import (
    CONFLICT_RETRIES,
    StoreBusyError,
    atomic,
    connect,
    is_conflict,
    is_server,
    resolve_db,
    resolve_db_path,
)
from evaluator.store.postgres import ServerStoreError, redacted, scrubbed

LOG = logging.getLogger(__name__)
KEEP_DONE_S = 24 * 3600
KINDS = ("override", "carry", "bulk", "annotation", "span_label")


@dataclass(frozen=True)
class SaveStatus:
    token: str
    state: str  # "pending" | "saved" | "failed"
    override_id: int | None = None
    message: str | None = None
    override_ids: tuple[int, ...] = ()  # every override a bulk save wrote (a single save: its one id)


def journal_dir(db: str | os.PathLike[str] | None) -> Path:
    path = resolve_db_path(db)
    return path.with_name(path.name + ".pending")


def submit(db: str | os.PathLike[str] | None, save: dict[str, Any], *, config: ReviewConfig | None = None) -> str:
    """Check what can be checked without the store, then keep the save durably; returns its token.

    Raises OverrideError for a save that could never be written (no reviewer, no reason, a
    value the target does not take): nothing is kept then."""
    kind = save.get("kind", "override")
    if kind not in KINDS:
        raise OverrideError(f"unknown kind of save {kind!r}")
    reviewer = str(save.get("reviewer") or "").strip()
    if not reviewer:
        raise OverrideError("an override needs a reviewer: say who you are first")
    if not (config or load_review_config()).may_override(reviewer):
        raise OverrideError(f"{reviewer!r} is not on the reviewers list; overrides are read-only for them")
    if kind in ("override", "bulk"):
        if not str(save.get("reason") or "").strip():
            raise OverrideError("an override needs a reason: say why the verdict is wrong")
        items = save.get("overrides") if kind == "bulk" else [save]
        if not items:
            raise OverrideError("a bulk override needs at least one response")
        for item in items:
            target, value = str(item.get("target") or ""), str(item.get("new_value") or "").strip().upper()
            if value not in allowed_values(target):
                raise OverrideError(f"{target} cannot be set to {value!r}; "
                                    f"use one of {', '.join(allowed_values(target))}")
    token = uuid.uuid4().hex
    record = {**save, "kind": kind, "token": token, "saved_at": time.time()}
    if is_server(db):
        with connect(db) as con, atomic(con):
            con.execute("INSERT INTO pending_saves (token, record, saved_at, state) VALUES ($token, $record, $at, "
                        "'pending')", {"token": token, "record": json.dumps(record, ensure_ascii=False),
                                       "at": record["saved_at"]})
        return token
    folder = journal_dir(db)
    folder.mkdir(parents=True, exist_ok=True)
    _write_whole(folder / f"{token}.json", json.dumps(record, ensure_ascii=False))
    return token


def _write_whole(path: Path, text: str) -> None:
    """Write, fsync and rename into place: a crash leaves the old state or the new one.

    Each writer has its own partial file: the page and the drainer may finish the same save at
    once, and with one shared name one truncates the other's file and then finds it renamed away."""
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)
    with contextlib.suppress(OSError):  # the rename itself is durable once the directory is synced
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _server_rows(db: str | os.PathLike[str] | None, where: str, params: dict[str, Any]) -> list[tuple]:
    with connect(db, read_only=True, upgrade=True) as con:
        return con.execute(f"SELECT token, record, state, outcome FROM pending_saves WHERE {where} "
                           "ORDER BY saved_at, token", params).fetchall()


def _loaded(text: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def status(db: str | os.PathLike[str] | None, token: str) -> SaveStatus:
    if is_server(db):
        rows = _server_rows(db, "token = $token", {"token": token})
        state, outcome = (rows[0][2], _loaded(rows[0][3])) if rows else ("pending", None)
        return _status(token, outcome if state == "done" else None, outcome if state == "failed" else None)
    folder = journal_dir(db)
    return _status(token, _read(folder / f"{token}.done"), _read(folder / f"{token}.failed"))


def _status(token: str, done: dict[str, Any] | None, failed: dict[str, Any] | None) -> SaveStatus:
    if done is not None:
        ids = tuple(int(i) for i in done.get("override_ids") or [done.get("override_id")] if i is not None)
        return SaveStatus(token, "saved", override_id=done.get("override_id"), override_ids=ids)
    if failed is not None:
        return SaveStatus(token, "failed", message=str(failed.get("error")))
    return SaveStatus(token, "pending")


def pending(db: str | os.PathLike[str] | None, response_id: int | None = None) -> list[dict[str, Any]]:
    """Saves not yet in the store (oldest first), optionally of one response."""
    if is_server(db):
        found = [record for row in _server_rows(db, "state = 'pending'", {}) if (record := _loaded(row[1]))]
    else:
        folder = journal_dir(db)
        if not folder.is_dir():
            return []
        found = [record for path in folder.glob("*.json") if (record := _read(path)) is not None]
    if response_id is not None:
        found = [r for r in found if r.get("response_id") == response_id
                 or any(item.get("response_id") == response_id for item in r.get("overrides") or [])]
    return sorted(found, key=lambda r: (r.get("saved_at", 0), r.get("token", "")))


def _apply_record(con: Any, record: dict[str, Any], config: ReviewConfig) -> list[int]:
    if record["kind"] == "carry":
        return [apply_carried(con, int(record["response_id"]), int(record["carried_from"]), record["reviewer"],
                              record.get("evaluation_id"), config=config, client_token=record["token"])]
    if record["kind"] == "annotation":  # a rating typed in Review (dashboard/annotate.py)
        try:
            return [add_annotation(con, int(record["response_id"]), record["reviewer"], str(record["label"]),
                                   record.get("value"), record.get("reason"), source="review",
                                   client_token=record["token"])]
        except AnnotationError as exc:
            raise OverrideError(str(exc)) from exc  # one kind of refusal for the journal
    if record["kind"] == "span_label":  # a span marked in Review (dashboard/span_marks.py)
        try:
            return [add_span_label(con, int(record["response_id"]), record["reviewer"], record.get("start"),
                                   record.get("end"), record.get("label"), source="review",
                                   client_token=record["token"])]
        except SpanLabelError as exc:
            raise OverrideError(str(exc)) from exc
    if record["kind"] == "bulk":
        specs = [OverrideSpec(int(i["response_id"]), str(i["target"]), str(i["new_value"]))
                 for i in record["overrides"]]
        return add_overrides(con, specs, record["reason"], record["reviewer"],
                             evaluation_id=record.get("evaluation_id"), config=config, client_token=record["token"])
    return [add_override(con, int(record["response_id"]), record["target"], record["new_value"], record["reason"],
                         record["reviewer"], evaluation_id=record.get("evaluation_id"), config=config,
                         client_token=record["token"])]


def _finish(folder: Path | None, token: str, outcome: dict[str, Any], suffix: str,
            con: Any = None) -> None:
    if folder is None:  # PostgreSQL: the journal's row says how the save ended
        for attempt in range(CONFLICT_RETRIES):
            try:
                with atomic(con):
                    con.execute("UPDATE pending_saves SET state = $state, outcome = $outcome, finished_at = $at "
                                "WHERE token = $token AND state = 'pending'",
                                {"state": suffix.lstrip("."), "token": token, "at": time.time(),
                                 "outcome": json.dumps(outcome, ensure_ascii=False)})
                return
            except duckdb.Error as exc:  # another replica finished the same save just now: it said the same
                if not is_conflict(exc) or attempt == CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        return
    _write_whole(folder / f"{token}{suffix}", json.dumps(outcome, ensure_ascii=False))
    with contextlib.suppress(FileNotFoundError):  # another drainer finished it first
        (folder / f"{token}.json").unlink()


def apply(db: str | os.PathLike[str] | None, tokens: list[str] | None = None, *, timeout_s: float = 2.0,
          config: ReviewConfig | None = None) -> list[SaveStatus]:
    """Write pending saves (these tokens, else all) to the store. When the store stays busy for
    timeout_s they stay pending, untouched, and are reported so."""
    folder = None if is_server(db) else journal_dir(db)
    records = [r for r in pending(db) if tokens is None or r.get("token") in tokens]
    if not records:
        return [status(db, t) for t in tokens or []]
    config = config or load_review_config()
    try:
        with connect(db, timeout_s=timeout_s) as con:
            for record in records:
                token = str(record["token"])
                try:
                    ids = _apply_record(con, record, config)
                except OverrideError as exc:
                    _finish(folder, token, {"token": token, "error": str(exc), "save": record}, ".failed", con)
                    continue
                except (KeyError, TypeError, ValueError) as exc:  # a journal file no save could come from
                    _finish(folder, token, {"token": token, "error": f"unreadable save: {exc!r}", "save": record},
                            ".failed", con)
                    continue
                except duckdb.Error as exc:  # the store said no this time: keep it, go on with the others
                    LOG.warning("save %s stays pending: %s", token, exc)
                    continue
                else:
                    _finish(folder, token, {"token": token, "override_id": ids[0], "override_ids": ids}, ".done",
                            con)
            if folder is None:
                _forget_old_rows(con)
    except (StoreBusyError, ServerStoreError):
        pass  # still pending: the drainer tries again
    if folder is not None:
        _forget_old(folder)
    return [status(db, str(r["token"])) for r in records]


def _forget_old_rows(con: Any) -> None:
    try:
        with atomic(con):
            con.execute("DELETE FROM pending_saves WHERE state = 'done' AND finished_at < $cutoff",
                        {"cutoff": time.time() - KEEP_DONE_S})
    except duckdb.Error as exc:  # another replica is forgetting them at the same time
        if not is_conflict(exc):
            raise


def _forget_old(folder: Path) -> None:
    cutoff = time.time() - KEEP_DONE_S
    for path in folder.glob("*.done"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


class Drainer:
    """A daemon thread writing pending saves whenever there are any (one per store per process)."""

    def __init__(self, db: str | os.PathLike[str] | None, interval_s: float = 1.0) -> None:
        self.db, self.interval_s = db, interval_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="pending-saves", daemon=True)
        _RUNNING.add(self)
        self.thread.start()

    def _run(self) -> None:
        # A failure is said once, not every second while it lasts (a server that went away answers
        # each try with the same error); said again once it changes or after a success.
        said: str | None = None
        while not self.stop.wait(self.interval_s):
            try:
                if pending(self.db):
                    apply(self.db, timeout_s=30.0)
                said = None
            except ServerStoreError as exc:  # the database server is down or gone: said once, tried again
                if said != str(exc):
                    LOG.warning("%s; pending saves will be written when it answers", exc)
                said = str(exc)
            except Exception as exc:  # never let the thread die: the saves stay pending and are tried again
                failure = f"{type(exc).__name__}: {exc}"
                if said == failure:
                    continue
                said = failure
                if is_server(self.db):  # DuckDB's extension may quote the URL, password included
                    LOG.warning("writing pending saves to %s failed; will try again: %s", redacted(str(self.db)),
                                scrubbed(str(exc), str(self.db)))
                else:
                    LOG.exception("writing pending saves to %s failed; will try again", self.db)


_DRAINERS: dict[str, Drainer] = {}
_RUNNING: weakref.WeakSet[Drainer] = weakref.WeakSet()
_DRAINERS_LOCK = threading.Lock()


def _stop_drainers() -> None:
    """At exit, before the interpreter tears down: a drainer still trying an unreachable server is
    making a DuckDB instance each second, and a process that ends in the middle of one aborts
    ("terminate called without an active exception", exit status 134)."""
    drainers = list(_RUNNING)
    for drainer in drainers:
        drainer.stop.set()
    for drainer in drainers:
        drainer.thread.join(timeout=10)


atexit.register(_stop_drainers)


def start_drainer(db: str | os.PathLike[str] | None) -> Drainer:
    key = str(resolve_db(db)) if is_server(db) else os.path.realpath(resolve_db_path(db))
    with _DRAINERS_LOCK:
        drainer = _DRAINERS.get(key)
        if drainer is None or not drainer.thread.is_alive():
            drainer = _DRAINERS[key] = Drainer(db)
        return drainer


def iter_failed(db: str | os.PathLike[str] | None) -> Iterator[dict[str, Any]]:
    if is_server(db):
        for row in _server_rows(db, "state = 'failed'", {}):
            if (outcome := _loaded(row[3])) is not None:
                yield outcome
        return
    folder = journal_dir(db)
    if folder.is_dir():
        for path in sorted(folder.glob("*.failed")):
            record = _read(path)
            if record is not None:
                yield record
