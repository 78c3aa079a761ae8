"""Arize Phoenix span exports: `px.Client().get_spans_dataframe()` written as JSON lines
(`to_json(orient="records", lines=True)`), one span a line, attributes flattened with dots
(`attributes.retrieval.documents`) or nested (`attributes: {retrieval: {documents}}`).

A trace is one request: its RETRIEVER spans hold the documents, its LLM spans the model's
calls. Each outermost LLM span (one whose parent is not an LLM span: LlamaIndex records
`acomplete` around `complete`) is a response: question = what the span's prompt (`input.value`:
text, or JSON holding `prompt`, `query_str` or chat `messages`) asks — its last "Query: …" or
"Question: …" line when it ends with one, as RAG templates do (the whole prompt kept in metadata),
else the whole prompt — answer = its output's text (JSON
`{text}` and the like, peer.answer_of), provider = `llm.model_name` (else `--provider`, else the
run's name), retrieved = the documents of the trace's RETRIEVER spans ({document.id,
document.content, document.score}). When no file given holds RETRIEVER spans, retrieval is not
recorded; a trace without documents retrieved nothing. Exports of one kind of span each
(Phoenix's LLM and RETRIEVER tables) are ingested together: `evaluator ingest llm.jsonl
retriever.jsonl`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from evaluator.ingest.formats.peer import PeerRun, Where, answer_of, context_id, last_user_turn, message_text
from evaluator.ingest.readers import InputError, Record, type_name


def looks_like(first: Any) -> bool:
    """A JSONL file's first record is a span of Phoenix's dataframe."""
    if not isinstance(first, dict):
        return False
    flat = "context.span_id" in first or isinstance(first.get("context"), dict) and "span_id" in first["context"]
    return flat and ("span_kind" in first or _attr(first, "openinference.span.kind") is not None)


def _get(obj: dict[str, Any], dotted: str) -> Any:
    """A field of a span, flattened (`a.b.c` as one key) or nested, or any mix of the two."""
    if dotted in obj:
        return obj[dotted]
    parts = dotted.split(".")
    for cut in range(1, len(parts)):
        inner = obj.get(".".join(parts[:cut]))
        if isinstance(inner, dict):
            found = _get(inner, ".".join(parts[cut:]))
            if found is not None:
                return found
    return None


def _attr(span: dict[str, Any], name: str) -> Any:
    return _get(span, f"attributes.{name}")


def read(path: Path, spans: Iterable[tuple[Path, int, Any]], *, provider: str, answer_path: str | None = None
         ) -> PeerRun:
    """Spans as (file, line, span) from one or more exports of the same project."""
    traces: dict[str, list[tuple[Where, dict[str, Any]]]] = {}
    any_retriever = False
    for file, line, span in spans:
        where = Where(file, line, "")
        if not isinstance(span, dict):
            raise where.error(None, f"expected a span object, got {type_name(span)}")
        trace_id = _get(span, "context.trace_id")
        span_id = _get(span, "context.span_id")
        for key, value in (("context.trace_id", trace_id), ("context.span_id", span_id)):
            if not isinstance(value, str) or not value:
                raise where.error(key, "missing required field" if value is None else
                                  f"expected a string, got {type_name(value)}")
        any_retriever = any_retriever or _kind(span) == "RETRIEVER"
        traces.setdefault(trace_id, []).append((where, span))
    run = PeerRun(records=[])
    n_llm = 0
    for trace_id, members in traces.items():
        llm_ids = {_get(span, "context.span_id") for _, span in members if _kind(span) == "LLM"}
        outer = [(where, span) for where, span in members
                 if _kind(span) == "LLM" and _get(span, "parent_id") not in llm_ids]
        n_llm += len(outer)
        documents = _documents(members) if any_retriever else None
        outer.sort(key=lambda item: str(_get(item[1], "start_time") or ""))
        for where, span in outer:
            question_id = trace_id if len(outer) == 1 else f"{trace_id}/{_get(span, 'context.span_id')}"
            record = _record(where, span, question_id, provider, run, answer_path)
            if documents is not None:
                record["retrieved"] = documents
            run.records.append((where.record or 0, record))
    n_spans = sum(1 for members in traces.values() for _, span in members if _kind(span) == "LLM")
    nested = n_spans - n_llm  # inside an outer LLM span (LlamaIndex's acomplete around complete), or a cycle
    if nested:
        run.ignored.append(f"{nested} LLM span(s) inside another LLM span (or in a cycle of parents)")
    if not n_llm:
        raise InputError(str(path), None, None, "no LLM spans: a response is an LLM span's answer (with its "
                         "trace's retrieved documents); ingest the export of LLM spans too, e.g. "
                         "`evaluator ingest llm_spans.jsonl retriever_spans.jsonl`")
    run.records.sort(key=lambda item: item[0])
    return run


def _kind(span: dict[str, Any]) -> str | None:
    kind = span.get("span_kind") or _attr(span, "openinference.span.kind")
    return kind.upper() if isinstance(kind, str) else None


def _record(where: Where, span: dict[str, Any], question_id: str, provider: str, run: PeerRun,
            answer_path: str | None) -> Record:
    model = _attr(span, "llm.model_name")
    answer, field, rest = answer_of(where, "attributes.output.value", _parsed(_attr(span, "output.value")),
                                    answer_path)
    run.count_answer_field(field)
    prompt = _question(where, span)
    question = asked(prompt) or prompt
    record: Record = {
        "question_id": question_id,
        "question": question,
        "provider": model if isinstance(model, str) and model.strip() else provider,
        "model": model if isinstance(model, str) and model.strip() else None,
        "answer": answer,
    }
    record["phoenix"] = {key: value for key, value in (
        ("span_id", _get(span, "context.span_id")), ("name", span.get("name")),
        ("status_code", span.get("status_code")), ("start_time", span.get("start_time")),
        ("llm_provider", _attr(span, "llm.provider")), ("output", rest),
        ("prompt", prompt if question != prompt else None)) if value is not None}
    return record


def _parsed(value: Any) -> Any:
    """input.value / output.value: JSON text when the mime type says so (or it looks like it)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return "" if value is None else value


