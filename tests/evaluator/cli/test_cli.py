"""The CLI's entry point (evaluator/cli/__init__.py): every command is listed and parses its own
arguments, though a command's parser is built from its own module alone."""

from __future__ import annotations

from evaluator.cli import COMMANDS


def test_help_lists_every_command(cli):
    result = cli("--help", check=True)
    listed = result.stdout.split("positional arguments:")[1]
    assert [c for c in COMMANDS.values() if f"    {c}" in listed] == list(COMMANDS.values())


def test_a_command_parses_its_own_arguments(cli):
    result = cli("recompute", "--help", check=True)
    assert "--ruleset" in result.stdout and "--verify" in result.stdout


def test_an_unknown_command_names_the_commands(cli):
    result = cli("recomptue")
    assert result.returncode == 2
    assert "invalid choice: 'recomptue'" in result.stderr and "recompute" in result.stderr.split("invalid choice")[1]
