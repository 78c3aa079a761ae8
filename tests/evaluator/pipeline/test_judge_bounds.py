"""Issue 15: a judge's reply or error body goes into an error message cut to a bounded length.

A real HTTP server on 127.0.0.1 answers `evaluator metrics --judge llm` with 5 MB of
garbage (as a 200 completion, as a 200 that is not JSON, as a 500 error body); the command
fails with a short message on stderr naming the problem, and stores nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evaluator.pipeline.judges import JudgeReplyError, JudgeUnavailableError
from evaluator.pipeline.judges.base import preview
from evaluator.pipeline.judges.llm import parse_reply

# 5 MB of what a broken or hostile endpoint might send: NULs, terminal escapes, line separators
GARBAGE = ("\x00\x1b[31mgarbage\u2028\u202e" * 400_000)[:5_000_000]
MAX_STDERR = 2_000


@pytest.fixture
def garbage_endpoint() -> Iterator[dict[str, Any]]:
    """An OpenAI-compatible endpoint whose every answer is garbage, shaped by state["mode"]."""
    state: dict[str, Any] = {"mode": "completion", "requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers["Content-Length"]))
            state["requests"] += 1
            mode = state["mode"]
            if mode == "completion":  # a well-formed completion whose content is garbage
                status, content_type = 200, "application/json"
                body = json.dumps({
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "judge-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": GARBAGE},
                                 "finish_reason": "stop"}],
                }).encode()
            elif mode == "not_json":
                status, content_type, body = 200, "application/json", GARBAGE.encode()
            elif mode == "error_json":  # the error message is the garbage
                status, content_type = 500, "application/json"
                body = json.dumps({"error": {"message": GARBAGE, "type": "server_error"}}).encode()
            else:
                status, content_type, body = 500, "text/plain", GARBAGE.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _stored(db: Path) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return {
            "metric_results": con.execute(
                "SELECT count(*) FROM metric_results JOIN runs USING (run_id) WHERE runs.name = 'clearpath'"
            ).fetchone()[0],  # type: ignore[index]
            "judge_cache": con.execute("SELECT count(*) FROM judge_cache").fetchone()[0],  # type: ignore[index]
        }


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        ("completion", ["no 'Judgement:' line", "more characters"]),
        ("not_json", ["response is not JSON", "more characters"]),
        ("error_json", ["unavailable (HTTP 500)", "more characters", "(gave up after 4 attempts)"]),
        ("error_text", ["unavailable (HTTP 500)", "(gave up after 4 attempts)"]),
    ],
)
def test_metrics_with_an_llm_judge_replying_5_mb_of_garbage_fails_with_a_short_message(
    cli, sample_store: Path, garbage_endpoint: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
    mode: str, names: list[str],
) -> None:
    garbage_endpoint["mode"] = mode
    monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", garbage_endpoint["url"])
    monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("EVALUATOR_JUDGE_API_KEY", "test-key")
    before = _stored(sample_store)
    result = cli("metrics", "--run", "clearpath", "--judge", "llm", db=sample_store)
    assert garbage_endpoint["requests"] >= 1  # the judge really was asked
    assert result.returncode != 0
    assert len(result.stderr) < MAX_STDERR, result.stderr[:MAX_STDERR]
    assert "judge 'llm' failed" in result.stderr
    for name in names:
        assert name in result.stderr, result.stderr
    assert "\x00" not in result.stderr and "\x1b" not in result.stderr and "\u2028" not in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert _stored(sample_store) == before


# ------------------------------------------------------------------------------ the pieces


def test_preview_cuts_long_text_and_says_how_much_is_left() -> None:
    shown = preview("x" * 1_000_000)
    assert shown == "x" * 300 + "… (999,700 more characters)"


def test_preview_makes_control_characters_visible_within_the_limit() -> None:
    assert preview("a\nb\tc\x00d\x1b[0m\u2028e\u202e") == "a\\nb\\tc\\x00d\\x1b[0m\\u2028e\\u202e"
    shown = preview("\x00" * 1_000, 20)
    assert shown == "\\x00" * 5 + "… (995 more characters)"


def test_preview_leaves_short_text_alone_and_can_quote() -> None:
    assert preview("Judgement: MAYBE") == "Judgement: MAYBE"
    assert preview("fine", quote=True) == "'fine'"
    assert preview("y" * 400, 10, quote=True) == "'yyyyyyyyyy'… (390 more characters)"


def test_a_reply_error_keeps_the_whole_reply_but_shows_its_start() -> None:
    with pytest.raises(JudgeReplyError) as info:
        parse_reply(GARBAGE)
    assert info.value.reply == GARBAGE
    message = str(info.value)
    assert len(message) < 500
    assert message.startswith("judge reply has no 'Judgement:' line; reply was: '\\x00\\x1b[31mgarbage\\u2028")
    assert message.endswith(" more characters)")


def test_a_huge_judgement_value_is_cut_too() -> None:
    with pytest.raises(JudgeReplyError) as info:
        parse_reply("Judgement: " + "MAYBE" * 100_000)
    assert len(str(info.value)) < 600  # the value, then the reply, each cut
    assert "last 'Judgement:' is 'MAYBEMAYBE" in str(info.value)


def test_an_unavailable_error_cuts_the_detail() -> None:
    error = JudgeUnavailableError("http://127.0.0.1:9/v1", 500, "Error code: 500 - " + GARBAGE)
    assert len(str(error)) < 800
    assert str(error).startswith("judge endpoint http://127.0.0.1:9/v1 unavailable (HTTP 500): Error code: 500 - ")
    assert error.status == 500