def _question(where: Where, span: dict[str, Any]) -> str:
    value = _parsed(_attr(span, "input.value"))
    text: str | None = None
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        for key in ("prompt", "query_str", "query", "question", "input"):
            if isinstance(value.get(key), str):
                text = value[key]
                break
        else:
            if isinstance(value.get("messages"), list):
                text = last_user_turn(value["messages"])
    messages = _attr(span, "llm.input_messages")
    if not text and isinstance(messages, list):
        turns = [{"role": _get(m, "message.role"), "content": _get(m, "message.content")}
                 for m in messages if isinstance(m, dict)]
        text = (last_user_turn(turns) or message_text(turns[-1]["content"])) if turns else None
    if not text or not text.strip():
        raise where.error("attributes.input.value", "no question: expected the prompt as text, or JSON holding "
                          "'prompt', 'query_str' or chat 'messages'")
    return text


# A RAG prompt ends with what the user asked: LlamaIndex's and LangChain's default QA templates end
# "Query: {query_str}\nAnswer:" / "Question: {question}\nHelpful Answer:". Read line by line, from
# the end (a regex over the whole prompt could backtrack on long runs of spaces).
ASKED_LINE = re.compile(r"(?:Query|Question)[ \t]*:")
ANSWER_LINE = re.compile(r"(?:Helpful )?Answer[ \t]*:")


def asked(prompt: str) -> str | None:
    """The question a RAG prompt ends with, or None when it ends otherwise."""
    lines = prompt.rstrip().split("\n")
    if lines and ANSWER_LINE.match(lines[-1].strip()):
        lines.pop()
    last = lines[-1].strip() if lines else ""
    match = ASKED_LINE.match(last)
    question = last[match.end():].strip() if match else ""
    return question or None


def _documents(members: list[tuple[Where, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The documents of a trace's RETRIEVER spans, each once, in the order they were retrieved."""
    documents: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, span in sorted(members, key=lambda item: str(_get(item[1], "start_time") or "")):
        if _kind(span) != "RETRIEVER":
            continue
        items = _attr(span, "retrieval.documents")
        if items is None:
            continue
        if not isinstance(items, list):
            raise where.error("attributes.retrieval.documents", f"expected a list, got {type_name(items)}")
        for index, item in enumerate(items):
            field = f"attributes.retrieval.documents[{index}]"
            if not isinstance(item, dict):
                raise where.error(field, f"expected an object, got {type_name(item)}")
            text, doc_id, score = (_get(item, f"document.{k}") for k in ("content", "id", "score"))
            if not isinstance(text, str):
                raise where.error(f"{field}.document.content", "missing required field" if text is None else
                                  f"expected a string, got {type_name(text)}")
            if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
                raise where.error(f"{field}.document.score", f"expected a number, got {type_name(score)}")
            key = str(doc_id) if doc_id is not None else text
            if key in seen:
                continue
            seen.add(key)
            documents.append({"id": str(doc_id) if doc_id is not None else context_id(text), "text": text,
                              "score": score})
    return documents
