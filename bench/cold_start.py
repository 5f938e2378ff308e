"""Benchmark: a cold start of the bot's service, as `trainbot run` builds it (bot.app.run:
build_context, build_app, build_scheduler; nothing served, no network), each in a fresh
Python process, against the baseline of a fresh process importing the same modules and
building nothing, in the same run.

    .venv/bin/python bench/cold_start.py [--repeat 5] [--also /path/to/other/checkout]

Each start (a child process) reports, by its own clock: the imports (bot.app, bot.config,
the handlers, Slack's SDK), the packaged catalogue's load (`Catalogue.load()`, what
build_context does first; timed on its own, the build after it finds it compiled), the rest of
build_context (store on a new SQLite file, cluster sessions, poster, charts) and the Bolt app
and scheduler. The baseline child only imports. The catalogue's classes and signatures are
checked to be the same in every start (the bench fails otherwise). With `--also`, the starts
alternate with those of another checkout of trainbot (its own code, the same interpreter and
packages), e.g. main before a change. Prints the medians of `--repeat` starts, in wall
seconds, one row per checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IMPORTS = """
import time
t0 = time.perf_counter()
import bot.app, bot.config, handlers.actions, handlers.home, handlers.slash_commands
from bot.core.catalogue import Catalogue
from slack_sdk import WebClient
t1 = time.perf_counter()
"""

START = IMPORTS + """
import hashlib, json, sys, tempfile
from bot.ops.metrics import ServiceMetrics
config = bot.config.Config.model_validate({
    "clusters": {"dev": {"host": "127.0.0.1", "port": 2222, "user": "u",
                         "key_file": "/nonexistent"}},
    "recipes": {"mix": {"cluster": "dev", "sbatch_script": "/x/train.sbatch",
                        "owners": ["U0OWNER"], "channel": "training"}},
    "slack": {"channels": {"training": "C0TRAIN"}, "default_channel": "training"},
    "store": {"url": f"sqlite:///{tempfile.mkdtemp()}/bot.db"},
})
t2 = time.perf_counter()
catalogue = Catalogue.load(config.catalogue.extra)
t3 = time.perf_counter()
metrics = ServiceMetrics()
ctx = bot.app.build_context(config, metrics=metrics,
                            client=WebClient(token="xoxb-0", base_url="http://127.0.0.1:9/api/"))
t4 = time.perf_counter()
bot.app.build_app(config, ctx, listener_executor=bot.app.DaemonThreadExecutor(),
                  token_verification_enabled=False)
bot.app.build_scheduler(ctx, ticks=bot.app.TickHealth(metrics))
t5 = time.perf_counter()
shape = repr([(s.class_id, s.primary, s.regex.pattern, s.triggers, s.needs_block_regex)
              for s in catalogue._scanner.signatures]) + repr(sorted(catalogue.classes))
ctx.store.close()
print(json.dumps({"imports": t1 - t0, "catalogue": t3 - t2, "build": t4 - t3,
                  "app": t5 - t4, "start": t5 - t0,
                  "shape": hashlib.sha256(shape.encode()).hexdigest()}))
"""

BASELINE = IMPORTS + """
import json
print(json.dumps({"imports": t1 - t0}))
"""


def _child(repo: Path, code: str) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the modules' bytecode is cached
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--also", type=Path, action="append", default=[],
                        help="another checkout of trainbot whose starts alternate with these")
    args = parser.parse_args()
    repos = [ROOT, *args.also]
    runs: dict[Path, list[dict[str, float | str]]] = {r: [] for r in repos}
    bases: dict[Path, list[float]] = {r: [] for r in repos}
    for repo in repos:  # warm-up: the page cache, the bytecode
        _child(repo, START)
    for _ in range(args.repeat):
        for repo in repos:
            bases[repo].append(float(_child(repo, BASELINE)["imports"]))
            runs[repo].append(_child(repo, START))
    shapes = {str(r["shape"]) for rs in runs.values() for r in rs}
    if len(shapes) != 1:
        raise SystemExit(f"the catalogue's signatures differ between starts: {shapes}")

    def med(repo: Path, key: str) -> float:
        return statistics.median(float(r[key]) for r in runs[repo])

    print("| checkout | start (s) | imports only, baseline (s) | start / baseline | catalogue "
          "load (s) | catalogue / baseline | rest of build_context (s) | app + scheduler (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for repo in repos:
        base = statistics.median(bases[repo])
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or str(repo)
        print(f"| {head} | {med(repo, 'start'):.2f} | {base:.2f} | "
              f"{med(repo, 'start') / base:.2f} | {med(repo, 'catalogue'):.2f} | "
              f"{med(repo, 'catalogue') / base:.2f} | {med(repo, 'build'):.2f} | "
              f"{med(repo, 'app'):.2f} |", flush=True)
    print(f"catalogue signatures: {hashlib.sha256(shapes.pop().encode()).hexdigest()[:12]}, "
          "the same in every start")


if __name__ == "__main__":
    main()
