"""Validate run files and load them into the store in bulk, whole or not at all."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from evaluator.core.types import CHECK_NAMES
from evaluator.ingest.columns import (
    ANNOTATION_SCHEMA,
    BATCH_ROWS,
    CHUNK_SCHEMA,
    LABEL_SCHEMA,
    Columns,
)
from evaluator.ingest.formats import Label, PeerRun
from evaluator.ingest.formats.column_map import apply_map, parse_map
from evaluator.ingest.formats.detect import csv_header, file_format, json_format
from evaluator.ingest.formats.dispatch import read_peer
from evaluator.ingest.formats.grades import RECORDED_OVERALL, is_grade_name
from evaluator.ingest.formats.inspect_log import is_eval_zip, looks_zipped, read_eval_zip
from evaluator.ingest.formats.phoenix import read as read_phoenix
from evaluator.ingest.formats.ragas import read as read_ragas
from evaluator.ingest.parallel import read_in_pieces
from evaluator.ingest.readers import (
    PEER_FORMATS,
    InputError,
    json_list_records,
    read_json_document,
    read_records,
    require_regular_file,
)
from evaluator.ingest.validate import KNOWN_FIELDS, collect, dumps
from evaluator.pipeline import search_index
from evaluator.rules.load import load_rules
from evaluator.store.db import (
    atomic,
    connect,
    drop_quietly,
    fetch_one,
    fetch_value,
    memory_limited,
    next_id,
    next_ids,
    on_server,
)
from evaluator.store.results import write_evaluation_counts, write_response_results, write_run_sizes
from evaluator.store.spill import spill_folder
from evaluator.store.staging import OwnedFolder

# Peers' formats whose files are one JSON document (the others: Ragas CSV, Phoenix JSONL, Inspect's .eval zip)
JSON_PEER_FORMATS = ("inspectorraget", "promptfoo", "inspect", "deepeval")
# Profiles come from the rules (evaluator.rules.load); these are the defaults ingest picks from.
TEMPLATED_PROFILE = "ramayana"  # a run whose responses follow templates T1-T3
GENERIC_PROFILE = "rag"  # any other run, when the rules define it ...
FALLBACK_PROFILE = "clearpath"  # ... else this one, as before there was a generic profile
RECORDED_REASON = "recorded by the source evaluator"

# DuckDB's memory while a run is stored: beyond it, DuckDB drops cached blocks it has written
# (measured at 1M responses on 2 threads: the ingest process peaked at 3.3 GB without a limit,
# 1.77 GB with 500 MB; issue 16 asks for 2 GB). Each DuckDB thread needs its own share (a review
# measured 1M responses failing at 500 MB from 32 threads on), so the limit grows with the threads.
DUCKDB_MEMORY_MB, DUCKDB_MEMORY_MB_PER_THREAD = 500, 64


@dataclass(frozen=True)
class Understood:
    """What ingest says it understood of a peer's file, beside the columns themselves."""

    version: str | None = None  # the format's version, as the file states it
    answer_fields: dict[str, int] = field(default_factory=dict)  # a JSON output's field that gave the answer -> n
    file_passed: tuple[int, int] | None = None  # (passed, failed) by the file's own summary
    ignored: tuple[str, ...] = ()


def _recorded_overall(recorded: pa.Table) -> tuple[int, int]:
    """(PASS, FAIL) of the recorded evaluation's overall verdicts, as _load_recorded writes them:
    the file's own where it gives one, else FAIL when any recorded check fails."""
    names = recorded["check_name"].cast(pa.string())
    verdicts = recorded["verdict"].cast(pa.string())
    given = pc.equal(names, RECORDED_OVERALL)
    own = pc.filter(verdicts, given)
    passed = pc.sum(pc.equal(own, "PASS")).as_py() or 0
    failed = len(own) - passed
    rows = pa.table({"row": recorded["row"], "fails": pc.equal(verdicts, "FAIL"), "given": given})
    per_row = rows.group_by("row").aggregate([("fails", "any"), ("given", "any")])
    computed = pc.filter(per_row["fails_any"], pc.invert(per_row["given_any"]))
    computed_failed = pc.sum(computed).as_py() or 0
    return passed + len(computed) - computed_failed, failed + computed_failed


