"""The Rule lab's computation (issue 16 §3): an edited rule set and its before/after on a run.

An edit is a set of form fields (each a key path in the rules TOML) plus an optional TOML text
merged on top, like a user's ``--rules`` file (``rules_merge``). ``edit`` validates the result
with the rules' own reader and names the field an error belongs to. ``preview`` evaluates every
response of the run inside DuckDB (the SQL engine, evaluator.pipeline.sql; verdicts only) under the base
and the edited rules and compares them; both are cached by (run, rules hash), the run's rows by
its content.
Nothing here writes to the store.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import tomllib
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from evaluator.core.registry import CHECK, FLAG, check_entries
from evaluator.core.types import CHECK_NAMES
from evaluator.pipeline.sql.compile import allowlist_pieces, narrow_difference
from evaluator.pipeline.sql.engine import evaluate_verdicts
from evaluator.pipeline.sql.re2 import CLEAN_SQL, re2_compiles
from evaluator.rules import merge as rules_merge
from evaluator.rules.load import Rules, rules_from_text
from evaluator.store.db import cursor_of
from evaluator.store.results import TEMPLATE_GROUP_SQL

if TYPE_CHECKING:
    import duckdb

LAB_SOURCE = "rule lab"
TOML_FIELD = "toml"  # the key of the free TOML text's errors
LINES, TEXT, NUMBER, CHECKS = "lines", "text", "number", "checks"


@dataclass(frozen=True)
class Field:
    """One form field of the lab: a value at ``path`` in the rules TOML."""

    key: str
    path: tuple[str, ...]
    label: str
    kind: str
    help: str = ""

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def fields(profile: str) -> tuple[Field, ...]:
    """The lab's form fields for a run of this profile."""
    prof = ("profiles", profile)
    return (
        Field("citation_pattern", (*prof, "citation_pattern"), "Citation pattern", TEXT,
              "Regex of an inline citation; its group named id is compared with the retrieved ids. "
              "Empty: no citations."),
        Field("refusal_patterns", ("answers", "refusal_patterns"), "Refusal patterns", LINES,
              "One regex a line, case-insensitive: a refusal (SPEC §4)."),
        Field("redirect_patterns", ("answers", "redirect_patterns"), "Redirect patterns", LINES,
              "One regex a line: a T3 answer must refuse and redirect."),
        Field("abstention_patterns", ("abstention", "patterns"), "Abstention patterns", LINES,
              "One regex a line: how RAG bots say they cannot answer from their documents."),
        Field("refusal_phrases", ("flags", FLAG.refusal_detected, "phrases"),
              f"Refusal phrases ({FLAG.refusal_detected})", LINES, "One literal phrase a line, case-insensitive."),
        Field("profile_refusal_phrases", (*prof, "refusal_phrases"), "This bot's refusal phrases", LINES,
              "One literal phrase a line: this bot's own ways of refusing."),
        Field("min_score", ("retrieval", "min_score"), "Retrieval threshold", NUMBER,
              f"An item must score at least this ({CHECK.retrieval_check}, {FLAG.no_context_warning})."),
        Field("allowlist", (*prof, "allowlist"), "Allowlist (proper nouns never flagged)", LINES,
              "One name a line, exact, case-insensitive."),
        Field("interpretation_markers", (*prof, "interpretation_markers"), "Interpretation markers", LINES,
              "One phrase a line: a T2 answer interprets."),
        Field("checks", (*prof, "checks"), "Checks this profile applies", CHECKS),
    )


class FieldError(ValueError):
    """What is wrong with an edit, and the field (``Field.key`` or ``TOML_FIELD``) it was typed in."""

    def __init__(self, field_key: str, message: str) -> None:
        super().__init__(message)
        self.field = field_key
        self.message = message


_MISSING = object()


