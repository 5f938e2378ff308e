"""The test tree collects in any combination of its folders: no module under tests/ imports
`conftest` when it runs. Every conftest.py outside a package is imported as the module
`conftest`, the last one pytest loaded, so `from conftest import CHANNEL` in a test of
tests/e2e got tests/unit/services/conftest.py under `pytest tests/e2e tests/unit/services` and
failed to collect. Shared names live in plain modules (tests/support/e2e.py); an import for
the types only (under `if TYPE_CHECKING:`) is never run and may stay."""

from __future__ import annotations

import ast
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while (node := parents.get(node)) is not None:  # type: ignore[assignment]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def conftest_imports(source: str) -> list[int]:
    """Line numbers of the imports of `conftest` in `source` that run (not TYPE_CHECKING's)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        names = ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if "conftest" in names and not _type_checking_only(node, parents):
            assert isinstance(node, ast.stmt)  # an import
            lines.append(node.lineno)
    return lines


def test_what_counts_as_importing_conftest() -> None:
    assert conftest_imports("from conftest import CHANNEL\n") == [1]
    assert conftest_imports("x = 1\nimport conftest\n") == [2]
    assert conftest_imports("if TYPE_CHECKING:\n    from conftest import DevCluster\n") == []
    assert conftest_imports("from support.e2e import CHANNEL\nfrom .conftest import X\n") == []


def test_no_test_module_imports_conftest_at_run_time() -> None:
    found = {}
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d not in ("fixtures", "__pycache__")]  # fixtures: data
        for name in files:
            path = Path(folder) / name
            if name.endswith(".py") and (lines := conftest_imports(path.read_text())):
                found[str(path.relative_to(TESTS))] = lines
    assert found == {}