@dataclass(frozen=True)
class IngestResult:
    run_id: int
    name: str
    profile: str
    n_responses: int
    replaced: bool


class DuplicateRunError(Exception):
    pass


@dataclass(frozen=True)
class PreparedRun:
    """A run file read and validated, not yet stored: its batches wait in files in `folder`
    (``close()``, or the last reference to it, removes them)."""

    path: Path
    fmt: str
    name: str
    profile: str
    content_hash: str
    columns: Columns
    # Where the columns' batches are kept (evaluator.store.spill); removed with the last reference to it.
    folder: OwnedFolder = field(compare=False, repr=False)
    understood: Understood = field(default_factory=lambda: Understood())

    @property
    def n_responses(self) -> int:
        return self.columns.n_responses

    def close(self) -> None:
        self.folder.cleanup()

    def summary(self) -> dict[str, Any]:
        """What the run holds, as ingest says it understood the file: its providers (with their
        responses), whether its file recorded retrieval and how many items, its recorded verdicts
        (responses with any, and their overall PASS / FAIL as the recorded evaluation counts them),
        the tool's own grades beside our checks, and its human labels and ratings."""
        cols = self.columns
        providers = cols.response_batches.table(["provider"]).group_by("provider").aggregate([("provider", "count")])
        recorded = cols.recorded_table()
        passed, failed = _recorded_overall(recorded)
        names = pc.unique(recorded["check_name"].combine_chunks().cast(pa.string())).to_pylist()
        return {
            "providers": dict(sorted(zip(providers["provider"].to_pylist(), providers["provider_count"].to_pylist(),
                                         strict=True))),
            "records_retrieval": cols.records_retrieval,
            # responses whose retrieval is unknown: every one of a file that records none; in a peer's
            # file, each whose record holds none
            "unknown_retrieval": self.n_responses if not cols.records_retrieval else (
                pc.sum(pc.invert(cols.response_batches.table(["retrieval_given"])["retrieval_given"])).as_py() or 0
                if cols.per_record_retrieval else 0),
            "retrieved_items": cols.retrieved_batches.table(["row"]).num_rows,
            "recorded_responses": passed + failed, "recorded_pass": passed, "recorded_fail": failed,
            "tool_grades": sorted(name for name in names if is_grade_name(name)),
            "labels": len(cols.labels), "ratings": len(cols.annotations["row"]),
        }

    def __enter__(self) -> PreparedRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_run(
    path: str | Path, *, name: str | None = None, fmt: str | None = None, profile: str | None = None,
    progress: bool = False, column_map: str | dict[str, str] | None = None, rules: str | Path | None = None,
    fast: bool = True, spill_to: Path | None = None, provider: str | None = None, answer_path: str | None = None,
    more_paths: Sequence[str | Path] = (),
) -> PreparedRun:
    """Read and validate a run file without touching any store. `fmt`: one of readers.ALL_FORMATS
    (default: told from the content, evaluator.ingest.formats.detect); `column_map`: "field=column,..."
    (JSONL, CSV, Parquet, JSON lists); `rules`: the rules file whose profiles are allowed (default:
    the shipped rules); `fast=False`: read in this process only, never by worker processes (the
    reference evaluator.ingest.parallel is tested against); `spill_to`: the folder where the
    batches of the run are kept until it is stored (evaluator.store.spill; default: the system's
    temporary folder; staging.staging_folder(db) keeps them on the store's disk); `provider`: the
    provider of a file that names none (default: the run's name); `answer_path`: the field of a
    provider's JSON-object output that holds the answer (default: the first of peer.ANSWER_KEYS);
    `more_paths`: further exports of the same run (Phoenix: one file of LLM spans, one of
    RETRIEVER spans). Raises InputError."""
    path = Path(path)
    require_regular_file(path)  # a FIFO or /dev/zero first: it would block or never end
    fmt = file_format(path, fmt)
    extra = [Path(p) for p in more_paths]
    for other in extra:
        require_regular_file(other)
        if fmt != "phoenix" or file_format(other, None) != "phoenix":
            raise InputError(str(other), None, None, "several files make one run only for Phoenix span exports "
                             "(LLM and RETRIEVER spans); ingest other files one at a time")
    profiles = _profile_names(path, rules)
    if profile is not None and profile not in profiles:
        raise InputError(str(path), None, "profile", f"unknown profile {profile!r}; the rules define "
                         f"{', '.join(profiles)}")
    mapping = parse_map(column_map, KNOWN_FIELDS) if isinstance(column_map, str) else column_map
    run_name = name or path.stem
    folder = spill_folder(spill_to)
    try:
        return _prepare(path, fmt, profile, profiles, progress, mapping, run_name, fast, folder,
                        _Options(provider or run_name, answer_path, extra))
    except BaseException:
        folder.cleanup()
        raise


