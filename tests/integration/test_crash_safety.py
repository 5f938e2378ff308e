"""kill -9 of the bot at many points through a run chain: no lost post, no duplicate post, no
duplicate submit (issue 7, part 5).

The bot runs as a SUBPROCESS (tests/crash_driver.py: the production BotContext, watcher and
SlackPoster, ticking every 0.5 s) against the real dev cluster and a Slack stand-in in this
process. The chain: a job that stalls, then dies with an NCCL watchdog abort, on an
`auto_resubmit` recipe (so the resubmit needs no click), then the resumed job completes. The
stall lasts until the bot has posted its warning (the test then creates the job's
--stall-until file), so a slow machine cannot let the job end before its stall is seen.

The driver is killed with SIGKILL again and again, each time restarted on the same store:
- by hooks (bot.crashpoint, TRAINBOT_CRASH_AT): right after an event's intent was recorded,
  right after Slack accepted a post but before its ts was stored, right after the resubmit's
  intent, right after sbatch returned but before the attempt was recorded;
- every other run also at a time drawn from a seeded RNG (CRASH_SEED, default 7): anywhere
  in startup, a tick, a post or a submit.
Each hook names the first job's own step (its key, or the job name of the one resubmit), so
it can only fire there, never at the resumed job's like step. A random kill can land inside a
hook's step (Slack has the post but the driver died before the hook; the job exists but sbatch
had not returned to the driver): the next run carries that step out without passing the hook
again, so before every run the hooks whose step is visibly done (in Slack, the store or
Slurm) are counted as passed and the next one is armed instead.
At the end: one root message, every keyed post exactly once, the incident and the resolution
once each, exactly one resubmitted job in sacct, the chain completed.
"""

from __future__ import annotations

import os
import posixpath
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from slack_standin import SlackStandIn

from bot.cluster.ssh import SSHRunner
from bot.services.runs import submit_and_announce
from bot.slack.poster import METADATA_EVENT
from bot.store import Store

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RECIPE = "crashy"
CHANNEL = "CCRASH01"
OWNER = "UOWNER01"
SEED = int(os.environ.get("CRASH_SEED", "7"))
TARGET = 50


@dataclass(frozen=True)
class ChainSeen:
    """What the chain has done so far, as seen from outside the driver."""

    slack_keys: list[str]        # the keys of every message in the Slack stand-in
    incidents: dict[str, str]    # outbox key -> state, from the store
    jobs: set[str]               # the Slurm jobs under the chain's job name


@dataclass(frozen=True)
class Hook:
    """A crash hook (TRAINBOT_CRASH_AT) and when its step is done for good: a hook whose step
    is done can never be reached again (the next run finds the post, the intent, the job)."""

    at: str
    done: Callable[[ChainSeen], bool]


def _hooks(first_job: str, job_name: str) -> list[Hook]:
    """The hooks, in the order the chain reaches them, each naming the first job's step: the
    resumed job's stall warning, incident and final post never match them."""
    hang, final = f"dev:{first_job}:hang:", f"dev:{first_job}:final"
    resubmit = f"dev:{first_job}:resubmit"  # its row; `...:resubmitted` is the announcement

    def posted(text: str) -> Callable[[ChainSeen], bool]:  # text: as the hook matches it
        return lambda seen: any(text in key for key in seen.slack_keys)

    def recorded_past(text: str, *states: str) -> Callable[[ChainSeen], bool]:
        return lambda seen: any(text in key and state not in states
                                for key, state in seen.incidents.items())

    return [
        # the stall warning's intent, then its post: Slack has it, the ts is lost
        Hook(f"intent_recorded:{hang}", recorded_past(hang, "pending")),
        Hook(f"slack_accepted:{hang}", posted(hang)),
        # the NCCL incident's intent, then its post, its ts lost
        Hook(f"intent_recorded:{final}", recorded_past(final, "pending")),
        Hook(f"slack_accepted:{final}", posted(final)),
        # `submitting` recorded, nothing submitted
        Hook(f"resubmit_intent:{resubmit}",
             lambda seen: seen.incidents.get(resubmit) not in (None, "due", "submitting")),
        # the job exists, no attempt records it
        Hook(f"sbatch_returned:{job_name}", lambda seen: len(seen.jobs - {first_job}) > 0),
        # the resolution posted, its ts lost
        Hook("slack_accepted:resolution:", posted("resolution:")),
    ]


