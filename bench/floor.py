"""The floor (issue 16): what plain DuckDB takes for the same work, in ONE run on the SAME store.

For one generated file (bench.generate) this measures, each in its own process:

- the project's ``ingest``, ``recompute`` (t3_aware) and ``metrics`` (heuristic judge) through the
  real CLI, with wall time and peak memory (bench.run.measure: the process and its workers);
- the floor for ingest: DuckDB's own ``read_json`` of the same JSONL file into a table of a new
  DuckDB file;
- the floor for recompute and metrics: one plain SQL query (``FLOOR_SQL``) that computes the
  three output flags of SPEC §5 and ``cites_shlokas`` for every response of the run, straight
  from the store's tables. It reads the patterns, phrases and thresholds through
  ``load_rules()`` (so the rules are the project's) but no matching code of the project. After
  the timed query it compares its answers with the flags and ``cites_shlokas`` verdicts the
  project's ``recompute`` stored, response by response, and reports every disagreement.

Where the SQL knowingly differs from the project (it shows as disagreements, none in generated
data): verification looks terms up in the normalised texts only (the project first tries the raw
texts, a shortcut that finds nothing the normalised lookup misses for the terms these patterns can
match). The patterns themselves are RE2 on both sides.

    python -m bench.floor [--rows 200000] [--repeat 3] [--workdir DIR] [--keep] [--out bench/]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.generate import generate
from bench.run import cli, label, machine, measure, say

OUT = Path(__file__).resolve().parent
RULESET, PROFILE = "t3_aware", "ramayana"
# Targets of issue 16: (ratio to the floor, absolute seconds at 1M responses); peak ≤ 2 GB.
TARGETS = {"recompute": (2.0, 15.0), "ingest": (2.5, 20.0), "metrics": (3.0, 20.0)}
PEAK_MB = 2048


# White space as Python's str.split() sees it; a run of 2+ or any one that is not ' ' becomes ' '.
WS = r" \t-\r\x1c-\x1f\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"


def norm(expr: str) -> str:
    """SQL for the rules' norm_term: lower case, white space folded, no spaces around '/'.
    (Quotes are left curly: neither pattern matches a quote, and any quote is a boundary.)"""
    folded = f"trim(regexp_replace(lower({expr}), '[{WS}]{{2,}}|[{WS[1:]}]', ' ', 'g'))"
    return f"regexp_replace({folded}, ' ?/ ?', '/', 'g')"


def words(expr: str) -> str:
    """A normalised text where every character that is neither a word character nor a space
    becomes ' # ': a proper noun (letters and single spaces once normalised) then occurs as a
    whole word in the text exactly when ' noun ' is a substring of ' text '."""
    return rf"' ' || regexp_replace({expr}, '[^\pL\pN_ ]', ' # ', 'g') || ' '"


def price_in(hay: str) -> str:
    """SQL: the normalised price ``t.term`` occurs in ``hay`` with no word character after it,
    nor '.5' / ',5' (a longer price); the regex is compiled only where the substring is."""
    return (f"CASE WHEN contains({hay}, t.term) THEN regexp_matches({hay}, regexp_escape(t.term) || "
            r"'(?:[^\pL\pN_.,]|[.,](?:[^0-9]|$))') ELSE false END")


# The flags of SPEC §5 and cites_shlokas for every response of a run. Values are bound.
FLOOR_SQL = f"""
WITH resp AS (
  SELECT r.response_id, r.run_id, r.question_id, coalesce(r.answer, '') AS answer,
         upper(trim(coalesce(r.template, ''))) = 'T3' OR upper(trim(coalesce(q.expected_template, ''))) = 'T3' AS is_t3
  FROM responses r JOIN runs USING (run_id)
  LEFT JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
  WHERE runs.name = $run),
asked AS (  -- each question normalised once, not once per provider
  SELECT run_id, question_id, n AS doc, {words("n")} AS words
  FROM (SELECT run_id, question_id, {norm("coalesce(question, '')")} AS n FROM questions
        WHERE run_id = (SELECT run_id FROM runs WHERE name = $run))),
docs AS (  -- each chunk is stored once and normalised once
  SELECT chunk_key, n AS doc, {words("n")} AS words FROM (SELECT chunk_key, {norm("text")} AS n FROM chunks)
  WHERE chunk_key IN (SELECT chunk_key FROM retrieved JOIN resp USING (response_id))),
support AS (
  SELECT response_id, count(*) AS n_items, count(score) FILTER (NOT isnan(score)) AS n_scored,
         max(score) FILTER (NOT isnan(score)) AS top
  FROM retrieved JOIN resp USING (response_id) GROUP BY ALL),
