"""Pages on runs with many names (issue 15): thousands of providers, and 10 kB names.

The rows are bench.generate's (Ramayana-shaped, templates T1/T2/T3, recorded verdicts), but
every response has its own provider (`provider-0000001`, …), so a run of N responses has N
providers; with --name-length L the provider names and question ids are padded to L
characters (hostile input: a 10 kB name must not blow up a chart, a select or a table).
Templates cannot vary (ingest accepts T1/T2/T3 only), so providers and question ids are the
dimensions a hostile file can blow up.

For each size: generate run A and run B (seed + 1, same question ids and providers) through
the real CLI: ingest, recompute t3_aware and legacy (Before/after needs two evaluations),
metrics of A; then every page timed by bench.pages (the same AppTest harness as the main
benchmark) in a subprocess. Prints one JSON object; bench.run adds it to results.json.

    python -m bench.many_names [--providers 1000,5000,100000] [--long-names 5000] [--name-length 10000]
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

from bench.generate import RowMaker

DEFAULT_PROVIDERS = (1_000, 5_000, 100_000)
DEFAULT_LONG_NAMES = 5_000  # responses of the run with 10 kB names (each name is its own provider)
NAME_LENGTH = 10_000


def padded(name: str, length: int) -> str:
    """`name` padded to `length` characters (unchanged when length is 0 or shorter than the name)."""
    return name + "-" + "x" * (length - len(name) - 1) if length > len(name) + 1 else name


def write_run(path: str | Path, rows: int, *, seed: int = 7, name_length: int = 0) -> dict[str, Any]:
    """Write `rows` responses to `path` (JSONL), each from its own provider; names padded to name_length."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with path.open("wb", buffering=1 << 20) as out:
        for i, record in enumerate(RowMaker(seed).rows(rows), start=1):
            record["provider"] = padded(f"provider-{i:07d}", name_length)
            record["question_id"] = padded(record["question_id"], name_length)
            out.write(orjson.dumps(record) + b"\n")
    return {"path": str(path), "rows": rows, "bytes": path.stat().st_size,
            "seconds": round(time.perf_counter() - started, 2)}


def bench_names(rows: int, workdir: Path, *, seed: int, name_length: int = 0) -> dict[str, Any]:
    from bench.run import _strip, cli, label, measure, say

    tag = label(rows) + (f"_names{name_length}" if name_length else "")
    run_a, run_b = f"names_{tag}", f"names_{tag}_b"
    db = workdir / f"names_{tag}.duckdb"
    res: dict[str, Any] = {"responses": rows, "providers": rows, "name_length": name_length}
    for run, run_seed in ((run_a, seed), (run_b, seed + 1)):
        path = workdir / f"{run}.jsonl"
        say(f"names {tag}: generating {run}")
        generated = write_run(path, rows, seed=run_seed, name_length=name_length)
        res.setdefault("bytes", generated["bytes"])
        res[f"ingest_{run}"] = _strip(measure(cli("ingest", "--db", str(db), str(path), "--name", run)))
        path.unlink()
        rulesets = ("t3_aware", "legacy") if run == run_a else ("t3_aware",)
        for ruleset in rulesets:
            res[f"recompute_{run}_{ruleset}"] = _strip(measure(cli("recompute", "--db", str(db), "--run", run,
                                                                   "--ruleset", ruleset)))
    say(f"names {tag}: metrics")
    res["metrics"] = _strip(measure(cli("metrics", "--db", str(db), "--run", run_a)))
    say(f"names {tag}: pages")
    pages = measure([sys.executable, "-m", "bench.many_names", "pages", "--db", str(db), "--run", run_a,
                     "--against", run_b])
    res["pages"] = orjson.loads(pages["stdout"])
    res["dashboard"] = {"seconds": pages["seconds"], "peak_mb": pages["peak_mb"], "maxrss_mb": pages["maxrss_mb"]}
    res["store_mb"] = round(sum(p.stat().st_size for p in workdir.glob(f"names_{tag}.duckdb*")) / 2**20)
    return res


def extra_scenarios(db: str, run: str) -> list[tuple[str, str, dict[str, str]]]:
    """What many names add to bench.pages' scenarios: a provider outside the top, 'type to filter'."""
    import duckdb

    from bench.pages import page_files

    with duckdb.connect(db, read_only=True) as con:
        provider, question_id = con.execute(
            """SELECT provider, question_id FROM responses WHERE run_id = (SELECT run_id FROM runs WHERE name = ?)
               ORDER BY response_id LIMIT 1 OFFSET (SELECT n_responses / 2 FROM runs WHERE name = ?)""",
            [run, run],
        ).fetchall()[0]
    page = page_files()
    base = {"run": run}
    typed = provider[:12]  # 'provider-000' + …: matches thousands of providers
    return [
        ("Triage: one provider outside the top", page["triage"], {**base, "provider": provider}),
        ("Triage: provider filter typed", page["triage"], {**base, "provider_filter": typed}),
        ("Triage: Reviewer overrides vs evaluator tab", page["triage"],
         {**base, "tab": "Reviewer overrides vs evaluator"}),
        ("Overview: providers filtered", page["overview"], {**base, "providers": typed}),
        ("Before/after: flips of one provider", page["before_after"], {**base, "flip_provider": provider}),
        ("Review: response picker, filtered", page["review"], {**base, "find": question_id[:8]}),
    ]


