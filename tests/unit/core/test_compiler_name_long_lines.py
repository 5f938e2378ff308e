"""The C/C++ compiler a compiler_missing line names, found without retrying a long run of
`[\\w.-]` from each word boundary: real reports name their tool, near misses none, and a table
of lines (and generated ones) names what the former pattern named."""
import random
import re

import pytest

from bot.core.diagnose.line_cause import _c_compiler

_FORMER_C_COMPILER = re.compile(
    r"(?:'|\b)((?:[\w.]+-)*(?:gcc|g\+\+|clang\+\+|clang|c\+\+|cc|cl))(?:\.exe)?"
    r"(?:'|: (?:command )?not found| is not found)")

REPORTS = [
    ("error: command 'gcc' failed: No such file or directory", "gcc"),
    ("error: command 'x86_64-linux-gnu-gcc' failed with exit status 1", "x86_64-linux-gnu-gcc"),
    ("distutils.errors.DistutilsExecError: command (None, 'g++') failed", "g++"),
    ("/bin/sh: 1: gcc: not found", "gcc"),
    ("Compiler: cl is not found", "cl"),
    ("error: command 'cl.exe' failed: None", "cl"),
    ("sh: x86_64-conda-linux-gnu-c++: command not found", "x86_64-conda-linux-gnu-c++"),
]
NEAR_MISSES = ["Failed to find C compiler", "gcc: error: unrecognized option", "mygcc: not found",
               "command 'gcc-12' failed", "clang version 15 is installed"]


@pytest.mark.parametrize(("line", "tool"), REPORTS)
def test_the_reported_compiler_is_named(line: str, tool: str) -> None:
    assert _c_compiler(line) == tool


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_no_compiler_is_named_for_a_near_miss(line: str) -> None:
    assert _c_compiler(line) is None


def _former(line: str) -> str | None:
    m = _FORMER_C_COMPILER.search(line)
    return m.group(1) if m else None


def test_the_compiler_named_is_the_former_patterns() -> None:
    rng = random.Random(6)
    pieces = ["gcc", "g++", "clang", "clang++", "c++", "cc", "cl", ".exe", "'", ": not found",
              " is not found", ": command not found", "-", "--", ".", "x", "a1", "_", " ", "+",
              "é", "/", "g", "c", ":"]
    lines = [line for line, _ in REPORTS] + NEAR_MISSES + [
        "".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))) for _ in range(20000)]
    assert [line for line in lines if _c_compiler(line) != _former(line)] == []
    assert sum(_former(line) is not None for line in lines) > 1000
