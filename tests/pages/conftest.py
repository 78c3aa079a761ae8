"""AppTest helpers for the page tests: the real app (app.py + st.navigation) on a temp store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_RUN = ROOT / "tests" / "fixtures" / "hostile_run.jsonl"


@pytest.fixture
def make_app(monkeypatch: pytest.MonkeyPatch) -> Callable[..., AppTest]:
    """make_app(db, "pages/triage.py", run="clearpath", ...) -> an AppTest that has run once.

    Keyword arguments are URL query parameters, except `state` (session state to seed, e.g.
    the reviewer's name) and `user` (what st.user returns)."""

    def make(db: Path, page_path: str, /, *, state: dict | None = None, user: dict | None = None,
             **query: object) -> AppTest:
        monkeypatch.setenv("EVALUATOR_DB", str(db))
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        # Before a first run AppTest knows pages by file name only, which misses a page whose
        # url_path differs (pages/compare.py is at /compare): run once, then switch.
        app.run()
        app.switch_page(page_path)
        for key, value in (state or {}).items():
            app.session_state[key] = value
        if user is not None:
            app.user = user
        app.query_params.update({key: str(value) for key, value in query.items()})
        app.run()
        assert not app.exception, [e.value for e in app.exception]
        return app

    return make


@pytest.fixture
def hostile_store(sample_store: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    """The sample store plus run `hostile`: markup and scripts in every untrusted text field."""
    cli("ingest", str(HOSTILE_RUN), "--name", "hostile", "--profile", "clearpath", db=sample_store, check=True)
    cli("recompute", "--run", "hostile", "--ruleset", "t3_aware", db=sample_store, check=True)
    return sample_store


def _query(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def _rendered(app: AppTest) -> list[str]:
    texts: list[str] = []
    for kind in ("markdown", "caption", "warning", "info", "error", "success", "title", "subheader", "header"):
        texts.extend(str(element.value) for element in getattr(app, kind))
    return texts


@pytest.fixture
def query() -> Callable[..., list[tuple]]:
    """query(db, sql, params): rows read straight from a store, to check pages against."""
    return _query


@pytest.fixture
def rendered() -> Callable[[AppTest], list[str]]:
    """rendered(app): every text body the page sent to the browser as Markdown (main and sidebar)."""
    return _rendered


def _number_formats(app: AppTest) -> dict[str, str | None]:
    formats: dict[str, str | None] = {}
    for element in app.dataframe:
        config = json.loads(element.proto.columns or "{}")
        formats.update({column: c["type_config"].get("format") for column, c in config.items()
                        if c.get("type_config", {}).get("type") == "number"})
    return formats


@pytest.fixture
def number_formats() -> Callable[[AppTest], dict[str, str | None]]:
    """number_formats(app): the display format of each number column of the page's tables, by column name."""
    return _number_formats
