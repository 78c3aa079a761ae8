"""Human ratings added to a real store through evaluator.review.annotations (tests of labels and agreement).

`annotate(db, run)` defines faithfulness and relevance (ordinal 1–4) and fluency (free text) on a
run and has three annotators rate its responses: deterministic, with gaps (an annotator skips
some responses) and hostile names and reasons. Returns {(response_id, annotator, label): value}.
"""

from __future__ import annotations

import random
from pathlib import Path

from evaluator.review import annotations
from evaluator.store.db import connect, fetch_value

ANNOTATORS = ("ann_a", "ann_b", "<b>ann_c</b> [x](http://evil.example)")
HOSTILE_REASON = "<script>alert(1)</script> **bold** [link](javascript:alert(1)) =HYPERLINK(\"x\")"
SCALE = ["1", "2", "3", "4"]


def annotate(db: Path, run: str, *, seed: int = 13, limit: int | None = None) -> dict[tuple[int, str, str], str]:
    rng = random.Random(seed)
    ratings: dict[tuple[int, str, str], str] = {}
    with connect(db) as con:
        run_id = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = $name", {"name": run}))
        annotations.define_label(con, run_id, "faithfulness", "ordinal", SCALE, "Is the answer supported?")
        annotations.define_label(con, run_id, "relevance", "ordinal", SCALE)
        annotations.define_label(con, run_id, "fluency", "text")
        ids = [int(r[0]) for r in con.execute(
            "SELECT response_id FROM responses WHERE run_id = $run ORDER BY response_id LIMIT $limit",
            {"run": run_id, "limit": limit or 1_000_000}).fetchall()]
        for response_id in ids:
            base = rng.randint(1, 4)
            for index, annotator in enumerate(ANNOTATORS):
                if index == 2 and response_id % 4 == 0:
                    continue  # the third annotator skips every fourth response: missing data
                for label in ("faithfulness", "relevance"):
                    value = str(min(4, max(1, base + rng.choice([-1, 0, 0, 1]))))
                    reason = HOSTILE_REASON if index == 2 else f"{annotator} thinks {value}"
                    annotations.add_annotation(con, response_id, annotator, label, value, reason, source="imported")
                    ratings[(response_id, annotator, label)] = value
    return ratings
