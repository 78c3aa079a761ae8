"""Peers' evaluation files read into our records: InspectorRAGet, promptfoo, Inspect AI logs, DeepEval
test runs (JSON documents), Ragas results (CSV) and Phoenix span exports (JSONL).

Each JSON reader takes the parsed document and returns a `PeerRun`: canonical records (the
fields of SPEC §3, unknown keys kept as metadata) plus, where the file has them, the run's
human labels and each response's annotations. Every problem is an InputError naming the
file, the record and the field; nothing is half-read.
"""

from __future__ import annotations

from evaluator.ingest.formats.peer import Annotation, Label, PeerRun
from evaluator.ingest.readers import PEER_FORMATS

__all__ = ["PEER_FORMATS", "Annotation", "Label", "PeerRun"]
