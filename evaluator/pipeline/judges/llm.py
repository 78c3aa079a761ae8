"""LLM refusal judge over any OpenAI-compatible chat-completions endpoint (SPEC §6); its transport,
``ChatEndpoint``, is shared with the LLM span judge (llm_spans.py).

Configuration: constructor arguments, else the environment variables
``EVALUATOR_JUDGE_BASE_URL``, ``EVALUATOR_JUDGE_MODEL`` and ``EVALUATOR_JUDGE_API_KEY``.
The ``openai`` package is imported lazily (extra ``llm``). Replies are cached through a
``JudgeCache`` keyed by (judge name, model, sha256 of the prompt), so a re-run makes no
HTTP call. An unparsable reply raises ``JudgeReplyError``; timeouts, connection failures and
HTTP 429/5xx are retried with exponential backoff, then raised as ``JudgeUnavailableError``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from evaluator.pipeline.judges.base import (
    JudgeCache,
    JudgeConfigError,
    JudgeReplyError,
    JudgeUnavailableError,
    JudgeVerdict,
    preview,
)

ENV_BASE_URL = "EVALUATOR_JUDGE_BASE_URL"
ENV_MODEL = "EVALUATOR_JUDGE_MODEL"
ENV_API_KEY = "EVALUATOR_JUDGE_API_KEY"

T = TypeVar("T")

SYSTEM_PROMPT = """\
You judge whether a chatbot's answer is a refusal.

REFUSED means the answer contains any sentiment of being unable to provide a response \
(for example: it cannot help, does not know, lacks information, or declines), even if \
information follows that sentiment.
NOT REFUSED means the absence of any such sentiment.

Reply in exactly this format:
Reasoning: <one or two sentences>
Span: <the exact words of the answer that express the refusal, or None>
Judgement: REFUSED or NOT REFUSED"""

USER_TEMPLATE = """\
Question:
{question}

Answer:
{answer}"""

_KEY = re.compile(r"^[\s*_#>-]*(reasoning|span|judge?ment)[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE)
_JUDGEMENT = re.compile(r"^(not[\s_-]+refused|refused)[\s*_.!]*$", re.IGNORECASE)
_NO_SPAN = {"", "none", "n/a", "na", "null", "-", "--"}


def parse_reply(reply: str) -> JudgeVerdict:
    """Parse ``Reasoning:`` / ``Span:`` / ``Judgement:``; the last occurrence of each wins."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in reply.splitlines():
        m = _KEY.match(line)
        if m:
            key = m.group(1).lower().replace("judgment", "judgement")
            current = [m.group(2)]
            sections[key] = current  # a later occurrence replaces an earlier one
        elif current is not None:
            current.append(line)
    if "judgement" not in sections:
        raise JudgeReplyError("judge reply has no 'Judgement:' line", reply)
    value = sections["judgement"][0].strip()
    m = _JUDGEMENT.match(value)
    if not m:
        raise JudgeReplyError(f"last 'Judgement:' is {preview(value, 80, quote=True)}, not REFUSED or NOT REFUSED",
                              reply)
    refused = not m.group(1).lower().startswith("not")
    reasoning = "\n".join(sections.get("reasoning", [])).strip()
    span_text = "\n".join(sections.get("span", [])).strip().strip("\"'`")
    span = None if span_text.lower() in _NO_SPAN else span_text
    return JudgeVerdict(refused=refused, reasoning=reasoning, span=span)


def build_messages(question: str, answer: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(question=question, answer=answer)},
    ]


def prompt_hash(messages: list[dict[str, str]]) -> str:
    """sha256 of the canonical JSON of the chat messages."""
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise JudgeConfigError(
            "the LLM judge needs the 'openai' package: pip install 'rag-review-dashboard[llm]'"
        ) from exc
    return openai


class ChatEndpoint:
    """An OpenAI-compatible chat-completions endpoint as the LLM judges use it: configuration
    (arguments, else the environment), the client, retries with backoff, and replies cached by
    (judge name, model, prompt hash) once ``parse`` accepts them. Subclasses set ``name``."""

    name = "llm"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        cache: JudgeCache | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        model = model or os.environ.get(ENV_MODEL)
        if not model:
            raise JudgeConfigError(f"no judge model: pass model= or set {ENV_MODEL}")
        self.model: str = model
        self.api_key = api_key or os.environ.get(ENV_API_KEY) or None
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0:
            raise ValueError("max_retries >= 0, timeout_s > 0 and backoff_s >= 0 are required")
        self.cache = cache
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self._sleep = sleep
        self._client: Any = None
        self.requests = 0  # replies asked of the endpoint (not found in the cache)

    @property
    def endpoint(self) -> str:
        return self.base_url or "the OpenAI default endpoint"

    def _get_client(self) -> Any:
        if self._client is None:
            openai = _import_openai()
            self._client = openai.OpenAI(
                base_url=self.base_url,
                # Local OpenAI-compatible servers need no key; the client insists on one.
                api_key=self.api_key or "unused",
                timeout=self.timeout_s,
                max_retries=0,  # retries are ours, so they are counted and reported
            )
        return self._client

    def _ask(self, messages: list[dict[str, str]], parse: Callable[[str], T]) -> T:
        """``parse`` of the reply to ``messages``: the cached one, else the endpoint's (cached
        once ``parse`` accepts it, so a reply it rejects is asked for again next time)."""
        key = prompt_hash(messages)
        if self.cache is not None:
            cached = self.cache.get(self.name, self.model, key)
            if cached is not None:
                return parse(cached)
        self.requests += 1
        reply = self._complete(messages)
        parsed = parse(reply)  # only parsable replies are cached
        if self.cache is not None:
            self.cache.put(self.name, self.model, key, reply)
        return parsed

    def _complete(self, messages: list[dict[str, str]]) -> str:
        openai = _import_openai()
        client = self._get_client()
        attempt = 0
        while True:
            status: int | None = None
            try:
                completion = client.chat.completions.create(
                    model=self.model, messages=messages, temperature=0
                )
            except openai.APIStatusError as exc:  # str(exc) holds the error body: cut
                status, detail, last_exc = exc.status_code, preview(str(exc)), exc
                if status != 429 and status < 500:
                    raise JudgeUnavailableError(self.endpoint, status, detail) from exc
            except openai.APITimeoutError as exc:  # subclass of APIConnectionError: first
                detail, last_exc = f"timed out after {self.timeout_s:g} s", exc
            except openai.APIConnectionError as exc:
                detail, last_exc = f"connection failed: {preview(str(exc))}", exc
            except json.JSONDecodeError as exc:  # a 2xx whose body is not JSON at all
                raise JudgeReplyError("judge endpoint's response is not JSON", exc.doc) from None
            else:
                return self._reply_text(completion)
            if attempt >= self.max_retries:
                raise JudgeUnavailableError(
                    self.endpoint, status, f"{detail} (gave up after {attempt + 1} attempts)"
                ) from last_exc
            self._sleep(min(self.backoff_max_s, self.backoff_s * 2**attempt))
            attempt += 1

    @staticmethod
    def _reply_text(completion: Any) -> str:
        try:
            content = completion.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise JudgeReplyError("judge response has no message content", repr(completion)) from exc
        if not isinstance(content, str):
            raise JudgeReplyError("judge response has no message content", repr(completion))
        return content


class LLMJudge(ChatEndpoint):
    """Refusal judge asking a chat model; see the module docstring."""

    name = "llm"

    def judge(self, question: str, answer: str) -> JudgeVerdict:
        return self._ask(build_messages(question, answer), parse_reply)
