"""A PostgreSQL store's URL never shows its password (issue 32): not in labels, not in the errors
DuckDB's postgres extension writes (which quote the connection string)."""

from __future__ import annotations

from evaluator.store.postgres import redacted, scrubbed


def test_a_password_after_the_user_is_starred():
    assert redacted("postgresql://ana:s3cr3t@db:5432/evals") == "postgresql://ana:***@db:5432/evals"


def test_a_password_parameter_is_starred():
    assert redacted("postgresql://ana@db/evals?sslmode=require&password=s3cr3t") == \
        "postgresql://ana@db/evals?sslmode=require&password=***"


def test_a_url_without_a_password_is_unchanged():
    assert redacted("postgresql://evaluator@127.0.0.1:5432/demo") == "postgresql://evaluator@127.0.0.1:5432/demo"


def test_an_error_quoting_the_connection_string_loses_the_password():
    url = "postgresql://ana:s3cr3t@db:5432/evals"
    error = f'IO Error: Unable to connect to Postgres at "{url}": connection refused (password=s3cr3t)'
    shown = scrubbed(error, url)
    assert "s3cr3t" not in shown and "postgresql://ana:***@db:5432/evals" in shown