terms AS (  -- a proper noun is ASCII letters and white space: lower() and folding normalise it
  SELECT response_id, true AS price, {norm("unnest(regexp_extract_all(answer, $price_rx))")} AS term FROM resp
  UNION ALL
  SELECT response_id, false, lower(regexp_replace(unnest(regexp_extract_all(answer, $noun_rx)), '\\s+', ' ', 'g'))
  FROM resp),
unverified AS (  -- a term lies inside one text: no retrieved chunk (nor the question) contains it
  SELECT DISTINCT t.response_id FROM terms t JOIN resp r USING (response_id)
  LEFT JOIN asked a USING (run_id, question_id)
  WHERE NOT (NOT t.price AND list_contains($allowlist, t.term))
    AND NOT ($exempt AND CASE WHEN t.price THEN {price_in("a.doc")} ELSE contains(a.words, ' ' || t.term || ' ') END)
    AND NOT EXISTS (SELECT 1 FROM retrieved x JOIN docs d USING (chunk_key) WHERE x.response_id = t.response_id
                    AND CASE WHEN t.price THEN {price_in("d.doc")} ELSE contains(d.words, ' ' || t.term || ' ') END))
SELECT r.response_id,
       coalesce(s.n_items, 0) = 0 OR (s.n_scored > 0 AND s.top < $min_score) AS no_context_warning,
       regexp_matches(r.answer, $phrases_rx) AS refusal_detected,
       r.response_id IN (SELECT response_id FROM unverified) AS potential_hallucination,
       CASE WHEN NOT $cites_applies OR (r.is_t3 AND $cites_t3_na) THEN 'N/A'
            WHEN regexp_matches(r.answer, $citation_rx) THEN 'PASS' ELSE 'FAIL' END AS cites_shlokas
FROM resp r LEFT JOIN support s USING (response_id)
"""


def floor_params(run: str, profile_name: str = PROFILE) -> dict[str, Any]:
    """The rules' patterns, phrases and thresholds (the default rules, the run's profile, rule
    set t3_aware) as the query's named parameters."""
    from evaluator.rules.load import load_rules

    rules = load_rules()
    profile = rules.profile(profile_name)

    def rx(rule: Any) -> str:
        return ("(?i)" if rule.ignore_case else "") + rule.pattern

    phrases = "|".join(r"\s+".join(_re2_escape(w) for w in p.split()) for p in rules.refusal_phrases)
    return {
        "run": run, "min_score": rules.min_score,
        "exempt": rules.exempt_question_terms, "allowlist": [" ".join(a.lower().split()) for a in profile.allowlist],
        "price_rx": rx(rules.price), "noun_rx": rx(rules.proper_noun), "phrases_rx": f"(?i)(?:{phrases})",
        "citation_rx": profile.citation_pattern or r"\b\B",
        "cites_applies": "cites_shlokas" in profile.checks and bool(profile.citation_pattern),
        "cites_t3_na": "cites_shlokas" in rules.ruleset(RULESET).t3_not_applicable,
    }


# Curly quotes and apostrophes count like straight ones (rules.straighten), in the phrases' regex.
QUOTE_CLASS = {"'": "['\u2018\u2019\u201a\u201b\u2032\u02bc\uff07]", '"': '["\u201c\u201d\u201e\u201f\u2033\uff02]'}


def _re2_escape(text: str) -> str:
    return "".join(QUOTE_CLASS.get(c) or ("\\" + c if not c.isalnum() and ord(c) < 128 else c) for c in text)


DISAGREEMENTS_SQL = """
WITH ev AS (SELECT max(e.evaluation_id) AS id FROM evaluations e JOIN runs r USING (run_id)
            WHERE r.name = $run AND e.ruleset = $ruleset),
stored AS (
  SELECT f.response_id,
         coalesce(bool_or(g.flag = 'no_context_warning'), false) AS no_context_warning,
         coalesce(bool_or(g.flag = 'refusal_detected'), false) AS refusal_detected,
         coalesce(bool_or(g.flag = 'potential_hallucination'), false) AS potential_hallucination,
         any_value(c.verdict) AS cites_shlokas
  FROM floor f
  LEFT JOIN flags g ON g.response_id = f.response_id AND g.evaluation_id = (SELECT id FROM ev)
  LEFT JOIN check_results c ON c.response_id = f.response_id AND c.evaluation_id = (SELECT id FROM ev)
   AND c.check_name = 'cites_shlokas'
  GROUP BY f.response_id)
SELECT f.response_id, field, f_value, s_value FROM floor f JOIN stored s USING (response_id),
LATERAL (VALUES ('no_context_warning', f.no_context_warning::VARCHAR, s.no_context_warning::VARCHAR),
                ('refusal_detected', f.refusal_detected::VARCHAR, s.refusal_detected::VARCHAR),
                ('potential_hallucination', f.potential_hallucination::VARCHAR, s.potential_hallucination::VARCHAR),
                ('cites_shlokas', f.cites_shlokas, s.cites_shlokas)) v(field, f_value, s_value)
WHERE f_value IS DISTINCT FROM s_value ORDER BY f.response_id, field
"""


