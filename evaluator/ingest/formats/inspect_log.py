"""Inspect AI eval logs: the default `.eval` format (a zip of `header.json` and `samples/*.json`)
and JSON (`inspect eval --log-format json`, or `inspect log convert`).

`{version, status, eval: {task, model, ...}, results, samples: [EvalSample]}`; each sample
has `id`, `epoch`, `input` (a string or chat messages), `target` (a string or a list),
`output: {model, choices: [{message}], completion}`, `scores: {scorer: {value, answer,
explanation}}` and `metadata`.

Mapping: provider = the eval's model, model = the output's model, question_id = the sample id
(with its epoch when the log ran several), question = the input (its last user message),
answer = the completion (else the first choice's text parts; reasoning parts are left out), gold
answers = the target, retrieved = the metadata key naming the context. Pass/fail scores (letters
C/I/P/N, 1/0, true/false) become recorded checks `inspect:<scorer>`, and also ours where they map
(evaluator.ingest.formats.grades); all of them stay in metadata (`inspect`).
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

from evaluator.ingest.formats import grades
from evaluator.ingest.formats.peer import (
    CONTEXT_KEYS,
    PeerRun,
    Where,
    each_object,
    first_key,
    gold_answers,
    last_user_turn,
    message_text,
    require_object,
    retrieved_texts,
)
from evaluator.ingest.readers import InputError, Record, parse_json_bytes, type_name

ZIP_MAGIC = b"PK\x03\x04"


def is_eval_zip(path: Path) -> bool:
    """An Inspect `.eval` log: a zip holding header.json (told from the content, not the name)."""
    try:
        with path.open("rb") as handle:
            if handle.read(4) != ZIP_MAGIC:
                return False
        with zipfile.ZipFile(path) as archive:
            return "header.json" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


MEMBER_LIMIT = 1 << 29  # 512 MiB: a member of an .eval log bigger than this unpacked is refused


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes, refused past MEMBER_LIMIT unpacked (a zip bomb would fill the memory);
    zipfile reads no more than the size the archive states."""
    size = archive.getinfo(name).file_size
    if size > MEMBER_LIMIT:
        raise InputError(str(path), None, name, f"{size:,} bytes unpacked, over the limit of {MEMBER_LIMIT:,}")
    return archive.read(name)


def looks_zipped(path: Path) -> bool:
    """Starts as a zip does (a damaged `.eval` log still does)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ZIP_MAGIC
    except OSError:
        return False


def read_eval_zip(path: Path, digest: Any) -> dict[str, Any]:
    """An `.eval` log as the JSON log's document: the header's fields and its samples, in the
    order Inspect numbers them (`samples/<id>_epoch_<n>.json`). Raises InputError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read the file ({exc.strerror or exc})") from None
    digest.update(data)
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "header.json" not in names:
                raise InputError(str(path), None, "header.json", "not in the archive: not an Inspect .eval log")
            doc = parse_json_bytes(f"{path}!header.json", _member(path, archive, "header.json"))
            if not isinstance(doc, dict):
                raise InputError(f"{path}!header.json", None, None, f"expected an object, got {type_name(doc)}")
            sample_names = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                                  key=_sample_order)
            doc["samples"] = [parse_json_bytes(f"{path}!{name}", _member(path, archive, name)) for name in sample_names]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error, RuntimeError,
            NotImplementedError) as exc:  # damaged, encrypted, or compressed in a way zipfile cannot read
        raise InputError(str(path), None, None, f"not a readable .eval archive ({exc})") from None
    return doc


def _sample_order(name: str) -> tuple[int, int | str, int]:
    stem = name[len("samples/"):-len(".json")]
    sample, _, epoch = stem.rpartition("_epoch_")
    epoch_n = int(epoch) if _plain_number(epoch) else 0
    return (0, int(sample), epoch_n) if _plain_number(sample) else (1, sample or stem, epoch_n)


def _plain_number(text: str) -> bool:
    """ASCII digits, short enough for int() (a name may hold any digits: '²' is a digit too)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


def looks_like(doc: Any) -> bool:
    """By its keys only: a file of this shape with a wrong value gets that value's message."""
    return isinstance(doc, dict) and "eval" in doc and ("samples" in doc or "status" in doc)


