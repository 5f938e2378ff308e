"""A cluster's takeovers count a jump host's connection only when its connection goes through
one: its proxy_jump, or the ssh_config file's Host entry for its host naming a ProxyJump (or a
ProxyCommand), read as the SSH runner reads it (bot.services.submit_deadlines.cluster_deadlines,
bot.cluster.endpoint.goes_through_jump_host). Before, any cluster with an ssh_config counted
one, and a lost submit's lookup waited 36 minutes instead of 21."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fakes import AnswerLostSlurm, make_config, make_context

from bot.cluster.errors import ChannelClosed, CommandTimedOut, submit_advice
from bot.cluster.ssh import SSHRunner
from bot.config import Config
from bot.config.models.clusters import ClusterConfig
from bot.core import train_grammar as c
from bot.core.takeover import RemoteDeadlines, submit_in_flight_s
from bot.services.submit_deadlines import cluster_deadlines, in_flight_s
from bot.services.train import execute
from bot.store import Store

NOW = 1_000_000.0
DIRECT = RemoteDeadlines()
JUMP = RemoteDeadlines(jump=True)
LOGIN = "Host gpu\n  HostName 127.0.0.1\n  Port 2222\n  User slurmci\n  IdentityFile /nonexistent\n"


def config_with(tmp_path: Path, ssh_config: str | None, **cluster: object) -> Config:
    """make_config()'s, its cluster `dev` reached as `gpu` through the ssh_config file
    holding `ssh_config` (None: no file there)."""
    path = tmp_path / "ssh_config"
    if ssh_config is not None:
        path.write_text(ssh_config)
    dev = ClusterConfig(host="gpu", ssh_config=str(path), **cluster)
    return make_config().model_copy(update={"clusters": {"dev": dev}})


def lost_submit_reply(store: Store, config: Config) -> str:
    """A resume whose sbatch answer was lost and whose lookup failed: the reply, which says
    when trainbot looks again."""
    slurm = AnswerLostSlurm(error=ChannelClosed(
        ["sbatch", "--parsable"], "login", connection_lost=True, advice=submit_advice("mix")))
    slurm.lookup_error = CommandTimedOut(["squeue"], 5)
    ctx = make_context(store, slurm, config=config)
    return execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW).text


@pytest.mark.parametrize(("body", "minutes"), [
    (LOGIN, 21),
    (LOGIN + "  ProxyJump ops@bastion.example.org:22\n", 36),
], ids=["no_proxyjump", "proxyjump"])
def test_a_lost_submit_is_looked_up_again_after_its_clusters_own_worst_case(
        store: Store, tmp_path: Path, body: str, minutes: int) -> None:
    assert minutes == math.ceil(submit_in_flight_s(JUMP if minutes == 36 else DIRECT) / 60)
    reply = lost_submit_reply(store, config_with(tmp_path, body))
    assert reply.endswith(f"trainbot looks for it again in {minutes} minutes and, if it is "
                          "there, records it and tells the run's thread."), reply


def test_a_lost_submits_reply_never_names_a_time_before_its_lookup(
        store: Store, tmp_path: Path) -> None:
    """A cluster whose commands are given 30 s: a lost submit is looked up again after 969 s
    (16 minutes 9 s), and the reply says 17 minutes, the first whole minute the lookup has
    happened by. Before, it said 16 (rounded to the nearest): a person who checked then found
    the job not looked up yet."""
    config = config_with(tmp_path, LOGIN, command_timeout=30)
    assert in_flight_s(config, "dev") == 969.0
    reply = lost_submit_reply(store, config)
    assert reply.endswith("trainbot looks for it again in 17 minutes and, if it is there, "
                          "records it and tells the run's thread."), reply


@pytest.mark.parametrize(("body", "cluster", "jump"), [
    (LOGIN, {}, False),
    (LOGIN + "  ProxyJump none\n", {}, False),
    (LOGIN + "Host bastion\n  ProxyJump other\n", {}, False),  # another host's entry
    ("Host *\n  ProxyJump ops@bastion\n" + LOGIN, {}, True),  # a pattern's, first wins
    (LOGIN + "  ProxyJump bastion\n", {}, True),
    (LOGIN, {"proxy_jump": "bastion"}, True),  # the cluster's own
    (LOGIN + "  ProxyCommand ssh -W %h:%p bastion\n", {}, True),  # refused; counted
    (None, {}, True),  # a file not there now may have named one
], ids=["plain", "proxyjump_none", "other_host", "wildcard", "proxyjump", "proxy_jump_setting",
        "proxycommand", "missing_file"])
def test_a_jump_host_is_counted_when_the_clusters_connection_goes_through_one(
        tmp_path: Path, body: str | None, cluster: dict, jump: bool) -> None:
    config = config_with(tmp_path, body, **cluster)
    want = JUMP if jump else DIRECT
    assert cluster_deadlines(config, "dev") == want
    assert in_flight_s(config, "dev") == submit_in_flight_s(want)
    if body is not None and "ProxyCommand" not in body:  # the runner counts the same
        assert SSHRunner(config.clusters["dev"].ssh_settings()).deadlines().jump is jump
