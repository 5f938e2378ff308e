"""A resubmit interrupted by a crash, on each real dev cluster (Slurm 22.05 and 24.11): the bot
dies right after `sbatch` ran and before it recorded the new job, and a fresh bot over the same
database adopts the job sbatch created instead of submitting again.

The crash is real: the watcher runs as a subprocess (tests/crash_driver.py, the production
BotContext and watcher) with TRAINBOT_CRASH_AT=sbatch_returned, so it SIGKILLs itself on the
line after `sbatch` returned the new job id (bot.services.submit.submit_recipe), before any
store write. The test checks that this is the state left behind (the job in Slurm, no attempt
recording it, the resubmit row `submitting`), then starts a fresh watcher in this process on
the same SQLite store and asserts, through the real Slurm and the Slack stand-in:

- a single job: exactly one new job exists under the recipe's job name, it is the chain's next
  attempt, the thread tells the resubmit once, and the adopted job is watched to completion;
- an array task (`--array=1`): the adopted job is the one-task array of that task (sacct:
  `NEW_1`), never a sibling task of the original array, and nothing is submitted twice, also
  when the sibling tasks ended while the bot was down (no job of the array left to watch);
- a resubmit that ran to its end while the bot was down is recorded as resumed from the
  checkpoint it was given, not from one it saved since.
"""

from __future__ import annotations

import posixpath
import re
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from cluster_jobs import DemoJobs
from fakes import present
from slack_standin import SlackStandIn

from bot.app import build_watcher
from bot.cluster.errors import OutcomeUnknown
from bot.cluster.ssh import SSHRunner
from bot.config import Config
from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.cancel_settle import takeover_s
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import submit_and_announce
from bot.services.threads import post_safely
from bot.slack.poster import METADATA_EVENT

pytestmark = pytest.mark.integration

CHANNEL = "C0CRASHRC"
OWNER = "U0OWNER"
CRASH_WITHIN_S = 150.0
FINISH_WITHIN_S = 150.0

# The demo trainer stalls at iteration 8 and dies of an NCCL watchdog abort, once per
# checkpoint dir (a marker file there), so the resumed job trains on to the end.
TRAIN_ARGS = ["--target-iter", "20", "--sec-per-iter", "0.3", "--save-every", "4",
              "--save-seconds", "0.3", "--stall-at", "8", "--stall-seconds", "4",
              "--log-every", "1"]
POLICY = {"auto_resubmit": True, "backoff_s": 0, "tick_s": 1, "stall_min_s": 3,
          "save_time_s": 2, "retry_budget": 2}

# Every job these scripts submit is queued held (`#SBATCH --hold`) until the test releases
# it: the first one at once, the resubmit only after the restarted bot adopted it, so the
# restart meets it queued on every run (Slurm 24.11 shows a queued one-task array `NEW_[1]`).
SINGLE_SCRIPT = """#!/bin/bash
#SBATCH --hold
exec bash "$TRAINBOT_DEMO_DIR/launch.sbatch" "$@"
"""

# Task 1 of three dies as above; tasks 0 and 2 are healthy. `%2` keeps task 2 pending until
# task 1 ends, so it starts (a sibling with the same name and a job id above task 1's) around
# the time task 1's resubmit is made.
ARRAY_SCRIPT = """#!/bin/bash
#SBATCH --cpus-per-task=1
#SBATCH --hold
set -euo pipefail
export TRAINBOT_CKPT_DIR="$ARRAY_CKPT_ROOT/task_${SLURM_ARRAY_TASK_ID}"
scenario=healthy
if [[ "$SLURM_ARRAY_TASK_ID" == 1 ]]; then scenario=stall-then-nccl; fi
exec bash "$TRAINBOT_DEMO_DIR/launch.sbatch" --scenario "$scenario" """ \
    + " ".join(TRAIN_ARGS) + "\n"