def read(path: Path, doc: Any) -> PeerRun:
    doc = require_object(path, doc, "an Inspect eval log")
    top = Where(path, None, "")
    header = top.mapping(doc, "eval")
    provider = Where(path, None, "eval").string(header, "model")
    assert provider is not None
    samples = doc.get("samples")
    if samples is None:
        raise top.error("samples", "the log has no samples (was it written with --no-log-samples?)")
    samples = top.items(doc, "samples")
    if not samples:
        raise top.error("samples", "no samples: nothing to ingest")
    several_epochs = any(isinstance(s, dict) and s.get("epoch", 1) != 1 for s in samples)
    version = doc.get("version")
    run = PeerRun(records=[], version=f"log v{version}" if version is not None else None,
                  file_passed=_accuracy(doc.get("results")))
    for index, where, sample in each_object(path, samples, "samples"):
        run.records.append((index + 1, _record(where, sample, provider, several_epochs)))
    return run


def _accuracy(results: Any) -> tuple[int, int] | None:
    """(passed, failed) by the log's own results, when it has one scorer with an accuracy."""
    scores = results.get("scores") if isinstance(results, dict) else None
    if not isinstance(scores, list) or len(scores) != 1 or not isinstance(scores[0], dict):
        return None
    scored = scores[0].get("scored_samples", results.get("completed_samples"))  # older logs: no scored_samples
    metrics = scores[0].get("metrics")
    metric = metrics.get("accuracy") if isinstance(metrics, dict) else None
    accuracy = metric.get("value") if isinstance(metric, dict) else None
    if (not isinstance(scored, int) or isinstance(scored, bool) or not isinstance(accuracy, int | float)
            or isinstance(accuracy, bool) or not 0 <= accuracy <= 1):
        return None
    passed = round(accuracy * scored)
    return passed, scored - passed


def _record(where: Where, sample: dict[str, Any], provider: str, several_epochs: bool) -> Record:
    sample_id = where.string(sample, "id")
    assert sample_id is not None
    if several_epochs:
        sample_id = f"{sample_id}#{sample.get('epoch', 1)}"
    output = where.mapping(sample, "output")
    record: Record = {
        "question_id": sample_id,
        "question": _question(where, sample),
        "provider": provider,
        "model": output.get("model") if isinstance(output.get("model"), str) and output.get("model") else None,
        "answer": _answer(where, output),
    }
    if sample.get("target") is not None:
        record["gold_answers"] = gold_answers(where, "target", sample["target"])
    metadata = where.mapping(sample, "metadata", required=False)
    context_key = first_key(metadata, CONTEXT_KEYS)
    if context_key is not None:
        record["retrieved"] = retrieved_texts(where, f"metadata.{context_key}", metadata[context_key])
    recorded, kept = _scores(where, sample)
    if recorded:
        record["recorded_checks"] = recorded
    extra = {key: value for key, value in metadata.items() if key != context_key}
    record["inspect"] = {key: value for key, value in (
        ("scores", kept or None), ("metadata", extra or None), ("error", sample.get("error"))) if value is not None}
    return record


def _question(where: Where, sample: dict[str, Any]) -> str:
    value = sample.get("input")
    question = value if isinstance(value, str) else last_user_turn(value) if isinstance(value, list) else None
    if question is None or not question.strip():
        raise where.error("input", "missing required field" if value is None else
                          "expected a string, or chat messages with a last user message holding text")
    return question


def _answer(where: Where, output: dict[str, Any]) -> str:
    completion = output.get("completion")
    if isinstance(completion, str) and completion:
        return completion
    choices = output.get("choices") or []
    if not isinstance(choices, list):
        raise where.error("output.choices", f"expected a list, got {type_name(choices)}")
    if choices:
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        text = message_text(message.get("content")) if isinstance(message, dict) else None
        if text is None:
            raise where.error("output.choices[0].message.content", "expected text")
        return text
    if completion is not None and not isinstance(completion, str):
        raise where.error("output.completion", f"expected a string, got {type_name(completion)}")
    return ""  # no output (an error or a limit): an empty answer


def _scores(where: Where, sample: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    scores = where.mapping(sample, "scores", required=False)
    recorded: dict[str, str] = {}
    kept: dict[str, Any] = {}
    for name, score in scores.items():
        if not isinstance(score, dict) or "value" not in score:
            raise where.error(f"scores.{name}", "expected an object {value, answer?, explanation?}")
        value = score["value"]
        check = grades.check_for(name)
        # a number is a verdict only for a pass/fail scorer we know (match, includes, ...): rouge's 0.0 is a score
        verdict = grades.verdict_of(value) if check is not None or not isinstance(value, int | float) else None
        if verdict is not None:
            grades.record(recorded, check, grades.grade_name("inspect", name), verdict)
        kept[name] = {key: item for key, item in (
            ("value", value), ("explanation", score.get("explanation")), ("check", check if verdict else None))
            if item is not None}
    return recorded, kept