def _get(data: dict[str, Any], path: Sequence[str]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _set(data: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    data[path[-1]] = value


def form_values(rules: Rules, profile: str) -> dict[str, Any]:
    """The fields' values under ``rules``, as the form shows them (lists as one item a line).
    A list holding pattern tables (case-sensitive patterns) is left to the TOML text: absent."""
    data = tomllib.loads(rules.text)
    out: dict[str, Any] = {}
    for f in fields(profile):
        value = _get(data, f.path)
        if f.kind == LINES:
            value = [] if value is _MISSING else value
            if all(isinstance(v, str) for v in value):
                out[f.key] = "\n".join(value)
        elif f.kind == CHECKS:
            out[f.key] = list(value) if value is not _MISSING else []
        elif f.kind == NUMBER:
            out[f.key] = float(value)
        elif value is not _MISSING:
            out[f.key] = value
    return out


def _parse(f: Field, value: Any) -> tuple[Any, list[int]]:
    """A field's form value as TOML data, and (lists) each item's line number in the field."""
    if f.kind == LINES:
        lines = str(value).replace("\r\n", "\n").split("\n")
        kept = [(n, line.strip() if f.key.endswith(("phrases", "allowlist", "markers")) else line.rstrip("\r"))
                for n, line in enumerate(lines, 1) if line.strip()]
        return [line for _, line in kept], [n for n, _ in kept]
    if f.kind == CHECKS:
        return [c for c in CHECK_NAMES if c in value], []
    if f.kind == NUMBER:
        return float(value), []
    return str(value), []


@dataclass(frozen=True)
class Edit:
    """The edited rules, and their data (the merged TOML as a dict) for saving."""

    rules: Rules
    data: dict[str, Any] = field(repr=False)

    def text_as(self, name: str, base_ruleset: str) -> str:
        """The complete rules text that defines rule set ``name`` as the edited ``base_ruleset``."""
        data = copy.deepcopy(self.data)
        data["rulesets"][name] = copy.deepcopy(data["rulesets"][base_ruleset])
        return rules_merge.to_toml(data, f"rule set {name}: {base_ruleset} edited in the rule lab")


def edit(base: Rules, profile: str, values: dict[str, Any], override_text: str = "") -> Edit:
    """``base`` with the form's ``values`` (only the fields that changed) and ``override_text`` (TOML,
    merged on top like a ``--rules`` file). FieldError names the field of the first error."""
    data = tomllib.loads(base.text)
    lines_of: dict[str, list[int]] = {}
    overlay: dict[str, Any] = {}
    form = fields(profile)
    for f in form:
        if f.key not in values:
            continue
        try:
            new, lines_of[f.key] = _parse(f, values[f.key])
        except (TypeError, ValueError):
            raise FieldError(f.key, f"{f.label}: expected a {f.kind}") from None
        old = _get(data, f.path)
        if old is _MISSING and new in ([], "") or new == old:
            continue
        _set(overlay, f.path, new)
    merged = rules_merge.merge(data, overlay)
    user: dict[str, Any] = {}
    if override_text.strip():
        try:
            user = tomllib.loads(override_text)
        except tomllib.TOMLDecodeError as exc:
            raise FieldError(TOML_FIELD, f"invalid TOML: {exc}") from None
        merged = rules_merge.merge(merged, user)
    try:
        text = rules_merge.to_toml(merged, f"{base.source} edited in the rule lab")
        rules = rules_from_text(text, LAB_SOURCE)
    except (TypeError, ValueError) as exc:
        raise _attributed(str(exc), form, lines_of, user) from None
    if profile not in rules.profile_names:
        raise FieldError(TOML_FIELD, f"the rules no longer define profile {profile!r}")
    return Edit(rules, merged)


_KEY_ERROR = re.compile(r"key '(?P<key>[^']*)': (?P<what>.*)", re.DOTALL)
_INDEX = re.compile(r"\[(\d+)\]")


def _within(key: str, path: str) -> bool:
    return key == path or key.startswith((path + "[", path + "."))


def _paths(data: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in data.items():
        p = f"{prefix}.{k}" if prefix else str(k)
        out.extend(_paths(v, p) if isinstance(v, dict) and v else [p])
    return out


def _attributed(message: str, form: Sequence[Field], lines_of: dict[str, list[int]],
                user: dict[str, Any]) -> FieldError:
    """The rules reader's error, given to the field where the bad value was typed."""
    found = _KEY_ERROR.search(message)
    if found is None:
        return FieldError(TOML_FIELD, message)
    key, what = found["key"], found["what"]
    if any(_within(key, p) for p in _paths(user)):
        return FieldError(TOML_FIELD, f"key '{key}': {what}")
    for f in form:
        if _within(key, f.dotted):
            index = _INDEX.match(key[len(f.dotted):])
            lines = lines_of.get(f.key, [])
            where = f"line {lines[int(index[1])]}: " if index and int(index[1]) < len(lines) else ""
            return FieldError(f.key, f"{where}{what}")
    return FieldError(TOML_FIELD, f"key '{key}': {what}")


# --- the run's rows, read once per run content --------------------------------------------------

# What the before/after shows of each response, in one query; the evaluation itself runs in
# DuckDB (evaluator.pipeline.sql), so no response is loaded into Python here. The group is the one the
# stored evaluations record (results.TEMPLATE_GROUP_SQL).
RUN_SQL = f"""
SELECT r.response_id, r.question_id, r.provider, {TEMPLATE_GROUP_SQL} AS template_group
FROM responses r
JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
WHERE r.run_id = $run
ORDER BY r.response_id
"""


@dataclass(frozen=True)
class RunRows:
    run_id: int
    ids: list[int]
    question_ids: list[str]
    providers: list[str]
    groups: list[str]
    unclean: frozenset[int]  # the responses whose answer is not clean ASCII (UNCLEAN_SQL): evaluated again on each edit


def read_run(con: duckdb.DuckDBPyConnection, run_id: int) -> RunRows:
    """Every response of the run: its id, question, provider and template group, and which
    answers are not clean ASCII."""
    t = con.sql(RUN_SQL, params={"run": run_id}).to_arrow_table()
    return RunRows(run_id, t.column("response_id").to_pylist(), t.column("question_id").to_pylist(),
                   t.column("provider").to_pylist(), t.column("template_group").to_pylist(), unclean_ids(con, run_id))


# The run's responses whose answer is not clean ASCII (evaluator.pipeline.sql.re2 CLEAN_SQL): a changed
# pattern or name may match them unlike RE2 on the stored answer (Python matches curly quotes as
# straight ones), so an edit of patterns or names evaluates them all again.
UNCLEAN_SQL = f"SELECT response_id FROM responses WHERE run_id = $run AND NOT {CLEAN_SQL.format(x='answer')}"


def unclean_ids(con: duckdb.DuckDBPyConnection, run_id: int) -> frozenset[int]:
    """The run's responses whose answer is not clean ASCII."""
    return frozenset(r[0] for r in con.execute(UNCLEAN_SQL, {"run": run_id}).fetchall())


# --- verdicts and their comparison --------------------------------------------------------------


@dataclass(frozen=True)
class Verdicts:
    """One evaluation of every response of a run: PASS/FAIL overall and the six checks' verdicts."""

    passed: list[bool]
    checks: list[tuple[str, ...]]
    seconds: float


def _evaluated(con: duckdb.DuckDBPyConnection, run_id: int, rules: Rules, ruleset: str, profile: str,
               only: list[int] | None = None,
               checks: frozenset[str] | None = None) -> tuple[list[int], list[tuple[str | None, ...]]]:
    """Ids and the checks' verdicts of the run's responses (``only``: just these) under ``rules``,
    in id order, decided by the SQL engine (Python decides the rows SQL cannot). ``checks``: SQL
    evaluates only these (None in the others' places)."""
    got = evaluate_verdicts(con, run_id, ruleset=ruleset, rules=rules, profile=profile, only=only,
                            checks=checks)
    ids = sorted(got)
    return ids, [got[i] for i in ids]


def passes(verdicts: Sequence[str]) -> bool:
    """A response's overall verdict from its checks' (as evaluate._evaluate): PASS unless one FAILs."""
    return "FAIL" not in verdicts


def evaluate_rows(con: duckdb.DuckDBPyConnection, rows: RunRows, rules: Rules, ruleset: str,
                  profile: str) -> Verdicts:
    """The run's verdicts under ``rules``, decided in DuckDB by the SQL engine (the Python
    reference decides the rows SQL cannot; evaluator.pipeline.sql.engine). Reads the store, writes nothing."""
    started = time.perf_counter()
    ids, got = _evaluated(con, rows.run_id, rules, ruleset, profile)
    if ids != rows.ids:
        raise RuntimeError(f"run {rows.run_id} changed while it was being evaluated: reload the page")
    checks = [cast("tuple[str, ...]", v) for v in got]  # every check evaluated: no None
    return Verdicts([passes(v) for v in checks], checks, time.perf_counter() - started)


def affected_checks(keys: frozenset[str]) -> frozenset[str]:
    """The checks whose verdicts a change of these rule keys can change: those whose registered
    ``reads`` name one of them, and any that declares no ``reads`` (nothing says what it reads)."""
    return frozenset(e.name for e in check_entries() if not e.reads or keys & set(e.reads))


@dataclass(frozen=True)
class Changes:
    """What an edit changes of a run (``edit_changes``): the responses it can change, evaluated again."""

    ids: list[int]  # in id order
    verdicts: list[tuple[str | None, ...]]  # theirs; None: a check the edit cannot change (it keeps its verdict)
    seconds: float
    checks: frozenset[str] = frozenset()  # the checks evaluated again (affected_checks)
    unclean_pending: bool = False  # the answers that are not clean ASCII can change too, and are not in yet


def edit_changes(con: duckdb.DuckDBPyConnection, run_id: int, base: Rules, edited: Rules, ruleset: str,
                 profile: str, unclean: Collection[int] | None,
                 on_candidates: Callable[[tuple[list[int], frozenset[str], bool]], None] | None = None
                 ) -> Changes | None:
    """The responses of run ``run_id`` whose verdicts ``edited`` can change from those under
    ``base``, evaluated again under ``edited`` (only the checks that can change), or None when the
    edit is not one whose effect is confined (evaluate everything then): see ``reevaluate_rows``.
    ``unclean``: the run's responses whose answer is not clean ASCII (RunRows.unclean), which an
    edit of patterns or names can change; None: not known yet (they are left out, and the result
    says so: ``unclean_pending``; ``evaluate_changes`` and ``merge_changes`` add them), so that
    this needs neither the run's rows nor the base's verdicts and can run beside their reading.
    ``on_candidates((ids, checks, left_out))`` is told the responses it is about to evaluate
    again (those it returns), the checks, and whether the answers that are not clean ASCII are
    left out (``unclean_pending``), before it evaluates them."""

    started = time.perf_counter()
    narrow = narrow_difference(base, edited, profile)
    if narrow is None or (narrow.patterns and not re2_compiles(con, narrow.patterns)):
        return None
    pieces = allowlist_pieces(narrow.allowlist)
    if pieces is None:
        return None
    params: dict[str, object] = {"run": run_id}
    can_change = ["false"]
    columns = "response_id, answer"
    # Python decides an answer that is not clean ASCII, where a pattern or name may match unlike in SQL.
    with_unclean = bool(narrow.patterns or narrow.allowlist)
    if narrow.patterns:
        can_change.append("regexp_matches(coalesce(answer, ''), $changed)")
        params["changed"] = narrow.patterns
    if pieces:
        columns += ", lower(coalesce(answer, '')) AS low"
        can_change.append("len(list_filter($names, lambda ps: list_bool_and(list_transform(ps, "
                          "lambda p: contains(low, p))))) > 0")
        params["names"] = pieces
    if narrow.thresholds is not None:
        # The threshold decides verdicts only through whether any scored item scores at least it
        # (retrieval_check; a NaN score never does): only a best score between the two counts.
        can_change.append("response_id IN (SELECT response_id FROM retrieved WHERE NOT isnan(score) "
                          "GROUP BY response_id HAVING (max(score) >= $before_score) <> (max(score) >= $after_score))")
        params["before_score"], params["after_score"] = narrow.thresholds
    affected = affected_checks(narrow.keys)
    if not affected:
        if on_candidates is not None:
            on_candidates(([], affected, False))
        return Changes([], [], time.perf_counter() - started)
    found = {r[0] for r in con.execute(
        f"""SELECT response_id FROM (SELECT {columns} FROM responses WHERE run_id = $run)
            WHERE {' OR '.join(can_change)}""", params).fetchall()}
    candidates = sorted(found | set(unclean or ()) if with_unclean else found)
    if on_candidates is not None:
        on_candidates((candidates, affected, with_unclean and unclean is None))
    changes = evaluate_changes(con, run_id, edited, ruleset, profile, candidates, affected)
    return replace(changes, seconds=time.perf_counter() - started, unclean_pending=with_unclean and unclean is None)


def evaluate_changes(con: duckdb.DuckDBPyConnection, run_id: int, edited: Rules, ruleset: str, profile: str,
                     ids: list[int], checks: frozenset[str]) -> Changes:
    """Responses ``ids`` (sorted) of the run evaluated again under ``edited``: just ``checks``."""
    started = time.perf_counter()
    if not ids:
        return Changes([], [], 0.0, checks)
    got, now = _evaluated(con, run_id, edited, ruleset, profile, only=ids, checks=checks)
    if got != ids:
        raise RuntimeError(f"run {run_id} changed while it was being evaluated: reload the page")
    return Changes(ids, now, time.perf_counter() - started, checks)


def apply_changes(rows: RunRows, before: Verdicts, changes: Changes) -> Verdicts:
    """``before`` with ``changes`` applied: the run's verdicts under the edited rules."""
    if changes.unclean_pending:
        raise ValueError("the answers that are not clean ASCII are not evaluated yet: merge_changes first")
    passed, checks = list(before.passed), list(before.checks)
    at = {rid: i for i, rid in enumerate(rows.ids)}
    if any(rid not in at for rid in changes.ids):
        raise RuntimeError(f"run {rows.run_id} changed while it was being evaluated: reload the page")
    merged: dict[tuple[tuple[str, ...], tuple[str | None, ...]], tuple[str, ...]] = {}  # few distinct
    for rid, verdicts in zip(changes.ids, changes.verdicts, strict=True):
        i = at[rid]
        key = (checks[i], verdicts)
        got = merged.get(key)
        if got is None:
            got = merged[key] = tuple(b if v is None else v for b, v in zip(checks[i], verdicts, strict=True))
        passed[i], checks[i] = passes(got), got
    return Verdicts(passed, checks, before.seconds + changes.seconds)


def reevaluate_rows(con: duckdb.DuckDBPyConnection, rows: RunRows, base: Rules, before: Verdicts, edited: Rules,
                    ruleset: str, profile: str) -> Verdicts:
    """The run's verdicts under ``edited``, given ``before``, its verdicts under ``base``: when the
    edit only adds or removes patterns of lists each tested as one match over the answer (refusal,
    redirect, substantive, abstention, phrases, markers), changes the retrieval threshold and adds
    or removes names of the profile's allowlist, only the responses where a changed pattern matches
    or whose answer holds a changed name (every piece of it, case-insensitively), or whose answer
    is not plain ASCII (where Python decides), or whose best-scoring retrieved item scores between
    the two thresholds can change, and only those are evaluated again
    (evaluator.pipeline.sql.compile.narrow_difference, allowlist_pieces); any other edit evaluates every
    response. The preview thus shows what the edit changes: when ``before`` was read from a stored
    evaluation, the other responses keep its verdicts."""
    changes = edit_changes(con, rows.run_id, base, edited, ruleset, profile, rows.unclean)
    if changes is None:
        return evaluate_rows(con, rows, edited, ruleset, profile)
    return apply_changes(rows, before, changes)


class _Cache:
    """A small thread-safe LRU (pages of several sessions share it): key -> value."""

    def __init__(self, size: int) -> None:
        self.size, self.items, self.lock = size, OrderedDict[Any, Any](), threading.Lock()

    def peek(self, key: Any) -> Any:
        """The value kept for ``key``, None when there is none."""
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


_ROWS = _Cache(2)
_VERDICTS = _Cache(16)


def cached_rows(run_key: tuple[Any, ...], load: Callable[[], RunRows]) -> RunRows:
    """The run's rows, read once per ``run_key`` (e.g. store path, run id, content hash)."""
    rows: RunRows = _ROWS.get(run_key, load)
    return rows


def cached_verdicts(con: duckdb.DuckDBPyConnection, run_key: tuple[Any, ...], rows: RunRows, rules: Rules,
                    ruleset: str, profile: str, *, base: tuple[Rules, Verdicts] | None = None) -> Verdicts:
    """The run's verdicts under these rules, computed once per (run, rules hash, rule set, profile);
    with ``base`` (rules and their verdicts on this run), re-evaluating only what an edit of
    pattern lists, the threshold or the allowlist can change (``reevaluate_rows``)."""
    def make() -> Verdicts:
        if base is None:
            return evaluate_rows(con, rows, rules, ruleset, profile)
        return reevaluate_rows(con, rows, base[0], base[1], rules, ruleset, profile)

    verdicts: Verdicts = _VERDICTS.get((run_key, rules.hash, ruleset, profile), make)
    return verdicts


class Flip(NamedTuple):  # a tuple: a preview may make 100k of them (a frozen dataclass is 10x slower to make)
    response_id: int
    question_id: str
    provider: str
    template: str
    before: str
    after: str
    changes: tuple[tuple[str, str, str], ...]  # (check, before, after) for each check that changed


@dataclass(frozen=True)
class Group:
    template: str
    provider: str
    n: int
    passed_before: int
    passed_after: int


@dataclass(frozen=True)
class Preview:
    n: int
    passed_before: int
    passed_after: int
    groups: list[Group]
    flips: list[Flip]
    check_changes: dict[str, int]  # check -> responses whose verdict of it changed


def _diff(names: tuple[str, ...], before: tuple[str, ...], after: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(check, before, after) for each check whose verdict differs."""
    return tuple([(name, b, a) for name, b, a in zip(names, before, after, strict=True) if b != a])


def compare(rows: RunRows, before: Verdicts, after: Verdicts) -> Preview:
    """Pass rates per template and provider under both, and the responses whose verdict flipped."""
    names = tuple(CHECK_NAMES)  # a view over the registry: read once, not once per response
    # Counted whole (C speed); only the responses whose checks changed are looked at one by one.
    tally = Counter(zip(rows.groups, rows.providers, before.passed, after.passed, strict=True))
    counts: dict[tuple[str, str], list[int]] = {}
    for (group, provider, pb, pa), k in tally.items():
        c = counts.setdefault((group, provider), [0, 0, 0])
        c[0] += k
        c[1] += k * pb
        c[2] += k * pa
    flips: list[Flip] = []
    # A run has few distinct (before, after) verdict tuples: each one's difference is worked out once.
    diffs: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[tuple[str, str, str], ...]] = {}
    pairs: Counter[tuple[tuple[str, ...], tuple[str, ...]]] = Counter()
    for i, (cb, ca) in enumerate(zip(before.checks, after.checks, strict=True)):
        if cb == ca:
            continue
        pairs[(cb, ca)] += 1
        pb, pa = before.passed[i], after.passed[i]
        if pb != pa:
            diff = diffs.get((cb, ca))
            if diff is None:
                diff = diffs[(cb, ca)] = _diff(names, cb, ca)
            flips.append(Flip(rows.ids[i], rows.question_ids[i], rows.providers[i], rows.groups[i],
                              "PASS" if pb else "FAIL", "PASS" if pa else "FAIL", diff))
    changed = dict.fromkeys(names, 0)
    for (cb, ca), k in pairs.items():
        for name, _, _ in diffs.get((cb, ca)) or _diff(names, cb, ca):
            changed[name] += k
    groups = [Group(t, p, n, b, a) for (t, p), (n, b, a) in sorted(counts.items(), key=lambda kv: kv[0])]
    return Preview(len(rows.ids), sum(before.passed), sum(after.passed), groups, flips, changed)


# --- the base as stored: an evaluation under the same rules is read, not recomputed -------------

def _stored_sql(only: str | None = None) -> str:
    """A stored evaluation's rows, one per response in id order (``only``: just the responses of
    this temporary table): what a flip shows of it, PASS, how many check results it has, and one
    column per check (NULL where it has no result for it), pivoted with one filtered aggregate per
    check (their names bound as $check_<i>)."""
    columns = "".join(f", any_value(c.verdict) FILTER (WHERE c.check_name = $check_{i}) AS \"{i}\""
                      for i in range(len(CHECK_NAMES)))
    restrict = f" AND rr.response_id IN (SELECT response_id FROM {only})" if only else ""
    return f"""
SELECT rr.response_id, any_value(r.question_id) AS question_id, any_value(r.provider) AS provider,
       any_value(rr.template_group) AS template_group, any_value(rr.overall) = 'PASS' AS passed,
       count(c.check_name) AS n{columns}
FROM response_results rr
JOIN responses r ON r.response_id = rr.response_id
JOIN check_results c ON c.evaluation_id = rr.evaluation_id AND c.response_id = rr.response_id
WHERE rr.evaluation_id = $evaluation{restrict}
GROUP BY rr.response_id
ORDER BY rr.response_id
"""


def _read_stored(con: duckdb.DuckDBPyConnection, evaluation_id: int, ids: list[int],
                 only: str | None = None) -> tuple[Any, Verdicts] | None:
    """``_stored_sql``'s Arrow table and its verdicts, when it holds exactly responses ``ids``
    with one result for each check; else None."""
    names = {f"check_{i}": name for i, name in enumerate(CHECK_NAMES)}
    t = con.sql(_stored_sql(only), params={"evaluation": evaluation_id, **names}).to_arrow_table()
    if t.column("response_id").to_pylist() != ids or any(k != len(names) for k in t.column("n").to_pylist()):
        return None
    columns = [t.column(str(i)).to_pylist() for i in range(len(names))]
    if any(None in column for column in columns):
        return None
    return t, Verdicts(t.column("passed").to_pylist(), list(zip(*columns, strict=True)), 0.0)


def stored_evaluation(con: duckdb.DuckDBPyConnection, run_id: int, ruleset: str, rules: Rules,
                      profile: str) -> int | None:
    """The run's latest stored evaluation under this rule set, these rules (hash) and profile."""
    row = con.execute(
        """SELECT max(evaluation_id) FROM evaluations
           WHERE run_id = $run AND ruleset = $ruleset AND rules_hash = $hash
                 AND coalesce(profile, $profile) = $profile""",
        {"run": run_id, "ruleset": ruleset, "hash": rules.hash, "profile": profile},
    ).fetchall()
    return int(row[0][0]) if row and row[0][0] is not None else None


def stored_verdicts(con: duckdb.DuckDBPyConnection, evaluation_id: int, rows: RunRows) -> Verdicts | None:
    """A stored evaluation's verdicts in the rows' order (None when it does not cover exactly these
    rows with exactly one result for each check)."""
    started = time.perf_counter()
    got = _read_stored(con, evaluation_id, rows.ids)
    return None if got is None else replace(got[1], seconds=time.perf_counter() - started)


def base_verdicts(con: duckdb.DuckDBPyConnection, run_key: tuple[Any, ...], rows: RunRows, rules: Rules,
                  ruleset: str, profile: str, evaluation_id: int | None) -> Verdicts:
    """The base's verdicts: read from its stored evaluation under the same rules when there is one
    (cheaper than evaluating), else evaluated; cached like ``cached_verdicts``."""
    def make() -> Verdicts:
        found = stored_verdicts(con, evaluation_id, rows) if evaluation_id is not None else None
        return found if found is not None else evaluate_rows(con, rows, rules, ruleset, profile)

    verdicts: Verdicts = _VERDICTS.get((run_key, rules.hash, ruleset, profile), make)
    return verdicts


def merge_changes(changes: Changes, more: Changes) -> Changes:
    """``changes`` and ``more`` (of other responses, the same checks) as one, in id order."""
    merged = sorted(zip([*changes.ids, *more.ids], [*changes.verdicts, *more.verdicts], strict=True),
                    key=lambda pair: pair[0])
    return Changes([rid for rid, _ in merged], [v for _, v in merged], changes.seconds + more.seconds,
                   changes.checks)


# --- the preview, as the page shows it ---------------------------------------------------------

# The base's stored evaluation, per template group and provider: responses and how many pass.
STORED_GROUPS_SQL = """
SELECT rr.template_group, r.provider, count(*) AS n, count(*) FILTER (WHERE rr.overall = 'PASS') AS passed
FROM response_results rr JOIN responses r ON r.response_id = rr.response_id
WHERE rr.evaluation_id = $evaluation AND r.run_id = $run
GROUP BY ALL
"""
STORED_SIZE_SQL = """
SELECT (SELECT count(*) FROM responses WHERE run_id = $run),
       (SELECT count(*) FROM check_results c JOIN responses r ON r.response_id = c.response_id
        WHERE c.evaluation_id = $evaluation AND r.run_id = $run)
"""


_RUN_UNCLEAN = _Cache(4)
_PREVIEWS = _Cache(16)


@dataclass(frozen=True)
class Shown:
    """An edit's preview, the seconds its evaluation took (kept with it when cached), and how
    long this call's parts took (``edited verdicts`` ran beside the reads; ``waited`` is how
    long the preview then waited for it)."""

    preview: Preview
    seconds: float
    parts: dict[str, float]


@dataclass(frozen=True)
class _StoredPart:
    """Some responses of the base's stored evaluation: what a flip shows of each, and their verdicts."""

    rows: RunRows
    before: Verdicts


def _stored_part(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int,
                 ids: list[int]) -> _StoredPart | None:
    """Responses ``ids`` (sorted) of the base's stored evaluation; None when it does not hold
    every check of each of them."""
    con.execute("CREATE OR REPLACE TEMP TABLE lab_changed AS SELECT unnest($ids)::BIGINT AS response_id",
                {"ids": ids})
    try:
        got = _read_stored(con, evaluation_id, ids, only="lab_changed")
    finally:
        con.execute("DROP TABLE IF EXISTS temp.lab_changed")
    if got is None:
        return None
    t, before = got
    rows = RunRows(run_id, ids, t.column("question_id").to_pylist(), t.column("provider").to_pylist(),
                   t.column("template_group").to_pylist(), frozenset())
    return _StoredPart(rows, before)


def _sparse_preview(part: _StoredPart, groups: list[tuple[Any, ...]], changes: Changes) -> Preview:
    """The preview of ``changes`` over the base's stored evaluation, from the stored part of the
    responses they hold (``part``, the same responses) and each group's counts (``groups``)."""
    changed = compare(part.rows, part.before, apply_changes(part.rows, part.before, changes))
    delta = {(g.template, g.provider): g.passed_after - g.passed_before for g in changed.groups}
    counts = sorted((t_, p_, int(n), int(b)) for t_, p_, n, b in groups)
    whole = [Group(t_, p_, n, b, b + delta.get((t_, p_), 0)) for t_, p_, n, b in counts]
    return Preview(sum(g.n for g in whole), sum(g.passed_before for g in whole), sum(g.passed_after for g in whole),
                   whole, changed.flips, changed.check_changes)


def preview_edit(con: duckdb.DuckDBPyConnection, run_key: tuple[Any, ...], run_id: int, base: Rules,
                 edited: Rules, ruleset: str, profile: str, evaluation_id: int | None) -> Shown:
    """The before/after of ``edited`` on the run, cached per (run, both rules, rule set, profile,
    base evaluation). What an edit changes (``edit_changes``) needs nothing else, so it is worked
    out on a second cursor of the store meanwhile. When the edit is narrow and the base's
    evaluation is stored, only each group's counts and the stored verdicts of the responses the
    edit can change are read (those as soon as the second cursor has found them, while it
    evaluates them): the preview costs what the edit changes, not the run's size. Otherwise the
    run's rows and the base's verdicts are read whole meanwhile (cached per run: ``cached_rows``,
    ``base_verdicts``) and compared."""
    key = (run_key, base.hash, edited.hash, ruleset, profile, evaluation_id)
    kept: tuple[Preview, float] | None = _PREVIEWS.peek(key)
    if kept is not None:
        return Shown(kept[0], kept[1], {})
    parts: dict[str, float] = {}
    started = time.perf_counter()
    found: Future[tuple[list[int], frozenset[str], bool]] = Future()
    groups: list[tuple[Any, ...]] = []  # the stored base's counts; empty: the run is read whole
    rows: RunRows | None = None
    before: Verdicts | None = None
    stored: _StoredPart | None = None
    extra: Changes | None = None  # the answers that are not clean ASCII the cursor left out, evaluated here
    cursor = cursor_of(con)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            # The answers that are not clean ASCII (None: not known yet) are added from here.
            pending = pool.submit(edit_changes, cursor, run_id, base, edited, ruleset, profile, None,
                                  found.set_result)
            t = time.perf_counter()
            if evaluation_id is not None:
                groups = _stored_groups(con, run_id, evaluation_id)
            if groups:
                unclean = _RUN_UNCLEAN.get(run_key, lambda: unclean_ids(con, run_id))
            else:
                rows = cached_rows(run_key, lambda: read_run(con, run_id))
                before = base_verdicts(con, run_key, rows, base, ruleset, profile, evaluation_id)
                unclean = rows.unclean
            parts["base"] = time.perf_counter() - t
            t = time.perf_counter()
            told = _candidates_or_none(found, pending)
            if told is not None:  # evaluated here while the cursor evaluates the candidates
                ids, checks, unclean_left_out = told
                more = sorted(unclean - set(ids)) if unclean_left_out else []
                if groups and evaluation_id is not None:
                    stored = _stored_part(con, run_id, evaluation_id, sorted({*ids, *more}))
                extra = evaluate_changes(con, run_id, edited, ruleset, profile, more, checks)
            parts["beside the cursor"] = time.perf_counter() - t
            t = time.perf_counter()
            changes = pending.result()
            parts["waited"] = time.perf_counter() - t
    finally:
        cursor.close()
    if changes is not None:
        parts["edited verdicts"] = changes.seconds
        if changes.unclean_pending:
            assert extra is not None  # the cursor reported its candidates before evaluating them
            changes = merge_changes(changes, extra)
    preview: Preview | None = None
    t = time.perf_counter()
    if changes is not None and stored is not None and stored.rows.ids == changes.ids:
        preview = _sparse_preview(stored, groups, changes)
        parts["compare (changed responses)"] = time.perf_counter() - t
    if preview is None:  # no stored base, an edit that is not narrow, or a stored base not whole
        if rows is None or before is None:
            rows = cached_rows(run_key, lambda: read_run(con, run_id))
            before = base_verdicts(con, run_key, rows, base, ruleset, profile, evaluation_id)
        after = (apply_changes(rows, before, changes) if changes is not None
                 else evaluate_rows(con, rows, edited, ruleset, profile))
        preview = compare(rows, before, after)
        parts["compare"] = time.perf_counter() - t
    seconds = time.perf_counter() - started
    _PREVIEWS.get(key, lambda: (preview, seconds))
    return Shown(preview, seconds, parts)


def _stored_groups(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int) -> list[tuple[Any, ...]]:
    """The stored evaluation's counts per template group and provider; empty when it does not
    hold one outcome and every check's verdict for each response of the run (then the run is
    read whole)."""
    groups = con.execute(STORED_GROUPS_SQL, {"evaluation": evaluation_id, "run": run_id}).fetchall()
    n, checks = con.execute(STORED_SIZE_SQL, {"evaluation": evaluation_id, "run": run_id}).fetchall()[0]
    whole = sum(g[2] for g in groups) == n and checks == n * len(CHECK_NAMES)
    return groups if whole else []


def _candidates_or_none(found: Future[tuple[list[int], frozenset[str], bool]],
                        pending: Future[Changes | None]) -> tuple[list[int], frozenset[str], bool] | None:
    """The candidates (and checks) ``edit_changes`` reported, once it has; None when it finished
    without (an edit that is not narrow)."""
    either: list[Future[Any]] = [found, pending]
    wait(either, return_when=FIRST_COMPLETED)
    if found.done():
        return found.result()
    pending.result()  # raises its error, if it failed
    return found.result() if found.done() else None