def time_pages(argv: list[str]) -> int:
    """`python -m bench.many_names pages --db STORE --run A --against B`: bench.pages' scenarios and
    extra_scenarios, timed the same way (warm: modules imported, caches cleared). Prints JSON."""
    import os
    import resource

    from bench import pages

    parser = argparse.ArgumentParser(prog="bench.many_names pages")
    parser.add_argument("--db", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--against")
    args = parser.parse_args(argv)
    os.environ["EVALUATOR_DB"] = str(Path(args.db).resolve())
    os.chdir(pages.ROOT)
    sys.path.insert(0, str(pages.ROOT))
    pages.instrument_queries()
    out = []
    for label, page, query in [*pages.scenarios(args.db, args.run, args.against),
                               *extra_scenarios(args.db, args.run)]:
        pages.run_page(page, query)
        app, warm = pages.run_page(page, query, fresh=True)
        queries = dict(sorted(pages.QUERY_TIME.items(), key=lambda kv: -kv[1]))
        out.append({"scenario": label, "page": page, "query": {k: v[:40] for k, v in query.items()},
                    "server_s": round(warm, 3), "query_s": round(sum(queries.values()), 3),
                    "top_queries": {k: round(v, 3) for k, v in list(queries.items())[:4]},
                    "errors": [str(e.value)[:300] for e in app.exception],
                    "maxrss_mb_after": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)})
        print(f"  {label}: {warm:.2f} s (queries {sum(queries.values()):.2f} s)", file=sys.stderr, flush=True)
    sys.stdout.write(orjson.dumps(out).decode() + "\n")
    return 0


def run_all(sizes: list[int], long_rows: int, name_length: int, workdir: Path, *, seed: int = 7,
            keep: bool = False) -> dict[str, Any]:
    """Every size with short names, then `long_rows` responses with names of `name_length` characters."""
    from bench.run import label

    out: dict[str, Any] = {}
    cases = [(n, 0) for n in sizes] + ([(long_rows, name_length)] if long_rows else [])
    for n, length in cases:
        key = label(n) + (f", {length // 1000} kB names" if length else "")
        out[key] = bench_names(n, workdir, seed=seed, name_length=length)
        if not keep:
            for stale in workdir.glob("names_*"):
                stale.unlink()
    return out


def markdown(results: dict[str, Any], header: str = "") -> str:
    """One row per page scenario, one column per case: server time (SQL time)."""
    cases = list(results)
    lines = [*([header, ""] if header else []),
             "| page (one provider per response) | " + " | ".join(cases) + " | target |",
             "|---|" + "---|" * len(cases) + "---|"]
    scenarios = [p["scenario"] for p in results[cases[0]]["pages"]]
    for i, name in enumerate(scenarios):
        cells = []
        for case in cases:
            page = results[case]["pages"][i]
            cells.append(f"{page['server_s']:.2f} s (SQL {page['query_s']:.2f} s)" + (" ERROR" if page["errors"]
                                                                                       else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " | ≤ 1 s |")
    lines.append("| dashboard process: peak memory | "
                 + " | ".join(f"{results[c]['dashboard']['peak_mb']} MB" for c in cases) + " | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pages"]:
        return time_pages(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", default=",".join(str(n) for n in DEFAULT_PROVIDERS),
                        help="comma-separated run sizes, one provider per response (default: 1000,5000,100000)")
    parser.add_argument("--long-names", type=int, default=DEFAULT_LONG_NAMES,
                        help="responses of the run with long names (0: skip it)")
    parser.add_argument("--name-length", type=int, default=NAME_LENGTH)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent),
                        help="where many_names.json and many_names.md go (default: bench/)")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.providers.split(",") if s.strip()]
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="rag-names-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = run_all(sizes, args.long_names, args.name_length, workdir, seed=args.seed, keep=args.keep)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    from bench.run import machine

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    date = time.strftime("%Y-%m-%d %H:%M")
    (out / "many_names.json").write_bytes(orjson.dumps({"date": date, "machine": machine(), "cases": results},
                                                       option=orjson.OPT_INDENT_2))
    report = markdown(results, f"Measured {date} on {machine()} (`python -m bench.many_names`).")
    (out / "many_names.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