def step_flags(db: str, run: str) -> dict[str, Any]:
    """Time FLOOR_SQL on the store (read-only), then compare with what recompute stored."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        found = con.execute("SELECT profile FROM runs WHERE name = $run", {"run": run}).fetchall()
        params = floor_params(run, found[0][0] or PROFILE)
        started = time.perf_counter()
        con.execute(f"CREATE TEMP TABLE floor AS {FLOOR_SQL}", params)
        seconds = time.perf_counter() - started
        counts = con.execute("""SELECT count(*), count(*) FILTER (no_context_warning),
                                       count(*) FILTER (refusal_detected), count(*) FILTER (potential_hallucination),
                                       count(*) FILTER (cites_shlokas = 'PASS') FROM floor""").fetchall()[0]
        rows = con.execute(DISAGREEMENTS_SQL, {"run": run, "ruleset": RULESET}).fetchall()
        examples = []
        for response_id, field, mine, theirs in rows[:10]:
            answer = con.execute("SELECT answer FROM responses WHERE response_id = $id",
                                 {"id": response_id}).fetchall()[0][0]
            examples.append({"response_id": response_id, "field": field, "floor": mine, "project": theirs,
                             "answer": (answer or "")[:300]})
        return {"seconds": round(seconds, 2), "responses": counts[0],
                "raised": {"no_context_warning": counts[1], "refusal_detected": counts[2],
                           "potential_hallucination": counts[3], "cites_shlokas_pass": counts[4]},
                "disagreements": len({r[0] for r in rows}), "disagreeing_fields": len(rows), "examples": examples}
    finally:
        con.close()


def step_read_json(path: str, db: str) -> dict[str, Any]:
    """DuckDB's own reader: the JSONL file into a table of a new DuckDB file."""
    import duckdb

    started = time.perf_counter()
    con = duckdb.connect(db)
    try:
        con.execute("CREATE TABLE raw AS SELECT * FROM read_json($path, format = 'newline_delimited')",
                    {"path": path})
        rows = con.execute("SELECT count(*) FROM raw").fetchall()[0][0]
    finally:
        con.close()
    return {"seconds": round(time.perf_counter() - started, 2), "rows": rows}


# --- one bench run ----------------------------------------------------------------------------


