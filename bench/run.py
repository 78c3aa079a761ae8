"""`make bench`: the project at 10k, 100k and 1M responses against a per-row baseline.

For each size: generate a synthetic run (bench.generate), then through the real CLI in
subprocesses, timing each and sampling its peak memory (the process and its children):
ingest, recompute t3_aware (and legacy, which the before/after page needs), metrics; a
second run of the same golden set (seed + 1) for the compare page; the baseline
(bench.baseline) on the same file, whose verdicts must equal the stored ones; every page
through AppTest in a subprocess (bench.pages); the store's size on disk. Results go to
bench/results.json and bench/results.md. Big files live in a temp dir, removed afterwards.

    python -m bench.run [--sizes 10000,100000,1000000] [--quick] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from bench.baseline import Baseline
from bench.generate import generate

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
BASELINE_SAMPLE = 100_000  # above this size the baseline runs on an evenly spread sample
PAGE = os.sysconf("SC_PAGE_SIZE")
TARGETS = {"store_held_s": 3.0, "ingest_s": 60.0, "recompute_s": 60.0, "speedup": 5.0, "page_s": 1.0,
           "dashboard_mb": 2048.0}


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


# --- measuring a subprocess ------------------------------------------------------------------


def _proc_table() -> tuple[dict[int, list[int]], dict[int, int]]:
    children: dict[int, list[int]] = defaultdict(list)
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2:].split()
        pid = int(entry)
        children[int(fields[1])].append(pid)
        rss[pid] = int(fields[21]) * PAGE
    return children, rss


def tree_memory(root: int) -> int:
    """Resident memory of a process and its descendants (sum of RSS: pages a forked worker
    still shares with its parent count twice, so this is an upper bound). Cheap on purpose:
    the sampler must not steal CPU from what it measures (reading smaps for PSS does)."""
    children, rss = _proc_table()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def measure(args: list[str], *, cwd: Path = ROOT, timeout: float = 3600) -> dict[str, Any]:
    """Run a command; wall time, peak memory of its process tree (sampled every 0.25 s) and
    the largest single process's max RSS (from wait4, exact)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    load = os.getloadavg()[0]  # other work on the machine shows here (1-minute load average)
    lock_log = Path(tempfile.mkstemp(prefix="bench-lock-", suffix=".jsonl")[1])
    env["EVALUATOR_LOCK_LOG"] = str(lock_log)  # evaluator.store.db logs each time the command held the store
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=err)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_memory(proc.pid))
                done.wait(0.25)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            sampler.join()
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    logged = [orjson.loads(line) for line in lock_log.read_bytes().splitlines() if line.strip()]
    lock_log.unlink(missing_ok=True)
    # Held for writing keeps everyone else out; held for reading only keeps writers out.
    holds = [entry["held_s"] for entry in logged if not entry["read_only"]]
    shared = [entry["held_s"] for entry in logged if entry["read_only"]]
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}:\n{stderr[-3000:]}")
    return {"seconds": round(seconds, 2), "store_held_s": round(sum(holds), 2),
            "longest_hold_s": round(max(holds, default=0.0), 2), "shared_hold_s": round(sum(shared), 2),
            "peak_mb": round(peak[0] / 2**20), "maxrss_mb": round(usage.ru_maxrss / 1024),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "load_before": round(load, 2),
            "stdout": stdout, "stderr": stderr}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evaluator", *args]


def has_command(name: str) -> bool:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(cli(name, "--help"), cwd=ROOT, env=env, capture_output=True, text=True)
    return result.returncode == 0


# --- baseline and agreement --------------------------------------------------------------------


