"""`/train` and approval clicks end to end: the real Bolt app (Slack-shaped payloads through
`app.dispatch`), the Slack stand-in, and the real dev clusters (sshd + Slurm 22.05 and 24.11).

Each test works in its own directory under the test user's home and uses unique job names, so
engineers sharing the cluster do not collide; every job it starts (its runs and the competitors
it queues) is cancelled afterwards, and the next test starts only once squeue no longer lists
them: a job left pending on the competition account would be the next test's competitor.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes import present, writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_bolt import App
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.bolt_driver import (
    ResponseUrls,
    SyncExecutor,
    ack_text,
    click_body,
    dispatch,
    slash_body,
)

from bot.app import build_app
from bot.config import Config
from bot.core.train_grammar import CommandError, Submit, parse_command
from bot.services.approvals import ActionId, handle_click
from bot.services.competitors import HOLD_ACTION, release_started
from bot.services.overrides import parse_overrides
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt

pytestmark = pytest.mark.integration

CH = "C0TRAIN"
COMPETITION_ACCOUNT = "team-b"
GONE_WITHIN_S = 60.0  # how long a cancelled job may stay in squeue before the test fails

# The training script: prints where it resumes from and its arguments (one per line, so the
# test can check they arrived literally), a few iterations, then exits.
TRAIN_SCRIPT = """#!/bin/bash
#SBATCH --begin=now+{begin}
echo "RESUME_FROM=${{TRAINBOT_RESUME_FROM:-none}} RESUME_ITER=${{TRAINBOT_RESUME_ITER:-none}}"
for a in "$@"; do printf 'ARG<%s>\\n' "$a"; done
for i in 1 2 3; do echo "iter $i loss 0.7"; sleep {sleep}; done
"""

# A site submit wrapper that submits nothing: it records its argv (NUL-separated) and prints a
# job id, so hundreds of hostile examples cross the real SSH runner without queueing jobs.
RECORD_WRAPPER = """#!/bin/sh
printf '%s\\0' "$@" > "{out}"
echo "Submitted batch job 999999999"
"""

# A site submit wrapper that fails the way some do: dumping its environment (the recipe's
# secrets) into stderr, which the bot quotes in its error.
LEAKING_WRAPPER = """#!/bin/sh
echo "wrapper: environment HF_TOKEN=$HF_TOKEN WANDB_API=$WANDB_API" >&2
echo "sbatch: error: invalid partition specified: nope" >&2
exit 1
"""
HF_TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"  # a token shape
WANDB_KEY = "7c1f0e9a-plain-looking-9b2d"  # no token shape: redacted because it is configured


@dataclass
class Env:
    cluster: Any
    work: str
    canary: str
    tag: str
    app: App
    services: BotContext
    slack: SlackStandIn
    urls: ResponseUrls

    def train(self, text: str, user: str = "U0ALICE") -> tuple[str, list[dict]]:
        url = self.urls.new()
        body = slash_body(text, user=user, channel=CH, response_url=url)
        return ack_text(dispatch(self.app, body)), self.urls.of(url)

    def click(self, action: ActionId, token: str, ts: str, user: str,
              retry: int | None = None) -> list[dict]:
        url = self.urls.new()
        body = click_body(action, token, user=user, channel=CH, message_ts=ts, response_url=url)
        ack_text(dispatch(self.app, body, retry_num=retry))
        return self.urls.of(url)

    def sh(self, *argv: str) -> str:
        proc = self.cluster.ssh(list(argv))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def squeue(self, name: str) -> list[dict[str, str]]:
        out = self.sh("squeue", "-h", "--name", name, "-o", "%i|%T|%r|%Q")
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [dict(zip(("id", "state", "reason", "priority"), r, strict=True)) for r in rows]

    def accounted(self, name: str) -> list[list[str]]:
        """(JobID, ReqMem) of every job called `name` that slurmdbd knows (it lags a little)."""
        out = self.sh("sacct", "-n", "-X", "--name", name, "-o", "JobID,ReqMem",
                      "--parsable2", "-S", "now-1hour")
        return [line.split("|") for line in out.split()]

    def job(self, job_id: str | int) -> dict[str, str]:
        out = self.sh("squeue", "-h", "-j", str(job_id), "-o", "%i|%T|%r|%Q")
        if not out.strip():
            return {}
        return dict(zip(("id", "state", "reason", "priority"), out.strip().split("|"),
                        strict=True))

    def wait(self, what: str, pred, timeout: float = 90.0):  # noqa: ANN001, ANN201
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = pred()
            if value:
                return value
            time.sleep(1.0)
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def write(cluster: Any, path: str, text: str, mode: str = "644") -> None:
    proc = cluster.ssh(["sh", "-c", 'cat > "$1" && chmod "$2" "$1"', "sh", path, mode],
                       input=text)
    assert proc.returncode == 0, proc.stderr


def make_checkpoints(cluster: Any, root: str) -> None:
    """iter 1000 and 2000 complete (DCP .metadata), 3000 partial (killed mid-save)."""
    files = ["iter_000001000/model/.metadata", "iter_000001000/model/__0_0.distcp",
             "iter_000002000/model/.metadata", "iter_000002000/model/__0_0.distcp",
             "iter_000003000/model/__0_0.distcp"]
    script = 'cd "$1" && shift && for f; do mkdir -p "$(dirname "$f")" && echo x > "$f"; done'
    proc = cluster.ssh(["sh", "-c", script, "sh", root, *files])
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def env(slurm_cluster: Any, slack_bot: Any, tmp_path: Path) -> Iterator[Env]:
    tag = uuid.uuid4().hex[:10]
    work = posixpath.join(slurm_cluster.home, f"train-cmd-{tag}")
    canary = posixpath.join(work, "CANARY")
    ckpt = posixpath.join(work, "checkpoints")
    assert slurm_cluster.ssh(["mkdir", "-p", ckpt]).returncode == 0
    make_checkpoints(slurm_cluster, ckpt)
    write(slurm_cluster, f"{work}/train.sbatch", TRAIN_SCRIPT.format(begin=0, sleep=1), "755")
    write(slurm_cluster, f"{work}/slow.sbatch", TRAIN_SCRIPT.format(begin=8, sleep=5), "755")
    write(slurm_cluster, f"{work}/record.sh", RECORD_WRAPPER.format(out=f"{work}/argv"), "755")
    write(slurm_cluster, f"{work}/leak.sh", LEAKING_WRAPPER, "755")
    common = {"workdir": work, "log_path": f"{work}/%x-%j.out", "account": "root",
              "owners": ["U0OWNER"], "submitters": ["robots"], "approvers": ["leads"],
              "channel": "training", "checkpoint": {"dir": ckpt, "complete_rule": "dcp"}}
    data = slurm_cluster.bot_config_data(
        store_url=f"sqlite:///{tmp_path / 'state.db'}",
        recipes={
            "mix": {**common, "sbatch_script": f"{work}/train.sbatch", "job_name": f"mix-{tag}"},
            # its own account, so other engineers' pending jobs on `root` do not compete
            "slow": {**common, "sbatch_script": f"{work}/slow.sbatch",
                     "job_name": f"slow-{tag}", "account": COMPETITION_ACCOUNT},
            "fuzz": {"workdir": work, "submit_command": [f"{work}/record.sh"],
                     "job_name": f"fuzz-{tag}", "account": "root",
                     "overridable": {"note": "str", "lr": "float"}},
            # secrets in env; sbatch refuses the partition / the wrapper fails quoting them
            "secret": {**common, "sbatch_script": f"{work}/train.sbatch",
                       "job_name": f"secret-{tag}", "partition": f"nope-{tag}",
                       "env": {"HF_TOKEN": HF_TOKEN, "WANDB_API": WANDB_KEY}},
            "secretwrap": {**common, "submit_command": [f"{work}/leak.sh"],
                           "job_name": f"secretwrap-{tag}",
                           "env": {"HF_TOKEN": HF_TOKEN, "WANDB_API": WANDB_KEY}},
        },
        channels={"training": CH}, approvers=["leads"],
        groups={"robots": ["U0ALICE"], "leads": ["W0LEAD", "U0APPR"]},
    )  # fmt: skip
    config = Config.model_validate(data)
    urls = ResponseUrls()
    with SlackStandIn() as slack:
        client = WebClient(token=slack.token, base_url=slack.api_url)
        with slack_bot(config, slack, client=client) as services:
            app = build_app(config, services, client=client, listener_executor=SyncExecutor(),
                            token_verification_enabled=False)
            try:
                yield Env(slurm_cluster, work, canary, tag, app, services, slack, urls)
            finally:
                try:  # its runs and competitors (submit_competitor) gone before the next test
                    cancel_and_wait(slurm_cluster, [f"{name}-{tag}" for name in
                                                    (*config.recipes, *COMPETITORS)])
                finally:
                    urls.close()
                    slurm_cluster.ssh(["rm", "-rf", work])


def cancel_and_wait(cluster: Any, names: list[str]) -> None:
    """scancel every job called one of `names` and wait (GONE_WITHIN_S at most) until squeue
    lists none of them."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        proc = cluster.ssh(["squeue", "-h", "--name", ",".join(names), "-o", "%i"])
        assert proc.returncode == 0, proc.stderr
        ids = proc.stdout.split()
        if not ids:
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"jobs {', '.join(ids)} still queued {GONE_WITHIN_S:.0f} s after scancel")
        cluster.ssh(["scancel", *ids])
        time.sleep(1.0)