@dataclass(frozen=True)
class _Options:
    provider: str  # of a file that names none
    answer_path: str | None
    more_paths: list[Path]


def _prepare(path: Path, fmt: str, profile: str | None, profiles: tuple[str, ...], progress: bool,
             mapping: dict[str, str] | None, run_name: str, fast: bool, folder: OwnedFolder, options: _Options
             ) -> PreparedRun:
    digest = hashlib.sha256()
    records: Any
    peer: PeerRun | None = None
    if mapping is not None and fmt in PEER_FORMATS and fmt not in ("ragas",):
        raise InputError(str(path), None, None, f"--map applies to JSONL, JSON lists, CSV and Parquet, "
                         f"not to {fmt} files (their fields are known)")
    if fmt == "inspect" and (is_eval_zip(path) or looks_zipped(path) or path.suffix.lower() == ".eval"):
        if not is_eval_zip(path):
            raise InputError(str(path), None, None, "not a readable .eval archive: an Inspect log is a zip "
                             "holding header.json (is the file complete?)")
        peer = read_peer(path, fmt, read_eval_zip(path, digest), provider=options.provider)
        records = iter(peer.records)
    elif fmt == "json" or fmt in JSON_PEER_FORMATS:
        doc = read_json_document(path, digest)
        shape = json_format(doc) if mapping is None else "json"
        if fmt == "json":
            fmt = shape
        elif shape != fmt and mapping is None and shape in PEER_FORMATS:
            raise InputError(str(path), None, None, f"--format {fmt} was given but this is a {shape} file")
        if fmt in PEER_FORMATS:
            peer = read_peer(path, fmt, doc, provider=options.provider, answer_path=options.answer_path)
            records = iter(peer.records)
        else:
            records = json_list_records(path, doc)
        del doc
    elif fmt == "ragas" and mapping is None:
        peer = read_ragas(path, csv_header(path), read_records(path, "csv", digest, long_csv=True),
                          provider=options.provider)
        records = iter(peer.records)
    elif fmt == "phoenix":
        spans = ((file, line, span) for file in (path, *options.more_paths)
                 for line, span in read_records(file, "jsonl", digest))
        peer = read_phoenix(path, spans, provider=options.provider, answer_path=options.answer_path)
        records = iter(peer.records)
    else:
        records = read_records(path, "csv" if fmt == "ragas" else fmt, digest, long_csv=mapping is not None)
    if mapping is not None:
        records = apply_map(path, records, mapping, default_provider=options.provider)
    # A large JSONL file is read by worker processes, a piece each, with the same reader and
    # validation; any other file, or one with a problem anywhere (its message comes from here), is
    # read in this process.
    parallel = None
    if fast and fmt == "jsonl" and mapping is None:
        parallel = read_in_pieces(path, folder.name, new_bar=lambda: _progress_bar(progress, path))
    if parallel is not None:
        columns, content_hash = parallel
    else:
        columns = _collect(path, records, folder.name, progress=progress, peer=peer)
        content_hash = None
    columns.per_record_retrieval = peer is not None  # a peer's record without retrieval: unknown
    if profile is None:
        has_templates = columns.any_template or any(columns.questions["expected_template"])
        profile = TEMPLATED_PROFILE if has_templates and TEMPLATED_PROFILE in profiles else (
            GENERIC_PROFILE if GENERIC_PROFILE in profiles else FALLBACK_PROFILE)
    return PreparedRun(path, fmt, run_name, profile, content_hash or digest.hexdigest(), columns, folder,
                       _understood(peer))


