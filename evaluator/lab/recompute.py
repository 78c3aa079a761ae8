"""Recompute started from the browser (the Rule lab), with its progress reported to a callback.

``recompute`` reports its progress through a tqdm bar only; this runs it in a thread and reads
that bar (tqdm keeps its live bars in ``tqdm._instances``) from the caller's thread, so a page can
draw the share done without a change to the recompute itself. (A callback parameter on
``evaluator.pipeline.recompute.recompute`` would replace the polling.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from tqdm import tqdm

from evaluator.pipeline.recompute import RecomputeResult, recompute
from evaluator.rules.load import Rules

POLL_S = 0.25  # how often the caller's progress callback is called while the recompute runs


def _bar_progress(label: str) -> float | None:
    """The share done of the live tqdm bar with this label, None when there is none (yet)."""
    with tqdm.get_lock():
        for bar in list(getattr(tqdm, "_instances", ())):
            if bar.desc == label and bar.total:
                return min(1.0, bar.n / bar.total)
    return None


def recompute_with_progress(
    db: str | os.PathLike[str] | None, run_name: str, ruleset: str, rules: Rules,
    on_progress: Callable[[float], None],
) -> RecomputeResult:
    """``recompute(db, run_name, ruleset, rules=rules)``, calling ``on_progress(share done)`` in this
    thread while it runs; its errors are raised here."""
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["result"] = recompute(db, run_name, ruleset, rules=rules, progress=True)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"rule-lab-recompute-{ruleset}", daemon=True)
    worker.start()
    label = f"{run_name} / {ruleset}"  # the bar's description in evaluator.pipeline.recompute
    on_progress(0.0)
    while worker.is_alive():
        worker.join(POLL_S)
        done = _bar_progress(label)
        if done is not None:
            on_progress(done)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    on_progress(1.0)
    result = outcome["result"]
    assert isinstance(result, RecomputeResult)
    return result