def test_resume_mix_end_to_end(env: Env) -> None:
    ack, replies = env.train("resume mix")
    assert ack == ":hourglass_flowing_sand: `/train resume` …"
    text = replies[0]["text"]
    assert text.startswith("mix: submitted job "), text
    job_id = text.split()[3]
    assert f"resuming from iteration 2,000 (`{env.work}/checkpoints/iter_000002000`)" in text
    assert [j["id"] for j in env.squeue(f"mix-{env.tag}")] in ([job_id], [])  # may be done
    log = f"{env.work}/mix-{env.tag}-{job_id}.out"
    env.wait("the job's log", lambda: "iter 3" in env.cluster.ssh(["cat", log]).stdout)
    out = env.cluster.ssh(["cat", log]).stdout
    assert f"RESUME_FROM={env.work}/checkpoints/iter_000002000 RESUME_ITER=2000" in out
    roots = env.slack.root_messages(CH)
    # the root is the root template (state, progress, attempts); who submitted is its reply
    assert len(roots) == 1 and roots[0]["text"] == f"mix: job {job_id} PENDING · —"
    thread = env.slack.replies(CH, roots[0]["ts"])
    assert len(thread) == 1 and f"job {job_id} submitted by <@U0ALICE>" in thread[0]["text"]
    assert f"resuming from iteration 2,000 (`{env.work}/checkpoints/iter_000002000`)" in \
        thread[0]["text"]
    chain = present(env.services.store.chains.latest_for_recipe("mix"))
    assert chain.thread_ts == roots[0]["ts"]
    entries = [(e.actor, e.action, e.job_id, e.result)
               for e in env.services.store.audit.recent(20)]
    assert ("U0ALICE", "command.resume", job_id, "ok") in entries
    # the run's log, through /train logs (reads the file over SFTP)
    _, replies = env.train(f"logs {job_id} 2", user="U0OWNER")
    assert "iter 2 loss 0.7\niter 3 loss 0.7" in replies[0]["text"]