def sample_lines(path: Path, n: int, limit: int) -> list[bytes]:
    """Every line when n <= limit, else every (n // limit)-th line (evenly spread over the file)."""
    every = max(1, n // limit) if n > limit else 1
    with path.open("rb") as handle:
        return [line for i, line in enumerate(handle) if i % every == 0 and line.strip()]


def run_baseline(lines: list[bytes]) -> tuple[float, dict[tuple[str, str], Any]]:
    """Parse and evaluate one response at a time, as a straightforward evaluator would."""
    import json

    baseline = Baseline(ruleset="t3_aware", profile="ramayana")
    verdicts = {}
    started = time.perf_counter()
    for line in lines:
        record = json.loads(line)
        verdicts[(str(record["question_id"]), str(record["provider"]))] = baseline.evaluate(record)
    return time.perf_counter() - started, verdicts


def stored_verdicts(db: Path, run: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect(str(db), read_only=True)
    try:
        con.register("wanted", pa.table({"question_id": [k[0] for k in keys], "provider": [k[1] for k in keys]}))
        evaluation = con.execute(
            """SELECT max(e.evaluation_id), max(r.run_id) FROM evaluations e JOIN runs r USING (run_id)
               WHERE r.name = ? AND e.ruleset = 't3_aware'""",
            [run],
        ).fetchall()[0]
        params = [evaluation[0], evaluation[1]]
        wanted = """FROM responses r JOIN wanted w ON w.question_id = r.question_id AND w.provider = r.provider
                    WHERE r.run_id = ?"""
        out: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"checks": {}, "flags": set()})
        for qid, provider, check, verdict, reason in con.execute(
            f"""SELECT r.question_id, r.provider, c.check_name, c.verdict, c.reason
                FROM check_results c JOIN (SELECT r.response_id, r.question_id, r.provider {wanted}) r
                  ON r.response_id = c.response_id WHERE c.evaluation_id = ?""",
            [params[1], params[0]],
        ).fetchall():
            out[(qid, provider)]["checks"][check] = verdict
            out[(qid, provider)].setdefault("reasons", {})[check] = reason
        for qid, provider, flag in con.execute(
            f"""SELECT r.question_id, r.provider, f.flag
                FROM flags f JOIN (SELECT r.response_id, r.question_id, r.provider {wanted}) r
                  ON r.response_id = f.response_id WHERE f.evaluation_id = ?""",
            [params[1], params[0]],
        ).fetchall():
            out[(qid, provider)]["flags"].add(flag)
        for qid, provider, overall in con.execute(
            f"""SELECT r.question_id, r.provider, o.overall
                FROM response_results o JOIN (SELECT r.response_id, r.question_id, r.provider {wanted}) r
                  ON r.response_id = o.response_id WHERE o.evaluation_id = ?""",
            [params[1], params[0]],
        ).fetchall():
            out[(qid, provider)]["overall"] = overall
        return dict(out)
    finally:
        con.close()