def this(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.floor", *args]


def remove_store(path: Path) -> None:
    """A store file and the files DuckDB and the project's lock keep beside it."""
    for suffix in (".duckdb", ".duckdb.wal", ".duckdb.lock", ".duckdb.lock-queue"):
        path.with_suffix(suffix).unlink(missing_ok=True)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of a step with the median time (of an even count, the slower of the middle two),
    with every run's seconds. A floor is timed inside its process (its query or its read: the
    "reported" seconds), the project's steps as whole processes."""
    def seconds(run: dict[str, Any]) -> float:
        return float(run.get("reported", {}).get("seconds", run["seconds"]))

    by_time = sorted(runs, key=seconds)
    return {**by_time[len(by_time) // 2], "runs": [seconds(run) for run in runs]}


def bench_floor(n: int, workdir: Path, *, seed: int = 7, repeat: int = 1) -> dict[str, Any]:
    """`repeat`: each step runs that many times and the run with the median time is reported (on
    a shared virtual machine one run of a step varied by ±20% from one minute to the next)."""
    tag = label(n)
    run = f"floor_{tag}"
    path, db, raw_db = workdir / f"{run}.jsonl", workdir / f"{run}.duckdb", workdir / f"{run}_read_json.duckdb"
    extra_dbs = [workdir / f"{run}_{i}.duckdb" for i in range(1, repeat)]  # each ingest needs a new store
    for stale in (db, raw_db, *extra_dbs):
        remove_store(stale)
    res: dict[str, Any] = {"responses": n, "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
                           "repeat": repeat}
    say(f"floor {tag}: generating")
    res["generate"] = generate(path, n, seed=seed)

    def timed(name: str, commands: list[list[str]], *, child_json: bool = False,
              before: Any = None) -> dict[str, Any]:
        runs = []
        for args in commands:
            if before is not None:
                before()
            got = measure(args)
            out = {k: v for k, v in got.items() if k not in ("stdout", "stderr")}
            if child_json:
                out["reported"] = orjson.loads(got["stdout"])
            say(f"floor {tag}: {name} {out['seconds']} s, peak {out['peak_mb']} MB")
            runs.append(out)
        return median_run(runs)

    res["ingest"] = timed("ingest", [cli("ingest", "--db", str(store), str(path), "--name", run)
                                     for store in (db, *extra_dbs)])
    for store in extra_dbs:
        remove_store(store)
    res["read_json"] = timed("read_json", [this("--step", "read_json", "--file", str(path), "--db", str(raw_db))]
                             * repeat, child_json=True, before=lambda: remove_store(raw_db))
    res["recompute"] = timed("recompute", [cli("recompute", "--db", str(db), "--run", run, "--ruleset", RULESET,
                                               "--json")] * repeat, child_json=True)
    res["recompute_python"] = timed("recompute --engine python", [cli(
        "recompute", "--db", str(db), "--run", run, "--ruleset", RULESET, "--engine", "python", "--json")])
    res["metrics"] = timed("metrics", [cli("metrics", "--db", str(db), "--run", run, "--judge", "heuristic",
                                           "--json")] * repeat)
    res["flags_sql"] = timed("flags SQL", [this("--step", "flags", "--db", str(db), "--run", run)] * repeat,
                             child_json=True)
    return res


def table(res: dict[str, Any]) -> str:
    """step | seconds | peak | floor | ratio (target) | 1M (target) | peak target."""
    n = res["responses"]
    scale = 1_000_000 / n
    floors = {"ingest": ("read_json", res["read_json"]["reported"]["seconds"]),
              "recompute": ("flags SQL", res["flags_sql"]["reported"]["seconds"]),
              "metrics": ("flags SQL", res["flags_sql"]["reported"]["seconds"])}
    floors["recompute_python"] = floors["recompute"]
    ok = {True: "met", False: "**MISS**"}
    lines = [f"| step ({label(n)} responses) | seconds | peak MB | floor (query) | floor seconds | ratio "
             f"(target) | 1M extrapolated (target) | peak ≤ 2 GB |",
             "|---|---|---|---|---|---|---|---|"]
    # recompute: the default engine at this size (auto: sql above 100k); recompute_python: the reference
    for step in [s for s in ("recompute", "recompute_python", "metrics", "ingest") if s in res]:
        got = res[step]
        floor_name, floor_s = floors[step]
        ratio = got["seconds"] / max(floor_s, 0.01)
        max_ratio, max_1m = TARGETS[step.removesuffix("_python")]
        at_1m = got["seconds"] * scale
        name = f"{step} ({got['reported']['engine']} engine)" if "engine" in got.get("reported", {}) else step
        lines.append(f"| {name} | {got['seconds']:.1f} | {got['peak_mb']} | {floor_name} | {floor_s:.2f} | "
                     f"{ratio:.1f}× (≤ {max_ratio:g}×: {ok[ratio <= max_ratio]}) | "
                     f"{at_1m:.0f} s (≤ {max_1m:g} s: {ok[at_1m <= max_1m]}) | {ok[got['peak_mb'] <= PEAK_MB]} |")
    for step, name in (("read_json", "floor: DuckDB read_json"), ("flags_sql", "floor: flags SQL")):
        got = res[step]
        lines.append(f"| {name} | {got['reported']['seconds']:.2f} (process {got['seconds']:.1f}) | "
                     f"{got['peak_mb']} |  |  |  |  |  |")
    fl = res["flags_sql"]["reported"]
    lines += ["", f"Floor flags vs the project's stored flags and cites_shlokas: {fl['responses']} responses, "
              f"{fl['disagreements']} disagreeing ({fl['disagreeing_fields']} fields); raised by the floor: "
              + ", ".join(f"{k} {v}" for k, v in fl["raised"].items()) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="where the file and stores go (default: a new temp dir under /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the file and stores afterwards")
    parser.add_argument("--repeat", type=int, default=1, help="run each step this many times; report the median")
    parser.add_argument("--out", default=str(OUT), help="where floor.json and floor.md go (default: bench/)")
    # One floor step in this process (the bench runs each step in its own process).
    parser.add_argument("--step", choices=("flags", "read_json"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step == "flags":
        print(orjson.dumps(step_flags(args.db, args.run)).decode())
        return 0
    if args.step == "read_json":
        print(orjson.dumps(step_read_json(args.file, args.db)).decode())
        return 0
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="rag-floor-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        res = bench_floor(args.rows, workdir, seed=args.seed, repeat=max(1, args.repeat))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    repeats = (f" Each step ran {res['repeat']} times (the Python reference once); the run with the median time is "
               "shown (every run's seconds: floor.json)." if res["repeat"] > 1 else "")
    md = (f"Measured {res['date']} on {res['machine']}.{repeats}\n\n{table(res)}\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "floor.json").write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2))
    (out / "floor.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
