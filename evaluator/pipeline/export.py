"""Export one evaluation of a run, one row per response, as JSONL, CSV or Parquet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from evaluator.core.errors import UsageError
from evaluator.core.types import CHECK_NAMES
from evaluator.pipeline.responses import load_response
from evaluator.rules.load import rules_from_text
from evaluator.store.db import arrow_reader, cursor_of, fetch_one

EXPORT_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
BATCH = 10_000

# metrics: the per-response metric values the run file carried (responses.metadata.metrics).
# refused / refused_by: the refusal decision of the run's latest `metrics` computation (the
# judge's, or a reviewer's with --with-overrides); NULL before metrics has run for the run.
ROWS_SQL = """
WITH refusals AS (
    SELECT m.response_id, max_by(m.refused, m.metric_result_id) AS refused,
           max_by(m.refused_by, m.metric_result_id) AS refused_by
    FROM metric_responses m JOIN metric_results mr ON mr.metric_result_id = m.metric_result_id
    WHERE mr.run_id = (SELECT run_id FROM evaluations WHERE evaluation_id = $evaluation)
    GROUP BY m.response_id
)
SELECT r.response_id, r.question_id, r.provider, r.template, q.expected_template, rr.overall,
       (SELECT list({'check': c.check_name, 'verdict': c.verdict, 'reason': c.reason, 'spans': c.spans})
          FROM check_results c WHERE c.evaluation_id = rr.evaluation_id AND c.response_id = r.response_id)
         AS checks,
       (SELECT list({'flag': f.flag, 'severity': f.severity, 'spans': f.spans})
          FROM flags f WHERE f.evaluation_id = $flags AND f.response_id = r.response_id) AS flags,
       j.refused, j.refused_by, CAST(json_extract(r.metadata, '$.metrics') AS VARCHAR) AS metrics
FROM response_results rr
JOIN responses r ON r.response_id = rr.response_id
JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
LEFT JOIN refusals j ON j.response_id = r.response_id
WHERE rr.evaluation_id = $evaluation
ORDER BY r.response_id
"""


def export_format(path: Path) -> str:
    fmt = EXPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: cannot export to {path.suffix!r}; use a .jsonl, .csv or .parquet file name")
    return fmt


def export_rows(con: duckdb.DuckDBPyConnection, evaluation_id: int, flags_evaluation_id: int | None
                ) -> Iterator[dict[str, Any]]:
    """Rows with spans as lists; spans are recomputed when the evaluation stored verdicts only."""
    row = fetch_one(con, "SELECT rules_text, rules_source, ruleset, profile, with_spans FROM evaluations "
                    "WHERE evaluation_id = $evaluation", {"evaluation": evaluation_id})
    assert row is not None
    rules_text, rules_source, ruleset, profile, with_spans = row
    respan = bool(rules_text) and not with_spans
    rules = rules_from_text(rules_text, rules_source) if respan else None
    cursor = cursor_of(con)
    try:
        params = {"flags": flags_evaluation_id or -1, "evaluation": evaluation_id}
        reader = arrow_reader(cursor.sql(ROWS_SQL, params=params), BATCH)
        for batch in reader:
            for record in batch.to_pylist():
                yield _flat(con, record, rules, ruleset, profile)
    finally:
        cursor.close()


def _flat(con: duckdb.DuckDBPyConnection, record: dict[str, Any], rules: Any, ruleset: str, profile: str
          ) -> dict[str, Any]:
    fresh_checks: dict[str, Any] = {}
    fresh_flags: dict[str, Any] = {}
    if rules is not None:
        from evaluator.core.evaluate import evaluate

        resp = load_response(con, record["response_id"])
        if resp is not None:
            result = evaluate(resp, ruleset=ruleset, rules=rules, profile=profile, with_spans=True)
            fresh_checks = {c.check: [_span(s) for s in c.spans] for c in result.checks}
            fresh_flags = {f.flag: [_span(s) for s in f.spans] for f in result.flags}
    out: dict[str, Any] = {k: record[k] for k in
                           ("question_id", "provider", "template", "expected_template", "overall")}
    checks = {c["check"]: c for c in record["checks"] or ()}
    for name in CHECK_NAMES:
        check = checks.get(name)
        out[name] = check["verdict"] if check else None
        out[f"{name}_reason"] = check["reason"] if check else None
        out[f"{name}_spans"] = fresh_checks.get(name) or (orjson.loads(check["spans"]) if check and check["spans"]
                                                          else [])
    out["flags"] = [
        {"flag": f["flag"], "severity": f["severity"],
         "spans": fresh_flags.get(f["flag"]) or (orjson.loads(f["spans"]) if f["spans"] else [])}
        for f in record["flags"] or ()
    ]
    out["refused"] = record["refused"]
    out["refused_by"] = record["refused_by"]
    # the source tool's own per-response scores (e.g. InspectorRAGet's algorithmic metrics), as JSON text
    out["metrics"] = record["metrics"]
    return out


def _span(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = span.as_dict()
    return out


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_safe(table: pa.Table) -> pa.Table:
    """Spreadsheets run a cell that starts with = + - @ as a formula; untrusted text must not
    (OWASP CSV injection): such cells get a leading apostrophe."""
    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            values = [f"'{v}" if isinstance(v, str) and v.startswith(FORMULA_START) else v for v in column.to_pylist()]
            column = pa.array(values, type=column.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def write_table(table: pa.Table, path: Path, fmt: str) -> None:
    """Write a table as JSONL, CSV (formula-safe) or Parquet."""
    if fmt == "jsonl":
        with path.open("wb") as out:
            for row in table.to_pylist():
                out.write(orjson.dumps(row, default=str) + b"\n")
    elif fmt == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(_csv_safe(table), path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, path)


def write_export(rows: Iterator[dict[str, Any]], path: Path, fmt: str) -> int:
    count = 0
    if fmt == "jsonl":
        with path.open("wb") as out:
            for row in rows:
                out.write(orjson.dumps(row) + b"\n")
                count += 1
        return count
    nested = [f"{name}_spans" for name in CHECK_NAMES] + ["flags"]
    table_rows = []
    for row in rows:
        table_rows.append({k: (orjson.dumps(v).decode() if k in nested else v) for k, v in row.items()})
        count += 1
    write_table(pa.Table.from_pylist(table_rows), path, fmt)
    return count