def agreement(baseline: dict[tuple[str, str], Any], stored: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    disagreements = []
    for key, mine in baseline.items():
        theirs = stored.get(key)
        if theirs is None:
            disagreements.append({"response": key, "problem": "not in the store"})
            continue
        diff = {c: (v, theirs["checks"].get(c)) for c, v in mine.checks.items() if theirs["checks"].get(c) != v}
        if set(mine.flags) != theirs["flags"]:
            diff["flags"] = (sorted(mine.flags), sorted(theirs["flags"]))
        if mine.overall != theirs.get("overall"):
            diff["overall"] = (mine.overall, theirs.get("overall"))
        if diff:
            reasons = {c: theirs.get("reasons", {}).get(c) for c in diff}
            disagreements.append({"response": key, "baseline_vs_project": diff, "project_reasons": reasons})
    return {"compared": len(baseline), "agree": len(baseline) - len(disagreements),
            "disagreements": len(disagreements), "examples": disagreements[:5]}


# --- one size ------------------------------------------------------------------------------------


def bench_size(n: int, workdir: Path, *, seed: int, compare_run: bool) -> dict[str, Any]:
    tag = label(n)
    run_a, run_b = f"bench_{tag}", f"bench_{tag}_b"
    db = workdir / f"bench_{tag}.duckdb"
    for stale in (db, db.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    res: dict[str, Any] = {"responses": n}

    path_a = workdir / f"{run_a}.jsonl"
    say(f"{tag}: generating {n} responses")
    res["generate"] = generate(path_a, n, seed=seed)
    say(f"{tag}: ingest ({res['generate']['bytes'] / 2**20:.0f} MB)")
    res["ingest"] = _strip(measure(cli("ingest", "--db", str(db), str(path_a), "--name", run_a)))
    say(f"{tag}: ingest {res['ingest']['seconds']} s; recompute t3_aware")
    res["recompute"] = _strip(measure(cli("recompute", "--db", str(db), "--run", run_a, "--ruleset", "t3_aware",
                                          "--json")), keep_json=True)
    say(f"{tag}: recompute {res['recompute']['seconds']} s; recompute legacy")
    res["recompute_legacy"] = _strip(measure(cli("recompute", "--db", str(db), "--run", run_a, "--ruleset", "legacy",
                                                 "--json")), keep_json=True)
    say(f"{tag}: search index")
    res["search_index"] = _strip(measure(cli("search-index", "--db", str(db), "--run", run_a, "--json")),
                                 keep_json=True)
    if has_command("metrics"):
        say(f"{tag}: metrics")
        res["metrics"] = _strip(measure(cli("metrics", "--db", str(db), "--run", run_a, "--json")))
    else:
        res["metrics"] = None

    limit = BASELINE_SAMPLE
    lines = sample_lines(path_a, n, limit)
    say(f"{tag}: baseline on {len(lines)} responses" + (" (sample)" if len(lines) < n else ""))
    seconds, verdicts = run_baseline(lines)
    del lines
    res["baseline"] = {"responses": len(verdicts), "seconds": round(seconds, 2),
                       "extrapolated": len(verdicts) < n,
                       "seconds_full": round(seconds * n / max(1, len(verdicts)), 2)}
    say(f"{tag}: baseline {seconds:.1f} s; checking agreement with the store")
    res["agreement"] = agreement(verdicts, stored_verdicts(db, run_a, list(verdicts)))
    del verdicts
    path_a.unlink()

    if compare_run:
        path_b = workdir / f"{run_b}.jsonl"
        say(f"{tag}: second run of the same golden set (for the compare page)")
        generate(path_b, n, seed=seed + 1)
        res["ingest_b"] = _strip(measure(cli("ingest", "--db", str(db), str(path_b), "--name", run_b)))
        path_b.unlink()
        res["recompute_b"] = _strip(measure(cli("recompute", "--db", str(db), "--run", run_b, "--ruleset", "t3_aware",
                                                "--json")), keep_json=True)
    say(f"{tag}: reviewer overrides on one response in 1000")
    reviews = measure([sys.executable, "-m", "bench.reviews", "--db", str(db), "--run", run_a])
    res["reviews"] = orjson.loads(reviews["stdout"])
    say(f"{tag}: pages")
    pages_args = [sys.executable, "-m", "bench.pages", "--db", str(db), "--run", run_a]
    if compare_run:
        pages_args += ["--against", run_b]
    pages = measure(pages_args)
    res["pages"] = orjson.loads(pages["stdout"])
    res["dashboard"] = {"seconds": pages["seconds"], "peak_mb": pages["peak_mb"], "maxrss_mb": pages["maxrss_mb"]}
    res["store_mb"] = round(sum(p.stat().st_size for p in workdir.glob(f"bench_{tag}.duckdb*")) / 2**20)
    return res


def _strip(result: dict[str, Any], *, keep_json: bool = False) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k not in ("stdout", "stderr")}
    if keep_json:
        with contextlib.suppress(orjson.JSONDecodeError):
            out["reported"] = orjson.loads(result["stdout"])
    return out


# --- report -----------------------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "**pass**" if ok else "**MISS**"


def markdown(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    tags = [label(int(s)) for s in sizes]
    runs = [results["runs"][s] for s in sizes]
    top = runs[-1]
    top_tag = tags[-1]

    def row(name: str, values: list[str], target: str = "", ok: bool | None = None) -> str:
        return f"| {name} | " + " | ".join(values) + f" | {target} | {verdict(ok) if target else ''} |"

    def secs(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f} s" if value >= 1 else f"{value:.2f} s"

    def mb(value: float | None) -> str:
        return "n/a" if value is None else f"{value / 1024:.2f} GB" if value >= 1024 else f"{value:.0f} MB"

    lines = [
        f"Measured {results['date']} on {results['machine']}.",
        "",
        "| measure | " + " | ".join(tags) + f" | target ({top_tag}) | {top_tag} |",
        "|---|" + "---|" * len(tags) + "---|---|",
        row("run file (JSONL)", [mb(r["generate"]["bytes"] / 2**20) for r in runs]),
        row("ingest: time", [secs(r["ingest"]["seconds"]) for r in runs], "≤ 60 s",
            top["ingest"]["seconds"] <= TARGETS["ingest_s"]),
        row("ingest: peak memory", [mb(r["ingest"]["peak_mb"]) for r in runs]),
        row("recompute t3_aware: time", [secs(r["recompute"]["seconds"]) for r in runs], "≤ 60 s",
            top["recompute"]["seconds"] <= TARGETS["recompute_s"]),
        row("recompute t3_aware: peak memory", [mb(r["recompute"]["peak_mb"]) for r in runs]),
        row("recompute legacy: time", [secs(r["recompute_legacy"]["seconds"]) for r in runs]),
        row("search index (search-index, run A): time",
            [secs(r["search_index"]["seconds"]) if "search_index" in r else "n/a" for r in runs]),
        row("search index: peak memory", [mb(r["search_index"]["peak_mb"]) if "search_index" in r else "n/a"
                                          for r in runs]),
        row("metrics (F1GR/F1AC, heuristic judge): time",
            [secs(r["metrics"]["seconds"]) if r["metrics"] else "n/a" for r in runs]),
        row("baseline (per-row Python, same rules): time",
            [secs(r["baseline"]["seconds_full"]) + (f" (extrapolated from {label(r['baseline']['responses'])} "
                                                    "sample)" if r["baseline"]["extrapolated"] else "")
             for r in runs]),
        row("recompute speed-up over the baseline",
            [f"{r['baseline']['seconds_full'] / r['recompute']['seconds']:.1f}×" for r in runs], "≥ 5×",
            top["baseline"]["seconds_full"] / top["recompute"]["seconds"] >= TARGETS["speedup"]),
        row("verdicts: baseline = project", [f"{r['agreement']['agree']}/{r['agreement']['compared']}"
                                             for r in runs], "all", top["agreement"]["disagreements"] == 0),
    ]
    for key, name in (("ingest", "ingest"), ("recompute", "recompute t3_aware"), ("search_index", "search index"),
                      ("metrics", "metrics")):
        if top.get(key) and "store_held_s" in top[key]:
            held = [f"{secs(r[key]['store_held_s'])} (longest {secs(r[key]['longest_hold_s'])})"
                    if r.get(key) and "store_held_s" in r[key] else "n/a" for r in runs]
            lines.append(row(f"{name}: store held (others wait)", held, "≤ 3 s",
                             top[key]["store_held_s"] <= TARGETS["store_held_s"]))
    if "ingest_b" in top:
        lines.append(row("second run (compare page): ingest / recompute",
                         [f"{secs(r['ingest_b']['seconds'])} / {secs(r['recompute_b']['seconds'])}" for r in runs]))
    if "reviews" in top:
        lines.append(row("reviewer overrides written (add_override, one by one)",
                         [f"{r['reviews']['overrides']} in {secs(r['reviews']['seconds'])}" for r in runs]))
    scenario_names = [p["scenario"] for p in top["pages"]]
    for i, name in enumerate(scenario_names):
        values = []
        for r in runs:
            page = r["pages"][i]
            values.append(f"{secs(page['server_s'])} (SQL {secs(page['query_s'])})" + (" ERROR" if page["errors"]
                                                                                        else ""))
        if top["pages"][i].get("informational"):
            lines.append(row(f"page: {name}", values, "—", None))
            continue
        ok = top["pages"][i]["server_s"] <= TARGETS["page_s"] and not top["pages"][i]["errors"]
        lines.append(row(f"page: {name}", values, "≤ 1 s", ok))
    lines += [
        row("dashboard process (all pages): peak memory", [mb(r["dashboard"]["peak_mb"]) for r in runs], "≤ 2 GB",
            top["dashboard"]["peak_mb"] <= TARGETS["dashboard_mb"]),
        row("store on disk", [mb(r["store_mb"]) for r in runs]),
        "",
        "Times are wall-clock through the real CLI (`python -m evaluator …` in a subprocess, start-up included); "
        "peak memory is the sampled (every 0.25 s) sum of RSS over the process and its workers (an upper "
        "bound: pages a forked worker shares with its parent count twice). The baseline parses "
        "and evaluates one response at a time in one process; the project's recompute uses its default "
        f"process pool (min(cores, 4) = {min(os.cpu_count() or 1, 4)} here) and includes reading the store and "
        "writing the evaluation. Page times are AppTest runs of app.py with the page selected, modules imported "
        "and Streamlit caches cleared (SQL = time inside evaluator/queries functions). The store holds two runs "
        "of each size (A and B of the same golden set, for the compare page); one response in 1000 of run A "
        "has a reviewer override, so the override-aware queries (Triage always, other pages with overrides "
        "applied) have work to do. Run A has a search index (`search-index`, timed above); run B has none, "
        "and its text-search row shows what a search costs on a big run without one (no target: docs/performance.md "
        "says to build the index from about 100k responses).",
    ]
    errors = [(t, p) for t, r in zip(tags, runs, strict=True) for p in r["pages"] if p["errors"]]
    for tag, page in errors:
        lines.append(f"\nPage error at {tag}, {page['scenario']}: {page['errors'][0][:200]}")
    examples = [(t, r["agreement"]["examples"]) for t, r in zip(tags, runs, strict=True) if r["agreement"]["examples"]]
    for tag, items in examples:
        lines.append(f"\nDisagreements at {tag} (first {len(items)}):")
        lines += [f"- `{orjson.dumps(item).decode()[:400]}`" for item in items]
    return "\n".join(lines) + "\n"


README = ROOT / "docs" / "performance.md"
README_START, README_END = "<!-- bench results: start -->", "<!-- bench results: end -->"


def publish(results: dict[str, Any], out: Path) -> None:
    """results.md, and the same table in docs/performance.md (between markers),
    when the results are the default bench/ ones."""
    report = markdown(results)
    (out / "results.md").write_text(report)
    print(report)
    text = README.read_text()
    if out.resolve() == OUT and README_START in text and README_END in text:
        head, rest = text.split(README_START, 1)
        tail = rest.split(README_END, 1)[1]
        README.write_text(f"{head}{README_START}\n{report}{README_END}{tail}")


def machine() -> str:
    import duckdb

    load = os.getloadavg()[0]
    mem = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
    return (f"{os.cpu_count()} cores, {mem:.0f} GB RAM, Python {platform.python_version()}, "
            f"DuckDB {duckdb.__version__}, load average {load:.1f} at start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="comma-separated numbers of responses (default: 10000,100000,1000000)")
    parser.add_argument("--quick", action="store_true", help="10k only")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="where the big files go (default: a new temp dir under /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the stores afterwards")
    parser.add_argument("--no-compare-run", action="store_true", help="skip the second run (compare page)")
    parser.add_argument("--out", default=str(OUT), help="where results.json and results.md go (default: bench/)")
    parser.add_argument("--report-only", action="store_true",
                        help="measure nothing: write results.md and the table of docs/performance.md from results.json")
    args = parser.parse_args(argv)
    if args.report_only:
        saved = orjson.loads((Path(args.out) / "results.json").read_bytes())
        saved["runs"] = {int(size): run for size, run in saved["runs"].items()}
        publish(saved, Path(args.out))
        return 0
    sizes = [10_000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="rag-bench-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    need_gb = max(sizes) * 3.2e3 / 1e9 + max(sizes) * 2.5e3 / 1e9
    free_gb = shutil.disk_usage(workdir).free / 1e9
    if free_gb < need_gb:
        say(f"only {free_gb:.1f} GB free in {workdir}, the largest size needs about {need_gb:.1f} GB")
        return 1
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "sizes": sizes,
                               "runs": {}}
    say(f"work dir {workdir}; {results['machine']}")
    try:
        for n in sizes:
            results["runs"][n] = bench_size(n, workdir, seed=args.seed, compare_run=not args.no_compare_run)
            if not args.keep:
                for f in workdir.glob(f"bench_{label(n)}*"):
                    f.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    results["bench_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    publish(results, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
