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
    "evaluator.core.types",
    "evaluator.core.registry",
    "evaluator.rules.load",
    "evaluator.rules.model",
    "evaluator.rules.merge",
    "evaluator.rules.text_norm",
    "evaluator.rules.matchers",
    "evaluator.core.checks",
    "evaluator.core.flags",
    "evaluator.core.evaluate",
    "evaluator.pipeline.metrics.trust",
    "evaluator.pipeline.judges.heuristic",
    "evaluator.core.stats",
    "evaluator.review.agreement",
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
              "    from ...cli.common import UsageError\n"
              "    from evaluator import cli\n")
    assert _cli_imports(source, "evaluator.pipeline.metrics") == ["evaluator.cli", "evaluator.cli.common",
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


# --- one definition per check (issue 16 §1) and one effective-verdict definition -----------------

REPO = PACKAGE.parent
# Where check/flag names may be written out: their definitions (the @check/@flag decorators).
NAME_DEFINITIONS = {"evaluator/core/checks.py", "evaluator/core/flags.py"}
# A check's SQL form is registered with it there too (@check(..., sql=...)). Modules that must
# name one particular check or flag (a peer's grader, a banner's colour, the rules file's flag
# tables, a Rule lab label) write `registry.CHECK.name` / `registry.FLAG.name`, checked at import.
# What remains below is prose for the user (kept explicit so the list only shrinks).
NAMES_KNOWN_ELSEWHERE = {
    # help and usage text with a worked example (prose for the user, not a list of checks)
    "evaluator/cli/agreement.py", "pages/agreement.py",
}


def _source_files() -> list[Path]:
    files = [*sorted((REPO / "evaluator").rglob("*.py")), *sorted((REPO / "dashboard").rglob("*.py")),
             *sorted((REPO / "pages").rglob("*.py")), REPO / "app.py"]
    return [p for p in files if p.exists()]


def _string_literals(source: str) -> list[str]:
    """String constants in code, docstrings left out (they may name a check in prose)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _names_written_out(names: tuple[str, ...]) -> dict[str, list[str]]:
    import re

    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    found: dict[str, list[str]] = {}
    for path in _source_files():
        rel = str(path.relative_to(REPO))
        if rel in NAME_DEFINITIONS or rel in NAMES_KNOWN_ELSEWHERE:
            continue
        hits = sorted({m.group() for text in _string_literals(path.read_text(encoding="utf-8"))
                       for m in pattern.finditer(text)})
        if hits:
            found[rel] = hits
    return found


def test_check_and_flag_names_are_written_only_where_they_are_defined() -> None:
    from evaluator.core.registry import check_names, flag_names

    assert _names_written_out((*check_names(), *flag_names())) == {}


def test_the_name_check_finds_a_name_in_an_sql_string() -> None:
    source = 'SQL = "ORDER BY CASE flag WHEN \'refusal_detected\' THEN 1 END"\n'
    import re

    assert [m.group() for t in _string_literals(source) for m in re.finditer(r"refusal_detected", t)] == [
        "refusal_detected"]


# The override-ordering rule ("latest override wins") lives in evaluator/queries/effective.py.
EFFECTIVE_DEFINITION = "evaluator/queries/effective.py"
# Outside evaluator/queries (other owners; listed in the issue-16 report): the override writer's
# own reads of the latest value and the metrics runner.
OVERRIDE_ORDER_KNOWN_ELSEWHERE = {"evaluator/review/overrides.py", "evaluator/pipeline/metrics/runner.py"}


def _reimplements_latest_override(source: str) -> bool:
    import re

    flat = " ".join(source.split())
    return bool(re.search(r"override_id\s+DESC|arg_max\([^)]*override_id", flat, re.IGNORECASE))


def test_only_effective_py_orders_overrides() -> None:
    offenders = [str(p.relative_to(REPO)) for p in _source_files()
                 if _reimplements_latest_override(p.read_text(encoding="utf-8"))]
    assert sorted(set(offenders) - OVERRIDE_ORDER_KNOWN_ELSEWHERE) == [EFFECTIVE_DEFINITION]


def test_the_override_check_finds_a_hand_written_latest_override() -> None:
    assert _reimplements_latest_override("SELECT new_value FROM overrides\n ORDER BY override_id\n  DESC LIMIT 1")
    assert _reimplements_latest_override("SELECT arg_max(o.new_value, o.override_id) FROM overrides o")


# --- a total beside each row: OVER_ALL_ROWS, never `OVER ()` (evaluator/store/db.py says why) -----------

def _windows_over_nothing(source: str) -> bool:
    import re

    return bool(re.search(r"\bOVER\s*\(\s*\)", source, re.IGNORECASE))


def test_no_query_counts_over_an_unpartitioned_window() -> None:
    offenders = [p for p in _source_files() if _windows_over_nothing(p.read_text(encoding="utf-8"))]
    assert [str(p.relative_to(REPO)) for p in offenders] == []


def test_the_window_check_finds_over_with_nothing_in_it() -> None:
    assert _windows_over_nothing("SELECT id, count(*) over ( ) AS total FROM t")
    assert _windows_over_nothing("sum(count(*)) OVER()")
    assert not _windows_over_nothing("count(*) OVER (PARTITION BY NULL), row_number() OVER (ORDER BY id)")


# --- named parameters only (issue 16 §2) ---------------------------------------------------------

# Every module that may write SQL: all of evaluator/, dashboard/, pages/ and app.py.
# (file, literal) pairs that are not SQL at all but a `?` as text or in a regex, which the rule
# (blind to what a string is for) would take for a parameter.
NOT_SQL = {
    ("evaluator/core/registry.py", "?"),  # an unknown module or name in an error message
    ("evaluator/store/db.py", "?"),  # an unknown lock holder in a message
    ("evaluator/rules/text_norm.py", " ?/ ?"),  # a regex: a slash with optional spaces around it
    ("evaluator/pipeline/sql/re2.py", "?"),  # a regex quantifier written back into a pattern
    ("evaluator/pipeline/judges/heuristic.py", "?"),  # the question mark that ends a sentence (the judge's hedges)
}
_SQL_NOT_CODE = r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/"
_POSITIONAL = r"(?<![\w)\]?*+.\\])\?(?=$|[\s),;]|::)|\$\d"


def _code_strings(source: str) -> list[str]:
    """The string literals of ``source`` as the SQL they build: an f-string whole, each ``{…}`` a word
    (``x``: a value stands where a word would, so `?` next to one is a regex's, as in ``(?{flags}:``)."""
    tree = ast.parse(source)
    parts_of_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts_of_fstrings:
            out.append(node.value)
    return out


def _positional_parameters(text: str) -> list[str]:
    """The positional parameters of SQL text: `?` standing as a token of its own, or `$1`-style.

    The rule: drop what SQL does not read as code (quoted strings and identifiers, comments), then
    flag a `?` that does not follow a word character, a closing bracket or a regex quantifier's
    target, and is followed by the end, a space, `)`, `,`, `;` or a `::` cast — where SQL puts a
    parameter (`= ?`, `IN (?, ?)`, `LIMIT ?`, `?::BIGINT[]`). Prose puts `?` after a word
    ("runs?"), a regex after what it quantifies (`s?`, `.*?`) or before a group's flag (`(?i)`,
    `(?:`), so neither is flagged; a numbered `$1` is positional too."""
    import re

    code = re.sub(_SQL_NOT_CODE, " ", text, flags=re.DOTALL)
    return [m.group() for m in re.finditer(_POSITIONAL, code)]


def test_every_module_binds_only_named_parameters() -> None:
    files = [p.relative_to(REPO).as_posix() for p in _source_files()]
    assert len(files) > 100  # the walk found the modules
    found = {(rel, text) for rel in files
             for text in _code_strings((REPO / rel).read_text(encoding="utf-8")) if _positional_parameters(text)}
    assert found - NOT_SQL == set()


def test_the_parameter_check_covers_the_package_the_dashboard_and_the_pages() -> None:
    checked = {p.relative_to(REPO).parts[0] for p in _source_files()}
    assert checked == {"evaluator", "dashboard", "pages", "app.py"}
    assert REPO / "evaluator" / "queries" / "triage.py" in _source_files()


def test_the_parameter_check_finds_positional_parameters_in_any_position() -> None:
    sql = ("SELECT ? FROM t WHERE a = ? AND b IN (?, ?) AND c=? AND d IN (SELECT unnest(?::BIGINT[]))\n"
           "LIMIT ? OFFSET ?;")
    assert _positional_parameters(sql) == ["?"] * 8
    assert _positional_parameters("WHERE a = $1") == ["$1"]
    assert _positional_parameters("?") == ["?"]  # a lone mark, as in ", ".join("?" * n)


def test_the_parameter_check_ignores_named_parameters_quoted_text_regexes_and_prose() -> None:
    assert _positional_parameters("WHERE a = $evaluation_id AND b IN ($ids_0, $ids_1) LIMIT $limit") == []
    assert _positional_parameters("WHERE note = 'why?' AND \"odd?\" = 1 -- any ?\n") == []
    assert _positional_parameters("(?is)x\\?") == []
    assert _positional_parameters(r"^\s*([A-Za-z_]+)?\s*(?:=|>=)\s*(.+?)$") == []
    assert _positional_parameters("Which run? Pick one.") == []


def test_the_parameter_check_reads_an_f_string_whole() -> None:
    source = 'sql = f"SELECT x FROM {table} WHERE note = \'{{a}} ?\' AND id = ?"\n'
    assert [_positional_parameters(t) for t in _code_strings(source)] == [["?"]]


def test_the_parameter_check_reads_a_value_in_an_f_string_as_a_word() -> None:
    source = 'pattern = f"(?{flags}:{body})"\nsql = f"WHERE id IN ({\', \'.join(\'?\' * n)})"\n'
    assert [t for t in _code_strings(source) if _positional_parameters(t)] == ["?"]  # the `?` inside a value


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in it: a late import inside a function
    is still a dependency), an imported name resolved to the module that defines it."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in paths.items():
        found = _imported_modules(path.read_text(encoding="utf-8"), _package_of(path))
        graph[module] = {r for name in found if (r := resolve(name)) is not None and r != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_the_package_imports_in_a_cycle() -> None:
    graph = _import_graph()
    assert len(graph) > 90 and "evaluator.core.checks" in graph["evaluator.core.flags"]
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle_through_a_late_import() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# What evaluates responses: a read of evaluator/queries/ never reaches it, even through another module.
EVALUATES = ("evaluator.core.evaluate", "evaluator.pipeline.recompute", "evaluator.review.spans")


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_queries_neither_evaluate_nor_reach_what_does() -> None:
    graph = _import_graph()
    queries = [m for m in graph if m.startswith("evaluator.queries.")]
    assert len(queries) >= 10
    assert {m: sorted(_reachable(graph, m) & set(EVALUATES)) for m in queries
            if _reachable(graph, m) & set(EVALUATES)} == {}


def test_the_reach_check_follows_imports_of_imports() -> None:
    assert _reachable({"a": {"b"}, "b": {"c"}, "c": set()}, "a") == {"b", "c"}
