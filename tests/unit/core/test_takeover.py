"""The takeovers of a step a process may die in are counted from the cluster's deadlines
(bot.core.takeover): a cluster given longer commands gets longer leases."""

from __future__ import annotations

import inspect
from functools import partial

import pytest

from bot.core import slack_bounds, takeover
from bot.core.checkpoints import CHECKPOINT_REQUESTS
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import (
    CANCEL_COMMANDS,
    END_GRACE_S,
    RESUME_COMMANDS,
    SCANCEL_KILL_AFTER_S,
    SLACK_CALLS,
    SUBMIT_COMMANDS,
    TAKEOVER_MARGIN_S,
    RemoteDeadlines,
    StepBounds,
    cancel_takeover_s,
    longest_bounds,
    own_bounds,
    post_takeover_s,
    scancel_limits,
    submit_in_flight_s,
)

# the takeovers at the default slack.post_deadline_s (300 s)
settle_takeover_s = partial(takeover.settle_takeover_s, post_deadline_s=POST_DEADLINE_S)
settle_lead_s = partial(takeover.settle_lead_s, post_deadline_s=POST_DEADLINE_S)


def test_the_default_deadlines_give_the_takeovers_their_minutes() -> None:
    assert submit_in_flight_s(RemoteDeadlines()) == 1239.0  # "looks again in 21 minutes"
    assert settle_takeover_s(RemoteDeadlines()) == 5840.0
    assert settle_lead_s(RemoteDeadlines()) == 7079.0  # a settle's row, then looked up


def test_a_settles_slack_calls_count_the_posters_worst_case_as_a_posts_takeover_does(
        ) -> None:
    """Each of a settle's SLACK_CALLS Slack calls is counted as post_takeover_s counts one
    post (its deadline, then one request: 330 s by default), not at one request's 30 s;
    a configured post deadline moves it for each call."""
    d = RemoteDeadlines()
    commands_and_lookup = RESUME_COMMANDS * d.command_at_most_s + d.lookup_at_most_s
    for deadline in (300.0, 90.0):
        one_post = post_takeover_s(deadline, kept=None) - TAKEOVER_MARGIN_S
        assert settle_takeover_s(d, post_deadline_s=deadline) == \
            commands_and_lookup + SLACK_CALLS * one_post + TAKEOVER_MARGIN_S
        assert settle_lead_s(d, post_deadline_s=deadline) == \
            settle_takeover_s(d, post_deadline_s=deadline) + submit_in_flight_s(d)
    assert SLACK_CALLS * (post_takeover_s(300.0, kept=None) - TAKEOVER_MARGIN_S) == 6 * 330.0



def test_no_bound_counts_a_post_deadline_its_caller_did_not_pass() -> None:
    """Each bound that counts a Slack post takes the post deadline from its caller (the
    config's slack.post_deadline_s), keyword-only beside other arguments, with no default: a
    caller that forgets it is refused (and flagged by mypy) instead of being counted at
    300 s whatever the config says. Before, settle_takeover_s and settle_lead_s defaulted
    to POST_DEADLINE_S."""
    counted = {name: fn for module in (takeover, slack_bounds)
               for name, fn in inspect.getmembers(module, inspect.isfunction)
               if fn.__module__ == module.__name__}
    taking = {name: param for name, fn in counted.items()
              if (param := inspect.signature(fn).parameters.get("post_deadline_s"))
              is not None}
    assert {"settle_takeover_s", "settle_lead_s", "post_takeover_s"} <= taking.keys()
    for name, param in taking.items():
        assert param.default is inspect.Parameter.empty, name
    with pytest.raises(TypeError):
        takeover.settle_takeover_s(RemoteDeadlines())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        takeover.settle_lead_s(RemoteDeadlines(), 200.0)  # type: ignore[call-arg]

