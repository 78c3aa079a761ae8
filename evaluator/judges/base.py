"""Refusal-judge contract (SPEC §6): a judge decides whether an answer refuses.

Pure: no duckdb, no streamlit. The store-backed ``JudgeCache`` lives with the store glue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class JudgeVerdict:
    refused: bool
    reasoning: str
    span: str | None = None  # the text that shows the refusal, when the judge names one


@runtime_checkable
class Judge(Protocol):
    """A refusal judge. ``name`` identifies it in caches and metric results."""

    name: str

    def judge(self, question: str, answer: str) -> JudgeVerdict: ...


@runtime_checkable
class JudgeCache(Protocol):
    """Stores raw judge replies keyed by (judge name, model, sha256 of the prompt)."""

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None: ...

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None: ...


class InMemoryJudgeCache:
    """A dict-backed ``JudgeCache`` (tests, one-off runs)."""

    def __init__(self) -> None:
        self._replies: dict[tuple[str, str, str], str] = {}

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None:
        return self._replies.get((judge, model, prompt_hash))

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None:
        self._replies[(judge, model, prompt_hash)] = reply

    def __len__(self) -> int:
        return len(self._replies)


class JudgeError(Exception):
    """Base class of judge failures; always shown to the user, never defaulted away."""


class JudgeConfigError(JudgeError):
    """The judge is missing configuration (model, endpoint) or a dependency."""


class JudgeReplyError(JudgeError):
    """The judge replied, but the reply has no parsable ``Judgement:`` line."""

    def __init__(self, message: str, reply: str) -> None:
        super().__init__(f"{message}; reply was: {reply!r}")
        self.reply = reply


class JudgeUnavailableError(JudgeError):
    """The endpoint could not be reached, timed out or kept failing after the retries."""

    def __init__(self, endpoint: str, status: int | None, detail: str) -> None:
        what = f"HTTP {status}" if status is not None else "no HTTP status"
        super().__init__(f"judge endpoint {endpoint} unavailable ({what}): {detail}")
        self.endpoint = endpoint
        self.status = status
