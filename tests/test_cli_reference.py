"""The documentation stays true to the code: docs/CLI.md is what the CLI's parsers say, and every
relative link of the README and docs/ leads to a file (and a heading) that exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tools import cli_reference

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "HISTORY.md"]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def test_cli_reference_is_current() -> None:
    expected = cli_reference.render()
    current = cli_reference.OUT.read_text(encoding="utf-8") if cli_reference.OUT.exists() else ""
    assert current == expected, (
        f"docs/CLI.md is not what the CLI's parsers say: run `{cli_reference.REGENERATE}` (or `make docs`) "
        "and commit docs/CLI.md")


def test_cli_reference_check_mode_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_reference.main(["--check"]) == 0, capsys.readouterr().err


def test_cli_reference_lists_every_command() -> None:
    from evaluator.cli import COMMANDS

    text = cli_reference.OUT.read_text(encoding="utf-8")
    for command in COMMANDS.values():
        assert f"\n## evaluator {command}\n" in text, command


def _prose(text: str) -> str:
    """The Markdown without its code blocks and code spans, where links are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces as dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(path.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I)]  # http:, https:, mailto: ...


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    assert doc.exists(), doc
    broken = []
    for target in _relative_links(doc):
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT) if linked.is_relative_to(ROOT) else linked}")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_the_link_check_sees_links() -> None:
    """The checks above would pass vacuously if the pattern found no links."""
    readme_links = _relative_links(ROOT / "README.md")
    assert "docs/CLI.md" in readme_links and "docs/screenshot.png" in readme_links
    assert "docs/rules.md#patterns-are-re2" in readme_links


def test_the_rules_page_example_is_the_rules_file_the_tests_run() -> None:
    """docs/rules.md shows the same example as the README (whose copy tests/evaluator checks)."""
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    shown = re.search(r"```toml\n(.*?)```", text, re.S)
    assert shown is not None
    fixture = (ROOT / "tests" / "fixtures" / "rules" / "my_bot.toml").read_text(encoding="utf-8")
    assert tomllib.loads(shown.group(1)) == tomllib.loads(fixture)
