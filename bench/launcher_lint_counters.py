"""Benchmark: the launcher lint on scripts with many counters of one variable (`((n++))` under
`set -e`, each judged against the assignment it reads and every count between them), against
the same script with 1/8 of the counters (linear time gives a ratio near 8, quadratic near 64)
and against the same script with each counter replaced by `echo` (the lint with nothing to
judge: the walk's own cost), all in the same run.

    .venv/bin/python bench/launcher_lint_counters.py [--counters 1600] [--repeat 3]

Shapes: `((n++)) || true` lines; `( ((n++)) || true )`, each in a subshell (counting nothing
for the next); `if [ -n "$X" ]; then ((n++)); fi`, each in a branch bash may skip; `if …; then
((n++)); else ((n++)); fi`, one of which always runs; `case` with two patterns; a loop each; a
`while true` each whose body may `break` before its counter.
And the other side of the judgement: as many assignments, each in an `if` bash may skip, before
one counter (which of them may be the last to run: branches.last_to_run), or each before a
counter of its own (each counter asks that of all the assignments before it:
counter_values.Assigned), each in the `else` of an `if` whose `then` assigns (which never
runs before it: counter_values.in_other_branches), or each before a counter of its own after
one assignment in a subshell; as many variables, each set only for a command (`nI=0 true`,
its environment's: `{ci}` is a counter of `nI`) and counted under `set -u` (unbound: each
counter's finding names its variable's last such command); as many calls of a function
whose body counts (`inc() { ((n++)); }`), each after an assignment, made directly, through
another function (`run() { inc; }`), or
through one that sets the variable in a branch first (calls.values_at_calls; for those, `{c}`
is the body's counter). Each time is the median of `--repeat` runs, in CPU seconds of this
process. The findings of the small and the large script are checked to be the same (the bench
fails otherwise). Prints one table row per shape.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher_lint_scale import _median  # noqa: E402  (bench/, this script's folder)

from bot.core.launcher_lint import lint_launcher  # noqa: E402

HEAD = "#!/bin/bash\nset -e\nn=0\n"
#: Each shape: the script's head, one part repeated (`{c}` where a counter goes, `{i}` the
#: part's number) and its tail.
SHAPES = {
    "`((n++)) || true` lines": (HEAD, "{c} || true\n", ""),
    "`( ((n++)) || true )`, subshells": (HEAD, "( {c} || true )\n", ""),
    "`if …; then ((n++)); fi`": (HEAD, 'if [ -n "$X" ]; then {c}; fi\n', ""),
    "`if …; then ((n++)); else ((n++)); fi`": (
        HEAD, 'if [ -n "$X" ]; then {c}; else {c}; fi\n', ""),
    "`case` of two patterns": (HEAD, 'case "$X" in a) {c};; b) {c};; esac\n', ""),
    "`for` loop each": (HEAD, "for i in 1 2; do {c} || true; done\n", ""),
    "`while true` each, `break` in an `if`": (
        HEAD, 'while true; do if [ -n "$X" ]; then break; fi; {c} || true; break; done\n', ""),
    "assignments in `if`s, then one counter": (
        HEAD, 'if [ -n "$X" ]; then n={i}; fi\n', "{c}\n"),
    "assignments in `if`s, each followed by a counter": (
        HEAD, 'if [ -n "$X" ]; then n={i}; fi\n{c} || true\n', ""),
    "each counter in the `else` of an assignment's `if`": (
        HEAD, 'if [ -n "$X" ]; then n={i}; else {c} || true; fi\n', ""),
    "assignments in `if`s, each followed by a counter, one in a subshell": (
        HEAD + "( n=1 )\n", 'if [ -n "$X" ]; then n={i}; fi\n{c} || true\n', ""),
    "variables each set only for a command (`nI=0 true`), under `set -u`": (
        "#!/bin/bash\nset -u\n", "n{i}=0 true\n{ci} || true\n", ""),
    "calls of `inc() { ((n++)); }`": (
        "#!/bin/bash\nset -e\ninc() { {c}; }\n", "n=1\ninc\n", ""),
    "calls through `run() { inc; }`": (
        "#!/bin/bash\nset -e\ninc() { {c}; }\nrun() { inc; }\n", "n=1\nrun\n", ""),
    "calls through `run() { if …; then n=0; fi; inc; }`": (
        '#!/bin/bash\nset -e\ninc() { {c}; }\nrun() { if [ -n "$X" ]; then n=0; fi; inc; }\n',
        "n=5\nrun\n", ""),
}


def _script(shape: tuple[str, str, str], parts: int, counter: str) -> str:
    head, part, tail = shape
    return (head.replace("{c}", counter)
            + "".join(part.format(c=counter, ci=counter.replace("n", f"n{i}", 1), i=i)
                      for i in range(parts))
            + tail.format(c=counter))


def _levels(text: str) -> list[str]:
    """The arithmetic checks' warn/fail levels (what must not change with size)."""
    return sorted({f.level for f in lint_launcher(text)
                   if f.check.startswith("arith") and f.level in ("warn", "fail")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counters", type=int, default=1600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.counters
    print(f"| shape | lint, {n} counters, assignments or calls (CPU s) | lint / lint at 1/8 "
          "| same script, `echo` for each counter (CPU s) | lint / that |")
    print("|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        big = _script(shape, n, "((n++))")
        small = _script(shape, n // 8, "((n++))")
        plain = _script(shape, n, "echo n")
        if _levels(big) != _levels(small):
            raise SystemExit(f"{name}: the findings differ with the number of counters")
        t_big = _median(partial(lint_launcher, big), args.repeat)
        t_small = _median(partial(lint_launcher, small), args.repeat)
        t_plain = _median(partial(lint_launcher, plain), args.repeat)
        print(f"| {name} | {t_big:.3f} s | {t_big / t_small:.1f} | {t_plain:.3f} s | "
              f"{t_big / t_plain:.1f} |", flush=True)

if __name__ == "__main__":
    main()