def test_a_failed_submit_shows_no_secret_of_the_recipe(env: Env) -> None:
    """Real sbatch refusing a partition, a real wrapper dumping its environment: the reply
    and the audit log say what failed, never the recipe's env values."""
    for recipe in ("secret", "secretwrap"):
        _, replies = env.train(f"submit {recipe}")
        text = replies[0]["text"]
        assert text.startswith("`submit` failed:") and "invalid partition specified" in text
        assert HF_TOKEN not in text and WANDB_KEY not in text
    assert env.squeue(f"secret-{env.tag}") == []
    details = " ".join(str(e.detail) for e in env.services.store.audit.recent(20))
    assert "invalid partition specified" in details
    assert HF_TOKEN not in details and WANDB_KEY not in details


HOSTILE_PARTS = [
    "'", '"', ";", "$(", ")", "`", "\n", "\\", "|", "&", "&amp;", "&lt;", ">", "*", "~",
    "$HOME", "${IFS}", "--", "-o", "=", " ", "é", "日本", "\u202e", "🙂",
]


def hostile(canary: str) -> st.SearchStrategy[str]:
    attacks = [f"$(touch {canary})", f"`touch {canary}`", f"; touch {canary}",
               f"' ; touch {canary} ; '", f"\" && touch {canary} && \"", f"\ntouch {canary}\n",
               f"| touch {canary}", f"&& touch {canary}", f"$(touch${{IFS}}{canary})"]
    piece = st.one_of(st.sampled_from(HOSTILE_PARTS), st.sampled_from(attacks),
                      st.text(max_size=6))
    return st.lists(piece, min_size=1, max_size=6).map("".join)


