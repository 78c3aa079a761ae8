"""The Rule lab's preview on a big run (issue 16 §3: within 2 s on a 100k run).

Generates a run (bench.generate), ingests it and stores its evaluation under the base rule set
(t3_aware) through the real CLI, then, in a fresh process, does what the Rule lab page does when
an edit is made and "Preview" is pressed (four edits in turn: a refusal pattern many answers
match, one few match, a threshold, an allowlist name): rule_lab.preview_edit reads the run's
rows and the base's stored verdicts while, beside them, it evaluates what the edit can change
under the edited rules (the SQL engine: an edit of pattern lists, the threshold and the
allowlist re-evaluates only the responses it can change, and only the checks reading what
changed), then compares. It prints each part's seconds, the first time and again (cached); the
run's rows and the base's verdicts are read by the first edit and cached for the next ones, as
on the page. "edited verdicts" runs beside "rows" and "base verdicts"; "waited" is how long the
preview then waited for it.

    python -m bench.lab [--rows 100000] [--workdir DIR] [--keep] [--out bench/]
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
TARGET_S = 2.0
NEW_REFUSAL = "the text (states|says)"  # a refusal pattern a QA lead might try (many answers say it)
RARE_REFUSAL = "not something I can discuss"  # one few answers say


def _edits(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The edits timed: a pattern many answers match, one few match, a threshold (which
    re-evaluates the responses whose best-scoring retrieved item scores between the two), and
    an allowlist name (which re-evaluates the responses whose answer holds the name, and those
    whose answer is not plain ASCII)."""
    return {
        f"refusal pattern '{NEW_REFUSAL}' added (matches many answers)":
            {**values, "refusal_patterns": f"{values['refusal_patterns']}\n{NEW_REFUSAL}"},
        f"refusal pattern '{RARE_REFUSAL}' added (matches few)":
            {**values, "refusal_patterns": f"{values['refusal_patterns']}\n{RARE_REFUSAL}"},
        "threshold 0.35 -> 0.5 (responses whose best score is between re-evaluated)": {**values, "min_score": 0.5},
        "allowlist name added (answers naming it re-evaluated)":
            {**values, "allowlist": f"{values['allowlist']}\nSome New Name".strip()},
    }


def step_preview(db: str, run: str) -> dict[str, Any]:
    """Each edit's preview as the page does it, timed part by part, first and again (cached)."""
    from evaluator.lab import rule_lab as lab
    from evaluator.rules.load import load_rules
    from evaluator.store.db import connect

    base = load_rules()
    out: dict[str, Any] = {}
    with connect(db, read_only=True) as con:
        run_id, content_hash = con.execute("SELECT run_id, content_hash FROM runs WHERE name = $run",
                                           {"run": run}).fetchall()[0]
        run_key = (db, run_id, content_hash)
        for name, values in _edits(lab.form_values(base, PROFILE)).items():
            for attempt in ("first", "cached"):
                started = time.perf_counter()
                edited = lab.edit(base, PROFILE, values).rules
                edit_s = time.perf_counter() - started
                evaluation = lab.stored_evaluation(con, run_id, RULESET, base, PROFILE)
                shown = lab.preview_edit(con, run_key, run_id, base, edited, RULESET, PROFILE, evaluation)
                out.setdefault(name, {})[attempt] = {
                    "seconds": round(time.perf_counter() - started, 2),
                    "parts": {k: round(v, 2) for k, v in {"edit": edit_s, **shown.parts}.items()},
                    "flips": len(shown.preview.flips), "responses": shown.preview.n,
                    "base_stored": evaluation is not None}
    return out


def this(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.lab", *args]


def bench_lab(n: int, workdir: Path, *, seed: int = 7) -> dict[str, Any]:
    tag = label(n)
    run = f"lab_{tag}"
    path, db = workdir / f"{run}.jsonl", workdir / f"{run}.duckdb"
    for f in (db, db.with_suffix(".duckdb.wal")):
        f.unlink(missing_ok=True)
    res: dict[str, Any] = {"responses": n, "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M")}
    say(f"lab {tag}: generating")
    res["generate"] = generate(path, n, seed=seed)
    for name, args in (("ingest", cli("ingest", "--db", str(db), str(path), "--name", run)),
                       ("recompute", cli("recompute", "--db", str(db), "--run", run, "--ruleset", RULESET))):
        got = measure(args)
        say(f"lab {tag}: {name} {got['seconds']} s")
    got = measure(this("--step", "preview", "--db", str(db), "--run", run))
    res["preview"] = orjson.loads(got["stdout"])
    res["preview_process"] = {"seconds": got["seconds"], "peak_mb": got["peak_mb"]}
    return res


def table(res: dict[str, Any]) -> str:
    ok = {True: "met", False: "**MISS**"}
    lines = [f"| preview ({label(res['responses'])} responses) | seconds | target ≤ {TARGET_S:g} s | parts (s) "
             "| flips |", "|---|---|---|---|---|"]
    stored = True
    for name, got_by in res["preview"].items():
        for attempt in ("first", "cached"):
            got = got_by[attempt]
            stored = stored and got["base_stored"]
            parts = ", ".join(f"{k} {v}" for k, v in got["parts"].items())
            lines.append(f"| {name}: {attempt} | {got['seconds']:.2f} | {ok[got['seconds'] <= TARGET_S]} | {parts} | "
                         f"{got['flips']} |")
    lines.append(f"\nThe base's verdicts were read from its stored evaluation: {stored}."
                 f" Preview process peak {res['preview_process']['peak_mb']} MB.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="where the file and store go (default: a new temp dir under /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the file and store afterwards")
    parser.add_argument("--out", default=str(OUT), help="where lab.json and lab.md go (default: bench/)")
    parser.add_argument("--step", choices=("preview",), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step == "preview":
        print(orjson.dumps(step_preview(args.db, args.run)).decode())
        return 0
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench_lab_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        res = bench_lab(args.rows, workdir, seed=args.seed)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lab.json").write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2))
    md = f"Measured {res['date']} on {res['machine']}.\n\n{table(res)}\n"
    (out / "lab.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
