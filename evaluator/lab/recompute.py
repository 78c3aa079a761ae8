"""Recompute started from the browser (the Rule lab), with its progress reported to a callback.

The recompute runs in a thread and reports the share done through its ``progress`` callback; the
caller's thread (a Streamlit script, whose elements may only be drawn from it) polls that share
and hands it on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from evaluator.pipeline.recompute import RecomputeResult, recompute
from evaluator.rules.load import Rules

POLL_S = 0.25  # how often the caller's progress callback is called while the recompute runs


def recompute_with_progress(
    db: str | os.PathLike[str] | None, run_name: str, ruleset: str, rules: Rules,
    on_progress: Callable[[float], None],
) -> RecomputeResult:
    """``recompute(db, run_name, ruleset, rules=rules)``, calling ``on_progress(share done)`` in this
    thread while it runs; its errors are raised here."""
    outcome: dict[str, object] = {}
    share: list[float] = [0.0]  # written by the recompute's thread, read by this one

    def work() -> None:
        try:
            outcome["result"] = recompute(db, run_name, ruleset, rules=rules,
                                          progress=lambda done: share.__setitem__(0, done))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"rule-lab-recompute-{ruleset}", daemon=True)
    worker.start()
    on_progress(0.0)
    while worker.is_alive():
        worker.join(POLL_S)
        on_progress(share[0])
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    on_progress(1.0)
    result = outcome["result"]
    assert isinstance(result, RecomputeResult)
    return result
