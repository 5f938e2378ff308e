"""A submit in flight is looked up, or taken over, only after the longer of its sender's bound
and the current config's: the sender keeps one remote command's worst case, as it counted it
when it sent the sbatch, on the row in flight (submits_in_flight.command_at_most_s,
bot.services.submit_deadlines.sender_command_at_most_s). Before, the bound was the lookup's
current config's alone: a ProxyJump taken out of the ssh_config (or a replica started without
`proxy_jump`) while the sender still went through the jump host had its submit looked up after
21 minutes instead of 36, judged lost while its sbatch could still land, and resubmitted."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from fakes import (
    AnswerLostSlurm,
    FakeRunner,
    FakeSlurm,
    failed_run,
    make_config,
    make_context,
)
from support.dying import Died, dies_at
from support.in_flight import in_flight, jobs, recover

from bot.cluster.errors import ChannelClosed, CommandTimedOut, submit_advice
from bot.config import Config
from bot.config.models.clusters import ClusterConfig
from bot.core import takeover
from bot.core import train_grammar as c
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import (
    RemoteDeadlines,
    submit_in_flight_s,
)
from bot.services import cancel_settle
from bot.services import submit as submit_mod
from bot.services.fencing import fenced_context
from bot.services.leases import LeaseKeeper
from bot.services.submit_deadlines import approval_intent, sender_command_at_most_s
from bot.services.train import execute
from bot.store import Store

# the takeovers at the default slack.post_deadline_s (300 s)
settle_takeover_s = partial(takeover.settle_takeover_s, post_deadline_s=POST_DEADLINE_S)
settle_lead_s = partial(takeover.settle_lead_s, post_deadline_s=POST_DEADLINE_S)

NOW = 1_000_000.0
DIRECT, JUMP = RemoteDeadlines(), RemoteDeadlines(jump=True)
DIRECT_S, JUMP_S = 1239.0, 2139.0  # a submit's time in flight: over 20 minutes, over 35
LOGIN = "Host gpu\n  HostName 127.0.0.1\n  Port 2222\n  User slurmci\n  IdentityFile /nonexistent\n"
PROXYJUMP = LOGIN + "  ProxyJump ops@bastion.example.org:22\n"


def config_with(folder: Path, ssh_config: str) -> Config:
    """make_config()'s, its cluster `dev` reached as `gpu` through an ssh_config file in
    `folder` holding `ssh_config` (as tests/unit/services/test_takeover_jump_host.py's)."""
    path = folder / "ssh_config"
    path.write_text(ssh_config)
    dev = ClusterConfig(host="gpu", ssh_config=str(path))
    return make_config().model_copy(update={"clusters": {"dev": dev}})


def test_a_submit_in_flight_counts_its_senders_commands_when_longer() -> None:
    assert (DIRECT.command_at_most_s, JUMP.command_at_most_s) == (131.0, 231.0)
    assert submit_in_flight_s(DIRECT) == DIRECT_S == 1239.0  # 21 minutes
    assert submit_in_flight_s(DIRECT, JUMP.command_at_most_s) == JUMP_S == 2139.0  # 36: its
    assert submit_in_flight_s(JUMP, DIRECT.command_at_most_s) == 2139.0  # sender's; the current
    assert submit_in_flight_s(DIRECT, None) == 1239.0  # a row written before: as before
    assert settle_takeover_s(DIRECT, 231.0) > settle_takeover_s(DIRECT) == 5840.0
    assert settle_lead_s(DIRECT, 231.0) == settle_takeover_s(DIRECT, 231.0) + 2139.0


def test_a_resume_sent_through_a_jump_host_is_not_looked_up_when_the_jump_is_removed(
        store: Store, tmp_path: Path, monkeypatch) -> None:
    """Alice's resume sent through the jump host (the bot dies right after its sbatch), then
    the ProxyJump taken out of the ssh_config: the recovery waits the sender's 36 minutes,
    not the config's 21, before it looks the job up."""
    monkeypatch.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
    jumped = tmp_path / "jumped"
    jumped.mkdir()
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, config=config_with(jumped, PROXYJUMP))
    chain = failed_run(ctx, now=NOW, channel="C0TRAIN")
    with pytest.raises(Died):
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW)
    [flight] = store.submits_in_flight.sent_before("dev", float("inf"))
    assert flight.command_at_most_s == 231.0  # the jump host's bound, kept by its sender

    ctx = make_context(store, slurm, config=config_with(tmp_path, LOGIN))  # no jump now
    recover(ctx, NOW + DIRECT_S + 1)  # the current config's bound: the sbatch may still land
    assert jobs(store, chain) == ["88154"] and in_flight(store) == ["mix"]
    recover(ctx, NOW + JUMP_S + 1)  # the sender's
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    assert len(slurm.acted("submit")) == 1


