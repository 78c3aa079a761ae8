"""Server-side run time of every dashboard page on a store (run in its own process by bench.run).

Each scenario runs the real app (app.py + st.navigation) through Streamlit's AppTest, as the
page tests do: once cold (imports, empty caches; on a PostgreSQL store, a big run's first visit,
which reads PostgreSQL and starts this process's local copy: its wait is `copy_wait_s`), once
warm (modules imported, st caches cleared: what a user opening the page pays), and once more in
the same session (a rerun, as after clicking a widget). While the warm run executes, every public function of the
page's query modules (evaluator/queries/*.py), and the constructor and public methods of
their query classes (RunComparison, BeforeAfter), is timed, so the table can tell SQL time from
rendering time. Prints one JSON object.

    python -m bench.pages --db STORE --run RUN [--against RUN_B] [--only TEXT]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import os
import pkgutil
import resource
import sys
import time
from collections import defaultdict
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
QUERY_TIME: dict[str, float] = defaultdict(float)
_DEPTH = [0]


def _timed(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _DEPTH[0] += 1
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:  # count the outermost query call only
                QUERY_TIME[name] += time.perf_counter() - started

    return wrapper


def instrument_queries() -> None:
    """Wrap the public functions of evaluator.queries.* (before any page imports them)."""
    import evaluator.queries as package

    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"evaluator.queries.{info.name}")
        for attr, value in list(vars(module).items()):
            if attr.startswith("_") or not str(getattr(value, "__module__", "")).startswith("evaluator.queries"):
                continue
            if inspect.isfunction(value):
                setattr(module, attr, _timed(f"{info.name}.{attr}", value))
            elif inspect.isclass(value) and value.__module__ == module.__name__ and not is_dataclass(value):
                # a query class (RunComparison): its constructor and public methods run SQL
                for method in [m for m, f in vars(value).items() if inspect.isfunction(f)
                               and (m == "__init__" or not m.startswith("_"))]:
                    setattr(value, method, _timed(f"{info.name}.{attr}.{method}", getattr(value, method)))


# Run B has no search index: how a search costs on a big run before `search-index` (no target).
NO_INDEX = "Triage: text search, run without a search index"


def scenarios(db: str, run: str, against: str | None) -> list[tuple[str, str, dict[str, str]]]:
    from evaluator.store.db import connect

    with connect(db, read_only=True) as con:  # a store file or a PostgreSQL store
        run_id, mid = con.execute(
            """SELECT r.run_id, (SELECT quantile_disc(response_id, 0.5) FROM responses x WHERE x.run_id = r.run_id)
               FROM runs r WHERE r.name = ?""",
            [run],
        ).fetchall()[0]
        evaluation = con.execute(
            "SELECT max(evaluation_id) FROM evaluations WHERE run_id = ? AND ruleset = 't3_aware'", [run_id]
        ).fetchall()[0][0]
    base = {"run": run}
    compare = {**base, "against": against} if against else base
    page = page_files()
    return [
        ("Overview", page["overview"], base),
        ("Before/after", page["before_after"], base),
        ("Compare runs", page["compare"], compare),
        ("Metrics", page["metrics"], base),
        ("Triage", page["triage"], base),
        ("Triage: flag + text search", page["triage"],
         {**base, "flag": "potential_hallucination", "q": "annotated edition"}),
        ("Triage: page 400", page["triage"], {**base, "page": "400"}),
        ("Triage: text search", page["triage"], {**base, "q": "annotated edition"}),
        ("Triage: one-word search", page["triage"], {**base, "q": "Rama"}),
        ("Triage: failing, one check", page["triage"], {**base, "check": "cites_shlokas", "verdict": "FAIL"}),
        ("Overview with overrides", page["overview"], {**base, "overrides": "1"}),
        ("Before/after with overrides", page["before_after"], {**base, "overrides": "1"}),
        *([(NO_INDEX, page["triage"], {"run": against, "q": "annotated edition"})] if against else []),
        ("Review: response picker", page["review"], base),
        ("Review: one response", page["review"], {**base, "response": str(mid), "evaluation": str(evaluation)}),
    ]


def page_files() -> dict[str, str]:
    """Page scripts by file stem (the navigation, dashboard/shell.py, lists pages/<stem>.py)."""
    return {path.stem: f"pages/{path.name}" for path in sorted((ROOT / "pages").glob("*.py"))}


def run_page(page: str, query: dict[str, str], *, fresh: bool = False) -> tuple[Any, float]:
    """Run `page` once (timed). fresh: Streamlit caches and the query timings are cleared first."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    # One run first, untimed: st.navigation registers the pages' url paths, without which
    # switch_page() cannot find a page whose url_path differs from its file name (it would
    # silently run the default page instead).
    app.run()
    if fresh:  # after that run, so the default page's queries neither warm caches nor count
        st.cache_data.clear()
        st.cache_resource.clear()
        QUERY_TIME.clear()
    app.switch_page(page)
    app.query_params.update(query)
    started = time.perf_counter()
    app.run()
    return app, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--against")
    parser.add_argument("--only", help="the scenarios whose name holds this text (e.g. Triage)")
    args = parser.parse_args(argv)
    from evaluator.store.postgres import is_server

    os.environ["EVALUATOR_DB"] = args.db if is_server(args.db) else str(Path(args.db).resolve())
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    instrument_queries()
    from evaluator.queries import local_copy

    out = []
    for label, page, query in scenarios(args.db, args.run, args.against):
        if args.only and args.only not in label:
            continue
        _, cold = run_page(page, query)
        started = time.perf_counter()  # a big PostgreSQL run: the copy the first visit started (local_copy)
        local_copy.wait(os.environ["EVALUATOR_DB"])
        copy_wait = time.perf_counter() - started
        app, warm = run_page(page, query, fresh=True)
        queries = dict(sorted(QUERY_TIME.items(), key=lambda kv: -kv[1]))
        started = time.perf_counter()
        app.run()
        rerun = time.perf_counter() - started
        errors = [str(e.value)[:300] for e in app.exception]
        title = app.title[0].value if len(app.title) else None
        out.append({"scenario": label, "page": page, "title": title, "query": query, "informational": label == NO_INDEX,
                    "cold_s": round(cold, 3), "copy_wait_s": round(copy_wait, 3),
                    "server_s": round(warm, 3), "rerun_s": round(rerun, 3),
                    "query_s": round(sum(queries.values()), 3),
                    "top_queries": {k: round(v, 3) for k, v in list(queries.items())[:4]}, "errors": errors,
                    "maxrss_mb_after": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)})
        print(f"  {label}: {warm:.2f} s (queries {sum(queries.values()):.2f} s)", file=sys.stderr, flush=True)
    sys.stdout.write(orjson.dumps(out).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
