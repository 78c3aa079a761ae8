"""A run's columns while it is read: buffered responses, questions, retrieved items and recorded
verdicts, moved into Arrow batches in files every BATCH_ROWS responses (evaluator.store.spill)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from evaluator.ingest.formats import Label
from evaluator.store.spill import POOL, SpilledBatches

RESPONSE_SCHEMA = pa.schema([
    ("row", pa.int64()), ("question_id", pa.string()), ("provider", pa.string()), ("model", pa.string()),
    ("answer", pa.string()), ("answer_hash", pa.string()), ("template", pa.string()), ("classification", pa.string()),
    ("answerable", pa.bool_()), ("comment", pa.string()), ("outcome", pa.string()), ("metadata", pa.string()),
    ("source_line", pa.int64()), ("retrieval_given", pa.bool_())])
RETRIEVED_SCHEMA = pa.schema(
    [("row", pa.int64()), ("rank", pa.int32()), ("chunk_key", pa.string()), ("score", pa.float64())])
CHUNK_SCHEMA = pa.schema([("chunk_key", pa.string()), ("chunk_id", pa.string()), ("text", pa.string())])
RECORDED_SCHEMA = pa.schema([("row", pa.int64()), ("check_name", pa.string()), ("verdict", pa.string())])
ANNOTATION_SCHEMA = pa.schema([
    ("row", pa.int64()), ("annotator", pa.string()), ("label", pa.string()), ("value", pa.string()),
    ("value_num", pa.float64()), ("reason", pa.string()), ("created_us", pa.int64())])
LABEL_SCHEMA = pa.schema([("label", pa.string()), ("scale", pa.string()), ("scale_values", pa.string()),
                          ("description", pa.string()), ("value_names", pa.string())])
BATCH_ROWS = 50_000  # responses buffered as Python lists before they go to an Arrow batch in a file


def answer_hash(answer: str) -> str:
    """responses.answer_hash: hex sha256 of the answer's UTF-8, as DuckDB's sha256(answer) gives it
    (computed while reading, in the readers' processes, rather than in the store's write)."""
    return hashlib.sha256(answer.encode()).hexdigest()


@dataclass
class Columns:
    """Column-wise buffers. Responses, retrieved items and recorded verdicts go to Arrow batches
    in files in `folder` every BATCH_ROWS responses, so a large run is not held in memory;
    questions stay as lists because a later line may fill in a question's missing fields."""

    folder: str
    responses: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in RESPONSE_SCHEMA.names})
    questions: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in (
        "question_id", "question", "expected_template", "expected_routing", "gold_answers", "expected_ids")})
    retrieved: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in RETRIEVED_SCHEMA.names})
    chunks: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in CHUNK_SCHEMA.names})
    recorded: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ("row", "check_name", "verdict")})
    annotations: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in ANNOTATION_SCHEMA.names})
    labels: list[Label] = field(default_factory=list)
    n_responses: int = 0
    any_template: bool = False
    # Some record holds `retrieved` (an empty list included). A file of ours that records retrieval
    # for no response stores its responses as retrieval_recorded = false: unknown, not "nothing
    # retrieved"; in a peer's file (per_record_retrieval), each response whose record holds none.
    records_retrieval: bool = False
    per_record_retrieval: bool = False
    response_batches: SpilledBatches = field(init=False)
    retrieved_batches: SpilledBatches = field(init=False)
    recorded_batches: SpilledBatches = field(init=False)

    def __post_init__(self) -> None:
        self.response_batches = SpilledBatches(RESPONSE_SCHEMA, self.folder)
        self.retrieved_batches = SpilledBatches(RETRIEVED_SCHEMA, self.folder)
        self.recorded_batches = SpilledBatches(RECORDED_SCHEMA, self.folder)

    def flush(self) -> None:
        """Move the buffered responses, retrieved items and recorded verdicts into Arrow batches
        in files (evaluator.store.spill)."""
        for buffer, batches in ((self.responses, self.response_batches), (self.retrieved, self.retrieved_batches),
                                (self.recorded, self.recorded_batches)):
            if buffer[batches.schema.names[0]]:
                batches.append(pa.RecordBatch.from_pydict(buffer, schema=batches.schema))
                for values in buffer.values():
                    values.clear()

    def close(self) -> None:
        """Flush, and finish the files (before another process reads them)."""
        self.flush()
        for batches in (self.response_batches, self.retrieved_batches, self.recorded_batches):
            batches.close()

    def add_response(self, row: int, line_no: int, question_id: str, provider: str, answer: str,
                     template: str | None, answerable: bool | None, metadata: str | None,
                     optional: dict[str, str | None], retrieval_given: bool) -> None:
        """One response into the buffers (``optional``: the OPTIONAL_STRINGS by name;
        ``retrieval_given``: its record holds `retrieved`)."""
        responses = self.responses
        self.n_responses += 1
        self.any_template = self.any_template or template is not None
        responses["row"].append(row)
        responses["question_id"].append(question_id)
        responses["provider"].append(provider)
        responses["model"].append(optional["model"])
        responses["answer"].append(answer)
        responses["answer_hash"].append(answer_hash(answer))
        responses["template"].append(template)
        responses["classification"].append(optional["classification"])
        responses["answerable"].append(answerable)
        responses["comment"].append(optional["comment"])
        responses["outcome"].append(optional["outcome"])
        responses["metadata"].append(metadata)
        responses["source_line"].append(line_no)
        responses["retrieval_given"].append(retrieval_given)

    def recorded_table(self) -> pa.Table:
        """Every recorded verdict: (row, check_name, verdict), the names and verdicts dictionary-
        encoded (six a response: at a million responses, 100 MB rather than 200)."""
        self.flush()
        encoded = [pa.RecordBatch.from_arrays([b["row"], pc.dictionary_encode(b["check_name"], memory_pool=POOL),
                                               pc.dictionary_encode(b["verdict"], memory_pool=POOL)],
                                              names=RECORDED_SCHEMA.names)
                   for b in self.recorded_batches]
        if not encoded:
            return pa.table({"row": pa.array([], pa.int64()), "check_name": pa.array([], pa.string()),
                             "verdict": pa.array([], pa.string())})
        return pa.Table.from_batches(encoded)