def test_a_row_written_before_its_senders_bound_was_kept_is_looked_up_at_the_current_one(
        store: Store, tmp_path: Path) -> None:
    ctx = make_context(store, AnswerLostSlurm(lost=0, submitted_at=NOW),
                       config=config_with(tmp_path, LOGIN))
    store.submits_in_flight.add(cluster="dev", recipe="mix", job_name="mix", chain_id=None,
                                array_task=None, resumed_at=None, charge_retry=False,
                                actor="U0ALICE", channel="C0TRAIN", sent_at=NOW)
    recover(ctx, NOW + DIRECT_S - 1)
    assert in_flight(store) == ["mix"]
    recover(ctx, NOW + DIRECT_S + 1)
    assert in_flight(store) == []


def test_the_sender_keeps_its_runners_cached_jump_host_when_the_config_has_none(
        tmp_path: Path) -> None:
    """The SSH runner resolved the ProxyJump when it was made and still goes through it: its
    bound is the one kept, though the ssh_config names none now."""
    config = config_with(tmp_path, LOGIN)

    def bound(config: Config, deadlines: RemoteDeadlines | Exception) -> float:
        return sender_command_at_most_s(config, "dev",
                                        FakeSlurm(runner=FakeRunner(deadlines=deadlines)))

    assert bound(config, JUMP) == 231.0
    assert bound(config, DIRECT) == 131.0
    assert bound(config, OSError("x")) == 131.0  # its endpoint cannot be resolved
    assert bound(config_with(tmp_path, PROXYJUMP), DIRECT) == 231.0


