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
from dataclasses import dataclass

from bot.cluster.endpoint import goes_through_jump_host
from bot.config import Config
from bot.core.takeover import (
    RemoteDeadlines,
    StepBounds,
    in_flight_settled_at,
    longest_bounds,
    own_bounds,
    submit_in_flight_s,
)
from bot.services.ports import Slurm
from bot.store import Store, SubmitInFlight

log = logging.getLogger(__name__)

RESUMING_STEP = "cancel_resuming"
"""The step of an approved cancel and resume whose scancel took effect, from the resubmit on
until the approval's end: its time is the click's lease on the rest
(bot.services.cancel_steps)."""

SETTLED_STEP = "cancel_settled"
"""The step of an approved cancel trainbot took up again (its scancel's end not seen, or its
click's process dead in its resume): bot.services.cancel_settle."""

SETTLE_STEPS = (RESUMING_STEP, SETTLED_STEP)
"""The steps of a cancel and resume whose marker may send its resubmit (the click's,
RESUMING_STEP; the settle's, SETTLED_STEP): their kept bounds lengthen the settle's lead
(`flight_settled_at`) as they do its takeover."""

_APPROVAL_INTENT = "approval:"


def approval_intent(token: str) -> str:
    """The intent a cancel and resume's resubmit is kept in flight under: its approval's."""
    return f"{_APPROVAL_INTENT}{token}"


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


@dataclass(frozen=True)
class SettleLead:
    """A cancel and resume still approved whose resubmit is (or is about to be) kept in
    flight: its click, or the settle that takes it over, records the job it left
    (bot.services.runs._settle_leads). `token`: its approval's; `marked`: the longest bounds
    its settle's steps' markers kept (SETTLE_STEPS; None: none kept)."""

    token: str
    marked: StepBounds | None


def settle_lead_of(store: Store, intent: str | None) -> SettleLead | None:
    """The settle that leads a submit kept in flight under `intent` (its row's): a cancel and
    resume's (`approval_intent`) whose approval is still approved; None for any other."""
    if intent is None or not intent.startswith(_APPROVAL_INTENT):
        return None
    approval = store.approvals.get(intent.removeprefix(_APPROVAL_INTENT))
    if approval is None or approval.state != "approved":
        return None
    return SettleLead(approval.token, longest_bounds(
        *(store.approvals.bounds_of(approval.token, step) for step in SETTLE_STEPS)))


def flight_settled_at(config: Config, flight: SubmitInFlight, lead: SettleLead | None) -> float:
    """When the recovery of submits in flight settles `flight`, at the earliest
    (bot.core.takeover.in_flight_settled_at over its cluster's deadlines): once its own
    window has passed (flight_in_flight_s), or, led by a settle (`lead`: settle_lead_of its
    intent), once that settle's lead has (settle_lead_s at the bounds its steps keep). What
    a refusal by a row kept in flight and a command stopped after keeping one say, and what
    bot.services.runs.recover_submits_in_flight waits for. Reads nothing: `lead` is read
    by the caller (before the row is added, by a submit the store's close may stop)."""
    return in_flight_settled_at(cluster_deadlines(config, flight.cluster), flight.sent_at,
                                flight.command_at_most_s, settle_leads=lead is not None,
                                marked=lead.marked if lead is not None else None,
                                post_deadline_s=config.slack.post_deadline_s)


def resubmit_settled_at(config: Config, cluster: str, at: float,
                        bounds: StepBounds) -> float:
    """When a cancel and resume's resubmit, once its scancel is sent at `at`, has been
    settled at the latest: by its click or the settle that takes it over, else, kept in
    flight, by bot.services.runs.recover_submits_in_flight (in_flight_settled_at, its settle
    leading: a row sent at `at`, counted at the click's `bounds`, kept with its steps). What
    a click the store's close stops after its scancel says it waits for."""
    return in_flight_settled_at(cluster_deadlines(config, cluster), at,
                                bounds.command_at_most_s, settle_leads=True, marked=bounds,
                                post_deadline_s=config.slack.post_deadline_s)


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
