"""`trainbot demo [--yes] [--out DIR] [--keep-cluster]`: the whole story in the terminal.

Brings up (or reuses) the dev cluster (deploy/dev-cluster/up.sh), installs the demo trainer
(deploy/demo/) in the cluster user's ~/trainbot-demo over SFTP, writes a demo config and a
SQLite store in the out dir, submits the recipe `mix`, and runs the bot with the console as
Slack: its job leaks host memory (the bot warns with a projection), stalls (the bot raises
it and shows the ranks' stacks) and dies with an NCCL watchdog abort (one incident:
nccl_timeout after a hang); the resubmit is approved at the `[y/N]` prompt (or by `--yes`),
resumes from the last COMPLETE checkpoint and completes. The attempts table and the chart
files end the demo.

The stall lasts until the demo has shown the bot's stall warning and the ranks' stacks
(StallRelease: then it creates the file the job's `--stall-until` waits for), so a slow
machine cannot let the job abort before the bot saw it stall; the stacks are waited for
`stacks_timeout` plus a margin after the warning, and the story, from the job's submit to
its end, for `--time-limit` (DEFAULT_TIME_LIMIT_S, a few times `story_s`).

The recipe sets its own short thresholds (tick, stall time, save time) so the story plays in
about three minutes: every threshold is configuration. The watcher loop here is a plain
`watcher.tick(now)` every `tick_s`; `trainbot run` drives the same tick with APScheduler.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from bot.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from bot.config import Config

NAME = "demo"
HELP = ("Run the demo story on the dev cluster with the terminal as Slack: leak warning, stall, "
        "NCCL abort, approved resume from the last complete checkpoint.")

RECIPE = "mix"
CLUSTER = "dev"
ACTOR = "UCONSOLE"  # the console user: owner and approver of the demo recipe
CHANNEL_NAME = "demo"
CHANNEL_ID = "CDEMO"
DEMO_FILES = ("fake_train.py", "launch.sbatch")
REMOTE_DIR = "trainbot-demo"  # under the cluster user's home
STALL_RELEASE = "release-stall"  # in the run's folder: the job's stall lasts until it exists

# The story's numbers (see deploy/demo/README.md): 24 MiB leaked per iteration against a 4 GiB
# limit reaches the detector's 2 GiB of growth near iter 85 and projects the OOM near 170;
# the stall at 130 comes first; the resumed attempt (from the checkpoint at 100, a fresh
# process) needs 140 iterations x 24 MiB = 3.3 GiB < 4 GiB to reach 240. At 0.45 s/iter plus
# 3 s per save (under save_time_s) the resumed attempt runs > 60 s: a shorter COMPLETED job
# is called silent_exit by bot.core.detectors.detect_silent_exit, whatever its log says.
# The stall lasts until the demo creates `release_file` (StallRelease); --stall-seconds is
# only the watchdog's timeout its abort prints.
TARGET_ITER = 240
DEMO_POLICY = {"tick_s": 2, "stall_min_s": 8, "save_time_s": 5, "backoff_s": 0}
STACKS_MARGIN_S = 30.0  # past the cluster's stacks_timeout: placing py-spy, the post
#: How long the story may take from the job's submit (bringing up the dev cluster is bounded on
#: its own): story_s is about 3.5 minutes when nothing waits; a shared, loaded node and Slurm's
#: queue may take it two or three times that.
DEFAULT_TIME_LIMIT_S = 600.0


def demo_args(release_file: str, target_iter: int = TARGET_ITER) -> list[str]:
    """fake_train.py arguments of the demo recipe (leak + stall-then-nccl, the stall lasting
    until `release_file` exists)."""
    return ["--scenario", "leak,stall-then-nccl", "--target-iter", str(target_iter),
            "--sec-per-iter", "0.45", "--save-every", "50", "--save-seconds", "3",
            "--leak-mib-per-iter", "24",
            "--stall-at", "130", "--stall-until", release_file, "--stall-seconds", "8",
            "--log-every", "2", "--rank-procs", "4"]


def story_s(config: Config) -> float:
    """How long the demo's story takes when nothing waits, from the job's start to the
    resumed attempt's end, read from its config: the job to its stall (iterations at
    --sec-per-iter, a --save-seconds save every --save-every), the stall warning (the
    recipe's stall_min_s and a tick), the stacks (StallRelease waits for them at most
    stacks_timeout + STACKS_MARGIN_S), the watchdog's abort (--stall-seconds and a tick), the
    resumed attempt from the last complete checkpoint to the target and its end seen (a
    tick). Slurm's queue, the processes' starts and a loaded machine come on top."""
    args = config.recipe(RECIPE).args
    policy = config.policy_for(RECIPE)

    def flag(name: str) -> float:
        return float(args[args.index(name) + 1])

    per_iter, save_every, save_s = (flag("--sec-per-iter"), flag("--save-every"),
                                    flag("--save-seconds"))
    stall_at, target = flag("--stall-at"), flag("--target-iter")
    resumed_from = stall_at // save_every * save_every

    def running(first: float, last: float) -> float:  # iterations and saves in (first, last]
        return (last - first) * per_iter + (last // save_every - first // save_every) * save_s

    return (running(0, stall_at) + policy.stall_min_s + policy.tick_s
            + config.clusters[CLUSTER].stacks_timeout + STACKS_MARGIN_S
            + flag("--stall-seconds") + policy.tick_s
            + running(resumed_from, target) + policy.tick_s)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true",
                        help="answer every approval prompt with yes")
    parser.add_argument("--out", metavar="DIR", default="trainbot-demo-out",
                        help="folder for the config, the SQLite store and the charts "
                             "(default: ./trainbot-demo-out)")
    parser.add_argument("--keep-cluster", action="store_true",
                        help="leave the dev cluster running when the demo started it (a cluster "
                             "that was already up is never stopped)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S,
                        metavar="SECONDS",
                        help="give up this long after the demo's job is submitted (default: "
                             f"{DEFAULT_TIME_LIMIT_S:g}; the story takes 3 to 4 minutes, more "
                             "on a busy node; bringing up the dev cluster is not counted, the "
                             "time taken to answer the approval prompt is)")


# --------------------------------------------------------------------------------------------
# pure helpers


def find_checkout(start: Path | None = None) -> Path | None:
    """The source checkout holding deploy/dev-cluster/up.sh and deploy/demo/ (None when
    trainbot was installed from a wheel without it)."""
    here = (start or Path(__file__)).resolve()
    for root in here.parents:
        if (root / "deploy" / "dev-cluster" / "up.sh").is_file() and \
                (root / "deploy" / "demo" / "fake_train.py").is_file():
            return root
    return None


def demo_recipe(home: str, tag: str) -> dict[str, Any]:
    """The `mix` recipe: the demo trainer in ~/trainbot-demo, this run's own log and
    checkpoint folders, a 4 GiB limit and short thresholds."""
    demo = posixpath.join(home, REMOTE_DIR)
    run = posixpath.join(demo, "runs", tag)
    return {
        "sbatch_script": posixpath.join(demo, "launch.sbatch"),
        "args": demo_args(posixpath.join(run, STALL_RELEASE)),
        "mem": "4G",
        "time": "15",
        "job_name": f"trainbot-demo-{tag}",
        "workdir": run,
        "log_path": posixpath.join(run, "logs", "%x-%j.out"),
        "env": {"TRAINBOT_DEMO_DIR": demo, "TRAINBOT_CKPT_DIR": posixpath.join(run, "checkpoints")},
        "checkpoint": {"dir": posixpath.join(run, "checkpoints"), "complete_rule": "dcp"},
        "target_iter": TARGET_ITER,
        "owners": [ACTOR],
        "approvers": [ACTOR],
        "policy": dict(DEMO_POLICY),
    }


def demo_config_data(connection: dict[str, Any], *, store_url: str, tag: str) -> dict[str, Any]:
    """The demo's whole config (dev cluster + recipe + a console "channel")."""
    from bot.config.dev_cluster import dev_cluster_config_data

    data = dev_cluster_config_data(connection, store_url=store_url,
                                   recipes={RECIPE: demo_recipe(connection["home"], tag)},
                                   cluster_name=CLUSTER)
    data["slack"] = {"channels": {CHANNEL_NAME: CHANNEL_ID}, "default_channel": CHANNEL_NAME,
                     "approvers": [ACTOR]}
    return data