def test_a_fenced_senders_row_keeps_its_runners_jump_host(
        store: Store, tmp_path: Path, monkeypatch) -> None:
    """A scheduled job's submit goes through the fenced ports (bot.services.fencing): the
    bound kept on its row is still its SSH runner's own. Before, the fenced runner had no
    deadlines() for the sender to find, and the row kept the config's 131 s."""
    monkeypatch.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    slurm.runner = FakeRunner(slurm.runner.answers, deadlines=JUMP)  # went through a jump
    ctx = make_context(store, slurm, config=config_with(tmp_path, LOGIN))  # none named now
    failed_run(ctx, now=NOW, channel="C0TRAIN")
    keeper = LeaseKeeper(store.leases, holder="A")
    assert keeper.holds("submits", NOW, every_s=60)
    fenced = fenced_context(ctx, keeper.fence("submits", lambda: NOW))
    with pytest.raises(Died):
        execute(fenced, c.Resume("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW)
    [flight] = store.submits_in_flight.sent_before("dev", float("inf"))
    assert flight.command_at_most_s == 231.0


def test_a_lost_submits_reply_names_the_bound_its_lookup_waits_for(
        store: Store, tmp_path: Path) -> None:
    """Alice's submit through the runner's cached jump host, its sbatch answer lost and its
    lookup by name failing: the reply says trainbot looks again in 36 minutes, the bound its
    row keeps (231 s per command) and the recovery waits for. Before, it said the config's
    21 minutes, and the recovery did not look until 36."""
    slurm = AnswerLostSlurm(error=ChannelClosed(
        ["sbatch", "--parsable"], "login", connection_lost=True, advice=submit_advice("mix")))
    slurm.runner = FakeRunner(slurm.runner.answers, deadlines=JUMP)
    slurm.lookup_error = CommandTimedOut(["squeue"], 5)
    ctx = make_context(store, slurm, config=config_with(tmp_path, LOGIN))  # no jump named
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW).text
    assert reply.endswith("trainbot looks for it again in 36 minutes and, if it is there, "
                          "records it and tells the run's thread."), reply
    [flight] = store.submits_in_flight.sent_before("dev", float("inf"))
    assert flight.command_at_most_s == 231.0
    slurm.lookup_error = None
    recover(ctx, NOW + DIRECT_S + 1)  # not looked up at the config's 21 minutes ...
    assert in_flight(store) == ["mix"]
    recover(ctx, NOW + JUMP_S + 1)  # ... but at the 36 the reply named: its job is found
    assert in_flight(store) == [] and len(slurm.acted("submit")) == 1


def test_a_cancel_and_resumes_takeover_counts_its_resubmits_senders_bound(
        store: Store, tmp_path: Path) -> None:
    """A cancel and resume whose resubmit is in flight, sent through a jump host since taken
    out of the config: its takeover waits the sender's commands, not the config's."""
    ctx = make_context(store, AnswerLostSlurm(lost=0, submitted_at=NOW),
                       config=config_with(tmp_path, LOGIN))
    token = store.approvals.create(action="cancel", payload={"cluster": "dev", "recipe": "mix"},
                                   allowed=["U0BOB"], expires_at=NOW + 3600, now=NOW)
    approval = store.approvals.get(token)
    assert approval is not None
    assert cancel_settle.takeover_s(ctx, approval, NOW, "cancel_settled") == \
        settle_takeover_s(DIRECT)
    store.submits_in_flight.add(cluster="dev", recipe="mix", job_name="mix", chain_id=None,
                                array_task=None, resumed_at=None, charge_retry=False,
                                actor="U0BOB", channel=None, sent_at=NOW - 5,
                                intent=approval_intent(token), command_at_most_s=200.0)
    assert cancel_settle.takeover_s(ctx, approval, NOW, "cancel_settled") == \
        settle_takeover_s(DIRECT, 200.0)
    assert settle_takeover_s(DIRECT, 200.0) > settle_takeover_s(DIRECT)



def test_a_settle_check_reads_only_its_approvals_submits_in_flight(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster has other submits in flight with longer bounds (a person's, another
    approval's, this approval's own sent after the check): the takeover counts this
    approval's rows sent before it alone, as before, read by their intent
    (SubmitsInFlightRepo.with_intent), not every row of the cluster filtered here."""
    ctx = make_context(store, AnswerLostSlurm(lost=0, submitted_at=NOW),
                       config=config_with(tmp_path, LOGIN))
    token = store.approvals.create(action="cancel", payload={"cluster": "dev", "recipe": "mix"},
                                   allowed=["U0BOB"], expires_at=NOW + 3600, now=NOW)
    approval = store.approvals.get(token)
    assert approval is not None
    flight = dict(cluster="dev", recipe="mix", job_name="mix", chain_id=None, array_task=None,
                  resumed_at=None, charge_retry=False, actor="U0BOB", channel=None)
    for intent, at, bound in [(None, NOW - 9, 900.0), (approval_intent("other"), NOW - 8, 900.0),
                              (approval_intent(token), NOW + 5, 900.0),
                              (approval_intent(token), NOW - 5, 200.0)]:
        store.submits_in_flight.add(**flight, sent_at=at, intent=intent,  # type: ignore[arg-type]
                                    command_at_most_s=bound)
    reads: list[tuple[str, str, float]] = []
    with_intent = store.submits_in_flight.with_intent

    def by_intent(cluster: str, intent: str, before: float) -> list:
        reads.append((cluster, intent, before))
        return with_intent(cluster, intent, before)

    def every_row(cluster: str, before: float) -> list:
        raise AssertionError(f"read every submit in flight of {cluster}")

    monkeypatch.setattr(store.submits_in_flight, "with_intent", by_intent, raising=False)
    monkeypatch.setattr(store.submits_in_flight, "sent_before", every_row)
    assert cancel_settle.takeover_s(ctx, approval, NOW, "cancel_settled") == \
        settle_takeover_s(DIRECT, 200.0)
    assert reads == [("dev", approval_intent(token), NOW)]
