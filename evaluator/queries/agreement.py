"""Agreement (read-only SQL): annotators vs each other, and automated checks vs the human majority.

Everything is aggregated in SQL: alpha reads value counts per response (units × values), the
confusion matrix reads one count per cell, lists read one page of responses.

Human majority for a mapped check (`check=label>=3`): each annotator's current rating votes PASS
when it meets the threshold, else FAIL; the majority of votes is the human verdict, and a tie has
none. Among the rated responses, N/A verdicts of the check are left out of the matrix and counted
(`not_applicable`), and so are PASS/FAIL verdicts the annotators tie on (`ties`). Verdicts are
the evaluation's, or effective ones (a reviewer's latest override, else computed) with
`with_overrides`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from evaluator.queries.effective import LATEST_OVERRIDES, effective_check_verdict
from evaluator.review import agreement as stats
from evaluator.review.annotations import RUN_ANNOTATIONS, current_cte, labels
from evaluator.store.db import OVER_ALL_ROWS, fetch_one, fetch_value

LABEL_ANNOTATIONS = f"{RUN_ANNOTATIONS} AND label = $label"
NUMBER = "coalesce(value_num, TRY_CAST(value AS DOUBLE))"


def latest_evaluation(con: duckdb.DuckDBPyConnection, run_id: int) -> int | None:
    value = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run", {"run": run_id})
    return None if value is None else int(value)


def evaluation_of_run(con: duckdb.DuckDBPyConnection, evaluation_id: int, run_id: int) -> bool:
    return fetch_value(con, "SELECT run_id FROM evaluations WHERE evaluation_id = $e", {"e": evaluation_id}) == run_id


def flags_raised(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> set[str]:
    """The flags the evaluation raised at least once (a judge's flag is listed only where it ran)."""
    return {str(r[0]) for r in con.execute("SELECT DISTINCT flag FROM flags WHERE evaluation_id = $evaluation_id",
                                           {"evaluation_id": evaluation_id}).fetchall()}


def check_names(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> list[str]:
    return [row[0] for row in con.execute(
        "SELECT DISTINCT check_name FROM check_results WHERE evaluation_id = $e ORDER BY check_name",
        {"e": evaluation_id}).fetchall()]


def _numeric_scale(definition: dict[str, Any]) -> bool:
    if definition["scale"] == "numeric":
        return True
    return definition["scale"] == "ordinal" and stats.numeric_values(definition["values"]) is not None


# --- annotators vs each other -------------------------------------------------------------------

def label_alpha(con: duckdb.DuckDBPyConnection, run_id: int, definition: dict[str, Any]) -> dict[str, Any]:
    """{label, scale, annotators, rated, units, alpha: {nominal, ordinal, interval}, why: {level: reason}}.

    `units` are the responses rated by two or more annotators (the only ones alpha can pair),
    `rated` those with any rating. A level is None when the scale does not allow it or alpha is
    undefined there; `why` says which."""
    params = {"run": run_id, "label": definition["label"]}
    counts = fetch_one(con, f"""WITH {current_cte(LABEL_ANNOTATIONS)}
        SELECT count(DISTINCT annotator), count(DISTINCT response_id),
               count(*) FILTER (WHERE {NUMBER} IS NULL) FROM current_annotations""", params) or (0, 0, 0)
    annotators, rated, not_numbers = (int(c or 0) for c in counts)
    cells = con.execute(f"""WITH {current_cte(LABEL_ANNOTATIONS)},
        units AS (SELECT response_id FROM current_annotations GROUP BY response_id HAVING count(*) >= 2)
        SELECT dense_rank() OVER (ORDER BY response_id) - 1 AS unit, value, {NUMBER} AS num, count(*) AS n
        FROM current_annotations SEMI JOIN units USING (response_id)
        GROUP BY response_id, value, num""", params).fetchnumpy()
    units = int(cells["unit"].max()) + 1 if len(cells["unit"]) else 0
    why = stats.levels_for(definition["scale"], _numeric_scale(definition) and not_numbers == 0)
    alphas: dict[str, float | None] = dict.fromkeys(stats.LEVELS)
    if annotators < 2:
        why = {level: reason or "only one annotator rated this label" for level, reason in why.items()}
    for level in stats.LEVELS:
        if why[level] is not None:
            continue
        codes = _codes(definition, level, cells)
        domain, column = np.unique(codes, return_inverse=True)
        matrix = np.zeros((units, len(domain)))
        np.add.at(matrix, (cells["unit"].astype(int), column), cells["n"].astype(float))
        try:
            alphas[level] = stats.alpha(matrix, domain.tolist(), level)
        except stats.AgreementError as exc:
            why[level] = str(exc)
    return {"label": definition["label"], "scale": definition["scale"], "annotators": annotators, "rated": rated,
            "units": units, "alpha": alphas, "why": why}


def _codes(definition: dict[str, Any], level: str, cells: dict[str, Any]) -> np.ndarray:
    """Each cell's value as a number: its rank on the scale (nominal: any distinct code; ordinal:
    the scale's order, or the number on a numeric scale), or its number for interval."""
    values = [str(v) for v in cells["value"]]
    if level == "interval" or (level == "ordinal" and _numeric_scale(definition)):
        return np.asarray(cells["num"], dtype=float)
    order = {v: i for i, v in enumerate(definition["values"] or sorted(set(values)))}
    extra = {v: len(order) + i for i, v in enumerate(sorted(set(values) - set(order)))}
    return np.asarray([order.get(v, extra.get(v)) for v in values], dtype=float)


def disagreed_page(con: duckdb.DuckDBPyConnection, run_id: int, definition: dict[str, Any], *, limit: int,
                   offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
    """(total, one page) of the responses whose annotators disagree most on a label: the widest
    spread of ratings first (max − min on an ordered scale), then the most distinct values."""
    score = _score_sql(definition)
    rows = con.execute(f"""WITH {current_cte(LABEL_ANNOTATIONS)},
        per AS (SELECT response_id, count(*) AS ratings, count(DISTINCT value) AS distinct_values,
                       max({score}) - min({score}) AS spread
                FROM current_annotations GROUP BY response_id
                HAVING count(*) >= 2 AND count(DISTINCT value) > 1)
        SELECT p.response_id, r.question_id, r.provider, p.ratings, p.distinct_values, p.spread,
               count(*) {OVER_ALL_ROWS} AS total
        FROM per p JOIN responses r USING (response_id)
        ORDER BY p.spread DESC NULLS LAST, p.distinct_values DESC, p.response_id
        LIMIT $limit OFFSET $offset""",
        {"run": run_id, "label": definition["label"], "limit": limit, "offset": offset,
         **({"values": definition["values"]} if "$values" in score else {})}).fetchall()
    columns = ["response_id", "question_id", "provider", "ratings", "distinct_values", "spread"]
    total = int(rows[0][-1]) if rows else 0
    return total, [dict(zip(columns, row[:-1], strict=True)) for row in rows]


def _score_sql(definition: dict[str, Any]) -> str:
    """SQL for a rating's place on the label's scale (NULL when the scale has no order)."""
    if _numeric_scale(definition):
        return NUMBER
    if definition["scale"] == "ordinal":
        return "list_position($values::VARCHAR[], value)"
    return "NULL::DOUBLE"


# --- the evaluator vs the humans ----------------------------------------------------------------

@dataclass(frozen=True)
class HumanVerdict:
    """SQL of an annotator's vote (PASS = true) for a mapping, with its parameters."""

    mapping: stats.Mapping
    sql: str
    params: dict[str, Any]


def human_verdict(definition: dict[str, Any], mapping: stats.Mapping) -> HumanVerdict:
    """How a mapping's threshold reads on its label's scale; AgreementError when it cannot."""
    where = f"--check {mapping}"
    op, threshold, scale = mapping.operator, mapping.threshold, definition["scale"]
    if scale == "text":
        raise stats.AgreementError(f"{where}: {mapping.label!r} is free text; map a label with a scale")
    if scale == "nominal":
        if op != "==":
            raise stats.AgreementError(f"{where}: {mapping.label!r} is nominal (no order); use {mapping.check}="
                                       f"{mapping.label}=VALUE")
        if threshold not in definition["values"]:
            raise stats.AgreementError(f"{where}: {threshold!r} is not a value of {mapping.label!r} "
                                       f"({', '.join(definition['values'])})")
        return HumanVerdict(mapping, "value = $threshold", {"threshold": threshold})
    number = stats.numeric_values([threshold])
    if _numeric_scale(definition):
        if number is None:
            raise stats.AgreementError(f"{where}: {mapping.label!r} is rated in numbers; give a number, "
                                       f"not {threshold!r}")
        return HumanVerdict(mapping, f"{NUMBER} {op} $threshold", {"threshold": number[0]})
    if threshold not in definition["values"]:
        raise stats.AgreementError(f"{where}: {threshold!r} is not a value of {mapping.label!r} "
                                   f"({', '.join(definition['values'])})")
    return HumanVerdict(mapping, f"list_position($values::VARCHAR[], value) {op} $threshold",
                        {"threshold": definition["values"].index(threshold) + 1, "values": definition["values"]})


def _verdicts_sql(human: HumanVerdict, with_overrides: bool) -> str:
    """CTEs `human(response_id, human)` and `paired(response_id, verdict, human)`."""
    verdict = effective_check_verdict() if with_overrides else "c.verdict"
    overrides = (f"{LATEST_OVERRIDES}," if with_overrides else "")
    join = ("LEFT JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.check_name"
            if with_overrides else "")
    return f"""{overrides} {current_cte(LABEL_ANNOTATIONS)},
        votes AS (SELECT response_id, count(*) FILTER (WHERE vote) AS yes, count(*) FILTER (WHERE NOT vote) AS no
                  FROM (SELECT response_id, ({human.sql}) AS vote FROM current_annotations)
                  WHERE vote IS NOT NULL GROUP BY response_id),
        human AS (SELECT response_id, CASE WHEN yes > no THEN 'PASS' WHEN no > yes THEN 'FAIL' END AS human
                  FROM votes),
        paired AS (SELECT h.response_id, {verdict} AS verdict, h.human
                   FROM human h JOIN check_results c ON c.response_id = h.response_id
                   {join}
                   WHERE c.evaluation_id = $evaluation AND c.check_name = $check)"""


def _params(human: HumanVerdict, run_id: int, evaluation_id: int) -> dict[str, Any]:
    return {"run": run_id, "label": human.mapping.label, "check": human.mapping.check,
            "evaluation": evaluation_id, **human.params}


def check_agreement(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int, human: HumanVerdict, *,
                    with_overrides: bool = False) -> dict[str, Any]:
    """{check, label, rule, confusion (stats.Confusion), caveats (why the figures may say little: a
    near-constant label, a label of another kind than the check), not_applicable, ties}."""
    rows = con.execute(f"""WITH {_verdicts_sql(human, with_overrides)}
        SELECT verdict, human, count(*) FROM paired GROUP BY ALL""",
        _params(human, run_id, evaluation_id)).fetchall()
    cells = {(verdict, person): int(n) for verdict, person, n in rows}
    confusion = stats.Confusion(*(cells.get((c, h), 0) for c in stats.VERDICTS for h in stats.VERDICTS))
    values = con.execute(f"""WITH {_verdicts_sql(human, with_overrides)}
        SELECT value, count(*) FROM current_annotations GROUP BY value""",
        _params(human, run_id, evaluation_id)).fetchall()
    caveats = [text for text in (stats.near_constant(human.mapping.label, [(str(v), int(n)) for v, n in values]),
                                 stats.kind_mismatch(human.mapping.check, human.mapping.label)) if text]
    return {"check": human.mapping.check, "label": human.mapping.label, "rule": str(human.mapping),
            "confusion": confusion, "caveats": caveats,
            "not_applicable": sum(n for (verdict, _), n in cells.items() if verdict not in stats.VERDICTS),
            "ties": sum(n for (verdict, person), n in cells.items() if verdict in stats.VERDICTS and person is None)}


def cell_page(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int, human: HumanVerdict, verdict: str,
              person: str, *, with_overrides: bool = False, limit: int, offset: int = 0
              ) -> tuple[int, list[dict[str, Any]]]:
    """(total, one page) of the responses behind one cell: the check said `verdict`, the humans `person`."""
    rows = con.execute(f"""WITH {_verdicts_sql(human, with_overrides)}
        SELECT p.response_id, r.question_id, r.provider, count(*) {OVER_ALL_ROWS} AS total
        FROM paired p JOIN responses r USING (response_id)
        WHERE p.verdict = $verdict AND p.human = $person
        ORDER BY r.question_id, r.provider, p.response_id
        LIMIT $limit OFFSET $offset""",
        {**_params(human, run_id, evaluation_id), "verdict": verdict, "person": person, "limit": limit,
         "offset": offset}).fetchall()
    total = int(rows[0][-1]) if rows else 0
    return total, [{"response_id": r[0], "question_id": r[1], "provider": r[2]} for r in rows]


def mappings(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int | None, given: list[str]
             ) -> list[HumanVerdict]:
    """The user's `--check` mappings, else the defaults for the run's labels (agreement.DEFAULT_CHECKS).
    AgreementError for a bad form, an unknown label or a check the evaluation does not have."""
    definitions = {d["label"]: d for d in labels(con, run_id)}
    if given:
        parsed = [stats.parse_mapping(text) for text in given]
    else:
        parsed = [m for d in definitions.values() if (m := stats.default_mapping(d["label"], d["scale"], d["values"]))]
    checks = set(check_names(con, evaluation_id)) if evaluation_id is not None else set()
    out = []
    for mapping in parsed:
        if mapping.label not in definitions:
            raise stats.AgreementError(f"--check {mapping}: this run defines no label {mapping.label!r} "
                                       f"(labels: {', '.join(definitions) or 'none'})")
        if given and evaluation_id is not None and mapping.check not in checks:
            raise stats.AgreementError(f"--check {mapping}: evaluation {evaluation_id} has no check "
                                       f"{mapping.check!r} (checks: {', '.join(sorted(checks)) or 'none'})")
        if mapping.check in checks or given:
            out.append(human_verdict(definitions[mapping.label], mapping))
    return out


# --- what the page lists ------------------------------------------------------------------------

def run_id(con: duckdb.DuckDBPyConnection, run_name: str) -> int | None:
    value = fetch_value(con, "SELECT run_id FROM runs WHERE name = $name", {"name": run_name})
    return None if value is None else int(value)


def run_labels(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict[str, Any]]:
    return labels(con, run_id)


def evaluations(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict[str, Any]]:
    """The run's evaluations, newest first: {evaluation_id, ruleset, created_at}."""
    rows = con.execute("SELECT evaluation_id, ruleset, created_at FROM evaluations WHERE run_id = $run "
                       "ORDER BY evaluation_id DESC", {"run": run_id}).fetchall()
    return [{"evaluation_id": int(e), "ruleset": r, "created_at": c} for e, r, c in rows]


def ratings(con: duckdb.DuckDBPyConnection, response_ids: list[int], label: str) -> dict[int, list[dict[str, Any]]]:
    """Current ratings of one label for a page of responses: {response_id: [{annotator, value, reason}]}."""
    rows = con.execute(f"""WITH {current_cte("list_contains($ids, response_id) AND label = $label")}
        SELECT response_id, annotator, value, reason FROM current_annotations
        ORDER BY response_id, annotator""", {"ids": response_ids, "label": label}).fetchall()
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    for response_id, annotator, value, reason in rows:
        out[int(response_id)].append({"annotator": annotator, "value": value, "reason": reason})
    return out


def response_names(con: duckdb.DuckDBPyConnection, response_ids: list[int], *, limit: int
                   ) -> list[tuple[int, str, str]]:
    """(response_id, question_id, provider) of the first ``limit`` of the given responses, by id."""
    return [(int(r), str(qid), str(p)) for r, qid, p in con.execute(
        "SELECT response_id, question_id, provider FROM responses WHERE list_contains($ids, response_id) "
        "ORDER BY response_id LIMIT $limit", {"ids": list(response_ids), "limit": limit}).fetchall()]
