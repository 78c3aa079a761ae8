"""evaluation_counts and flag_counts: the verdict and flag counts stored with each evaluation equal the
results they count, for evaluations written by ingest (recorded), by recompute, and counted by
migrations 4 and 16; and each run's stored sizes (providers, questions) equal its rows."""

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
FLAGS_DIRECT = """SELECT f.evaluation_id, r.provider, f.flag, count(*) FROM flags f JOIN responses r USING (response_id)
                  GROUP BY ALL ORDER BY ALL"""
FLAGS_STORED = "SELECT evaluation_id, provider, flag, n FROM flag_counts ORDER BY ALL"
SIZES_DIRECT = """SELECT r.run_id, (SELECT count(DISTINCT provider) FROM responses x WHERE x.run_id = r.run_id),
                         (SELECT count(*) FROM questions q WHERE q.run_id = r.run_id),
                         (SELECT min(response_id) FROM responses x WHERE x.run_id = r.run_id) FROM runs r ORDER BY 1"""
SIZES_STORED = "SELECT run_id, n_providers, n_questions, first_response_id FROM runs ORDER BY 1"


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
        assert con.execute(FLAGS_STORED).fetchall() == con.execute(FLAGS_DIRECT).fetchall()
        assert con.execute(SIZES_STORED).fetchall() == con.execute(SIZES_DIRECT).fetchall()


def test_stored_flag_counts_equal_the_flags_of_every_evaluation(sample_store: Path) -> None:
    with connect(sample_store) as con:
        stored = con.execute(FLAGS_STORED).fetchall()
        assert len({row[0] for row in stored}) >= 2  # the sample runs' computed evaluations raise flags
        assert stored == con.execute(FLAGS_DIRECT).fetchall()


def test_each_runs_stored_sizes_equal_its_providers_questions_and_first_response(sample_store: Path) -> None:
    with connect(sample_store) as con:
        stored = con.execute(SIZES_STORED).fetchall()
        assert stored and all(providers and questions and first for _, providers, questions, first in stored)
        assert stored == con.execute(SIZES_DIRECT).fetchall()


def test_migration_16_counts_the_flags_and_sizes_already_stored(sample_store: Path) -> None:
    with connect(sample_store) as con:
        flags, sizes = con.execute(FLAGS_STORED).fetchall(), con.execute(SIZES_STORED).fetchall()
        con.execute("DROP TABLE flag_counts")
        con.execute("ALTER TABLE runs DROP COLUMN n_providers")
        con.execute("ALTER TABLE runs DROP COLUMN n_questions")
        con.execute("ALTER TABLE runs DROP COLUMN first_response_id")
        con.execute("DELETE FROM schema_migrations WHERE version = 16")
    with connect(sample_store) as con:  # connect() applies the missing migration
        assert (con.execute(FLAGS_STORED).fetchall(), con.execute(SIZES_STORED).fetchall()) == (flags, sizes)


def test_migration_4_counts_the_evaluations_already_stored(sample_store: Path) -> None:
    with connect(sample_store) as con:
        expected = con.execute(STORED).fetchall()
        con.execute("DROP TABLE evaluation_counts")
        con.execute("DELETE FROM schema_migrations WHERE version = 4")
    with connect(sample_store) as con:  # connect() applies the missing migration
        assert con.execute(STORED).fetchall() == expected
