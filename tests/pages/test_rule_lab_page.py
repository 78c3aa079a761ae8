"""The Rule lab page (AppTest on the real app): preview an edit, errors at the field, save a version."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = "pages/rule_lab.py"
NEW_REFUSAL = "the text (states|says)"


def field(app: AppTest, label: str):  # type: ignore[no-untyped-def]
    return next(w for w in app.text_area if w.label == label)


def button(app: AppTest, label: str):  # type: ignore[no-untyped-def]
    return next(b for b in app.button if b.label == label)


def add_refusal(app: AppTest, pattern: str) -> AppTest:
    area = field(app, "Refusal patterns")
    area.set_value(f"{area.value}\n{pattern}")
    button(app, "Preview").click()
    return app.run()


def test_an_added_refusal_pattern_shows_its_flips(make_app, sample_store: Path) -> None:  # type: ignore[no-untyped-def]
    app = add_refusal(make_app(sample_store, PAGE, run="ramayana", base="t3_aware"), NEW_REFUSAL)
    assert not app.exception
    flipped = next(m for m in app.metric if m.label == "Flipped responses")
    assert int(flipped.value) >= 1
    flips = app.dataframe[-1].value
    assert set(flips["verdict"]) == {"PASS → FAIL"}
    assert flips["check_diff"].str.contains("answers_question: PASS → FAIL").all()
    assert flips["review"].str.match(r"^\./review\?response=\d+&evaluation=\d+&from=rule_lab&from_q=").all()


def test_a_bad_regex_is_shown_at_its_field_and_nothing_is_saved(make_app, sample_store: Path,  # type: ignore[no-untyped-def]
                                                                query) -> None:
    app = add_refusal(make_app(sample_store, PAGE, run="ramayana", base="t3_aware"), "(unclosed")
    errors = [e.value for e in app.error]
    assert any("bad regex" in e and e.startswith("line ") for e in errors)
    assert not any(b.label == "Save as" for b in app.button)
    assert query(sample_store, "SELECT count(*) FROM saved_rulesets") == [(0,)]


def test_save_as_adds_a_version_row(make_app, sample_store: Path, query) -> None:  # type: ignore[no-untyped-def]
    app = add_refusal(make_app(sample_store, PAGE, run="ramayana", base="t3_aware"), NEW_REFUSAL)
    app.text_input(key="lab_name").set_value("strict_refusals")
    button(app, "Save as").click()
    app.run()
    assert not app.exception
    saved = [s.value for s in app.success][0].replace("\\_", "_")  # md() escapes _
    assert saved.startswith("Saved strict_refusals version 1")
    button(app, "Save as").click()
    app.run()
    assert query(sample_store, "SELECT name, version FROM saved_rulesets ORDER BY version") == [
        ("strict_refusals", 1), ("strict_refusals", 2)]


def test_a_bad_name_is_refused_at_the_name_field(make_app, sample_store: Path, query) -> None:  # type: ignore[no-untyped-def]
    app = make_app(sample_store, PAGE, run="ramayana", base="t3_aware")
    app.text_input(key="lab_name").set_value("no spaces please")
    button(app, "Save as").click()
    app.run()
    assert any(e.value.startswith("name: ") for e in app.error)
    assert query(sample_store, "SELECT count(*) FROM saved_rulesets") == [(0,)]


def test_many_flips_are_shown_a_page_at_a_time(make_app, sample_store: Path) -> None:  # type: ignore[no-untyped-def]
    # "." makes every answer a refusal: every answer that passed now fails.
    app = add_refusal(make_app(sample_store, PAGE, run="ramayana", base="t3_aware"), ".")
    assert not app.exception
    n = int(next(m for m in app.metric if m.label == "Flipped responses").value.replace(",", ""))
    assert n > 50
    first = app.dataframe[-1].value
    assert len(first) == 50
    assert len(app.pagination) == 1 and app.pagination[0].value == 1
    app.pagination[0].select(2)
    app.run()
    assert not app.exception
    second = app.dataframe[-1].value
    assert len(second) == min(50, n - 50)
    assert set(second["response_id"]).isdisjoint(first["response_id"])
    assert any(f"Page 2 of {-(-n // 50)}" in c.value for c in app.caption)


def test_another_preview_starts_at_its_first_page(make_app, sample_store: Path) -> None:  # type: ignore[no-untyped-def]
    app = add_refusal(make_app(sample_store, PAGE, run="ramayana", base="t3_aware"), ".")
    app.pagination[0].select(2)
    app.run()
    assert app.pagination[0].value == 2
    app = add_refusal(app, "a")  # another edit: another preview
    assert not app.exception
    assert len(app.pagination) == 1 and app.pagination[0].value == 1
    assert any(c.value.startswith("Page 1 of ") for c in app.caption)
