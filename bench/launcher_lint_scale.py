"""Benchmark: the launcher lint on 1 MiB batch scripts, against the same script at 1/8 of the
size (linear time gives a ratio near 8, quadratic near 64), against one regex pass over the same
text (Python's `re` finding every quote, bracket, operator and line end: the floor for a Python
lexer) and against `bash -n` (bash's own parser) on the same file, all in the same run.

    .venv/bin/python bench/launcher_lint_scale.py [--size-kib 1024] [--repeat 5]

Shapes: the incident's launcher repeated; 32k-style one-line functions; a long real-looking
launcher body of many statements; 1 MiB of nested `( … )` and of nested `$( … )`; a launcher
whose heredocs (a generated config: shell-like text with quotes and brackets) make up most of
it; the launcher body on one huge `;`-separated line; messages piped to `tee` without
`pipefail`; one long and-or list of tests, assignments and counts. A shape whose 1/8-size
ratio is above NOT_LINEAR_ABOVE is marked "(not linear)". Each time is the median of `--repeat`
runs, in CPU seconds of the process doing the work (the lint and the regex pass here, `bash -n`
as a child), which other jobs on a shared machine disturb much less than wall time. Prints one
table row per shape.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.launcher_lint import lint_launcher  # noqa: E402

INCIDENT = (ROOT / "tests" / "fixtures" / "launchers" / "report_108687.sbatch").read_text()
BODY = """\
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
LOG_DIR=logs/$SLURM_JOB_ID
mkdir -p "$LOG_DIR"
if grep -q "resume" config.yaml; then RESUME=1; fi
for f in data/*.json; do echo "$f" >> "$LOG_DIR/files.txt"; done
N=$(wc -l < "$LOG_DIR/files.txt")
srun --ntasks-per-node=4 python train.py --log-dir "$LOG_DIR" --n "$N" 2>&1 | tee "$LOG_DIR/out.log"
"""
HEREDOC_LINES = """\
# generated: don't edit (it's rewritten by each run)
export LR="${LR:-3e-4}" WARMUP=$(( STEPS / 10 ))
if [ "$RESUME" = 1 ]; then echo "resuming from '$CKPT'"; fi
ls ck/* | grep -v tmp | head -1; echo "(unbalanced { and ` here"
"""
HEREDOC = 'cat > "$LOG_DIR/config.sh" <<EOF\n' + HEREDOC_LINES * 40 + "EOF\n"
ONE_LINE = BODY.replace("\n", "; ")
#: A long block of comments and blank lines (each line start once re-scanned every line below it:
#: a whole-script pattern starting `^\s*`), below a head that makes the content-gated checks read
#: it too: a counter (the arithmetic checks), a JIT use (the `CC` / `CXX` patterns)
COMMENTS = "#SBATCH --time=1:00:00\n# LR=3e-4 set -e module load gcc\n\n  \n\t\n"
COMMENTS_HEAD = "n=0\n((n++)) || true\npython train.py --compile\n"
#: Messages piped to tee, without pipefail (each one's "is the rest of the script only messages?"
#: once re-read every statement below it)
TEES = 'echo "step $i" | tee -a "$LOG_DIR/out.log"\n'
#: One long and-or list (each line's last `||` continues it): tests, assignments and counts of
#: one counter, each a command bash may skip (the counts' coverage once re-read the whole list
#: at each count)
AND_OR = '[ -n "$T" ] && n=1 || ((n++)) && echo a ||\n'


def _shapes(size: int) -> dict[str, str]:
    head = "#!/bin/bash\nset -euo pipefail\n"
    funcs = "".join(f"f{i}() {{ ls ck/*; }}\n" for i in range(size // 20 + 1))
    third = (size - len(head)) // 3
    return {
        "incident launcher, repeated": (INCIDENT * (size // len(INCIDENT) + 1))[:size],
        "one-line functions": (head + funcs)[:size],
        "long launcher body": (head + BODY * (size // len(BODY) + 1))[:size],
        "nested ( … )": head + "( " * third + ")" * third,
        "nested $( … )": head + "X=" + "$(" * third + ")" * third,
        "long heredocs": (head + (BODY + HEREDOC) * (size // len(BODY + HEREDOC) + 1))[:size],
        "one huge line": head + (ONE_LINE * (size // len(ONE_LINE) + 1))[:size],
        "comment and blank lines": head + COMMENTS_HEAD
        + (COMMENTS * (size // len(COMMENTS) + 1))[:size],
        "tee pipelines, no pipefail": "#!/bin/bash\n" + (TEES * (size // len(TEES) + 1))[:size],
        "one long and-or list": head + "n=0\n" + AND_OR * (size // len(AND_OR) + 1)
        + "true\n((n++))\n",
    }


def _median(fn: Callable[[], object], repeat: int) -> float:
    """Median CPU time of `repeat` calls (user + system, this process)."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def _median_child(argv: list[str], repeat: int) -> float:
    """Median CPU time of `repeat` runs of a child process (user + system)."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(times)


#: A 1/8-size ratio above this is flagged: linear time gives about 8 (7 to 10, 12 once on a
#: loaded shared machine), quadratic about 64; a search of the script at each of its loops gave
#: 14.5 at 1 MiB.
NOT_LINEAR_ABOVE = 13

#: One regex pass over the text: every character a shell lexer has to look at.
_REGEX_PASS = re.compile(r"[\\'\"`$#(){}|&;<>\n]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-kib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = args.size_kib * 1024
    bash = shutil.which("bash")
    big, small = _shapes(size), _shapes(size // 8)
    print(f"| shape | lint {args.size_kib} KiB (CPU s) | lint / lint at 1/8 size "
          "| regex pass (CPU s) | lint / regex pass | bash -n (CPU s) | lint / bash -n |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in big.items():
            t_big = _median(partial(lint_launcher, text), args.repeat)
            t_small = _median(partial(lint_launcher, small[name]), args.repeat)
            t_re = _median(partial(lambda t: sum(1 for _ in _REGEX_PASS.finditer(t)), text),
                           args.repeat)
            t_bash = float("nan")
            if bash:
                path = Path(tmp) / "s.sh"
                path.write_text(text)
                t_bash = _median_child([bash, "-n", str(path)], args.repeat)
            ratio = t_big / t_small
            grows = f"{ratio:.1f}" + (" (not linear)" if ratio > NOT_LINEAR_ABOVE else "")
            print(f"| {name} | {t_big:.3f} s | {grows} | {t_re:.3f} s | "
                  f"{t_big / t_re:.1f} | {t_bash:.3f} s | {t_big / t_bash:.1f} |")


if __name__ == "__main__":
    main()