def _understood(peer: PeerRun | None) -> Understood:
    if peer is None:
        return Understood()
    return Understood(peer.version, dict(peer.answer_fields), peer.file_passed, tuple(peer.ignored))


def _profile_names(path: Path, rules: str | Path | None) -> tuple[str, ...]:
    try:
        names = load_rules(rules).profile_names
    except ValueError as exc:
        raise InputError(str(rules or path), None, "rules", str(exc)) from None
    return tuple(names() if callable(names) else names)


def store_run(
    db: str | os.PathLike[str] | None, run: PreparedRun, *, replace: bool = False, drop_overrides: bool = False
) -> IngestResult:
    """Store a prepared run in the store `db`, opened for its one transaction only (the file was read
    and validated before). Raises DuplicateRunError; writes nothing then."""
    with connect(db) as con:
        return _store(con, run, replace=replace, drop_overrides=drop_overrides)


def _store(con: duckdb.DuckDBPyConnection, run: PreparedRun, *, replace: bool, drop_overrides: bool) -> IngestResult:
    with memory_limited(con, _memory_limit(con)), atomic(con):
        replaced_run_id = _check_not_duplicate(con, run.name, run.content_hash, replace)
        run_id = next_id(con, "run_ids")
        con.execute(INSERT_RUN_SQL, _run_row(run_id, run))
        _load(con, run_id, run.columns)
        write_run_sizes(con, run_id)
        if replaced_run_id is not None:
            _move_overrides(con, replaced_run_id, run_id, drop_overrides=drop_overrides)
            _move_typed_annotations(con, replaced_run_id, run_id, drop_overrides=drop_overrides)
            delete_run(con, replaced_run_id)
    return IngestResult(run_id, run.name, run.profile, run.n_responses, replaced_run_id is not None)


INSERT_RUN_SQL = """INSERT INTO runs (run_id, name, source_file, source_format, content_hash, profile, ingested_at,
                                       n_responses)
                   VALUES ($run, $name, $path, $format, $content_hash, $profile, now(), $n_responses)"""


def _run_row(run_id: int, run: PreparedRun) -> dict[str, object]:
    return {"run": run_id, "name": run.name, "path": str(run.path), "format": run.fmt,
            "content_hash": run.content_hash, "profile": run.profile, "n_responses": run.n_responses}


def _memory_limit(con: duckdb.DuckDBPyConnection) -> str:
    threads = int(fetch_value(con, "SELECT current_setting('threads')"))
    return f"{max(DUCKDB_MEMORY_MB, DUCKDB_MEMORY_MB_PER_THREAD * threads)}MB"


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    name: str | None = None,
    fmt: str | None = None,
    profile: str | None = None,
    replace: bool = False,
    drop_overrides: bool = False,
    progress: bool = False,
) -> IngestResult:
    """Read, validate and store one run file. Raises InputError / DuplicateRunError; writes nothing then."""
    with prepare_run(path, name=name, fmt=fmt, profile=profile, progress=progress) as run:
        return _store(con, run, replace=replace, drop_overrides=drop_overrides)


def _check_not_duplicate(
    con: duckdb.DuckDBPyConnection, run_name: str, content_hash: str, replace: bool
) -> int | None:
    same_name = fetch_one(con, "SELECT run_id FROM runs WHERE name = $name", {"name": run_name})
    same_content = fetch_one(con, "SELECT name FROM runs WHERE content_hash = $hash AND name <> $name",
                             {"hash": content_hash, "name": run_name})
    if same_content:
        raise DuplicateRunError(
            f"this file's content is already ingested as run {same_content[0]!r}; "
            f"nothing was written (use --name {same_content[0]} --replace to re-ingest it)"
        )
    if same_name and not replace:
        raise DuplicateRunError(
            f"a run named {run_name!r} already exists; nothing was written "
            "(pass --replace to replace it, or --name to ingest under another name)"
        )
    if same_name is None:
        return None
    # The old run steps aside under a temporary name until the new one is loaded, so reviewers'
    # overrides can move across before it is deleted (all inside the caller's transaction).
    con.execute("UPDATE runs SET name = name || ' (being replaced)' WHERE run_id = $run", {"run": same_name[0]})
    return int(same_name[0])


