"""The CLI is as careful as the pages (issue 31): names from files (providers, runs, models) print
inert in `report`, `metrics`, `compare`, `runs` — no ESC/OSC sequence, BEL, C1 control or U+202E
reaches the terminal; each is shown as a visible escape. A read-only command on a store path that
does not exist says so and creates nothing. An unterminated CSV quote is reported as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.cli.common import inert

OSC_TITLE = "\x1b]0;pwned\x07"  # retitles the terminal window
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
RLO = "\u202e"  # right-to-left override
CSI_C1 = "\x9b31m"  # the 8-bit CSI
PROVIDER = f"evil{OSC_TITLE}{CLEAR}{RLO}gpt{CSI_C1}"
MODEL = f"m{RLO}odel\x07"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _no_raw(text: str) -> None:
    assert not [ch for ch in RAW if ch in text], repr(text[:400])


@pytest.fixture
def hostile(db_path: Path, cli, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    rows = [{"question_id": f"q{k}", "question": "What is the price?", "provider": provider,
             "model": MODEL, "answer": "It costs $10/month.", "answerable": True, "gold_answers": ["$10/month"],
             "retrieved": [{"id": "d1", "text": "Pro costs $10/month.", "score": 0.9}],
             "recorded_checks": {"no_hallucination": "PASS"}}
            for k in range(3) for provider in (PROVIDER, "plain")]
    for name, answer in ((f"run{CLEAR}", "It costs $10/month."), ("other", "Pro costs $10/month.")):
        path = tmp_path / f"{len(name)}.jsonl"
        path.write_text("\n".join(json.dumps({**r, "answer": answer}) for r in rows) + "\n")
        cli("ingest", str(path), "--name", name, db=db_path, check=True)
    return db_path


def test_inert_escapes_what_a_terminal_acts_on() -> None:
    assert inert(PROVIDER) == "evil\\x1b]0;pwned\\x07\\x1b[2J\\x1b[Hu\\u202egpt\\x9b31m".replace("Hu", "H")
    assert inert("Ramayana – Rāma") == "Ramayana – Rāma"  # letters and dashes of any script pass
    assert inert("a\nb") == "a\\x0ab" and inert("a\nb", keep="\n") == "a\nb"


@pytest.mark.parametrize("args", [
    ("runs",),
    ("runs", "--json"),
    ("report", "--run", f"run{CLEAR}", "--recorded"),
    ("report", "--run", f"run{CLEAR}", "--ruleset", "t3_aware", "--json"),
    ("metrics", "--run", f"run{CLEAR}"),
    ("metrics", "--run", f"run{CLEAR}", "--json"),
    ("compare", "--run", f"run{CLEAR}", "--against", "other", "--recorded"),
    ("compare", "--run", f"run{CLEAR}", "--recorded", "--vs-ruleset", "t3_aware"),
])
def test_names_from_files_print_inert(cli, hostile: Path, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = cli(*args, db=hostile, check=True)
    _no_raw(result.stdout)
    _no_raw(result.stderr)
    if "--json" in args:
        said = set(_strings(json.loads(result.stdout)))  # still valid JSON, holding the names as they are
        assert PROVIDER in said or f"run{CLEAR}" in said, said
    elif args[0] != "runs":
        assert "\\x1b]0;pwned\\x07" in result.stdout or "run\\x1b[2J" in result.stdout, result.stdout


def test_an_error_naming_a_hostile_run_prints_inert(cli, hostile: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", "--run", f"nope{OSC_TITLE}{RLO}", "--recorded", db=hostile)
    assert result.returncode == 2
    _no_raw(result.stderr)


@pytest.mark.parametrize("command", [("runs",), ("report", "--run", "x", "--recorded"), ("agreement", "--run", "x"),
                                     ("compare", "--run", "x", "--against", "y")])
def test_a_command_on_a_store_that_does_not_exist_says_so_and_creates_nothing(cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                              command: tuple[str, ...]) -> None:
    missing = tmp_path / "such.duckdb"  # in a folder that exists: DuckDB would create it there
    result = cli(*command, db=missing)
    assert result.returncode == 2
    assert f"no store at {missing}" in result.stderr
    assert not missing.exists()
    assert not list(tmp_path.iterdir())  # no store, no lock files


def test_ingest_still_creates_a_store(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"question_id": "q", "question": "Q?", "provider": "p", "answer": "A."}) + "\n")
    cli("ingest", str(path), db=tmp_path / "new.duckdb", check=True)
    assert "new.duckdb" in {p.name for p in tmp_path.iterdir()}


@pytest.mark.parametrize(("body", "line", "field"), [
    ('q1,"What is it?,openai,Fine.\nq2,Why?,openai,Because.\n', 2, "question"),  # swallows the next row
    ('q1,What is it?,openai,Fine.\nq2,Why?,openai,"Because.\n', 3, "answer"),  # was ingested silently
])
def test_an_unterminated_csv_quote_is_reported_as_one(cli, tmp_path: Path, body: str, line: int,  # type: ignore[no-untyped-def]
                                                      field: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("question_id,question,provider,answer\n" + body)
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(path), db=db)
    assert result.returncode == 2
    assert f"{path}:{line}: field '{field}': unterminated quote" in result.stderr, result.stderr
    # a quote closed properly, with a doubled quote and a line break inside, still reads
    path.write_text('question_id,question,provider,answer\nq1,"Say ""hi""\nplease",openai,Fine.\n')
    cli("ingest", str(path), db=db, check=True)