VERBS = ["status", "submit", "resume", "cancel", "hold", "release", "logs", "watch", "unwatch",
         "history", "preflight", "help"]


def test_hostile_input_never_reaches_a_shell(env: Env) -> None:
    seen = {"errors": 0, "literal": 0}
    sftp = env.services.clusters.sftp("dev")

    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    # submit is the one command whose values reach the cluster: weight it
    @given(verb=st.sampled_from(VERBS + ["submit"] * 10), payload=hostile(env.canary),
           quoted=st.booleans())
    def check(verb: str, payload: str, quoted: bool) -> None:
        if verb == "submit":
            arg = f"note={shlex.quote(payload)}" if quoted else f"note={payload}"
            text = f"submit fuzz {arg}"
        else:
            text = f"{verb} {shlex.quote(payload) if quoted else payload}"
        try:
            cmd = parse_command(text)
        except CommandError:
            cmd = None
        # An outsider: job ids the fuzzer invents may be other engineers' real jobs, and an
        # outsider may not cancel/hold/release them (fuzz allows anyone to submit).
        ack, replies = env.train(text, user="U0FUZZ")
        if cmd is None:
            assert ack.startswith(":x: ") and ("Usage" in ack or "Commands:" in ack), ack
            seen["errors"] += 1
            return
        if isinstance(cmd, Submit) and replies and "submitted job" in replies[0]["text"]:
            # the value reached the wrapper's argv as the submit service typed it (a str
            # value is only stripped of surrounding blanks): one literal word, never a shell's
            typed = parse_overrides("fuzz", env.services.config.recipe("fuzz"),
                                    cmd.override_strings())
            with sftp.open(f"{env.work}/argv", "rb") as f:
                argv = f.read().decode().split("\0")[:-1]
            assert argv == [f"{k}={v}" for k, v in typed.items()], (argv, cmd)
            seen["literal"] += 1
        elif replies:
            seen["errors"] += 1
        # no command may leave the canary behind, whatever its outcome (checked over the
        # bot's open SFTP channel here, and once more through plain ssh at the end)
        with pytest.raises(FileNotFoundError):
            sftp.stat(env.canary)

    check()
    assert env.cluster.ssh(["test", "-e", env.canary]).returncode == 1
    assert seen["literal"] >= 10 and seen["errors"] >= 10, seen


def prompt_for_failed_run(env: Env, recipe: str = "mix") -> tuple[str, str]:
    """A chain whose job died, with an incident prompt posted in its thread."""
    s = env.services
    now = time.time()
    chain = s.store.chains.create(recipe=recipe, cluster="dev", job_name=f"{recipe}-{env.tag}",
                                  channel=CH, now=now)
    s.store.attempts.record(chain_id=chain.id, job_id="1", now=now)
    writer(s).post_root(chain.id, CH, [{"type": "section", "text": {"type": "mrkdwn",
                                                                  "text": recipe}}], recipe)
    prompt = create_resubmit_prompt(s, recipe=recipe, chain_id=chain.id, job_id="1", now=now,
                                    summary="job 1 died: NCCL watchdog", resume_iter=2000,
                                    mem="1G")
    ts = writer(s).post_reply(chain.id, f"prompt:{prompt.token}", prompt.blocks, prompt.text)
    return prompt.token, ts