def _single_recipe(jobs: DemoJobs, name: str) -> dict:
    script = jobs.path("held.sbatch")
    with jobs.runner.sftp().open(script, "w") as f:
        f.write(SINGLE_SCRIPT)
    return {
        "sbatch_script": script,
        "args": ["--scenario", "stall-then-nccl", *TRAIN_ARGS],
        "job_name": name, "mem": "256M", "time": "5", "workdir": jobs.root,
        "log_path": posixpath.join(jobs.root, "logs", "%x-%j.out"),
        "env": {"TRAINBOT_DEMO_DIR": jobs.root, "TRAINBOT_CKPT_DIR": jobs.path("ckpt", "one")},
        "checkpoint": {"dir": jobs.path("ckpt", "one"), "complete_rule": "dcp"},
        "target_iter": 20, "owners": [OWNER], "approvers": [OWNER], "policy": POLICY,
    }


def _array_recipe(jobs: DemoJobs, name: str) -> dict:
    script = jobs.path("array.sbatch")
    with jobs.runner.sftp().open(script, "w") as f:
        f.write(ARRAY_SCRIPT)
    return {
        "sbatch_script": script, "array": "0-2%2", "job_name": name,
        "mem": "256M", "time": "5", "workdir": jobs.root,
        "log_path": posixpath.join(jobs.root, "logs", "%x-%A_%a.out"),
        "env": {"TRAINBOT_DEMO_DIR": jobs.root, "ARRAY_CKPT_ROOT": jobs.path("ckpt")},
        "checkpoint": {"dir": jobs.path("ckpt", "task_%a"), "complete_rule": "dcp"},
        "target_iter": 20, "owners": [OWNER], "approvers": [OWNER], "policy": POLICY,
    }


class Bot:
    """One bot "process" over a config and its SQLite store: the services of `slack_bot`
    (tests/conftest.py), open until close()."""

    def __init__(self, services: AbstractContextManager[BotContext]) -> None:
        self._open = ExitStack()
        self.ctx = self._open.enter_context(services)
        self.store = self.ctx.store

    def close(self) -> None:
        self._open.close()


def _crash_in_sbatch(crash_driver, slack: SlackStandIn, log: Path, *driver_args: str) -> None:
    """Run the watcher (or, with `driver_args` `--train TEXT`, a person's /train command) as
    its own process until it SIGKILLs itself right after sbatch."""
    _crash_at(crash_driver, slack, log, "sbatch_returned", *driver_args)


