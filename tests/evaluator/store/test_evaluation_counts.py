"""evaluation_counts: the verdict counts stored with each evaluation equal the results they count,
for evaluations written by ingest (recorded), by recompute, and counted by migration 4."""

from __future__ import annotations

from pathlib import Path

from evaluator.store.db import connect

DIRECT = """
SELECT rr.evaluation_id, r.provider, rr.template_group, 'overall' AS target, rr.overall AS verdict, count(*) AS n
FROM response_results rr JOIN responses r USING (response_id) GROUP BY ALL
UNION ALL
SELECT c.evaluation_id, r.provider, rr.template_group, c.check_name, c.verdict, count(*)
FROM check_results c JOIN response_results rr USING (evaluation_id, response_id) JOIN responses r USING (response_id)
GROUP BY ALL
ORDER BY ALL"""
STORED = "SELECT evaluation_id, provider, template_group, target, verdict, n FROM evaluation_counts ORDER BY ALL"


def test_stored_counts_equal_the_results_of_every_evaluation(sample_store: Path) -> None:
    with connect(sample_store) as con:
        stored = con.execute(STORED).fetchall()
        assert {row[0] for row in stored} == {row[0] for row in con.execute(
            "SELECT evaluation_id FROM evaluations").fetchall()}
        assert stored == con.execute(DIRECT).fetchall()


def test_a_replaced_run_takes_its_counts_with_it(sample_store: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = Path(__file__).resolve().parents[3] / "data" / "ramayana_v2.jsonl"
    changed = tmp_path / "v2.jsonl"
    changed.write_text(source.read_text(encoding="utf-8").replace("Rama", "Raama", 1), encoding="utf-8")
    cli("ingest", str(changed), "--name", "ramayana_v2", "--replace", "--drop-overrides", db=sample_store, check=True)
    cli("recompute", "--run", "ramayana_v2", "--ruleset", "t3_aware", db=sample_store, check=True)
    with connect(sample_store) as con:
        assert con.execute(STORED).fetchall() == con.execute(DIRECT).fetchall()


def test_migration_4_counts_the_evaluations_already_stored(sample_store: Path) -> None:
    with connect(sample_store) as con:
        expected = con.execute(STORED).fetchall()
        con.execute("DROP TABLE evaluation_counts")
        con.execute("DELETE FROM schema_migrations WHERE version = 4")
    with connect(sample_store) as con:  # connect() applies the missing migration
        assert con.execute(STORED).fetchall() == expected