def test_approval_submits_once_on_the_real_cluster(env: Env) -> None:
    token, ts = prompt_for_failed_run(env)
    refused = env.click(ActionId.RESUBMIT, token, ts, "U0ALICE")
    assert refused[0]["text"].startswith("Refused: only <@U0APPR> or <@W0LEAD>")
    assert env.squeue(f"mix-{env.tag}") == []

    assert env.click(ActionId.RESUBMIT_MEM, token, ts, "W0LEAD") == []
    update = env.slack.ok_calls("chat.update")[-1].params["text"]
    assert update.startswith("Approved by <@W0LEAD>: resubmitted as ")
    assert update.endswith(" from iteration 2,000 with --mem=1G")
    job_id = update.split()[5]
    env.click(ActionId.RESUBMIT, token, ts, "W0LEAD")  # double click
    env.click(ActionId.RESUBMIT, token, ts, "W0LEAD", retry=1)  # Slack redelivers
    env.click(ActionId.RESUBMIT_MEM, token, ts, "U0APPR", retry=2)
    rows = env.wait("slurmdbd to record the job", lambda: env.accounted(f"mix-{env.tag}"))
    assert [r[0] for r in rows] == [job_id]
    assert rows[0][1] in ("1G", "1024M", "1Gn")

    # an expired prompt does nothing on the cluster either
    old_token, old_ts = prompt_for_failed_run(env)
    env.services.clock = lambda: time.time() + 48 * 3600
    assert re.fullmatch(
        r"⌛ This prompt expired unanswered; nothing was resubmitted: job \d+ stays as it ended\. "
        r"`/train resume mix` resumes the run from its last complete checkpoint\.",
        env.click(ActionId.RESUBMIT, old_token, old_ts, "W0LEAD")[0]["text"])
    results = [(e.actor, e.result) for e in reversed(env.services.store.audit.recent(50))
               if e.action == "approval.click"]
    assert results == [("U0ALICE", "unauthorized"), ("W0LEAD", "ok"), ("W0LEAD", "duplicate"),
                       ("W0LEAD", "duplicate"), ("U0APPR", "duplicate"), ("W0LEAD", "expired")]
    assert [r[0] for r in env.accounted(f"mix-{env.tag}")] == [job_id]


def hold_prompt(env: Env, comp_id: str) -> tuple[str, str]:
    root = env.slack.root_messages(CH)[-1]
    msgs = [r for r in env.slack.replies(CH, root["ts"]) if f"Hold {comp_id} " in r["text"]]
    assert len(msgs) == 1, [r["text"] for r in env.slack.replies(CH, root["ts"])]
    return msgs[0]["blocks"][1]["elements"][0]["value"], msgs[0]["ts"]


COMPETITORS = ("comp", "comp2")  # the names submit_competitor may be given


def submit_competitor(env: Env, name: str) -> str:
    assert name in COMPETITORS, "the env fixture cancels only these"
    return env.sh("sbatch", "--parsable", "--job-name", f"{name}-{env.tag}", "--partition",
                  env.cluster.partition, "--account", COMPETITION_ACCOUNT, "--begin", "now+1hour",
                  "--output", "/dev/null", "--wrap", "sleep 1").strip().split(";")[0]


def test_competitor_held_after_yes_and_released_when_resumed_job_runs(env: Env) -> None:
    comp = submit_competitor(env, "comp")
    _, replies = env.train("resume slow")
    assert f"Asked in the thread whether to hold {comp}" in replies[0]["text"], replies
    resumed = replies[0]["text"].split()[3]
    assert env.job(comp)["reason"] == "BeginTime"  # asking held nothing

    token, ts = hold_prompt(env, comp)
    env.click(ActionId.HOLD_COMPETITOR, token, ts, "U0APPR")
    assert env.slack.ok_calls("chat.update")[-1].params["text"] == \
        f"Approved by <@U0APPR>: held {comp} until {resumed} starts"
    assert env.job(comp)["reason"] == "JobHeldUser"

    def released() -> bool:
        release_started(env.services, time.time())
        return env.job(comp).get("reason") != "JobHeldUser"

    env.wait("the resumed job to run and the competitor to be released", released)
    assert env.job(resumed).get("state") in ("RUNNING", "COMPLETING", None)
    assert env.job(comp)["state"] == "PENDING"
    root = env.slack.root_messages(CH)[-1]
    assert f"Released {comp}: {resumed} is running." in \
        [r["text"] for r in env.slack.replies(CH, root["ts"])]


def resumed_job_runs(env: Env, resumed: str) -> None:
    """Wait until the resumed job `resumed` runs (or ran), then let the holds tick act."""
    env.wait("the resumed job to run",
             lambda: env.job(resumed).get("state") in ("RUNNING", "COMPLETING", None))
    release_started(env.services, time.time())


def test_a_yes_on_a_competitor_its_owner_held_meanwhile_leaves_the_owners_hold(
        env: Env) -> None:
    """Its owner holds the competitor while the prompt is open (`scontrol hold` of a held job
    exits 0 on Slurm): the yes holds and records nothing, and the resumed job starting
    releases nothing: the owner's hold stays."""
    comp = submit_competitor(env, "comp")
    _, replies = env.train("resume slow")
    resumed = replies[0]["text"].split()[3]
    token, ts = hold_prompt(env, comp)
    env.sh("scontrol", "hold", comp)
    env.click(ActionId.HOLD_COMPETITOR, token, ts, "U0APPR")
    assert env.slack.ok_calls("chat.update")[-1].params["text"] == (
        f"Out of date: {comp} is already held (JobHeldUser), by someone else's hold; trainbot "
        f"did not hold it and does not release it for {resumed}.")
    resumed_job_runs(env, resumed)
    assert env.job(comp)["reason"] == "JobHeldUser"