@pytest.mark.parametrize("connect_s", [10.0, 30.0])
def test_one_command_at_its_worst_counts_the_retry_the_lock_and_each_hop(
        connect_s: float) -> None:
    """One command at its worst (bot.cluster.ssh): each of two attempts at a session channel
    waits for another thread's connection (one connection's time at most), makes its own,
    then opens the channel; a connection is one host's (its name's DNS lookup, TCP connect,
    banner, key exchange and every key's authentication, ended together at connect_s), or through a
    jump host the jump host's, the tunnel's opening and the login node's; then the run.
    Before, a command counted one connection and one channel (2 × connect_s): the
    reconnect, the lock and the jump host were not counted."""
    direct = RemoteDeadlines(connect_s=connect_s, command_s=60.0)
    assert direct.connect_at_most_s == connect_s
    assert direct.session_at_most_s == 2 * (connect_s + connect_s + connect_s)
    assert direct.command_at_most_s == 6 * connect_s + 60.0 + END_GRACE_S + connect_s
    jumped = RemoteDeadlines(connect_s=connect_s, command_s=60.0, jump=True)
    assert jumped.connect_at_most_s == 3 * connect_s  # jump host, tunnel, login node
    assert jumped.command_at_most_s == \
        2 * (3 * connect_s * 2 + connect_s) + 60.0 + END_GRACE_S + 3 * connect_s
    assert jumped.sftp_channel_at_most_s == \
        jumped.session_at_most_s + 2 * jumped.sftp_s + END_GRACE_S + jumped.lock_wait_s
    assert submit_in_flight_s(jumped) > submit_in_flight_s(direct)
    assert settle_takeover_s(jumped) > settle_takeover_s(direct)


@pytest.mark.parametrize("deadlines", [
    RemoteDeadlines(), RemoteDeadlines(connect_s=30.0, command_s=300.0, sftp_s=60.0, jump=True),
    RemoteDeadlines(connect_s=1.0, command_s=2.0, sftp_s=0.5)])
def test_a_call_whose_send_cannot_leave_ends_within_its_counted_worst_case(
        deadlines: RemoteDeadlines) -> None:
    """A send that cannot leave (the connection stuck) ends when its connection, retired, is
    closed, END_GRACE_S past the call's deadline (bot.cluster.in_flight): a command whose
    session opened at its worst then ends END_GRACE_S after its run's deadline, an SFTP
    channel whose subsystem was answered at its deadline END_GRACE_S after its version
    exchange's. Each worst case the takeovers count is at least that. Before, both left the
    grace out: a lease could end a second before the call it covers."""
    d = deadlines
    assert d.command_at_most_s >= d.session_at_most_s + d.command_s + END_GRACE_S
    assert d.sftp_channel_at_most_s >= d.session_at_most_s + d.sftp_s + d.sftp_s + END_GRACE_S
    assert d.lookup_at_most_s >= d.sftp_channel_at_most_s + CHECKPOINT_REQUESTS * d.sftp_s


@pytest.mark.parametrize("command_s", [60.0, 300.0])
def test_a_settles_row_is_its_own_past_its_takeover_and_the_takeovers_submit(
        command_s: float) -> None:
    d = RemoteDeadlines(command_s=command_s)
    assert settle_lead_s(d) == settle_takeover_s(d) + submit_in_flight_s(d)


@pytest.mark.parametrize("command_s", [150.0, 300.0, 900.0])
def test_a_longer_command_timeout_gives_a_longer_takeover_past_every_command(
        command_s: float) -> None:
    """Each remote command of the path at its full deadline (a new connection and channel,
    then the run) still ends before another run may take the path over."""
    slow = RemoteDeadlines(command_s=command_s)
    assert submit_in_flight_s(slow) > submit_in_flight_s(RemoteDeadlines()) > 600.0
    assert settle_takeover_s(slow) > settle_takeover_s(RemoteDeadlines())
    assert submit_in_flight_s(slow) > SUBMIT_COMMANDS * (6 * slow.connect_s + command_s)
    assert settle_takeover_s(slow) > RESUME_COMMANDS * (6 * slow.connect_s + command_s)


