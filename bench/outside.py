"""Real files other tools wrote, in as-is (issue 28): one line per file of a folder.

Each file is ingested into a fresh store with nothing but its path (Phoenix exports of LLM and
RETRIEVER spans of one project, `phoenix_<name>_llm_spans.jsonl` and `..._retriever_spans.jsonl`,
together, as one run), its run recomputed under t3_aware, and the line says:

- the format told from the content, and the responses and providers read;
- the recorded verdicts' PASS/FAIL (what `report --recorded` counts) against the file's own
  summary (promptfoo's stats, DeepEval's testPassed/testFailed, Inspect's accuracy);
- invented failures: `retrieval_check` FAIL or `no_context_warning` on responses whose file records
  no retrieval (must be 0), and answers still a provider's JSON envelope (an object with an answer field; must be 0);
- the flags t3_aware raises, and the error for a file that does not ingest.

Files that are not run exports (human-labelled data sets) show their error and are counted apart.

    python -m bench.outside [FOLDER]   (default: ../shared/outside beside the checkout)
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from evaluator.ingest.formats.peer import ANSWER_KEYS
from evaluator.ingest.loader import prepare_run, store_run
from evaluator.ingest.readers import InputError
from evaluator.pipeline.recompute import recompute
from evaluator.store.db import connect

DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "outside"
RUN_SUFFIXES = (".json", ".jsonl", ".csv", ".eval", ".parquet")
PHOENIX_PAIR = re.compile(r"phoenix_(?P<name>.+)_(?P<kind>llm|retriever)_spans\.jsonl")


def runs_of(folder: Path) -> list[list[Path]]:
    """The folder's run files, each a list of the paths that make one run."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in RUN_SUFFIXES)
    runs: list[list[Path]] = []
    pairs: dict[str, list[Path]] = {}
    for path in files:
        match = PHOENIX_PAIR.fullmatch(path.name)
        if match:
            pairs.setdefault(match["name"], []).append(path)
        else:
            runs.append([path])
    for paths in pairs.values():  # the LLM spans first: the run is named after them
        runs.append(sorted(paths, key=lambda p: "retriever" in p.name))
    return runs


def measure(db: Path, paths: list[Path]) -> dict[str, Any]:
    name = PHOENIX_PAIR.sub(r"phoenix_\g<name>", paths[0].name) if len(paths) > 1 else paths[0].stem
    with prepare_run(paths[0], name=name, more_paths=paths[1:]) as prepared:
        result = store_run(db, prepared)
        line: dict[str, Any] = {"format": prepared.fmt, "responses": result.n_responses,
                                "file_stats": prepared.understood.file_passed}
    recompute(db, result.name, "t3_aware")
    with connect(db) as con:
        params = {"run": result.run_id}
        line["providers"] = con.execute("SELECT count(DISTINCT provider) FROM responses WHERE run_id = $run",
                                        params).fetchone()[0]  # type: ignore[index]
        line["recorded"] = dict(con.execute(
            """SELECT c.verdict, sum(c.n) FROM evaluation_counts c JOIN evaluations e USING (evaluation_id)
               WHERE e.run_id = $run AND e.ruleset = 'recorded' AND c.target = 'overall' GROUP BY c.verdict""",
            params).fetchall())
        evaluation = """(SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run AND ruleset = 't3_aware')"""
        line["invented"] = con.execute(
            f"""SELECT count(*) FROM responses r WHERE r.run_id = $run AND r.retrieval_recorded = false
                AND (EXISTS (SELECT 1 FROM check_results c WHERE c.evaluation_id = {evaluation}
                             AND c.response_id = r.response_id AND c.check_name = 'retrieval_check'
                             AND c.verdict = 'FAIL')
                     OR EXISTS (SELECT 1 FROM flags f WHERE f.evaluation_id = {evaluation}
                                AND f.response_id = r.response_id AND f.flag = 'no_context_warning'))""",
            params).fetchone()[0]  # type: ignore[index]
        answers = [row[0] for row in con.execute("SELECT answer FROM responses WHERE run_id = $run", params).fetchall()]
        line["raw_json"] = sum(1 for answer in answers if _json_object(answer))
        line["flags"] = dict(con.execute(
            f"SELECT flag, count(*) FROM flags WHERE evaluation_id = {evaluation} GROUP BY flag ORDER BY flag",
            params).fetchall())
        line["overall"] = dict(con.execute(
            f"SELECT overall, count(*) FROM response_results WHERE evaluation_id = {evaluation} GROUP BY overall",
            params).fetchall())
    return line


def _json_object(answer: str) -> bool:
    """A provider's JSON envelope left as the answer: an object holding a field that gives the
    answer (a model asked to reply in JSON writes other objects; those are its answer)."""
    if not answer.lstrip().startswith("{"):
        return False
    try:
        value = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and any(isinstance(value.get(key), str) for key in ANSWER_KEYS)


def describe(paths: list[Path], line: dict[str, Any]) -> str:
    recorded = line["recorded"]
    rec = f"{recorded.get('PASS', 0)} pass / {recorded.get('FAIL', 0)} fail" if recorded else "none"
    stats = line["file_stats"]
    own = f"{stats[0]} pass / {stats[1]} fail" if stats else "-"
    same = "" if not stats or not recorded else (" (=)" if (recorded.get("PASS", 0), recorded.get("FAIL", 0))
                                                 == tuple(stats) else " (DIFFERS)")
    flags = ", ".join(f"{k} {v}" for k, v in line["flags"].items()) or "none"
    return (f"{' + '.join(p.name for p in paths)}: {line['format']}, {line['responses']} responses, "
            f"{line['providers']} provider(s); recorded {rec}, file says {own}{same}; t3_aware overall "
            f"{line['overall'].get('PASS', 0)} pass / {line['overall'].get('FAIL', 0)} fail; invented retrieval "
            f"failures {line['invented']}; JSON envelopes as answers {line['raw_json']}; flags: {flags}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"no folder {args.folder}", file=sys.stderr)
        return 2
    ok = refused = 0
    with tempfile.TemporaryDirectory(prefix="outside-") as work:
        for index, paths in enumerate(runs_of(args.folder)):
            db = Path(work) / f"store{index}.duckdb"
            try:
                line = measure(db, paths)
            except InputError as exc:
                refused += 1
                print(f"{' + '.join(p.name for p in paths)}: not ingested: {exc}"[:400])
                continue
            ok += 1
            print(describe(paths, line))
    print(f"{ok} ingested, {refused} not ingested")
    return 0


if __name__ == "__main__":
    sys.exit(main())
