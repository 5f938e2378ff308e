"""Benchmark: the launcher lint on scripts with many counters of one variable (`((n++))` under
`set -e`, each judged against the assignment it reads and every count between them), against
the same script with 1/8 of the counters (linear time gives a ratio near 8, quadratic near 64)
and against the same script with each counter replaced by `echo` (the lint with nothing to
judge: the walk's own cost), all in the same run.

    .venv/bin/python bench/launcher_lint_counters.py [--counters 1600] [--repeat 3]

Shapes: `((n++)) || true` lines; `( ((n++)) || true )`, each in a subshell (counting nothing
for the next); `if [ -n "$X" ]; then ((n++)); fi`, each in a branch bash may skip; `if …; then
((n++)); else ((n++)); fi`, one of which always runs; `case` with two patterns; a loop each.
Each time is the median of `--repeat` runs, in CPU seconds of this process. The findings of
the small and the large script are checked to be the same per counter line (the bench fails
otherwise). Prints one table row per shape.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher_lint_scale import _median  # noqa: E402  (bench/, this script's folder)

from bot.core.launcher_lint import lint_launcher  # noqa: E402

HEAD = "#!/bin/bash\nset -e\nn=0\n"
#: Each shape: one line with `{c}` where a counter goes.
SHAPES = {
    "`((n++)) || true` lines": "{c} || true\n",
    "`( ((n++)) || true )`, subshells": "( {c} || true )\n",
    "`if …; then ((n++)); fi`": 'if [ -n "$X" ]; then {c}; fi\n',
    "`if …; then ((n++)); else ((n++)); fi`": 'if [ -n "$X" ]; then {c}; else {c}; fi\n',
    "`case` of two patterns": 'case "$X" in a) {c};; b) {c};; esac\n',
    "`for` loop each": "for i in 1 2; do {c} || true; done\n",
}


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
    print(f"| shape | lint, {n} counters (CPU s) | lint / lint at 1/8 "
          "| same script, `echo` for each counter (CPU s) | lint / that |")
    print("|---|---|---|---|---|")
    for name, line in SHAPES.items():
        big = HEAD + line.format(c="((n++))") * n
        small = HEAD + line.format(c="((n++))") * (n // 8)
        plain = HEAD + line.format(c="echo n") * n
        if _levels(big) != _levels(small):
            raise SystemExit(f"{name}: the findings differ with the number of counters")
        t_big = _median(lambda t=big: lint_launcher(t), args.repeat)
        t_small = _median(lambda t=small: lint_launcher(t), args.repeat)
        t_plain = _median(lambda t=plain: lint_launcher(t), args.repeat)
        print(f"| {name} | {t_big:.3f} s | {t_big / t_small:.1f} | {t_plain:.3f} s | "
              f"{t_big / t_plain:.1f} |")


if __name__ == "__main__":
    main()