def _move_overrides(
    con: duckdb.DuckDBPyConnection, old_run_id: int, new_run_id: int, *, drop_overrides: bool
) -> None:
    """Overrides of a replaced run follow responses with the same question, provider and answer;
    the evaluation they were made against goes with the old run. Overrides of answers that
    changed would be lost, so the replace is refused unless the caller agreed to drop them."""
    con.execute(
        """UPDATE overrides SET response_id = moved.new_id, evaluation_id = NULL
           FROM (SELECT o.response_id AS old_id, n.response_id AS new_id
                 FROM responses o JOIN responses n
                   ON n.question_id = o.question_id AND n.provider = o.provider AND n.answer_hash = o.answer_hash
                 WHERE o.run_id = $old AND n.run_id = $new) AS moved
           WHERE overrides.response_id = moved.old_id""",
        {"old": old_run_id, "new": new_run_id},
    )
    orphaned = fetch_value(
        con, "SELECT count(*) FROM overrides WHERE response_id IN "
        "(SELECT response_id FROM responses WHERE run_id = $run)", {"run": old_run_id},
    )
    if orphaned and not drop_overrides:
        raise DuplicateRunError(
            f"replacing the run would drop {orphaned} reviewer override(s) of answers that changed or are gone; "
            "nothing was written (export them with `evaluator overrides`, then pass --drop-overrides)"
        )


def _move_typed_annotations(con: duckdb.DuckDBPyConnection, old_run_id: int, new_run_id: int, *,
                            drop_overrides: bool) -> None:
    """Ratings reviewers typed in follow their response to the new run, as overrides do; imported
    ones came with the old file and go with it (the new file brings its own). Typed ratings of
    answers that changed would be lost: refused like overrides, unless the caller agreed."""
    # Span marks (review/span_labels.py) are ratings too: offsets into an answer that is the same text.
    for table in ("annotations", "span_labels"):
        con.execute(
            f"""UPDATE {table} SET response_id = moved.new_id
               FROM (SELECT o.response_id AS old_id, n.response_id AS new_id
                     FROM responses o JOIN responses n
                       ON n.question_id = o.question_id AND n.provider = o.provider AND n.answer_hash = o.answer_hash
                     WHERE o.run_id = $old AND n.run_id = $new) AS moved
               WHERE {table}.response_id = moved.old_id AND {table}.source <> 'imported'""",
            {"old": old_run_id, "new": new_run_id},
        )
    orphaned = fetch_value(
        con, """SELECT (SELECT count(*) FROM annotations WHERE source <> 'imported' AND response_id IN (
                            SELECT response_id FROM responses WHERE run_id = $old))
                     + (SELECT count(*) FROM span_labels WHERE source <> 'imported' AND response_id IN (
                            SELECT response_id FROM responses WHERE run_id = $old))""", {"old": old_run_id})
    if orphaned and not drop_overrides:
        raise DuplicateRunError(
            f"replacing the run would drop {orphaned} rating(s) reviewers typed (span marks included) for answers "
            "that changed or are gone; nothing was written (export them with `evaluator annotations`, then pass "
            "--drop-overrides)"
        )
    labels_used = """SELECT DISTINCT a.label FROM annotations a JOIN responses r USING (response_id)
                     WHERE r.run_id = $new"""
    con.execute(
        f"""INSERT INTO labels SELECT $new, label, scale, scale_values, description, value_names FROM labels
            WHERE run_id = $old AND label IN ({labels_used})
              AND label NOT IN (SELECT label FROM labels WHERE run_id = $new)""",
        {"old": old_run_id, "new": new_run_id},
    )