@dataclass
class StallRelease:
    """When the demo ends its job's stall (the file its `--stall-until` waits for): once the
    bot's stall warning was shown and then the ranks' stacks (their post, or the line saying
    why there are none, under `stacks:<the warning's key>`), or `stacks_wait_s` after the
    warning without them. Before the bot warns the stall goes on: the demo's --time-limit
    ends a story whose stall is never raised."""

    stacks_wait_s: float
    stacks_key: str | None = None  # the stacks' post, once the warning was seen
    warned_at: float | None = None
    released: bool = False

    def saw(self, incidents: Iterable[Any], now: float) -> None:
        """Note the stall warning once it is posted among the chain's incidents (the store's,
        so a tick that failed after posting it still counts)."""
        if self.warned_at is not None:
            return
        for incident in incidents:
            if incident.class_id == "hang" and incident.state == "posted":
                self.stacks_key, self.warned_at = f"stacks:{incident.key}", now
                return

    def due(self, stacks_shown: bool, now: float) -> str | None:
        """Why the stall ends now (what the console says), or None while it lasts."""
        if self.released or self.warned_at is None:
            return None
        if stacks_shown:
            return "the bot raised the stall and showed the ranks' stacks"
        if now - self.warned_at >= self.stacks_wait_s:
            return (f"the bot raised the stall; its stacks did not come within "
                    f"{self.stacks_wait_s:g} s")
        return None