def _release_file(base: str) -> str:
    """The file that ends the job's stall (fake_train.py --stall-until)."""
    return posixpath.join(base, "release-stall")


def _recipe(home: str, tag: str) -> dict:
    base = posixpath.join(home, f"crash-{tag}")
    return {
        "sbatch_script": posixpath.join(base, "launch.sbatch"),
        "args": ["--scenario", "stall-then-nccl", "--target-iter", str(TARGET),
                 "--sec-per-iter", "0.3", "--save-every", "10", "--save-seconds", "0.5",
                 "--stall-at", "30", "--stall-seconds", "10", "--stall-until",
                 _release_file(base), "--log-every", "1"],
        "mem": "512M",
        "time": "10",
        "job_name": f"crash-{tag}",
        "workdir": base,
        "log_path": posixpath.join(base, "logs", "%x-%j.out"),
        "env": {"TRAINBOT_DEMO_DIR": base, "TRAINBOT_CKPT_DIR": posixpath.join(base, "ckpt")},
        "checkpoint": {"dir": posixpath.join(base, "ckpt"), "complete_rule": "dcp"},
        "target_iter": TARGET,
        "owners": [OWNER],
        "channel": "crash",
        "policy": {"auto_resubmit": True, "backoff_s": 0, "tick_s": 0.5, "stall_min_s": 4,
                   "save_time_s": 2},
    }


def _seen(slack: SlackStandIn, store_url: str, chain_id: int, ssh: SSHRunner, job_name: str
          ) -> ChainSeen:
    """The chain's steps done so far (read between driver runs, none running)."""
    store = Store.open(store_url)
    try:
        incidents = {i.key: i.state for i in store.incidents.for_chain(chain_id)}
    finally:
        store.close()
    queued = ssh.run(["squeue", "-h", f"--name={job_name}", "-o", "%i"]).stdout
    accounted = ssh.run(["sacct", "-X", "-n", "-P", f"--name={job_name}", "-S", "now-1days",
                         "-o", "JobID"]).stdout
    jobs = {line.strip() for line in (queued + accounted).splitlines() if line.strip()}
    return ChainSeen(_keys(slack), incidents, jobs)


def _keys(slack: SlackStandIn) -> list[str]:
    out = []
    for m in slack.all_messages():
        meta = m.get("metadata") or {}
        if meta.get("event_type") == METADATA_EVENT:
            out.append(meta["event_payload"]["key"])
        # Charts carry no metadata: the poster keys them by title within the thread.
        out += [f"file:{f['title']}" for f in m.get("files") or []]
    return out