def delete_run(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """Remove a run and everything derived from it (callers hold the transaction)."""
    evaluations = "SELECT evaluation_id FROM evaluations WHERE run_id = $run"
    responses = "SELECT response_id FROM responses WHERE run_id = $run"
    metrics = "SELECT metric_result_id FROM metric_results WHERE run_id = $run"
    run = {"run": run_id}
    for table in ("check_results", "response_results", "flags", "evaluation_counts", "flag_counts"):
        con.execute(f"DELETE FROM {table} WHERE evaluation_id IN ({evaluations})", run)
    con.execute(f"DELETE FROM metric_responses WHERE metric_result_id IN ({metrics})", run)
    con.execute(f"DELETE FROM retrieved WHERE response_id IN ({responses})", run)
    # Overrides of answers that no longer exist go with them (matching ones were moved first).
    con.execute(f"DELETE FROM overrides WHERE response_id IN ({responses})", run)
    con.execute(f"DELETE FROM annotations WHERE response_id IN ({responses})", run)
    con.execute(f"DELETE FROM span_labels WHERE response_id IN ({responses})", run)
    search_index.drop(con, run_id)
    for table in ("labels", "metric_results", "evaluations", "questions", "responses", "runs"):
        con.execute(f"DELETE FROM {table} WHERE run_id = $run", run)


def _collect(path: Path, records: Any, folder: str, *, progress: bool, peer: PeerRun | None = None) -> Columns:
    """The records validated into the run's columns, whose batches are kept in `folder`."""
    cols = Columns(folder)
    if peer is not None:
        cols.labels = list(peer.labels)
    bar = _progress_bar(progress, path)
    try:
        collect(str(path), records, cols, annotations=peer.annotations if peer is not None else None, bar=bar,
                batch_rows=BATCH_ROWS)
    finally:
        if bar is not None:
            bar.close()
    if not cols.n_responses:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    return cols


def _progress_bar(progress: bool, path: Path) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(desc=f"reading {path.name}", unit=" responses", unit_scale=True, mininterval=0.5)


def _first_response_id(con: duckdb.DuckDBPyConnection) -> int:
    """Ids are never reused: a deleted run's id must not be taken by an unrelated new response."""
    return int(fetch_value(con, "SELECT greatest((SELECT coalesce(max(response_id), 0) FROM responses), "
                                "(SELECT coalesce(max(response_id), 0) FROM overrides)) + 1"))


def _load(con: duckdb.DuckDBPyConnection, run_id: int, cols: Columns) -> None:
    """Append the buffered columns set-wise (Arrow -> DuckDB), no per-row INSERT."""
    base = _first_response_id(con)
    con.register("new_questions", pa.table(cols.questions))
    con.register("new_chunks", pa.table(cols.chunks, schema=CHUNK_SCHEMA))
    # Streams: DuckDB reads the batches from their files one at a time.
    con.register("new_responses", cols.response_batches.reader())
    con.register("new_retrieved", cols.retrieved_batches.reader())
    try:
        con.execute(
            """INSERT INTO responses
               SELECT $base + "row", $run, question_id, provider, model, answer, answer_hash, template,
                      classification, answerable, comment, outcome, metadata::JSON, source_line,
                      retrieval_given OR $recorded
               FROM new_responses""",
            {"base": base, "run": run_id, "recorded": cols.records_retrieval and not cols.per_record_retrieval},
        )
        con.execute('INSERT INTO retrieved SELECT $base + "row", rank, chunk_key, score FROM new_retrieved',
                    {"base": base})
        con.execute(
            """INSERT INTO questions
               SELECT $run, question_id, question, expected_template, expected_routing,
                      gold_answers::JSON, expected_ids::JSON
               FROM new_questions""",
            {"run": run_id},
        )
        con.execute(
            """INSERT INTO chunks
               SELECT n.chunk_key, n.chunk_id, n.text FROM new_chunks n
               WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_key = n.chunk_key)"""
        )
        recorded = cols.recorded_table()
        if recorded.num_rows:
            _load_recorded(con, run_id, base, recorded)
        if cols.labels or cols.annotations["row"]:
            _load_annotations(con, run_id, base, cols)
    finally:
        drop_quietly(con, views=("new_questions", "new_chunks", "new_responses", "new_retrieved"))


def _load_recorded(con: duckdb.DuckDBPyConnection, run_id: int, base: int, recorded: pa.Table) -> None:
    """Recorded verdicts become an evaluation of ruleset 'recorded', like any recomputation: our
    six checks, the tool's own grades beside them, and the file's own overall verdict where it
    gives one (else, as for any evaluation, every check that is not N/A passed)."""
    evaluation_id = next_id(con, "evaluation_ids")
    n = pc.count_distinct(recorded["row"]).as_py()  # a response without any recorded verdict was not evaluated
    con.execute(
        "INSERT INTO evaluations (evaluation_id, run_id, ruleset, created_at, n_responses) "
        "VALUES ($evaluation, $run, 'recorded', now(), $n)",
        {"evaluation": evaluation_id, "run": run_id, "n": n},
    )
    con.register("new_recorded", recorded)
    try:
        # Every response with recorded verdicts gets the six checks; one the file did not record is
        # N/A, said so. Responses with none are left out rather than counted as passing. One group a
        # response, its verdicts picked by name: no join of millions of verdicts with the responses.
        names = {f"check{index}": name for index, name in enumerate(CHECK_NAMES)}
        picked = ", ".join(f"any_value(verdict) FILTER (WHERE check_name = ${key})" for key in names)
        params = {"evaluation": evaluation_id, "reason": RECORDED_REASON, "base": base}
        con.execute(
            f"""INSERT INTO check_results
                SELECT $evaluation, "row" + $base, check_name, coalesce(verdict, 'N/A'),
                       CASE WHEN verdict IS NULL THEN 'not recorded in the source file' ELSE $reason END, '[]'
                FROM (SELECT "row", unnest([{", ".join(f"${key}" for key in names)}]) AS check_name,
                             unnest([{picked}]) AS verdict
                      FROM new_recorded GROUP BY "row")""",
            {**names, **params},
        )
        con.execute(
            """INSERT INTO check_results
               SELECT $evaluation, "row" + $base, check_name, verdict, $reason, '[]' FROM new_recorded
               WHERE check_name NOT IN (SELECT unnest($ours::VARCHAR[])) ORDER BY "row" """,
            {**params, "ours": [*CHECK_NAMES, RECORDED_OVERALL]},
        )
        write_response_results(con, evaluation_id, run_id)
        con.execute(
            """UPDATE response_results SET overall = o.verdict
               FROM (SELECT "row" + $base AS response_id, verdict FROM new_recorded WHERE check_name = $overall) o
               WHERE response_results.evaluation_id = $evaluation AND response_results.response_id = o.response_id""",
            {"evaluation": evaluation_id, "base": base, "overall": RECORDED_OVERALL},
        )
    finally:
        drop_quietly(con, views=("new_recorded",))
    write_evaluation_counts(con, evaluation_id)


IMPORTED = "imported"  # annotations.source of ratings read from the run file


def _value_names(label: Label) -> str | None:
    """{value: name} of a label whose file names its values otherwise than the values themselves."""
    if label.values is None or label.value_names is None or list(label.value_names) == list(label.values):
        return None
    return dumps(dict(zip(label.values, label.value_names, strict=True)))


def _load_annotations(con: duckdb.DuckDBPyConnection, run_id: int, base: int, cols: Columns) -> None:
    """The file's labels and its annotators' ratings, set-wise like the responses."""
    labels = pa.table({
        "label": [label.label for label in cols.labels], "scale": [label.scale for label in cols.labels],
        "scale_values": [None if label.values is None else dumps(list(label.values)) for label in cols.labels],
        "description": [label.description for label in cols.labels],
        "value_names": [_value_names(label) for label in cols.labels]}, schema=LABEL_SCHEMA)
    con.register("new_labels", labels)
    con.register("new_annotations", pa.table(cols.annotations, schema=ANNOTATION_SCHEMA))
    try:
        con.execute("""INSERT INTO labels SELECT $run, label, scale, scale_values::JSON, description, value_names::JSON
                       FROM new_labels""", {"run": run_id})
        params: dict[str, object] = {"base": base, "source": IMPORTED}
        new_id = "nextval('annotation_ids')"
        if on_server(con):  # ids drawn from PostgreSQL's sequence, in the rows' order
            params["ids"] = next_ids(con, "annotation_ids", len(cols.annotations["row"]))
            new_id = '$ids[row_number() OVER (ORDER BY "row")]'
        con.execute(
            f"""INSERT INTO annotations
               SELECT {new_id}, $base + "row", annotator, label, value, value_num, reason,
                      coalesce(make_timestamp(created_us), now()::TIMESTAMP), $source, NULL
               FROM new_annotations ORDER BY "row"
            """,
            params,
        )
    finally:
        drop_quietly(con, views=("new_labels", "new_annotations"))
