"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM judges' tests.

`serve()` starts it on a free port and yields its `FakeEndpoint` state: each request is recorded
(path, JSON body, Authorization header) and answered by the next step of `script`, or, when
`respond` is set, by the step it returns for the request's body. Steps: ("reply", text) a 200
completion whose message is `text`; ("status", code) that HTTP status with an error body; ("hang",
seconds) an answer only after that long (or once `release` is set).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = tuple[str, Any]


@dataclass
class FakeEndpoint:
    """Scripted OpenAI-compatible server: each request consumes one script step."""

    url: str = ""
    script: list[Step] = field(default_factory=list)
    respond: Callable[[dict[str, Any]], Step] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


def completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def serve() -> Iterator[FakeEndpoint]:
    state = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if state.respond is not None:
                    step = state.respond(body)
                else:
                    step = state.script.pop(0) if state.script else ("status", 500)
            kind, value = step
            try:
                if kind == "hang":
                    state.release.wait(value)
                    self._send(200, completion("Judgement: NOT REFUSED", body["model"]))
                elif kind == "status":
                    self._send(value, {"error": {"message": f"scripted {value}", "type": "test"}})
                else:
                    self._send(200, completion(value, body["model"]))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
