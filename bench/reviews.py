"""Reviewer overrides for a benchmark store, so the override-aware queries have work to do.

Through the real write path (evaluator.review.overrides.add_override): one response in 1000 of a run
(picked by hash, so every provider and template has some) gets an override, alternating
'overall' and check-level ones, as reviewers would leave them.

    python -m bench.reviews --db STORE --run RUN [--every 1000]
"""

from __future__ import annotations

import argparse
import time

import orjson

from evaluator.review.config import ReviewConfig
from evaluator.review.overrides import add_override
from evaluator.store.db import connect

CHECKS = ("cites_shlokas", "no_hallucination", "follows_template")


def add_reviews(db: str, run: str, every: int = 1000) -> dict[str, float | int]:
    started = time.perf_counter()
    with connect(db) as con:
        evaluation_id, = con.execute(
            "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
            "WHERE name = ? AND ruleset = 't3_aware'", [run]).fetchall()[0]
        rows = con.execute(
            """SELECT rr.response_id, rr.overall FROM response_results rr
               WHERE rr.evaluation_id = ? AND hash(rr.response_id) % ? = 0 ORDER BY rr.response_id""",
            [evaluation_id, every]).fetchall()
        config = ReviewConfig()
        for index, (response_id, overall) in enumerate(rows):
            flipped = "PASS" if overall == "FAIL" else "FAIL"
            if index % 2:
                add_override(con, response_id, CHECKS[index % 3], flipped, "benchmark review", "bench",
                             evaluation_id, config=config)
            else:
                add_override(con, response_id, "overall", flipped, "benchmark review", "bench",
                             evaluation_id, config=config)
    return {"overrides": len(rows), "seconds": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--every", type=int, default=1000)
    args = parser.parse_args(argv)
    print(orjson.dumps(add_reviews(args.db, args.run, args.every)).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
