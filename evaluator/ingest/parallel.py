"""A large JSONL run read by worker processes, one piece of the file each (issue 16).

Parsing and checking records is Python work, one core's worth; a large file is cut at line
ends into pieces that worker processes read at once, each with the same reader and validation
as the ordinary way (readers.read_jsonl, validate.collect). The pieces are joined in file order:
rows and line numbers moved past the pieces before, retrieved texts stored once, a question's
golden fields merged as one reader would have.

At the first problem in a piece (bad JSON, a key named twice, a field that is wrong), a
(question_id, provider) pair or a golden field that disagrees across pieces, or an empty file,
`read_in_pieces` returns None: the caller reads the file the ordinary way, whose message names
the first problem in the file.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from evaluator.core.workers import die_with_parent, stop_workers, worker_pool
from evaluator.ingest.columns import Columns
from evaluator.ingest.readers import InputError, Record, hash_file, read_jsonl
from evaluator.ingest.validate import QUESTION_FIELDS, add_question, collect
from evaluator.store.spill import SpilledBatches, moved

PARALLEL_FROM_BYTES = 64 << 20  # below this, starting workers costs more than it saves
# Pieces finish at different times: more pieces than workers keep every worker busy, and a worker
# reuses the memory of its last piece for the next.
PIECES_PER_WORKER = 4
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt() parameters
KEEP_BYTES = 1 << 30


@dataclass
class Piece:
    """What a worker made of its piece of the file: rows and lines counted from the piece's start."""

    responses: SpilledBatches  # in files (evaluator.store.spill): a piece is not sent through a pipe
    retrieved: SpilledBatches
    recorded: SpilledBatches
    questions: dict[str, list[Any]]
    chunks: dict[str, list[Any]]
    n_responses: int
    n_lines: int
    any_template: bool
    records_retrieval: bool


@dataclass
class Joined:
    """The pieces so far, in file order."""

    columns: Columns
    rows: int = 0
    lines: int = 0
    chunk_keys: set[str] = field(default_factory=set)
    questions: dict[str, int] = field(default_factory=dict)  # question id -> its index in columns.questions


def read_in_pieces(path: Path, folder: str, *, workers: int | None = None,
                     new_bar: Callable[[], Any] | None = None) -> tuple[Columns, str] | None:
    """(the run's Columns, sha256 of the file) of a JSONL file of PARALLEL_FROM_BYTES or more read
    by worker processes, or None: the file is smaller, or a problem is left to the ordinary reading
    (see the module). `folder`: where the columns' batches are kept; `new_bar`: makes the progress
    bar (tqdm, or None) told the responses read, a piece at a time."""
    try:
        size = path.stat().st_size
    except OSError:  # the ordinary reader names the problem
        return None
    workers = workers or min(os.cpu_count() or 1, 4)
    if size < PARALLEL_FROM_BYTES or workers < 2:
        return None
    bar = new_bar() if new_bar is not None else None
    try:
        return read_pieces(path, workers, folder=folder, bar=bar)
    except (OSError, BrokenProcessPool):  # a worker could not read or was killed: read it here
        return None
    finally:
        if bar is not None:
            bar.close()


def read_pieces(path: Path, workers: int, pieces: int | None = None, *,
                folder: str | os.PathLike[str], bar: Any = None) -> tuple[Columns, str] | None:
    """read_in_pieces for any file size, in `pieces` pieces (default: PIECES_PER_WORKER a worker)."""
    bounds = _piece_bounds(path, pieces or workers * PIECES_PER_WORKER)
    # The pieces' files go in a folder of their own, removed when the file is read the ordinary way.
    own = tempfile.mkdtemp(prefix="pieces-", dir=folder)
    joined = Joined(Columns(own))
    _warm_up_arrow()
    read = None
    try:
        with worker_pool(workers, _init_worker, (os.getpid(),)) as pool:
            futures = [pool.submit(read_piece, str(path), start, end, own) for start, end in bounds]
            digest = hashlib.sha256()
            hash_file(path, digest)  # while the workers read
            for future in futures:
                piece = future.result()
                if piece is None or not _join(joined, piece):
                    stop_workers(pool)  # the rest is read again the ordinary way
                    return None
                if bar is not None:
                    bar.update(piece.n_responses)
        columns = joined.columns
        if columns.n_responses and not _pairs_repeat(columns.response_batches):
            read = columns, digest.hexdigest()
        return read
    finally:
        if read is None:
            shutil.rmtree(own, ignore_errors=True)


