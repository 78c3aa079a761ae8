"""Write docs/CLI.md, the CLI reference, from the CLI's own argparse parsers.

    python -m tools.cli_reference            # rewrite docs/CLI.md
    python -m tools.cli_reference --check    # exit 1 when docs/CLI.md is not what the parsers say

The parser is the one `python -m evaluator` builds (`evaluator.cli.build_parser`): every
subcommand's description, usage and arguments come from it, so the reference cannot drift from
the code (tests/test_cli_reference.py fails when it does). Usage lines are wrapped at a fixed
width, so the output does not depend on the terminal.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "CLI.md"
WIDTH = 100  # usage lines wrap here, whatever the terminal's width
REGENERATE = "python -m tools.cli_reference"  # also `make docs`

_MARKDOWN = re.compile(r"[\\`*\[\]|]|<(?=[A-Za-z/!?])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _escape(text: str) -> str:
    """Text of a help string as Markdown shows it: the characters Markdown would read as markup
    escaped (an underscore inside a word, as in question_id, is left alone)."""
    return _MARKDOWN.sub(lambda m: "\\" + m.group(0), " ".join(text.split()))


def _help(action: argparse.Action, prog: str) -> str:
    """The action's help as `--help` prints it: its %-placeholders filled in, as argparse does."""
    if not action.help:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    if action.choices is not None:
        params["choices"] = ", ".join(str(c) for c in action.choices)
    return action.help % params


def _description(parser: argparse.ArgumentParser) -> str:
    text = parser.description or ""
    return text % {"prog": parser.prog} if "%(prog)" in text else text


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = parser.formatter_class(prog=parser.prog, width=WIDTH)
    if hasattr(formatter, "_set_color"):  # Python 3.14 colours help on a terminal
        formatter._set_color(False)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _invocation(action: argparse.Action) -> str:
    """`--format FORMAT`, `PATH [PATH ...]`, `--json`: the argument as a user types it."""
    name = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    assert isinstance(name, str), f"{action.dest}: a tuple metavar is not supported"
    nargs = action.nargs
    if nargs == 0:
        value = ""
    elif nargs is None:
        value = name
    elif nargs == "?":
        value = f"[{name}]"
    elif nargs == "*":
        value = f"[{name} ...]"
    elif nargs == "+":
        value = f"{name} [{name} ...]"
    elif isinstance(nargs, int):
        value = " ".join([name] * nargs)
    else:
        raise ValueError(f"{action.dest}: nargs={nargs!r} is not supported")
    if not action.option_strings:
        return value
    return ", ".join(action.option_strings) + (f" {value}" if value else "")


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        text = _escape(_help(action, parser.prog))
        if action.choices is not None:
            if text and not text.endswith("."):
                text += "."
            text += " Choices: " + ", ".join(f"`{c}`" for c in action.choices) + "."
        if action.option_strings and action.required:
            text = "**Required.** " + text
        rows.append(f"| `{_invocation(action)}` | {text.strip()} |")
    if not rows:
        return []
    return ["| argument | what it does |", "|---|---|", *rows, ""]


def render() -> str:
    """docs/CLI.md as the parsers say it should be."""
    from evaluator.cli import build_parser  # the CLI's own parser, every command's module imported

    parser = build_parser()
    commands = _subcommands(parser)
    helps = {choice.dest: _help(choice, parser.prog) for choice in commands._choices_actions}
    lines = [
        "# CLI reference",
        "",
        f"<!-- Generated from the CLI's parsers by `{REGENERATE}`: do not edit by hand. "
        "tests/test_cli_reference.py fails when this file is not current. -->",
        "",
        "`python -m evaluator COMMAND ...`, or the `evaluator` script the install puts on the path. "
        "Every command also takes `-h` / `--help`. Errors a user can fix (bad input, an unknown run) "
        "exit with code 2 and one message on stderr.",
        "",
        "```text",
        _usage(parser),
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name in commands.choices:
        lines.append(f"| [`{name}`](#evaluator-{name}) | {_escape(helps.get(name, ''))} |")
    lines.append("")
    for name, sub in commands.choices.items():
        lines += [f"## evaluator {name}", ""]
        if sub.description:
            lines += [_escape(_description(sub)), ""]
        lines += ["```text", _usage(sub), "```", ""]
        lines += _arguments(sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help=f"write nothing; exit 1 when {OUT.relative_to(ROOT)} is not current")
    args = parser.parse_args(argv)
    text = render()
    current = OUT.read_text(encoding="utf-8") if OUT.exists() else None
    if args.check:
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run `{REGENERATE}` and commit it", file=sys.stderr)
            return 1
        print(f"{OUT.relative_to(ROOT)} is current")
        return 0
    if current != text:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    else:
        print(f"{OUT.relative_to(ROOT)} is current")
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):  # `python tools/cli_reference.py`: the repository's evaluator
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
