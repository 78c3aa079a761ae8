"""The package's layout rules (docs/DESIGN.md): data flows one way, the pure core stays pure."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import evaluator

PACKAGE = Path(evaluator.__file__).parent
# The entry point `python -m evaluator` is the one module outside cli/ that runs the CLI.
ENTRY_POINT = PACKAGE / "__main__.py"

PURE_CORE = (
    "evaluator.types",
    "evaluator.registry",
    "evaluator.rules",
    "evaluator.rules_data",
    "evaluator.rules_merge",
    "evaluator.text_norm",
    "evaluator.regex_fold",
    "evaluator.regex_safety",
    "evaluator.matchers",
    "evaluator.checks",
    "evaluator.flags",
    "evaluator.evaluate",
    "evaluator.metrics.trust",
    "evaluator.judges.heuristic",
    "evaluator.stats",
    "evaluator.agreement",
)
IMPURE = ("duckdb", "streamlit", "pandas", "pyarrow")


def _package_of(path: Path) -> str:
    return ".".join(("evaluator", *path.relative_to(PACKAGE).parent.parts))


def _imported_modules(source: str, package: str) -> set[str]:
    """Every module an import statement in ``source`` (a module of ``package``) names,
    relative imports resolved, including imports inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _cli_imports(source: str, package: str) -> list[str]:
    found = _imported_modules(source, package)
    return sorted(m for m in found if m == "evaluator.cli" or m.startswith("evaluator.cli."))


def test_nothing_below_the_cli_imports_from_it() -> None:
    below_cli = [p for p in sorted(PACKAGE.rglob("*.py"))
                 if "cli" not in p.relative_to(PACKAGE).parts and p != ENTRY_POINT]
    assert len(below_cli) > 40  # the walk found the package
    offenders = {str(p.relative_to(PACKAGE.parent)): _cli_imports(p.read_text(encoding="utf-8"), _package_of(p))
                 for p in below_cli}
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_layout_check_finds_a_cli_import_in_any_form() -> None:
    source = ("import evaluator.cli.common\n"
              "def f():\n"
              "    from ..cli.common import UsageError\n"
              "    from evaluator import cli\n")
    assert _cli_imports(source, "evaluator.metrics") == ["evaluator.cli", "evaluator.cli.common",
                                                          "evaluator.cli.common.UsageError"]


def test_the_pure_core_imports_neither_duckdb_nor_streamlit_nor_pandas_nor_pyarrow() -> None:
    # a fresh interpreter: this test process has long imported all of them
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_CORE!r}:\n"
        "    importlib.import_module(name)\n"
        f"    pulled = sorted(m for m in {IMPURE!r} if m in sys.modules)\n"
        "    if pulled:\n"
        "        print(name, 'pulls in', ', '.join(pulled))\n"
        "        break\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
