"""Reasons speak of citations in the bot's words (issue 31): "shloka" for the Ramayana profile only,
because its profile names them (citation_noun); every other profile says "citation" and "the
retrieved items" generically. The SQL and Python forms of the checks say the same words."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from evaluator.core.sql_fragments import cited_words
from evaluator.rules.load import load_rules

MY_BOT = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "my_bot.toml"
MY_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "my_bot_run.jsonl"


def reasons(db: Path, run: str) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [r[0] for r in con.execute(
            """SELECT c.reason FROM check_results c JOIN evaluations e USING (evaluation_id) JOIN runs r USING (run_id)
               WHERE r.name = ? AND e.ruleset <> 'recorded'""", [run]).fetchall()]


def test_only_the_ramayana_profile_names_shlokas() -> None:
    profiles = {p.name: p for p in load_rules().profiles}
    assert profiles["ramayana"].citation_noun == "shloka"
    assert {name for name, p in profiles.items() if p.citation_noun} == {"ramayana"}
    assert cited_words("")["no_citation"] == "no inline citation"
    assert "shloka" not in " ".join(cited_words("").values())
    assert cited_words("shloka")["all_retrieved"].startswith("every cited shloka was retrieved")


def test_stored_reasons_say_shloka_for_ramayana_only(sample_store: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert any("every cited shloka was retrieved" in r for r in reasons(sample_store, "ramayana"))
    assert not [r for r in reasons(sample_store, "clearpath") if "shloka" in r.lower()]
    # a user's bot that cites [doc-N] (its profile names no noun): citations, said generically
    run = tmp_path / "acme.jsonl"
    rows = [json.loads(line) for line in MY_RUN.read_text().splitlines() if line.strip()]
    rows[0]["answer"] = "Backups are kept for 30 days [doc-9]."  # cites a chunk that was not retrieved
    run.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cli("ingest", str(run), "--name", "acme", "--rules", str(MY_BOT), "--profile", "my_bot", db=sample_store,
        check=True)
    cli("recompute", "--run", "acme", "--ruleset", "t3_aware", "--rules", str(MY_BOT), db=sample_store, check=True)
    said = reasons(sample_store, "acme")
    assert not [r for r in said if "shloka" in r.lower()], said
    assert any(r.endswith("which is not among the retrieved items") for r in said), said
