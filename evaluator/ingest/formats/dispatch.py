"""A peer's parsed JSON document to its reader, by format (the readers import late: one file, one reader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.ingest.formats.peer import PeerRun


def read_peer(path: Path, fmt: str, doc: Any, *, provider: str, answer_path: str | None = None) -> PeerRun:
    """Records of a peer's JSON document in format `fmt` (one of PEER_FORMATS); `provider`: the
    provider of a file that names none; `answer_path`: where a JSON-object output keeps its answer."""
    if fmt == "inspectorraget":
        from evaluator.ingest.formats.inspectorraget import read as read_inspectorraget

        return read_inspectorraget(path, doc)
    if fmt == "promptfoo":
        from evaluator.ingest.formats.promptfoo import read as read_promptfoo

        return read_promptfoo(path, doc, answer_path=answer_path)
    if fmt == "inspect":
        from evaluator.ingest.formats.inspect_log import read as read_inspect_log

        return read_inspect_log(path, doc)
    if fmt == "deepeval":
        from evaluator.ingest.formats.deepeval import read as read_deepeval

        return read_deepeval(path, doc, provider=provider)
    raise ValueError(f"not a peer format: {fmt!r}")