@pytest.mark.timeout(900)
def test_kill_9_at_many_points_loses_and_duplicates_nothing(dev_cluster, slack_bot,
                                                            crash_driver, tmp_path):
    tag = uuid.uuid4().hex[:8]
    rng = random.Random(SEED)
    config = crash_driver.configure(dev_cluster.bot_config_data(
        store_url=f"sqlite:///{tmp_path / 'bot.db'}",
        recipes={RECIPE: _recipe(dev_cluster.home, tag)}, channels={"crash": CHANNEL}))
    log = tmp_path / "driver.log"
    base = posixpath.join(dev_cluster.home, f"crash-{tag}")
    job_name = f"crash-{tag}"
    kills: list[str] = []
    with SlackStandIn() as slack, SSHRunner(dev_cluster.ssh_settings()) as ssh:
        try:
            ssh.run(["mkdir", "-p", posixpath.join(base, "logs"), posixpath.join(base, "ckpt")])
            sftp = ssh.sftp()
            for name in ("fake_train.py", "launch.sbatch"):
                sftp.put(str(REPO / "deploy" / "demo" / name), posixpath.join(base, name))
                sftp.chmod(posixpath.join(base, name), 0o755)

            # The first submit (as `/train submit` would): chain, root message, first note.
            with slack_bot(config, slack) as ctx:
                first = submit_and_announce(ctx, RECIPE, actor=OWNER, now=time.time())

            # A guard against a chain that never ends, not a speed budget: each of the dozen
            # driver runs starts a process and ticks, which takes long on a loaded machine.
            deadline = time.monotonic() + 840
            pending = _hooks(first.job_id, job_name)
            passed: list[str] = []  # hooks whose step a random kill let the chain finish
            released = False  # the job's stall ended (its file created)
            run_no = 0
            # Once every hook was reached, runs are killed at random again until two such
            # kills landed (the chain has little left to do then, so they come early, mostly
            # in startup; a run that ends first is simply started again, a few times at most).
            tail_kills, tail_runs = 2, 8
            while True:
                run_no += 1
                seen = _seen(slack, config.store.url, first.chain_id, ssh, job_name)
                while pending and pending[0].done(seen):
                    # Only a random kill inside the step lets it finish without its hook.
                    assert kills and kills[-1].startswith("random@"), (
                        f"the chain went past {pending[0].at} without reaching it\n"
                        + log.read_text()[-4000:])
                    passed.append(pending.pop(0).at)
                if not released and not any(":hang:" in hook.at for hook in pending):
                    # The stall warning is recorded and in Slack: the job may abort now.
                    ssh.run(["touch", _release_file(base)])
                    released = True
                crash_at = pending[0].at if pending else None
                timer = None
                if pending and run_no % 2 == 0:
                    timer = rng.uniform(0.5, 5.0)
                elif not pending and tail_kills and tail_runs:
                    timer = rng.uniform(0.3, 2.0)
                    tail_runs -= 1
                proc = crash_driver.start(slack, log, crash_at=crash_at, tick=0.5,
                                          args=["--until-idle"])
                try:
                    rc = proc.wait(timeout=timer or max(5.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(timeout=10)
                    if timer is None:
                        pytest.fail(f"driver run {run_no} ({crash_at}): no end in time\n"
                                    + log.read_text()[-4000:])
                    kills.append(f"random@{timer:.1f}s")
                    tail_kills -= 0 if pending else 1
                    continue
                if crash_at is None:
                    assert rc == 0, f"final driver run ended with {rc}\n" + log.read_text()[-4000:]
                    if tail_kills and tail_runs:
                        continue  # it ended before its random kill: one more
                    break
                assert rc == -signal.SIGKILL, (
                    f"the driver should have killed itself at {crash_at} (rc {rc})\n"
                    + log.read_text()[-4000:])
                kills.append(pending.pop(0).at)

            store = Store.open(config.store.url)
            chain = store.chains.get(first.chain_id)
            attempts = store.attempts.for_chain(first.chain_id)
            incidents = store.incidents.for_chain(first.chain_id)
            store.close()
            history = (f"kills: {kills}\npassed: {passed}\nattempts: {attempts}\n"
                       + log.read_text()[-3000:])

            # Slack: one root, every keyed post once, incident + resolution once each.
            roots = slack.root_messages(CHANNEL)
            assert len(roots) == 1, history
            keys = _keys(slack)
            assert len(keys) == len(slack.all_messages()), "a post without its key"
            dupes = {k: n for k, n in Counter(keys).items() if n > 1}
            assert not dupes, f"posted more than once: {dupes}\n{history}"
            finals = [k for k in keys if k.endswith(":final")]
            assert finals == [f"dev:{first.job_id}:final", f"dev:{attempts[-1].job_id}:final"] \
                or finals == [f"dev:{first.job_id}:final"], (finals, history)
            assert f"dev:{first.job_id}:final" in keys, history
            assert keys.count(f"resolution:{attempts[-1].job_id}") == 1, (keys, history)
            assert f"dev:{first.job_id}:resubmitted" in keys, (keys, history)
            assert any(i.class_id == "nccl_timeout" for i in incidents), history
            # Every incident row the bot decided to post was posted (no loss).
            unposted = [i.key for i in incidents if i.class_id != "resubmit"
                        and i.state != "posted"]
            assert not unposted, (unposted, history)

            # Slurm: the failed job plus exactly ONE resubmit.
            out = ssh.run(["sacct", "-X", "-n", "-P", f"--name={job_name}", "-S", "now-1days",
                           "-o", "JobID,State"]).stdout
            jobs = [line.split("|") for line in out.splitlines() if line.strip()]
            assert len(jobs) == 2, f"sacct: {jobs}\n{history}"
            assert len(attempts) == 2, history
            assert {a.job_id for a in attempts} == {j[0] for j in jobs}, (jobs, history)
            assert chain is not None and chain.status == "completed", history
            assert attempts[-1].cause == "completed", history
            assert len(kills) >= len(_hooks(first.job_id, job_name)) - len(passed) + 2, kills
        finally:
            ssh.run(["scancel", f"--name={job_name}"], check=False)
            ssh.run(["rm", "-rf", base], check=False)
