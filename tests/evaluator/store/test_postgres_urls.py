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


def test_an_unreachable_server_is_one_message_without_the_password(cli_process) -> None:  # type: ignore[no-untyped-def]
    """A server nobody answers at (a closed port): exit 2, one line naming the redacted URL, no traceback
    (whose chained error would quote the password), on DuckDB 2 (no extension) and on 1.4.4 alike."""
    import socket

    with socket.socket() as probe:  # a port free now: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://evaluator:s3cret-pw@127.0.0.1:{port}/reviews"
    refused = cli_process("runs", db=url)
    assert refused.returncode == 2
    assert "s3cret-pw" not in refused.stderr + refused.stdout
    assert "Traceback" not in refused.stderr
    assert refused.stderr.startswith("evaluator: error: ")
