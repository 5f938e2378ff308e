"""Benchmark: redacting one long line of an adversarial shape (a run of `a.`, a Slack prefix
before a run of dashes, URLs with no `@`, a secret's name before a run of spaces …) against
ordinary log text of the same size, in the same run; and lines where a configured secret
meets the marker (`MARKER_SHAPES`).

    .venv/bin/python bench/redact_long_line.py [--size-kib 1024] [--repeat 3]

The redactor runs on every log line and every text posted to Slack, so a pattern that retries
a run from each of its characters (time growing with the square of the line's length: 18 s
for 32 KiB of `a.` before the URL pattern was made linear, hours for 1 MiB) stalls the
watcher on one line. Prints each shape's best time and its ratio to the ordinary text's;
fails when a ratio passes `MAX_RATIO`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.redact import Redactor  # noqa: E402

#: How many times ordinary text's time one adversarial line of the same size may take.
MAX_RATIO = 20.0
#: Lines of about n characters each (tests/unit/core/test_redact_long_lines.py has the same).
ADVERSARIAL_SHAPES = {
    "a.a.": lambda n: "a." * (n // 2),
    "A+a-1.": lambda n: "A+a-1." * (n // 6),
    "xoxb- before dashes": lambda n: "xoxb-" + "-" * n,
    "short xoxa- tokens": lambda n: "xoxa-1234567!" * (n // 13),
    "hf_ + 19": lambda n: ("hf_" + "a" * 19 + " ") * (n // 23),
    "hf_ + long run": lambda n: "hf_" + "a" * n,
    "ghp_ + 19": lambda n: ("ghp_" + "a" * 19 + ".") * (n // 24),
    "ASIA + 15": lambda n: ("ASIA" + "B" * 15 + "_") * (n // 20),
    "token= + spaces": lambda n: ("token=" + " " * 100) * (n // 106),
    "token + spaces": lambda n: "token" + " " * n,
    "token: + spaces + '": lambda n: ("token:" + " " * 1000 + "'") * (n // 1007),
    "tokentoken": lambda n: "token" * (n // 5),
    "a_ … token": lambda n: "a_" * (n // 2) + "token",
    "URL, no @": lambda n: "a://u:" + "b" * n,
    "URLs, no @": lambda n: ("a://u:" + "b" * 50 + " ") * (n // 57),
    "URL after URL": lambda n: "a://u:" * (n // 6),
    "URL, then @s": lambda n: "a://u:" + "@x" * (n // 2),
    "bearer + spaces": lambda n: "bearer" + " " * n,
    "glued xoxb- + digits": lambda n: "axoxb-" + "1" * n,
    "glued xoxb-1-1-": lambda n: "axoxb-1-1-" * (n // 10),
    "DBPASSWORD= + spaces": lambda n: ("DBPASSWORD=" + " " * 100) * (n // 111),
    "glued AKIA + capitals": lambda n: "aAKIA" * (n // 5),
    "--token + spaces": lambda n: ("--token" + " " * 100) * (n // 107),
    "--a-b-c-…": lambda n: "--" + "a-" * (n // 2),
    "password: ' unclosed": lambda n: "password: '" + "x" * n,
    "wandb login + spaces": lambda n: "wandb login" + " " * n,
    "aToken=aToken=…": lambda n: "aToken=" * (n // 7),
    "aToken= + a run": lambda n: "aToken=" + "a1" * (n // 2),
    "aSecret: + spaces": lambda n: "aSecret:" + " " * n,
    "Slack tokens": lambda n: "xoxb-1234567890-abcdefghij " * (n // 27),
}


#: Secrets a marker and the text after (before) it spell again, and a line made of that text:
#: masking one more character per reading took a reading per character.
MARKER_SHAPES = {
    "ed]Q + Qs": (["ed]Q"], lambda n: "ed]" + "Q" * n),
    "Qs + Q[re": (["Q[re"], lambda n: "Q" * n + "[re"),
    "marker, Q, marker …": (["d]Q[r", "ed]Q"], lambda n: "[redacted]Q" * (n // 11)),
    # one secret meets the marker, another is long: the long one must not widen what is read
    # around each marker
    "ed]Q, a long secret": (["ed]Q", "Z" * 800], lambda n: "[redacted]Q[redacted] " * (n // 22)),
    "]-secret, a long one, masks": (["hunter22", "k" * 2400, "]Xy7pass"],
                                    lambda n: "step loss=0.1 pw=hunter22 ok " * (n // 29)),
}


def best(redactor: Redactor, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        redactor.redact(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-kib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.size_kib * 1024
    redactor = Redactor(["correct horse battery"])
    ordinary = ("step 100 loss 2.31 lr 3e-4 tokens/s 51234 host gpu-a17 " * (n // 55 + 1))[:n]
    base = best(redactor, ordinary, args.repeat)
    print(f"{'ordinary text':<28} {base:8.3f} s")
    worst = 0.0
    for name, shape in ADVERSARIAL_SHAPES.items():
        took = best(redactor, shape(n), args.repeat)
        ratio = took / base if base else 0.0
        worst = max(worst, ratio)
        print(f"{name:<28} {took:8.3f} s  ratio {ratio:6.2f}", flush=True)
    for name, (secrets, marker_shape) in MARKER_SHAPES.items():
        took = best(Redactor(secrets), marker_shape(n), args.repeat)
        ratio = took / base if base else 0.0
        worst = max(worst, ratio)
        print(f"{name:<28} {took:8.3f} s  ratio {ratio:6.2f}", flush=True)
    print(f"worst ratio {worst:.2f} (max {MAX_RATIO})")
    return 0 if worst <= MAX_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
