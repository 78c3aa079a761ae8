"""Browser tests: `streamlit run app.py` on a free port against a temp store, driven by
Playwright in real headless Chromium (Debian's package here; Playwright's own elsewhere).

Like Streamlit's own e2e_playwright/conftest.py: start the server once per module
(`module_server`, on the module's own copy of the sample store, `module_store`), poll
/_stcore/health, then use `expect` — never fixed sleeps. A test that needs a fresh server (a
server's first request, its own environment) or a store no other test writes to starts its own
(`streamlit_server`, `serve`). A module sharing a server is one xdist group, so its tests run on
one worker, one after another, against that server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)  # polling the health endpoint, not waiting for the page
    raise RuntimeError(f"streamlit did not become healthy at {url} within {timeout_s} s")


@contextlib.contextmanager
def serve(db: Path | str, log_path: Path, cwd: Path = ROOT, **env: str) -> Iterator[str]:
    """`streamlit run app.py` on a free port against `db` (a store file or a PostgreSQL URL; extra
    environment in `env`), run in `cwd` (a replica's own folder; Streamlit reads .streamlit/ there);
    its base URL."""
    port = _free_port()
    full_env = {**os.environ, "EVALUATOR_DB": str(db), "PYTHONPATH": str(ROOT), **env}
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture
def streamlit_server(sample_store: Path, tmp_path: Path) -> Iterator[str]:
    """Base URL of a fresh dashboard serving the test's private copy of the sample store."""
    with serve(sample_store, tmp_path / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def module_store(sample_store_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's own copy of the sample store (what its tests add, before `module_server`
    starts, goes into a fixture of the module that depends on this one)."""
    path = tmp_path_factory.mktemp("module_store") / "samples.duckdb"
    shutil.copy(sample_store_template, path)
    return path


@pytest.fixture(scope="module")
def module_server(module_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of one dashboard for the whole module, serving `module_store`."""
    with serve(module_store, tmp_path_factory.mktemp("module_server") / "streamlit.log") as url:
        yield url


def chromium_executable() -> str | None:
    """Debian's chromium when installed; None lets Playwright use its own browser."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import expect, sync_playwright

    # An assertion polls until its condition holds; 5 s (Playwright's default) is short for a page
    # drawn on a CI machine whose two cores also run the other worker's Streamlit and Chromium.
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable(), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[object]:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()
