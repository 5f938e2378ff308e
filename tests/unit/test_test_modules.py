"""The test tree collects in any combination of its folders: no module under tests/ imports
`conftest` when it runs. Every conftest.py outside a package is imported as the module
`conftest`, the last one pytest loaded, so `from conftest import CHANNEL` in a test of
tests/e2e got tests/unit/services/conftest.py under `pytest tests/e2e tests/unit/services` and
failed to collect. Shared names live in plain modules (tests/support/e2e.py); an import for
the types only (under `if TYPE_CHECKING:`) is never run and may stay.

No two test modules share a basename: pytest's default import mode ("prepend") imports a test
module in a folder without `__init__.py` by its basename, so a second test_x.py anywhere under
tests/ stops collection of the whole tree ("import file mismatch"), as a unit and an integration
test_slurm_mem_forms.py once did in a clean clone's CI run."""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from collections.abc import Iterable
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


def _is_test_module(name: str) -> bool:
    """pytest's default `python_files`: test_*.py and *_test.py."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def shared_basenames(paths: Iterable[str]) -> dict[str, list[str]]:
    """Basename -> its test modules (sorted), for each basename more than one test module has."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if _is_test_module(name := Path(path).name):
            by_name[name].append(path)
    return {name: sorted(found) for name, found in sorted(by_name.items()) if len(found) > 1}


def test_what_counts_as_a_shared_basename() -> None:
    assert shared_basenames(["unit/a/test_x.py", "integration/b/test_x.py", "unit/test_y.py",
                             "unit/x_test.py", "e2e/x_test.py", "support/x.py", "other/x.py",
                             "unit/conftest.py", "e2e/conftest.py"]) == {
        "test_x.py": ["integration/b/test_x.py", "unit/a/test_x.py"],
        "x_test.py": ["e2e/x_test.py", "unit/x_test.py"]}
    assert shared_basenames(["unit/test_x.py", "unit/test_x.pyc", "unit/test_x_more.py"]) == {}


def test_no_two_test_modules_share_a_basename() -> None:
    paths = []
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d not in ("fixtures", "__pycache__")]  # fixtures: data
        paths += [str((Path(folder) / name).relative_to(TESTS)) for name in files]
    shared = shared_basenames(paths)
    assert not shared, "pytest imports test modules by basename; rename one of each: " + "; ".join(
        f"{name}: {' and '.join(f'tests/{p}' for p in found)}" for name, found in shared.items())