def test_a_persons_train_hold_of_a_competitor_trainbot_holds_outlasts_the_resumed_job(
        env: Env) -> None:
    """`/train hold` of a competitor trainbot holds makes it the person's hold: the resumed
    job starting no longer releases it."""
    comp = submit_competitor(env, "comp")
    _, replies = env.train("resume slow")
    resumed = replies[0]["text"].split()[3]
    token, ts = hold_prompt(env, comp)
    env.click(ActionId.HOLD_COMPETITOR, token, ts, "U0APPR")
    assert env.job(comp)["reason"] == "JobHeldUser"
    env.train(f"hold {comp}", user="U0APPR")
    resumed_job_runs(env, resumed)
    assert env.job(comp)["reason"] == "JobHeldUser"
    root = env.slack.root_messages(CH)[-1]
    assert (f"<@U0APPR> held {comp} with `/train hold`: it is their hold now, and trainbot no "
            f"longer releases it when {resumed} starts.") in \
        [r["text"] for r in env.slack.replies(CH, root["ts"])]


def test_a_persons_train_hold_of_a_whole_array_outlasts_the_resumed_job_for_its_tasks(
        env: Env) -> None:
    """trainbot holds a task of a competing array under the task's own id (task 1, split off
    the array's waiting rest by an update of its own); `/train hold` of the array's own id
    holds every waiting task and makes that hold the person's: the resumed job starting
    releases none of them."""
    array = env.sh("sbatch", "--parsable", "--array=0-3", "--job-name", f"comp-{env.tag}",
                   "--partition", env.cluster.partition, "--account", COMPETITION_ACCOUNT,
                   "--begin", "now+1hour", "--output", "/dev/null", "--wrap", "sleep 1",
                   ).strip().split(";")[0]
    env.sh("scontrol", "update", f"JobId={array}_1", "Comment=split")  # its own record now
    shown = env.sh("scontrol", "show", "job", f"{array}_1")
    task = int(present(re.search(r"JobId=(\d+)", shown)).group(1))
    assert task != int(array), shown
    _, replies = env.train("resume slow")
    resumed = replies[0]["text"].split()[3]
    store = env.services.store
    token = store.approvals.create(
        chain_id=present(store.attempts.get_by_job(resumed)).chain_id,
        action=HOLD_ACTION, target_job=str(task),
        payload={"cluster": "dev", "for_job": resumed, "recipe": "slow",
                 "choices": ["hold", "keep"]},
        allowed=["U0APPR"], now=time.time(), expires_at=time.time() + 3600)
    result = handle_click(env.services, token, ActionId.HOLD_COMPETITOR, "U0APPR", time.time())
    assert result.update_text == f"Approved by <@U0APPR>: held {task} until {resumed} starts"
    assert env.job(task)["reason"] == "JobHeldUser"
    env.train(f"hold {array}", user="U0APPR")
    resumed_job_runs(env, resumed)
    assert env.job(task)["reason"] == "JobHeldUser"
    assert all(row["reason"] == "JobHeldUser" for row in env.squeue(f"comp-{env.tag}"))
    root = env.slack.root_messages(CH)[-1]
    assert (f"<@U0APPR> held {task} with `/train hold`: it is their hold now, and trainbot no "
            f"longer releases it when {resumed} starts.") in \
        [r["text"] for r in env.slack.replies(CH, root["ts"])]


def test_nothing_held_after_no(env: Env) -> None:
    comp = submit_competitor(env, "comp2")
    _, replies = env.train("resume slow")
    token, ts = hold_prompt(env, comp)
    env.click(ActionId.KEEP_COMPETITOR, token, ts, "U0APPR")
    env.click(ActionId.HOLD_COMPETITOR, token, ts, "U0APPR")  # a late yes changes nothing
    assert env.slack.ok_calls("chat.update")[-1].params["text"] == \
        f"<@U0APPR> chose not to hold {comp}; nothing was held."
    assert env.job(comp)["reason"] == "BeginTime"
