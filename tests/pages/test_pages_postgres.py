"""Every page on the PostgreSQL store (issue 32): the sample runs loaded into a real server's database
through the CLI (`load-samples --db postgresql://...`), each page rendered by AppTest on it and on the
store file, and what it shows compared. The store's label in the sidebar (a path, a redacted URL), the
times rows were written and how long a recompute took are the only texts allowed to differ.

Under DuckDB 2 these are skipped, saying so (the postgres extension exists for DuckDB 1.4.4 only); make
test runs them again in .venv-pg, on DuckDB 1.4.4 with the extension."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evaluator.store.db import connect, fetch_value
from tests.conftest import samples_database

pytestmark = pytest.mark.xdist_group("postgres-pages")  # its worker starts a server of its own

PAGES = [
    ("pages/overview.py", {}),
    ("pages/triage.py", {"run": "clearpath"}),
    ("pages/review.py", {"run": "clearpath"}),
    ("pages/metrics.py", {"run": "ramayana"}),
    ("pages/compare.py", {"a": "ramayana", "b": "ramayana_v2"}),
    ("pages/before_after.py", {"run": "ramayana"}),
    ("pages/rule_lab.py", {"run": "clearpath"}),
    ("pages/agreement.py", {"run": "clearpath"}),
]
# A time a row was written ("2026-11-28 03:31", "03:31:07"), and how long a recompute took ("0.10 s"):
# the two stores were loaded moments apart, by the same commands.
WRITTEN_AT = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?|\b\d\d:\d\d:\d\d\b|\b\d+\.\d+ s\b")


@pytest.fixture(scope="module")
def postgres_samples(request: pytest.FixtureRequest) -> str:
    """A database of the session's server holding the sample runs, loaded and evaluated by the CLI."""
    return samples_database(request)


def _shown(app: AppTest) -> list[str]:
    """What a page shows in its main area, in order: texts, metrics, tables, widget labels and options;
    then its charts (Plotly's figure, as sent to the browser)."""
    shown: list[str] = []
    for element in app.main:
        shown.extend(_texts(element))
    shown.extend(f"chart={chart.proto.spec}" for chart in app.get("plotly_chart"))  # titles, axes, data, hover
    return [WRITTEN_AT.sub("<time>", text) for text in shown]


def _texts(node: object) -> list[str]:
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        return [text for child in children.values() for text in _texts(child)]
    out = []
    for attribute in ("label", "value", "body", "options", "help"):
        value = getattr(node, attribute, None)
        if hasattr(value, "to_csv"):  # a table: its rows as they are shown
            value = value.to_csv(index=False)
        if value is not None and not callable(value):
            out.append(f"{type(node).__name__}.{attribute}={value}")
    return out


@pytest.mark.parametrize(("page", "query"), PAGES, ids=[path.split("/")[1][:-3] for path, _ in PAGES])
def test_each_page_shows_the_same_on_postgres_as_on_a_store_file(page: str, query: dict, make_app,
                                                                 sample_store: Path, postgres_samples: str) -> None:
    on_file = make_app(sample_store, page, **query)
    on_server = make_app(postgres_samples, page, **query)
    assert not on_server.exception, [e.value for e in on_server.exception]
    assert not on_server.error, [e.value for e in on_server.error]
    assert _shown(on_server) == _shown(on_file)
    assert len(_shown(on_server)) > 5  # the page showed something to compare


def test_the_sidebar_names_the_server_without_its_password(make_app, postgres_samples: str) -> None:
    url_with_password = postgres_samples.replace("evaluator@", "evaluator:hunter2@")  # trust auth: any password
    app = make_app(url_with_password, "pages/overview.py")
    captions = " ".join(caption.value for caption in app.sidebar.caption)
    assert "evaluator:***@127.0.0.1" in captions and "hunter2" not in captions


def test_an_override_saved_on_the_review_page_lands_once_in_postgres(make_app, postgres_samples: str) -> None:
    with connect(postgres_samples, read_only=True) as con:
        before = fetch_value(con, "SELECT count(*) FROM overrides")
        response = fetch_value(con, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                    "WHERE runs.name = 'clearpath'")
    app = make_app(postgres_samples, "pages/review.py", run="clearpath", response=response, state={"reviewer": "Ana"})
    [choice] = app.radio
    other = next(option for option in choice.options if option != choice.value)
    choice.set_value(other).run()
    [reason] = app.text_area
    reason.input("checked against the manual")
    app.button(key="save_override").click().run()
    target = app.selectbox(key="override_target").value
    assert [s.value for s in app.success][:1] == [f"Override saved: {target} → {other}."]
    assert not app.exception, [e.value for e in app.exception]
    with connect(postgres_samples, read_only=True) as con:
        rows = con.execute("SELECT reviewer, reason FROM overrides ORDER BY override_id").fetchall()
    assert len(rows) == before + 1 and rows[-1] == ("Ana", "checked against the manual")


@pytest.mark.parametrize(("page", "query"), [
    ("pages/triage.py", {"run": "ramayana"}),
    ("pages/triage.py", {"run": "clearpath", "sort": "flags", "page": "2", "size": "25"}),
    ("pages/triage.py", {"run": "ramayana", "q": "Rama", "sort": "provider"}),
    ("pages/before_after.py", {"run": "ramayana"}),
    ("pages/before_after.py", {"run": "ramayana", "a": "recorded", "b": "legacy"}),
], ids=["triage", "triage-page-2", "triage-search", "before_after", "before_after-recorded-legacy"])
def test_the_pages_reading_a_local_copy_show_what_a_store_file_shows(page: str, query: dict, make_app,
                                                                      sample_store: Path, postgres_samples: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run counted as big (evaluator.queries.local_copy): the page reads this process's copy."""
    from evaluator.queries import local_copy

    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "1")
    on_file = make_app(sample_store, page, **query)
    on_copy = make_app(postgres_samples, page, **query)
    assert not on_copy.exception, [e.value for e in on_copy.exception]
    assert not on_copy.error, [e.value for e in on_copy.error]
    assert _shown(on_copy) == _shown(on_file)
    with connect(postgres_samples, read_only=True) as con:
        copy = local_copy._COPIES[str(postgres_samples)]
        assert copy.attached(con)
        assert copy.held(con, {("run", int(fetch_value(con, "SELECT run_id FROM runs WHERE name = $run",
                                                       {"run": query["run"]})))})


def test_a_bad_number_of_runs_to_copy_ahead_is_said_on_the_page(make_app, postgres_samples: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluator.queries import local_copy

    monkeypatch.setenv(local_copy.AHEAD_ENV, "newest")
    app = make_app(postgres_samples, "pages/overview.py")
    assert not app.exception, [e.value for e in app.exception]
    assert [e.value.replace("\\", "") for e in app.error] == [  # (as Markdown: its _ and ( escaped)
        "EVALUATOR_LOCAL_COPY_AHEAD='newest': give a number of runs (0: copy a run only when a page asks for it)"]
