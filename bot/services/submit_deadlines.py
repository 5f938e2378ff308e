"""How long a submit may take: a cluster's configured deadlines (bot.core.takeover's
RemoteDeadlines) and, counted from them, how long a person's submit may stay in flight before
another path looks it up or takes it over, and the bound its sender keeps on its row; so too
the bounds the run that marks an approved cancel's step keeps with it (`step_bounds`).

Used by bot.services.submit (the row it adds before its sbatch, the lookup that follows a
lost one), bot.services.runs (the recovery of submits in flight),
bot.services.approved_choices and bot.services.cancel_steps (a cancel's steps), and
bot.services.cancel_settle.
"""

from __future__ import annotations

import logging

from bot.cluster.endpoint import goes_through_jump_host
from bot.config import Config
from bot.core.takeover import RemoteDeadlines, StepBounds, own_bounds, submit_in_flight_s
from bot.services.ports import Slurm
from bot.store import SubmitInFlight

log = logging.getLogger(__name__)


def cluster_deadlines(config: Config, cluster: str) -> RemoteDeadlines:
    """`cluster`'s configured deadlines (connect, command, SFTP request, and whether a jump
    host is on the way: a proxy_jump, or the ssh_config file's Host entry for the cluster's
    host naming a ProxyJump or ProxyCommand, read as the SSH runner reads it:
    bot.cluster.endpoint.goes_through_jump_host, the one adapter import of the services that
    connects nowhere, allowed in pyproject's services-through-ports contract), from which the
    takeovers of its steps are counted (bot.core.takeover); the defaults' for a cluster not
    (or no longer) configured."""
    c = config.clusters.get(cluster)
    if c is None:
        return RemoteDeadlines()
    return RemoteDeadlines(connect_s=c.connect_timeout, command_s=c.command_timeout,
                           sftp_s=c.sftp_timeout,
                           jump=goes_through_jump_host(c.ssh_settings()))


def in_flight_s(config: Config, cluster: str) -> float:
    """How long a person's submit to `cluster` may stay in flight (its sbatch, the lookup by
    name that may follow it) before bot.services.runs.recover_submits_in_flight takes it for
    one the bot died in: bot.core.takeover.submit_in_flight_s over the cluster's deadlines,
    so a replica never takes up a submit another one is still in."""
    return submit_in_flight_s(cluster_deadlines(config, cluster))


def flight_in_flight_s(config: Config, flight: SubmitInFlight) -> float:
    """How long `flight` may stay in flight before it is looked up or taken over: as
    in_flight_s, each command at the longer of its sender's bound (kept on its row) and the
    cluster's current one (bot.core.takeover.sent_command_at_most_s)."""
    return submit_in_flight_s(cluster_deadlines(config, flight.cluster),
                              flight.command_at_most_s)


def sender_command_at_most_s(config: Config, cluster: str, slurm: Slurm) -> float:
    """One remote command's worst case as this sender counts it as it sends a submit: the
    cluster's configured deadlines', or its SSH runner's own (the jump host and timeouts it
    resolved when it was made, kept since) when longer, so the bound kept with the submit
    in flight is the one this process may still be sending under."""
    return step_bounds(config, cluster, slurm).command_at_most_s


def step_bounds(config: Config, cluster: str, slurm: Slurm) -> StepBounds:
    """The bounds this run counts a step's remote calls at, kept with the step it marks (an
    approved cancel's `cancelling`, a settle's `cancel_settled` or `cancel_resuming`: its
    takeover waits for them, bot.core.takeover.cancel_takeover_s and settle_takeover_s): one
    command's and one checkpoint lookup's worst case, each the cluster's configured
    deadlines' or its SSH runner's own when longer (bot.core.takeover.own_bounds), and one
    Slack post's from the post deadline this run's poster has (slack.post_deadline_s), so a
    replica configured shorter never takes the step over while its posts may still run."""
    return own_bounds(cluster_deadlines(config, cluster), _runner_deadlines(cluster, slurm),
                      config.slack.post_deadline_s)


def _runner_deadlines(cluster: str, slurm: Slurm) -> RemoteDeadlines | None:
    """`slurm`'s runner's own deadlines (the endpoint it resolved and keeps using); None when
    they cannot be known (an endpoint that cannot be resolved sends nothing)."""
    try:
        return slurm.runner.deadlines()
    except Exception:  # noqa: BLE001 - an endpoint that cannot be resolved sends nothing
        log.debug("%s: the runner's deadlines are not known", cluster, exc_info=True)
        return None