def test_slower_sftp_and_connections_lengthen_the_settles_takeover() -> None:
    base = settle_takeover_s(RemoteDeadlines())
    assert settle_takeover_s(RemoteDeadlines(sftp_s=60.0)) > base
    assert settle_takeover_s(RemoteDeadlines(connect_s=30.0)) > base
    assert submit_in_flight_s(RemoteDeadlines(connect_s=30.0)) > 1239.0


def test_a_cancels_scancel_is_taken_over_sooner_than_the_resume_after_it() -> None:
    """The click's job read and scancel at their full deadlines end before its `cancelling`
    step may be taken over (584 s with the defaults), well before the rest of a cancel and
    resume's (the settle's) takeover."""
    for command_s in (60.0, 300.0):
        d = RemoteDeadlines(command_s=command_s)
        assert CANCEL_COMMANDS * d.command_at_most_s < cancel_takeover_s(d) \
            < settle_takeover_s(d)
    assert cancel_takeover_s(RemoteDeadlines()) == 584.0


def test_the_settles_takeover_allows_the_lookups_channel_to_open_at_its_worst() -> None:
    """The resume's checkpoint lookup may first open its SFTP channel (a new connection and
    session, the subsystem's start, the version exchange), no request of its 80: the settle's
    takeover allows that beside the 80 requests, at default and slower deadlines alike."""
    from dataclasses import replace

    from bot.core.takeover import LOOKUP_CHANNELS

    for d in (RemoteDeadlines(), RemoteDeadlines(connect_s=30.0, sftp_s=60.0)):
        assert d.sftp_channel_at_most_s == \
            d.session_at_most_s + 2 * d.sftp_s + END_GRACE_S + d.lock_wait_s
        without_lookup = settle_takeover_s(replace(d, sftp_s=0.0)) - d.session_at_most_s \
            - END_GRACE_S - 2 * d.lock_wait_s
        assert settle_takeover_s(d) - without_lookup == d.lock_wait_s \
            + LOOKUP_CHANNELS * d.sftp_channel_at_most_s + CHECKPOINT_REQUESTS * d.sftp_s
    assert LOOKUP_CHANNELS == 1


def test_a_cancels_takeover_waits_for_its_clicks_own_commands_when_longer() -> None:
    """The click kept its commands' bound with its `cancelling` step (a jump host: 200 s a
    command): its takeover counts it, not the current config's 131 s; a shorter kept bound
    never shortens it; a step marked before bounds were kept counts the config's, as before."""
    d = RemoteDeadlines()
    assert cancel_takeover_s(d, StepBounds(200.0, 0.0, None)) == \
        CANCEL_COMMANDS * 200.0 + 60.0 \
        == 860.0 > cancel_takeover_s(d) == cancel_takeover_s(d, None) == 584.0
    assert cancel_takeover_s(d, StepBounds(10.0, 0.0, None)) == 584.0


def test_a_settles_takeover_waits_for_its_markers_lookup_and_commands_when_longer() -> None:
    """A settle's marker kept its checkpoint lookup's bound (a 60 s SFTP timeout) and its
    commands' with its step: the takeover counts each when longer than the current config's
    (and the commands at the resubmit row's bound when that is longer still); a step marked
    before bounds were kept counts the config's lookup, as before."""
    d = RemoteDeadlines()
    slow = RemoteDeadlines(sftp_s=60.0)
    assert d.lookup_at_most_s == 1311.0 and slow.lookup_at_most_s == 201.0 + 80 * 60.0
    looked = StepBounds(d.command_at_most_s, slow.lookup_at_most_s, None)
    assert settle_takeover_s(d, marked=looked) == 5840.0 - 1311.0 + 5001.0 == 9530.0
    assert settle_takeover_s(d, marked=StepBounds(0.0, 0.0, None)) == settle_takeover_s(d) \
        == 5840.0
    jumped = StepBounds(200.0, 0.0, None)
    assert settle_takeover_s(d, marked=jumped) == settle_takeover_s(d, 200.0)
    assert settle_takeover_s(d, 300.0, jumped) == settle_takeover_s(d, 300.0)
    assert settle_takeover_s(d, 150.0, jumped) == settle_takeover_s(d, 200.0)
    assert settle_lead_s(d, None, looked) == 9530.0 + submit_in_flight_s(d)