def attempts_table(attempts: list[Any]) -> str:
    """`job | progress | result | cause`, one row per attempt of the chain (oldest first)."""
    rows = [("job", "progress", "result", "cause")]
    for a in attempts:
        start = a.start_iter if a.start_iter is not None else 0
        last = a.last_iter if a.last_iter is not None else "?"
        rows.append((str(a.job_id), f"{start} → {last}", a.result or a.state or "?",
                     a.cause or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def story_recap(store: Any, chain_id: int) -> list[tuple[bool, str]]:
    """The demo's story checked against the store: (happened?, what) per step."""
    from bot.core.policy import resume_start
    from bot.slack.render import format_duration

    incidents = store.incidents.for_chain(chain_id)
    attempts = store.attempts.for_chain(chain_id)
    out: list[tuple[bool, str]] = []
    leak = next((i for i in incidents if i.class_id == "memory_leak"), None)
    if leak is not None:
        d = leak.diagnosis
        at = ((d.get("diagnosis") or {}).get("metrics") or {}).get("last_iter")
        out.append((d.get("projected_oom_iter") is not None,
                    f"leak warning at iter {at}: memory limit reached near iter "
                    f"{d.get('projected_oom_iter')} (projected)"))
    else:
        out.append((False, "no leak warning"))
    hang = next((i for i in incidents if i.class_id == "hang"), None)
    if hang is not None:
        d = (hang.diagnosis.get("diagnosis") or {}).get("metrics") or {}
        out.append((True, f"stall raised: no progress since iter {d.get('last_iter')}"))
    else:
        out.append((False, "no stall warning"))
    final = [i for i in incidents if i.key.endswith(":final")]
    nccl = next((i for i in final if i.class_id == "nccl_timeout"), None)
    if nccl is not None:
        up = (nccl.diagnosis.get("diagnosis") or {}).get("upstream") or {}
        out.append((up.get("class_id") == "hang",
                    f"incident: nccl_timeout of job {nccl.job_id}, upstream cause "
                    f"{up.get('class_id') or 'none'}"
                    + (f" ({format_duration(up['seconds_before_failure'])} before the abort)"
                       if up.get("seconds_before_failure") is not None else "")))
    else:
        out.append((False, "no nccl_timeout incident"))
    resumed = [a for a in attempts if a.attempt_no > 1]
    if resumed:
        a = resumed[0]
        start = resume_start(a.start_iter, posixpath.basename(a.checkpoint_path.rstrip("/"))
                             if a.checkpoint_path else None)
        out.append((a.start_iter is not None,
                    f"resubmitted as {a.job_id} {start}"
                    + (f" ({a.checkpoint_path})" if a.checkpoint_path else "")))
    else:
        out.append((False, "not resubmitted"))
    last = attempts[-1] if attempts else None
    done = last is not None and last.cause == "completed"
    out.append((done, f"last attempt {last.job_id}: {last.result or last.state}, "
                      f"{last.cause or 'no diagnosis'}" if last else "no attempt"))
    return out


# --------------------------------------------------------------------------------------------
# the cluster


def _connection_path() -> Path:
    return Path(os.environ.get("DEV_CLUSTER_DIR", "/tmp/dev-cluster")) / "connection.json"


def _cluster_answers(path: Path) -> bool:
    """Is the dev cluster already up (its connection file exists and `squeue` answers)?"""
    if not path.is_file():
        return False
    try:
        from bot.cluster.ssh import SSHRunner
        from bot.core.ssh_settings import SSHSettings

        c = json.loads(path.read_text())
        settings = SSHSettings(host=c["host"], port=int(c["port"]), user=c["user"],
                               key_file=c["key_file"], known_hosts=c["known_hosts"],
                               connect_timeout=5, command_timeout=15)
        with SSHRunner(settings) as runner:
            return runner.run(["squeue", "-h", "-j", "1"], check=False).exit_code in (0, 1)
    except Exception:  # noqa: BLE001 - anything wrong means "bring it up"
        return False


def _privileged(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return argv
    return ["sudo", "-n", *argv]


def bring_up(checkout: Path, log_file: Path, out: TextIO) -> tuple[dict[str, Any], bool]:
    """Run up.sh (idempotent); returns (connection settings, whether it was already up)."""
    path = _connection_path()
    was_up = _cluster_answers(path)
    script = checkout / "deploy" / "dev-cluster" / "up.sh"
    print(f"▶ dev cluster: {'reusing the running one' if was_up else 'bringing it up'} "
          f"({script}; log: {log_file})", file=out, flush=True)
    with log_file.open("w") as log:
        # stdin closed: up.sh's ssh would otherwise eat the answers meant for the prompts
        done = subprocess.run(_privileged(["bash", str(script)]), stdin=subprocess.DEVNULL,
                              stdout=log, stderr=subprocess.STDOUT, check=False, timeout=900)
    if done.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-15:])
        raise DemoError(f"deploy/dev-cluster/up.sh failed (exit {done.returncode}); it must "
                        f"run as root (sudo). Last lines of {log_file}:\n{tail}")
    try:
        connection = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DemoError(f"{path}: cannot read the dev cluster's connection file: {exc}") from exc
    return connection, was_up


def install_demo_files(runner: Any, checkout: Path, home: str, tag: str) -> str:
    """Copy deploy/demo/{fake_train.py,launch.sbatch} to ~/trainbot-demo and make this run's
    folders; returns the run folder."""
    demo = posixpath.join(home, REMOTE_DIR)
    run = posixpath.join(demo, "runs", tag)
    runner.run(["mkdir", "-p", posixpath.join(run, "logs"), posixpath.join(run, "checkpoints")])
    sftp = runner.sftp()
    for name in DEMO_FILES:
        target = posixpath.join(demo, name)
        sftp.put(str(checkout / "deploy" / "demo" / name), target)
        sftp.chmod(target, 0o755)
    return run


class DemoError(Exception):
    """The demo cannot run (no checkout, cluster not up, …); the message says what to do."""


# --------------------------------------------------------------------------------------------
# run


def run(args: argparse.Namespace, *, out: TextIO | None = None,
        read: Callable[[], str] | None = None) -> int:
    out = out or sys.stdout
    checkout = find_checkout()
    if checkout is None:
        print("trainbot demo: needs the source checkout (deploy/dev-cluster/up.sh and "
              "deploy/demo/ are not installed with the package): clone the trainbot "
              "repository and run `trainbot demo` from its virtualenv", file=sys.stderr)
        return EXIT_USAGE
    out_dir = Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        connection, was_up = bring_up(checkout, out_dir / "dev-cluster-up.log", out)
    except (DemoError, subprocess.TimeoutExpired) as exc:
        print(f"trainbot demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _story(args, checkout, out_dir, connection, out, read, started)
    finally:
        if not was_up and not args.keep_cluster:
            script = checkout / "deploy" / "dev-cluster" / "down.sh"
            print(f"▶ stopping the dev cluster the demo started ({script}; --keep-cluster "
                  "keeps it)", file=out, flush=True)
            subprocess.run(_privileged(["bash", str(script)]), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False, timeout=300)


def tick_failed(exc: BaseException) -> str:
    """The console's line for a watcher tick that raised `exc`: its sentence (a cluster
    error's English, paramiko's refusal by its reason), never its repr."""
    from bot.cluster.channels import describe_error

    return f"▶ watcher tick failed (retrying next tick): {describe_error(exc)}"


def _story(args: argparse.Namespace, checkout: Path, out_dir: Path,
           connection: dict[str, Any], out: TextIO, read: Callable[[], str] | None,
           started: float) -> int:
    from bot.app import build_context, build_watcher
    from bot.cluster.errors import ClusterError
    from bot.config import Config
    from bot.services.runs import submit_and_announce
    from bot.services.threads import refresh_root
    from bot.slack.console import ConsoleSink
    from handlers.console import ConsoleApprovals

    tag = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:4]
    db = out_dir / "demo.db"
    for stale in (db, out_dir / "demo.db-wal", out_dir / "demo.db-shm"):
        stale.unlink(missing_ok=True)  # the demo's own store: one story per run
    data = demo_config_data(connection, store_url=f"sqlite:///{db}", tag=tag)
    config = Config.model_validate(data)
    config_path = out_dir / "trainbot-demo.yaml"
    config_path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    charts_dir = out_dir / "charts" / tag
    # The bot's services as `trainbot run` builds them, its threads on the console.
    ctx = build_context(config, threads=lambda store: ConsoleSink(
        charts_dir, out=out, store=store, names={ACTOR: "you", CHANNEL_ID: CHANNEL_NAME}))
    store, clusters, sink = ctx.store, ctx.clusters, ctx.sink
    assert isinstance(sink, ConsoleSink)
    policy = config.policy_for(RECIPE)
    watched_chain: int | None = None
    try:
        runner = clusters.runner(CLUSTER)
        run_dir = install_demo_files(runner, checkout, connection["home"], tag)
        sink.say(f"▶ demo trainer installed in {posixpath.dirname(posixpath.dirname(run_dir))}"
                 f" (this run: {run_dir}); config {config_path}; store {db}")
        sink.say(f"▶ thresholds from the recipe's policy: tick {policy.tick_s:g} s, stall after "
                 f"{policy.stall_min_s:g} s without progress, saves may take "
                 f"{policy.save_time_s:g} s, mem 4G")
        deadline = time.monotonic() + args.time_limit  # the story's, from its submit
        result = submit_and_announce(ctx, RECIPE, actor=ACTOR, now=time.time())
        watched_chain = result.chain_id
        recipe_cfg = config.recipe(RECIPE)

        # The production watcher (bot.app.build_watcher: Slurm, batched reads, checkpoints; events,
        # charts and root updates to the run thread, here the console's).
        watcher = build_watcher(ctx, CLUSTER)
        # The full diagnosis (leak fit) every tick, not every 5 minutes: the story's leak
        # must be warned about well before its stall, within seconds.
        watcher.judge_every_s = policy.tick_s
        # An approved resubmit posts its resolution and rewrites the root itself
        # (bot.services.runs.submit_and_announce), as in Slack.
        approvals = ConsoleApprovals(ctx, sink, ACTOR, assume_yes=args.yes, read=read)
        stall = StallRelease(config.clusters[CLUSTER].stacks_timeout + STACKS_MARGIN_S)
        outcome = "time limit"
        while time.monotonic() < deadline:
            try:
                watcher.tick(time.time())
            except Exception as exc:  # noqa: BLE001 - as the scheduler: said, then retried
                sink.say(tick_failed(exc))
            if not stall.released:
                stall.saw(store.incidents.for_chain(result.chain_id), time.monotonic())
                _release_stall(stall, store, clusters,
                               posixpath.join(run_dir, STALL_RELEASE), sink)
            approvals.answer_pending(time.time())
            refresh_root(ctx, result.chain_id)
            chain = store.chains.get(result.chain_id)
            if chain is not None and chain.status != "active":
                outcome = chain.status
                break
            if not store.watched_jobs.list(CLUSTER):
                outcome = "dismissed"  # nothing left to watch and nobody resubmitted
                break
            time.sleep(policy.tick_s)
        _summary(sink, store, result.chain_id, charts_dir, recipe_cfg, outcome, started)
        return EXIT_OK if outcome == "completed" else EXIT_FAILED
    except ClusterError as exc:
        print(f"trainbot demo: the dev cluster did not answer: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        sink.say("\n▶ interrupted")
        return EXIT_FAILED
    finally:
        if watched_chain is not None:
            _cancel_leftovers(clusters, store, watched_chain)
        clusters.close()
        store.close()


def _release_stall(stall: StallRelease, store: Any, clusters: Any, path: str,
                   sink: Any) -> None:
    """Create the job's --stall-until file when the stall is due to end (StallRelease); a
    failed attempt is said and made again at the next tick."""
    from bot.cluster.errors import ClusterError

    row = store.slack_posts.get(stall.stacks_key) if stall.stacks_key else None
    why = stall.due(row is not None and row.posted, time.monotonic())
    if why is None:
        return
    try:
        clusters.runner(CLUSTER).run(["touch", path])
    except ClusterError as exc:
        sink.say(f"▶ could not end the job's stall ({path}; again next tick): {exc}")
        return
    stall.released = True
    sink.say(f"▶ {why}: the job's stall ends now ({path}), its NCCL watchdog aborts it")


def _summary(sink: Any, store: Any, chain_id: int, charts_dir: Path, recipe: Any,
             outcome: str, started: float) -> None:
    from bot.slack.render import format_duration

    attempts = store.attempts.for_chain(chain_id)
    sink.say(f"\n{'━' * 72}\nrun chain {chain_id} of `{RECIPE}`: {outcome} after "
             f"{format_duration(time.monotonic() - started)}\n")
    sink.say(attempts_table(attempts))
    sink.say("\nwhat the bot did:")
    for ok, line in story_recap(store, chain_id):
        sink.say(f"  {'✔' if ok else '✘'} {line}")
    charts = sorted(charts_dir.glob("*.png")) if charts_dir.is_dir() else []
    sink.say(f"\ncharts ({len(charts)}) in {charts_dir}:")
    for path in charts:
        sink.say(f"  {path}")
    if recipe.log_path:
        sink.say(f"job logs on the cluster: {posixpath.dirname(recipe.log_path)}/")
    if outcome == "time limit":
        sink.say("the story did not finish in time: the shared node may be busy (squeue)")


def _cancel_leftovers(clusters: Any, store: Any, chain_id: int) -> None:
    """Cancel the demo's own jobs still queued or running (time limit, Ctrl-C)."""
    try:
        watched = {w.job_id for w in store.watched_jobs.list(CLUSTER)}
        mine = [int(a.job_id) for a in store.attempts.for_chain(chain_id)
                if a.job_id in watched]
        for job_id in mine:
            clusters.slurm(CLUSTER).cancel(job_id)
    except Exception:  # noqa: BLE001 - best effort on the way out
        pass