def _crash_at(crash_driver, slack: SlackStandIn, log: Path, point: str,
              *driver_args: str) -> None:
    """Run the driver (its `driver_args`) as its own process until it SIGKILLs itself at the
    crash point `point` (TRAINBOT_CRASH_AT)."""
    proc = crash_driver.start(slack, log, crash_at=point, tick=1, args=driver_args)
    try:
        rc = proc.wait(timeout=CRASH_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        pytest.fail(f"the driver never reached {point}\n" + log.read_text()[-4000:])
    assert rc == -signal.SIGKILL, f"driver ended with {rc}\n" + log.read_text()[-4000:]


def _jobs_named(runner, name: str) -> dict[str, str]:
    """Slurm's word on every job of that name: sacct's JobID (`123`, `123_4`) -> JobIDRaw,
    plus squeue's pending ones sacct may not list yet. A pending one-task array, which
    Slurm 24.11 shows as `123_[4]`, is `123_4`."""
    out = runner.run(["sacct", "-X", "-n", "-P", f"--name={name}", "-S", "now-1days",
                      "-o", "JobID,JobIDRaw"]).stdout
    rows = [line.strip().split("|") for line in out.splitlines() if line.strip()]
    queued = runner.run(["squeue", "-h", f"--name={name}", "-o", "%i|%A"]).stdout
    rows += [line.strip().split("|") for line in queued.splitlines() if line.strip()]
    found: dict[str, str] = {}
    for shown, raw in rows:
        found.setdefault(re.sub(r"_\[(\d+)\]$", r"_\1", shown), raw)
    return found


def _wait_until_ended(runner, jobs: list[str]) -> None:
    started = time.monotonic()
    states: list[str] = []
    while time.monotonic() - started < FINISH_WITHIN_S:
        states = runner.run(["sacct", "-X", "-n", "-P", "-j", ",".join(jobs), "-o", "State"]
                            ).stdout.split()
        if len(states) == len(jobs) and all(s == "COMPLETED" for s in states):
            return
        time.sleep(2.0)
    pytest.fail(f"{jobs} did not complete: {states}")


def _queued_held(runner, job_id: str) -> bool:
    out = runner.run(["squeue", "-h", "-j", job_id, "-o", "%T|%r"]).stdout.split()
    return out == ["PENDING|JobHeldUser"]


def _tick_until_done(bot: Bot, chain_id: int, watcher) -> None:
    started = time.monotonic()
    while time.monotonic() - started < FINISH_WITHIN_S:
        watcher.tick(time.time())
        if present(bot.store.chains.get(chain_id)).status != "active":
            return
        time.sleep(1.0)


@dataclass
class SubmittedRun:
    """A run of the recipe `run` (job name `name`) submitted on the cluster under test as
    `/train submit` would (chain `chain_id`, its first job `first`: a single job or an
    array), its thread in the Slack stand-in `slack`. `runner` runs commands on the
    cluster; `bot()` opens a fresh bot over the run's store (through `slack_bot`)."""

    name: str
    slack: SlackStandIn
    jobs: DemoJobs
    config: Config
    chain_id: int
    first: str
    slack_bot: Callable[..., AbstractContextManager[BotContext]]

    @property
    def runner(self) -> SSHRunner:
        return self.jobs.runner

    def bot(self) -> Bot:
        return Bot(self.slack_bot(self.config, self.slack, charts=False))

    def thread(self) -> list[str]:
        """The texts of the run's thread (the channel holds only this run's root)."""
        [root] = self.slack.root_messages(CHANNEL)
        return [m["text"] for m in self.slack.replies(CHANNEL, root["ts"])]

    def posted(self) -> Counter[str]:
        """How many times each event key was posted to Slack."""
        return Counter(m["metadata"]["event_payload"]["key"] for m in self.slack.all_messages()
                       if (m.get("metadata") or {}).get("event_type") == METADATA_EVENT)


@pytest.fixture
def submitted_run(slurm_cluster, slack_bot, crash_driver, tmp_path
                  ) -> Iterator[Callable[..., SubmittedRun]]:
    """`submitted_run(prefix, recipe)`: a run of `recipe(jobs, name)` (a job name starting
    with `prefix`) submitted on the cluster under test (SubmittedRun; its config file is
    `crash_driver`'s, with the global `policy` given, e.g. the scheduler's jobs' `tick_s`);
    its jobs are cancelled and its Slack stand-in and demo dir closed at the end of the
    test."""
    with ExitStack() as stack:
        def submit(prefix: str, recipe: Callable[[DemoJobs, str], dict], *,
                   policy: dict | None = None) -> SubmittedRun:
            name = f"{prefix}-{uuid.uuid4().hex[:6]}"
            slack = stack.enter_context(SlackStandIn())
            jobs = stack.enter_context(DemoJobs.open(slurm_cluster))
            stack.callback(jobs.runner.run, ["scancel", f"--name={name}"], check=False)
            data = slurm_cluster.bot_config_data(
                store_url=f"sqlite:///{tmp_path / 'bot.db'}",
                recipes={"run": recipe(jobs, name)}, channels={"runs": CHANNEL},
                approvers=[OWNER])
            if policy:
                data["policy"] = {**data.get("policy", {}), **policy}
            config = crash_driver.configure(data)
            with slack_bot(config, slack, charts=False) as ctx:
                first = submit_and_announce(ctx, "run", actor=OWNER, now=time.time())
            return SubmittedRun(name, slack, jobs, config, first.chain_id, first.job_id,
                                slack_bot)

        yield submit


@pytest.fixture
def lost_resubmit(submitted_run, crash_driver, tmp_path) -> Callable[..., SubmittedRun]:
    """`lost_resubmit(prefix, recipe)`: a run as `submitted_run` makes it, its first job
    released: that job failed, and a watcher in its own process died right after the
    resubmit's `sbatch` returned (`_crash_in_sbatch`)."""
    def crash(prefix: str, recipe: Callable[[DemoJobs, str], dict]) -> SubmittedRun:
        run = submitted_run(prefix, recipe)
        run.runner.run(["scontrol", "release", run.first])
        _crash_in_sbatch(crash_driver, run.slack, tmp_path / "driver.log")
        return run

    return crash


def test_a_single_jobs_resubmit_lost_in_a_crash_is_adopted_once(lost_resubmit):
    run = lost_resubmit("tb-crash", _single_recipe)
    name, runner, chain_id, old = run.name, run.runner, run.chain_id, run.first

    # What the crash left: the job sbatch made, and nothing in the store about it.
    slurm_jobs = _jobs_named(runner, name)
    assert len(slurm_jobs) == 2 and old in slurm_jobs, slurm_jobs
    [new] = [j for j in slurm_jobs if j != old]
    bot = run.bot()
    assert [a.job_id for a in bot.store.attempts.for_chain(chain_id)] == [old]
    assert bot.store.incidents.get(f"dev:{old}:resubmit").state == "submitting"
    # the resubmit kept its submit in flight, as a person's does: when its sbatch was sent
    [flight] = bot.store.submits_in_flight.sent_before("dev", time.time())
    assert (flight.chain_id, flight.job_name) == (chain_id, name)

    # A fresh bot on the same store, the job still queued: its first tick adopts it.
    assert _queued_held(runner, new)
    watcher = build_watcher(bot.ctx, "dev")
    watcher.tick(time.time())
    runner.run(["scontrol", "release", new])
    attempts = bot.store.attempts.for_chain(chain_id)
    assert [a.job_id for a in attempts] == [old, new], attempts
    assert attempts[1].attempt_no == 2 and attempts[1].checkpoint_path is not None
    # submitted when the dead resubmit's sbatch was sent, not when the fresh bot found it
    assert attempts[1].submitted_at == flight.sent_at
    assert bot.store.submits_in_flight.sent_before("dev", time.time()) == []
    assert bot.store.chains.get(chain_id).retries_used == 1
    assert bot.store.incidents.get(f"dev:{old}:resubmit").state == "done"
    assert new in {w.job_id for w in bot.store.watched_jobs.list("dev")}

    _tick_until_done(bot, chain_id, watcher)
    attempts = bot.store.attempts.for_chain(chain_id)
    seen = [(a.job_id, a.state, a.cause) for a in attempts]
    assert bot.store.chains.get(chain_id).status == "completed", seen
    assert [a.job_id for a in attempts] == [old, new], seen
    assert attempts[1].result == "COMPLETED", seen
    assert _jobs_named(runner, name).keys() == {old, new}  # never submitted again

    texts = run.thread()
    told = [t for t in texts if f"resubmitted automatically as {new}" in t]
    assert len(told) == 1, texts
    keys = run.posted()
    assert keys[f"dev:{old}:resubmitted"] == 1 and keys[f"resolution:{new}"] == 1, keys
    assert not [k for k, n in keys.items() if n > 1], keys
    bot.close()


def test_an_array_tasks_resubmit_lost_in_a_crash_is_its_one_task_array(lost_resubmit):
    run = lost_resubmit("tb-crash-arr", _array_recipe)
    name, runner, chain_id, array = run.name, run.runner, run.chain_id, run.first
    # The bot stays down until the sibling tasks have ended: no job of the array is
    # left to watch when it comes back, only the lost resubmit to adopt.
    _wait_until_ended(runner, [f"{array}_0", f"{array}_2"])

    bot = run.bot()
    before = {a.shown_id: a.job_id for a in bot.store.attempts.for_chain(chain_id)}
    failed_raw = before[f"{array}_1"]
    assert bot.store.incidents.get(f"dev:{failed_raw}:resubmit").state == "submitting"
    slurm_jobs = _jobs_named(runner, name)
    resubmits = {shown: raw for shown, raw in slurm_jobs.items()
                 if not shown.startswith(f"{array}_")}
    # sbatch --array=1 made one job, a one-task array of task 1, recorded nowhere
    [(shown, new)] = resubmits.items()
    assert shown == f"{new}_1", slurm_jobs
    assert new not in before.values(), before

    # A fresh bot on the same store, the resubmit still queued: its first tick adopts it.
    assert _queued_held(runner, new)
    watcher = build_watcher(bot.ctx, "dev")
    watcher.tick(time.time())
    runner.run(["scontrol", "release", new])
    after = {a.shown_id: a for a in bot.store.attempts.for_chain(chain_id)}
    task1 = [k for k, a in after.items() if a.array_task == 1]
    assert task1 == [f"{array}_1", f"{new}_1"], list(after)
    assert after[f"{new}_1"].job_id == new
    # every other attempt row is a task of the original array, under its own id
    siblings = {k: a.job_id for k, a in after.items() if a.array_task != 1}
    assert all(k.startswith(f"{array}_") for k in siblings), siblings
    assert all(slurm_jobs.get(k) == raw for k, raw in siblings.items()), \
        (siblings, slurm_jobs)
    assert bot.store.incidents.get(f"dev:{failed_raw}:resubmit").state == "done"

    _tick_until_done(bot, chain_id, watcher)
    after = {a.shown_id: a for a in bot.store.attempts.for_chain(chain_id)}
    seen = [(k, a.state, a.cause) for k, a in after.items()]
    assert bot.store.chains.get(chain_id).status == "completed", seen
    assert sorted(after) == sorted([f"{array}_0", f"{array}_1", f"{array}_2",
                                    f"{new}_1"]), seen
    assert after[f"{new}_1"].result == "COMPLETED", seen
    # Slurm: the three tasks and ONE resubmit of task 1, nothing else
    assert sorted(_jobs_named(runner, name)) == sorted(
        [f"{array}_0", f"{array}_1", f"{array}_2", f"{new}_1"])

    texts = run.thread()
    told = [t for t in texts if "resubmitted automatically as" in t]
    assert len(told) == 1 and f"{array}_1 resubmitted automatically as {new}_1" \
        in told[0], texts
    keys = run.posted()
    assert not [k for k, n in keys.items() if n > 1], keys
    bot.close()


def test_a_resubmit_that_ran_while_the_bot_was_down_is_adopted_from_where_it_resumed(
        lost_resubmit):
    """The bot stays down until the job its lost resubmit made has trained to the end (and
    saved newer checkpoints): the adopted attempt resumed from the checkpoint the decision
    chose (iteration 8, what the job's log says it was given), not from the newest one."""
    run = lost_resubmit("tb-crash-late", _single_recipe)
    name, runner, chain_id, old = run.name, run.runner, run.chain_id, run.first

    [new] = [j for j in _jobs_named(runner, name) if j != old]
    runner.run(["scontrol", "release", new])
    _wait_until_ended(runner, [new])
    resumed = [line for line in runner.run(
        ["cat", run.jobs.path("logs", f"{name}-{new}.out")]).stdout.splitlines()
        if "trainbot chose" in line]
    assert resumed and resumed[0].endswith("iter_000000008"), resumed

    bot = run.bot()
    watcher = build_watcher(bot.ctx, "dev")
    _tick_until_done(bot, chain_id, watcher)
    attempts = bot.store.attempts.for_chain(chain_id)
    seen = [(a.job_id, a.result, a.start_iter, a.checkpoint_path) for a in attempts]
    assert bot.store.chains.get(chain_id).status == "completed", seen
    assert [a.job_id for a in attempts] == [old, new], seen
    assert attempts[1].start_iter == 8, seen
    assert attempts[1].checkpoint_path == run.jobs.path("ckpt", "one", "iter_000000008"), seen
    assert _jobs_named(runner, name).keys() == {old, new}

    texts = run.thread()
    assert len([t for t in texts if f"resubmitted automatically as {new}" in t]) == 1, texts
    assert not [k for k, n in run.posted().items() if n > 1]
    bot.close()


def test_a_persons_resume_the_bot_died_in_is_recorded_by_the_next_bot(
        submitted_run, crash_driver, tmp_path):
    """`/train resume` typed by a person, and the bot SIGKILLed right after its sbatch
    returned, before the attempt row: the job is on the cluster and nothing records it but
    the submit in flight. The next bot's `submits` job (recover_submits_in_flight) finds it
    by its name through the real squeue, records it as the run's next attempt, watches it
    and tells the run's thread; sbatch ran once."""
    from bot.services.after_submit import after_person_submit
    from bot.services.runs import recover_submits_in_flight
    from bot.services.submit_deadlines import in_flight_s

    run = submitted_run("tb-crash-resume", _single_recipe)
    name, runner, chain_id, old = run.name, run.runner, run.chain_id, run.first
    runner.run(["scancel", old])  # the run's job ended; a person resumes it
    _crash_in_sbatch(crash_driver, run.slack, tmp_path / "driver.log",
                     "--train", "resume run", "--actor", OWNER, "--channel", CHANNEL)

    slurm_jobs = _jobs_named(runner, name)
    [new] = [j for j in slurm_jobs if j != old]
    bot = run.bot()
    try:
        store = bot.store
        assert [a.job_id for a in store.attempts.for_chain(chain_id)] == [old]
        [flight] = store.submits_in_flight.sent_before("dev", float("inf"))
        assert (flight.job_name, flight.chain_id, flight.actor) == (name, chain_id, OWNER)

        recover_submits_in_flight(bot.ctx, time.time() + in_flight_s(bot.ctx.config, "dev") + 1,
                                  after_submit=after_person_submit)
        attempts = store.attempts.for_chain(chain_id)
        assert [a.job_id for a in attempts] == [old, new], attempts
        assert new in {w.job_id for w in store.watched_jobs.list("dev")}
        assert store.submits_in_flight.sent_before("dev", float("inf")) == []
        texts = run.thread()
        assert [t for t in texts if f"resumed as {new}" in t], texts
        # sbatch ran once: one job of that name besides the first (cancelled while queued,
        # which sacct may no longer list)
        assert set(_jobs_named(runner, name)) - {old} == {new}
    finally:
        bot.close()


# A cancel and resume whose scancel's end went unseen is settled by the scheduler's prompts
# job; each run of it below is SIGKILLed at the next of these steps (TRAINBOT_CRASH_AT), the
# last run finishes it. A settle whose process died is taken over once its step is
# bot.services.cancel_settle.takeover_s old: each restart's clock runs that much (and a
# minute) further ahead (`--clock-ahead`), as if it came back that much later.
SETTLE_CRASHES = (
    "cancel_settle_claimed",  # the settle is this run's; nothing done yet
    "sbatch_returned",  # the resubmit's sbatch returned; its job recorded nowhere
    "slack_accepted:resolution:",  # the found job recorded; Slack took its note, unrecorded
    "cancel_settle_decided",  # the resubmit recorded and said; the outcome not yet recorded
    "slack_accepted:cancel-settled:",  # the outcome recorded; Slack took the thread's note
)


def _running_recipe(jobs: DemoJobs, name: str) -> dict:
    """`_single_recipe`'s, its job training until it is cancelled (its resubmit stays queued,
    held); an unknown cancel settled 5 s after the click."""
    recipe = _single_recipe(jobs, name)
    return {**recipe, "args": ["--scenario", "healthy", "--target-iter", "100000",
                               "--sec-per-iter", "0.5", "--log-every", "1"],
            "policy": {**POLICY, "cancel_settle_s": 5}}


class _ScancelAnswerLost:
    """The bot's clusters, but a cancel's scancel runs and its answer is lost on the way back
    (OutcomeUnknown: its channel closed), as a connection dropping just then leaves it."""

    def __init__(self, clusters) -> None:
        self._clusters = clusters

    def __getattr__(self, name: str):
        return getattr(self._clusters, name)

    def slurm(self, cluster: str):
        real = self._clusters.slurm(cluster)

        class AnswerLost:
            def __getattr__(self, name: str):
                return getattr(real, name)

            def cancel(self, job_id: int) -> None:
                real.cancel(job_id)
                raise OutcomeUnknown(["scancel", str(job_id)], "the channel closed")

        return AnswerLost()


def _wait_for_state(runner, job: str, wanted: str) -> None:
    started = time.monotonic()
    state = None
    while time.monotonic() - started < FINISH_WITHIN_S:
        out = runner.run(["sacct", "-X", "-n", "-P", "-j", job, "-o", "State"]).stdout.split()
        state = out[0] if out else None
        if state is not None and state.startswith(wanted):
            return
        time.sleep(1.0)
    pytest.fail(f"job {job} is not {wanted}: {state}")


def test_a_cancel_and_resume_whose_scancel_went_unseen_is_settled_once_through_kills(
        submitted_run, crash_driver, tmp_path):
    """A person clicks Cancel and resume on a running job; scancel cancels it but its answer
    is lost, so the click leaves the cancel to be settled. The scheduler's prompts job, run
    as `trainbot run` schedules it (crash_driver.py --job prompts), is SIGKILLed at each step
    of the settle in turn (SETTLE_CRASHES) and started again each time, the last run
    finishing it: Slurm holds the cancelled job and exactly one resubmitted job, the run's
    attempts are those two, and the person sees each post once (the resubmit's note and the
    settle's note in the thread), the prompt rewritten to say the job was cancelled and
    resumed."""
    # the prompts job runs every global policy tick (60 s by default): each run is a second
    run = submitted_run("tb-crash-settle", _running_recipe, policy={"tick_s": 1})
    name, runner, chain_id, old = run.name, run.runner, run.chain_id, run.first
    runner.run(["scontrol", "release", old])
    _wait_for_state(runner, old, "RUNNING")

    bot = run.bot()
    try:
        key = f"stall-prompt:{old}"
        prompt = create_resubmit_prompt(
            bot.ctx, recipe="run", chain_id=chain_id, job_id=old, now=time.time(),
            summary=f"{old} stalled", offer_cancel=True, post_key=key)
        assert post_safely(bot.ctx, "reply", chain_id, key, prompt.blocks, prompt.text)
        clicked = handle_click(replace(bot.ctx, clusters=_ScancelAnswerLost(bot.ctx.clusters)),
                               prompt.token, ActionId.CANCEL_RESUME, OWNER, time.time())
        assert "may or may not have been cancelled" in str(clicked.update_text), clicked
        # the click's claim, its scancel under way, then its end not seen
        assert sorted(bot.store.approvals.steps(prompt.token)) == ["cancel_unknown",
                                                                   "cancelling_to_resume",
                                                                   "claimed"]
        ahead = takeover_s(bot.ctx, bot.store.approvals.get(prompt.token),
                           time.time(), "cancel_settled") + 60.0
    finally:
        bot.close()
    _wait_for_state(runner, old, "CANCELLED")  # the scancel did take effect

    log = tmp_path / "driver.log"
    for k, point in enumerate(SETTLE_CRASHES):
        _crash_at(crash_driver, run.slack, log, point, "--job", "prompts",
                  "--clock-ahead", str(k * ahead))
    proc = crash_driver.start(run.slack, log, crash_at=None, tick=1, args=(
        "--job", "prompts", "--until-idle",
        "--clock-ahead", str(len(SETTLE_CRASHES) * ahead)))
    rc = proc.wait(timeout=CRASH_WITHIN_S)
    assert rc == 0, f"driver ended with {rc}\n" + log.read_text()[-4000:]

    slurm_jobs = _jobs_named(runner, name)
    [new] = [j for j in slurm_jobs if j != old]  # one resubmit, whatever the kills
    assert _queued_held(runner, new)
    bot = run.bot()
    try:
        attempts = bot.store.attempts.for_chain(chain_id)
        assert [(a.job_id, a.result) for a in attempts] == [(old, "CANCELLED"), (new, None)]
        approval = bot.store.approvals.get(prompt.token)
        assert approval.state == "done"
        assert "cancel_announced" in bot.store.approvals.steps(prompt.token)
    finally:
        bot.close()
    texts = run.thread()
    said = [t for t in texts if f"cancelled job {old} and resubmitted it as {new}" in t]
    assert len(said) == 2, texts  # the prompt rewritten to say it, and the settle's note
    keys = run.posted()
    assert not [k for k, n in keys.items() if n > 1], keys
    assert keys[f"resolution:{new}"] == 1 and keys[f"cancel-settled:{prompt.token}"] == 1, keys


COMPETITION_ACCOUNT = "team-b"  # as tests/integration/test_train_commands.py: no one else's jobs

# The run's job waits queued held (`#SBATCH --hold`) until the test cancels it: a resumed job
# still waiting when the yes comes, the competitor's hold over once it ended.
WAITING_SCRIPT = """#!/bin/bash
#SBATCH --hold
sleep 1
"""


def _waiting_recipe(jobs: DemoJobs, name: str) -> dict:
    script = jobs.path("waiting.sbatch")
    with jobs.runner.sftp().open(script, "w") as f:
        f.write(WAITING_SCRIPT)
    return {
        "sbatch_script": script, "job_name": name, "mem": "64M", "time": "2",
        "workdir": jobs.root, "log_path": posixpath.join(jobs.root, "logs", "%x-%j.out"),
        "account": COMPETITION_ACCOUNT, "owners": [OWNER], "approvers": [OWNER],
        "policy": {**POLICY, "auto_resubmit": False},
    }


def _held_reason(runner, job_id: str) -> str:
    """squeue's `STATE|REASON` of the job ('' once squeue no longer lists it)."""
    return runner.run(["squeue", "-h", "-j", job_id, "-o", "%T|%r"]).stdout.strip()


def test_a_release_whose_bot_died_after_claiming_it_is_released_once_by_the_next_bot(
        submitted_run, crash_driver, tmp_path):
    """A competitor held after a yes; the resumed job ends without needing the slot, and the
    bot's scheduler (crash_driver.py --job all, as `trainbot run` schedules its jobs) is
    SIGKILLed right after its holds job claimed the release (the `releasing` step), before
    `scontrol release`. The competitor stays held, in the hold ledger. A fresh bot over the
    same store leaves it while the dead claimer's step is younger than its takeover time
    (it may still be releasing it), then releases it once: Slurm shows it queued, no longer
    held, and the run's thread says it was released once."""
    run = submitted_run("tb-crash-hold", _waiting_recipe, policy={"tick_s": 1})
    runner, first = run.runner, run.first
    comp = runner.run(["sbatch", "--parsable", "--job-name", f"{run.name}-comp",
                       "--partition", run.jobs.partition, "--account", COMPETITION_ACCOUNT,
                       "--begin", "now+1hour", "--output", "/dev/null", "--wrap", "sleep 1"]
                      ).stdout.strip().split(";")[0]
    try:
        bot = run.bot()
        try:
            proposals = competitors.propose_holds(
                bot.ctx, recipe="run", chain_id=run.chain_id, job_id=int(first),
                allowed=[OWNER], now=time.time(),
                action_ids=(ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR))
            [token] = [p.token for p in proposals if p.competitor == int(comp)]
            clicked = handle_click(bot.ctx, token, ActionId.HOLD_COMPETITOR, OWNER, time.time())
            assert clicked.update_text == \
                f"Approved by <@{OWNER}>: held {comp} until {first} starts", clicked
        finally:
            bot.close()
        assert _held_reason(runner, comp) == "PENDING|JobHeldUser"
        runner.run(["scancel", first])
        _wait_for_state(runner, first, "CANCELLED")

        _crash_at(crash_driver, run.slack, tmp_path / "driver.log", "hold_release_claimed",
                  "--job", "all")
        assert _held_reason(runner, comp) == "PENDING|JobHeldUser"  # died before releasing

        bot = run.bot()
        try:
            [held] = competitors.held_now(bot.ctx)
            claimed_at = bot.store.approvals.steps(token)[competitors.RELEASING_STEP]
            due = claimed_at + competitors.release_takeover_s(bot.ctx, held)
            assert competitors.release_started(bot.ctx, due - 1) == []
            assert _held_reason(runner, comp) == "PENDING|JobHeldUser"
            assert competitors.release_started(bot.ctx, due) == [int(comp)]
            assert competitors.release_started(bot.ctx, due + 1) == []
            assert competitors.held_now(bot.ctx) == []
            releases = [e.result for e in bot.store.audit.recent(200)
                        if e.action == "competitor.release" and e.job_id == comp]
            assert releases == ["ok"]
        finally:
            bot.close()
        queued = _held_reason(runner, comp)  # queued, no longer held (None until Slurm's
        assert queued.startswith("PENDING|") and "Held" not in queued, queued  # next pass)
        said = [t for t in run.thread() if t.startswith(f"Released {comp}: {first} ")]
        assert len(said) == 1, run.thread()
        assert run.posted()[f"hold-release:{token}"] == 1
    finally:
        runner.run(["scancel", comp], check=False)