def test_a_settles_takeover_counts_its_slack_calls_at_the_markers_post_bound_when_longer(
        ) -> None:
    """A settle's marker kept one Slack post's worst case with its step (630 s: a 600 s post
    deadline and one request): a takeover at a 300 s deadline counts each of its SLACK_CALLS
    at 630 s; a shorter kept one (75 s) or none kept counts the current config's."""
    d = RemoteDeadlines()
    kept = StepBounds(d.command_at_most_s, d.lookup_at_most_s, 630.0)
    assert takeover.settle_takeover_s(d, marked=kept, post_deadline_s=300.0) == \
        takeover.settle_takeover_s(d, post_deadline_s=600.0) == 5840.0 + 6 * 300.0
    for shorter in (75.0, None):
        marked = StepBounds(d.command_at_most_s, d.lookup_at_most_s, shorter)
        assert settle_takeover_s(d, marked=marked) == settle_takeover_s(d) == 5840.0
    assert settle_lead_s(d, None, kept) == 5840.0 + 1800.0 + submit_in_flight_s(d)

def test_the_longest_kept_bounds_are_each_bounds_longest() -> None:
    assert longest_bounds() is None and longest_bounds(None, None) is None
    assert longest_bounds(StepBounds(200.0, 10.0, None), None, StepBounds(120.0, 40.0, 690.0),
                          StepBounds(10.0, 10.0, 75.0)) == StepBounds(200.0, 40.0, 690.0)
    assert longest_bounds(StepBounds(200.0, 10.0, None)) == StepBounds(200.0, 10.0, None)
    assert own_bounds(RemoteDeadlines(), RemoteDeadlines(jump=True), POST_DEADLINE_S) == \
        StepBounds(231.0, RemoteDeadlines(jump=True).lookup_at_most_s, 330.0)


@pytest.mark.parametrize("runner", [
    RemoteDeadlines(), RemoteDeadlines(connect_s=30.0, command_s=300.0, jump=True),
    RemoteDeadlines(connect_s=1.0, command_s=8.0), RemoteDeadlines(connect_s=0.0, command_s=1.0)])
@pytest.mark.parametrize("configured", [RemoteDeadlines(), RemoteDeadlines(command_s=5.0)])
def test_a_scancel_ends_on_the_login_node_before_its_cancels_takeover(
        runner: RemoteDeadlines, configured: RemoteDeadlines) -> None:
    """The login node's bound on a cancel's scancel (`timeout -k KILL TERM`) is the run its
    runner's deadlines give it, the one the takeover counts: the scancel, started at the
    latest after the click's other commands and its own session at their worst, has ended
    (SIGKILL included) a margin before the takeover, counted with the click's kept bounds
    (which include that runner's). Before, nothing bounded it there: a scancel whose channel
    dropped could land after the takeover and the settle's "not cancelled"."""
    term_s, kill_s = scancel_limits(runner)
    assert term_s > 0 and 0 < kill_s <= SCANCEL_KILL_AFTER_S
    assert term_s + kill_s == runner.command_s  # the same run its runner waits for
    kept = own_bounds(configured, runner, POST_DEADLINE_S)
    started_by = (CANCEL_COMMANDS - 1) * kept.command_at_most_s + runner.session_at_most_s
    assert started_by + term_s + kill_s <= cancel_takeover_s(configured, kept) - TAKEOVER_MARGIN_S


def test_the_default_scancel_is_stopped_after_55_s_and_killed_5_s_later() -> None:
    assert scancel_limits(RemoteDeadlines()) == (55.0, 5.0)
    assert scancel_limits(RemoteDeadlines(command_s=8.0)) == (6.0, 2.0)  # a quarter at most
    with pytest.raises(ValueError, match="positive"):
        scancel_limits(RemoteDeadlines(command_s=0.0))  # `timeout 0` would be no bound
