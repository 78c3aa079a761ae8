"""LLM span judge (issue 30 §3): which parts of an answer its retrieved context does not support,
asked of the same OpenAI-compatible endpoint as the LLM refusal judge (``ChatEndpoint``: the same
``EVALUATOR_JUDGE_*`` configuration, retries and reply cache, under the judge name ``llm_spans``).

The prompt follows RAGTruth's: the context, the question and the answer; the model replies with
JSON, ``{"unsupported": ["<text copied from the answer>", ...]}``. Each returned substring is
mapped to character offsets into the answer (code points, as Python counts them): an exact match
first, else one where white space runs count as one space and curly quotes as straight ones. A
substring found several times marks every place (its text alone cannot say which one is meant);
one the answer does not hold is dropped and counted, never placed. The spans become the
``llm_unsupported_span`` flag (evaluator.pipeline.span_judge), comparable with the offline
``unsupported_claim`` detector by ``evaluator agreement --spans`` and ``bench/spans.py``.

What the model returns is data: substrings are only searched for (``str.find``), and the stored
span text is the answer's own characters. Pure but for the endpoint: no duckdb, no streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluator.core.types import RetrievedItem, Span
from evaluator.pipeline.judges.base import JudgeReplyError
from evaluator.pipeline.judges.llm import ChatEndpoint

SPAN_FLAG = "llm_unsupported_span"  # the flag the judge's spans become (not a rule set's flag)
SPAN_SEVERITY = "warning"
SPAN_REASON = "the judge marked this unsupported"
JUDGE_FLAGS = (SPAN_FLAG,)  # flags written by a judge rather than evaluated by the rules

SYSTEM_PROMPT = """\
You check a chatbot's answer against the retrieved context it was given.

Find every part of the answer that the context does not support:
1. conflicts: the answer states something the context contradicts (a different number, date, \
name, place or relation);
2. baseless information: the answer states something the context does not say and that cannot \
be inferred from it.
Greetings, refusals and restating the question are not unsupported.

Copy each unsupported part exactly as it is written in the answer, character for character: \
a phrase, clause or sentence, as short as still shows the problem. Do not paraphrase, correct \
or explain. If the same words are unsupported in several places, list them once.

Reply with JSON only, in exactly this form:
{"unsupported": ["<text copied from the answer>", ...]}
If the context supports the whole answer, reply {"unsupported": []}"""

USER_TEMPLATE = """\
Context:
{context}

Question:
{question}

Answer:
{answer}"""

REPLY_KEYS = ("unsupported", "hallucination list")  # ours, and RAGTruth's own prompt's

# Curly and other look-alike quotes -> straight ones, one character for one.
_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'", "\uff07": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"',
})


@dataclass(frozen=True)
class SpanVerdict:
    """What the judge said of one answer: the spans it marked, in answer order, and the
    substrings it returned that the answer does not hold (dropped)."""

    spans: tuple[Span, ...]
    unfound: tuple[str, ...] = ()
    listed: int = 0  # substrings returned (empty ones left out)


def judgeable(answer: str, retrieved: Sequence[RetrievedItem]) -> bool:
    """Whether the judge is asked about an answer: it has text, and there is retrieved text to
    check it against (with none, everything would be "unsupported"; the offline flag is not raised)."""
    return bool(answer.strip()) and any(item.text.strip() for item in retrieved)


def context_text(retrieved: Sequence[RetrievedItem]) -> str:
    """The retrieved items as the prompt shows them: numbered, in rank order."""
    return "\n".join(f"[{i}] {item.text}" for i, item in enumerate(retrieved, 1))


def build_messages(question: str, context: str, answer: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(context=context, question=question, answer=answer)},
    ]


def parse_reply(reply: str) -> list[str]:
    """The substrings of a reply ``{"unsupported": [str, ...]}`` (a bare list, RAGTruth's key
    and a Markdown code fence around it are read too); anything else raises ``JudgeReplyError``."""
    text = reply.strip()
    if text.startswith("```"):  # ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0].strip()
    try:
        value = json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        try:
            value = json.loads(text[start:end + 1]) if 0 <= start < end else None
        except ValueError:
            value = None
        if value is None:
            raise JudgeReplyError('judge reply is not the JSON asked for ({"unsupported": [...]})', reply) from None
    if isinstance(value, dict):
        found = [value[k] for k in REPLY_KEYS if k in value]
        if not found:
            raise JudgeReplyError('judge reply has no "unsupported" list', reply)
        value = found[0]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise JudgeReplyError('judge reply\'s "unsupported" is not a list of strings', reply)
    return [item for item in value if item.strip()]


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with white space runs as one space and curly quotes straight, and where each of
    its characters came from in ``text``."""
    out: list[str] = []
    where: list[int] = []
    straight = text.translate(_QUOTES)
    for i, ch in enumerate(straight):
        if ch.isspace():
            if out and out[-1] == " ":
                continue
            ch = " "
        out.append(ch)
        where.append(i)
    return "".join(out), where


def _occurrences(haystack: str, needle: str) -> Iterable[int]:
    """Where ``needle`` starts in ``haystack``, left to right, not overlapping."""
    at = haystack.find(needle)
    while at >= 0:
        yield at
        at = haystack.find(needle, at + len(needle))


def locate(answer: str, substrings: Iterable[str]) -> SpanVerdict:
    """Each substring's places in ``answer`` as ``llm_unsupported_span`` spans: exact matches, else
    matches with white space and quotes normalised; the substrings found nowhere are ``unfound``."""
    places: set[tuple[int, int]] = set()
    unfound: list[str] = []
    listed = 0
    normal: tuple[str, list[int]] | None = None
    for raw in substrings:
        needle = raw.strip()
        if not needle:
            continue
        listed += 1
        found = [(at, at + len(needle)) for at in _occurrences(answer, needle)]
        if not found:
            if normal is None:
                normal = _normalised(answer)
            text, where = normal
            wanted = _normalised(needle)[0]  # the needle is stripped: it starts and ends with no space
            found = [(where[at], where[at + len(wanted) - 1] + 1) for at in _occurrences(text, wanted)]
        if found:
            places.update(found)
        else:
            unfound.append(raw)
    spans = tuple(Span(start, end, answer[start:end], SPAN_FLAG, None, SPAN_REASON) for start, end in sorted(places))
    return SpanVerdict(spans, tuple(unfound), listed)


class LLMSpanJudge(ChatEndpoint):
    """Asks the chat model which parts of an answer its context does not support; see the module
    docstring. Configured as ``LLMJudge`` (arguments, else ``EVALUATOR_JUDGE_*``)."""

    name = "llm_spans"

    def spans(self, question: str, answer: str, retrieved: Sequence[RetrievedItem]) -> SpanVerdict:
        """The judge's spans of ``answer``; none, without asking, when it is not ``judgeable``."""
        if not judgeable(answer, retrieved):
            return SpanVerdict(())
        substrings = self._ask(build_messages(question, context_text(retrieved), answer), parse_reply)
        return locate(answer, substrings)
