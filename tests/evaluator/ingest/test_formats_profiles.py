"""Which profiles a run may have comes from the rules (`evaluator ingest --rules FILE`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.evaluator.ingest.test_ingest import assert_one_error, value

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "inspect_log.json"
MY_BOT = """
[profiles.my_bot]
checks = ["retrieval_check", "answers_question", "no_hallucination"]
citation_pattern = ""
allowlist = []
interpretation_markers = []
not_applicable_reason = "not applicable to my bot"
"""


def test_a_run_without_templates_gets_the_generic_rag_profile(cli, db_path: Path) -> None:
    cli("ingest", str(FIXTURE), db=db_path, check=True)
    assert value(db_path, "SELECT profile FROM runs") == "rag"


def test_a_profile_from_a_users_rules_file_is_accepted(cli, db_path: Path, tmp_path: Path) -> None:
    rules = tmp_path / "my_bot.toml"
    rules.write_text(MY_BOT)
    cli("ingest", str(FIXTURE), "--rules", str(rules), "--profile", "my_bot", db=db_path, check=True)
    assert value(db_path, "SELECT profile FROM runs") == "my_bot"


def test_a_profile_the_rules_do_not_define_is_one_error(cli, db_path: Path) -> None:
    result = cli("ingest", str(FIXTURE), "--profile", "my_bot", db=db_path)
    assert_one_error(result, f"{FIXTURE}: field 'profile'", "unknown profile 'my_bot'", "rag")
    assert not db_path.exists()


def test_a_broken_rules_file_is_one_error(cli, db_path: Path, tmp_path: Path) -> None:
    rules = tmp_path / "broken.toml"
    rules.write_text("[profiles.x\n")
    result = cli("ingest", str(FIXTURE), "--rules", str(rules), db=db_path)
    assert_one_error(result, f"{rules}: field 'rules'")
    assert not db_path.exists()


def test_the_old_profiles_still_work(cli, db_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"question_id": "q", "question": "Q?", "provider": "p", "answer": "A."}) + "\n")
    cli("ingest", str(path), "--profile", "clearpath", db=db_path, check=True)
    assert value(db_path, "SELECT profile FROM runs") == "clearpath"