def _warm_up_arrow() -> None:
    """Arrow sets itself up on first use (about 0.2 s of CPU); done once here, before the workers
    are forked, rather than in each of them."""
    moved(pa.RecordBatch.from_pydict({"row": [0], "text": [""]}), 1)


def _init_worker(parent_pid: int) -> None:
    die_with_parent(parent_pid)
    _keep_freed_memory()


def _keep_freed_memory() -> None:
    """glibc gives freed memory back to the kernel as soon as it can, and a reader frees and takes
    again all the time (a line, its record, its strings), so the kernel hands the same pages out
    again and again (measured: a tenth of a worker's time). A worker keeps what it freed
    instead (it lives only for one file)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
        libc.mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)


def _piece_bounds(path: Path, pieces: int) -> list[tuple[int, int]]:
    """Byte ranges that cut the file only just after a line end."""
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as handle:
        for index in range(1, pieces):
            handle.seek(max(size * index // pieces, cuts[-1]))
            handle.readline()  # to the end of the line the guess fell in
            cut = handle.tell()
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def read_piece(path: str, start: int, end: int, folder: str) -> Piece | None:
    """The records of bytes [start, end) of a JSONL file, their batches in files in `folder`, or
    None at the first problem (worker side)."""
    lines = 0

    def records() -> Iterator[tuple[int, Record]]:
        nonlocal lines
        lines = yield from read_jsonl(Path(path), None, start, end)

    try:
        cols = collect(path, records(), Columns(folder))
    except InputError:  # the ordinary reading names it
        return None
    return Piece(cols.response_batches, cols.retrieved_batches, cols.recorded_batches, cols.questions, cols.chunks,
                 cols.n_responses, lines, cols.any_template, cols.records_retrieval)


def _join(joined: Joined, piece: Piece) -> bool:
    """Add a piece after those before it; False when a golden field disagrees with an earlier piece."""
    cols = joined.columns
    if not _join_questions(joined, piece.questions):
        return False
    rows, lines = joined.rows, joined.lines
    cols.response_batches.extend(piece.responses, rows, lines)
    cols.retrieved_batches.extend(piece.retrieved, rows)
    cols.recorded_batches.extend(piece.recorded, rows)
    for key, chunk_id, text in zip(piece.chunks["chunk_key"], piece.chunks["chunk_id"], piece.chunks["text"],
                                   strict=True):
        if key not in joined.chunk_keys:
            joined.chunk_keys.add(key)
            cols.chunks["chunk_key"].append(key)
            cols.chunks["chunk_id"].append(chunk_id)
            cols.chunks["text"].append(text)
    cols.n_responses += piece.n_responses
    cols.any_template = cols.any_template or piece.any_template
    cols.records_retrieval = cols.records_retrieval or piece.records_retrieval
    joined.rows += piece.n_responses
    joined.lines += piece.n_lines
    return True


def _join_questions(joined: Joined, questions: dict[str, list[Any]]) -> bool:
    """A piece's questions merged as one reader merges them: later pieces fill gaps; False on a
    contradiction (the ordinary reading names it)."""
    fields = ("question", *QUESTION_FIELDS)
    try:
        for index, question_id in enumerate(questions["question_id"]):
            add_question("", 0, joined.columns, joined.questions, question_id,
                         {key: questions[key][index] for key in fields})
    except InputError:
        return False
    return True


def _pairs_repeat(batches: SpilledBatches) -> bool:
    """True when a (question_id, provider) pair comes twice (across pieces: a worker refuses a pair
    repeated within its own piece)."""
    table = batches.table(["question_id", "provider"])
    return table.group_by(["question_id", "provider"]).aggregate([]).num_rows != table.num_rows
