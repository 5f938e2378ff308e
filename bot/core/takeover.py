"""How old a step trainbot carries out on a cluster must be before another run takes it over.

A step a process may die in half way (a person's submit from its sbatch on, an approved
cancel's scancel, the settle of a cancel whose end was not seen, the rest of a cancel and
resume) is leased by the time it was marked: another run takes it up only once that time is
older than all the step can still be waiting for, each of its remote calls at its full
deadline, plus a margin. The deadlines are
the cluster's configured ones (`RemoteDeadlines`, from bot.config's ClusterConfig), so a
cluster given longer commands gets longer leases: a live step is never taken over while its
own deadlines have not passed. The run that marks a step keeps its own bounds with it
(`StepBounds`: its remote commands' and its checkpoint lookup's worst cases, from the
deadlines it resolved and keeps using, and one Slack post's, from its post deadline), and a
takeover waits for the longer of those and the
current config's, so a jump host or a longer timeout taken out of the config (or a replica
started without it) never lets another run take up a step its marker may still be in. Pure
arithmetic over the counts below.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.checkpoints import CHECKPOINT_REQUESTS
from bot.core.slack_bounds import bot_post_at_most_s

SESSION_ATTEMPTS = 2
"""Attempts at a session channel for one command (bot.cluster.ssh.SSHRunner._open_session):
the first, and one more on a new connection when the first found the connection dead."""

END_GRACE_S = 1.0
"""How long after the last deadline of its commands a retired connection is closed
(bot.cluster.in_flight): time for a command at its deadline to end by itself (its signal and
its channel's close sent), which a close at the deadline itself would race, cutting it as a
lost connection. So a remote call whose send cannot leave (the connection stuck) ends this
long after its deadline, when its connection's close cuts the send: each call's worst case
below counts it."""


@dataclass(frozen=True)
class RemoteDeadlines:
    """A cluster's deadlines, in seconds: one SSH connection to one host and one channel's
    opening there (`connect_s`, each), one remote command's run (`command_s`), one SFTP
    request's answer (`sftp_s`); `jump`: the connection goes through a jump host (the
    cluster's proxy_jump, or its ssh_config Host entry's ProxyJump or ProxyCommand)."""

    connect_s: float = 10.0
    command_s: float = 60.0
    sftp_s: float = 15.0
    jump: bool = False

    @property
    def connect_at_most_s(self) -> float:
        """Connecting to the login node at its worst (bot.cluster.ssh.SSHRunner._open_client).
        One host's connection is ended at `connect_s` whatever phase it is in
        (bot.cluster.dial.connect_within): its name's DNS lookup, the TCP connect, the banner
        (paramiko's banner_timeout) and the key exchange, then authentication with every key
        tried (paramiko's auth_timeout is per key). Through a jump host: the jump host's
        connection (`connect_s`), the tunnel's opening there (`connect_s`), then the login
        node's connection over it (`connect_s`; the jump host looks its name up)."""
        return (3 if self.jump else 1) * self.connect_s

    @property
    def lock_wait_s(self) -> float:
        """One wait for an SSH runner's lock at its longest (bot.cluster.ssh.SSHRunner
        ._locked, and _retire's): one connection's time (connect_at_most_s), which each
        holder keeps it no longer than, its connecting bounded (the runner's close, waiting
        as long, closes the connections without it)."""
        return self.connect_at_most_s

    @property
    def session_at_most_s(self) -> float:
        """A new session channel's attempts at their worst (bot.cluster.ssh.SSHRunner
        ._open_session), for each of its SESSION_ATTEMPTS: the wait for the connection
        another thread is making (the runner's lock: lock_wait_s), this thread's own
        connection (connect_at_most_s), then the channel's opening (`connect_s`). A channel
        not opened in time then retires its connection under the runner's lock: the one
        lock wait of a failure each remote call counts (command_at_most_s,
        sftp_channel_at_most_s)."""
        return SESSION_ATTEMPTS * (self.lock_wait_s + self.connect_at_most_s + self.connect_s)

    @property
    def command_at_most_s(self) -> float:
        """One remote command at its worst: its session channel (session_at_most_s), then
        its run, from the exec request to its exit status, within `command_s` in all
        (bot.cluster.ssh.SSHRunner.run), END_GRACE_S more when a send of it (its stdin,
        its signal, its channel's close) cannot leave: it ends when its connection, retired,
        is closed; and one wait for the runner's lock (lock_wait_s) as it fails: its
        connection retired there when no channel opened in time (SSHRunner._retire), or
        checked there when its request was not sent or its channel closed under it
        (SSHRunner._forget_if_dead). Each ends the command: one at most."""
        return self.session_at_most_s + self.command_s + END_GRACE_S + self.lock_wait_s

    @property
    def sftp_channel_at_most_s(self) -> float:
        """Opening an SFTP channel at its worst: a session channel (session_at_most_s, as a
        command's), then the sftp subsystem's start and the SFTP version exchange, each
        within the SFTP deadline (bot.cluster.ssh.SSHRunner._open_sftp_client), END_GRACE_S
        more once: a send of either that cannot leave ends when its connection, retired, is
        closed, which ends the opening there; and one wait for the runner's lock
        (lock_wait_s) as it fails, as a command's."""
        return self.session_at_most_s + 2 * self.sftp_s + END_GRACE_S + self.lock_wait_s

    @property
    def lookup_at_most_s(self) -> float:
        """One checkpoint lookup at its worst: the cluster's SFTP, handed out under the
        runner's lock (bot.cluster.ssh.SSHRunner.sftp: lock_wait_s), the opening of its
        LOOKUP_CHANNELS SFTP channel (sftp_channel_at_most_s), then its CHECKPOINT_REQUESTS
        SFTP requests, the bound the lookup stops at (bot.core.checkpoints), each at `sftp_s`
        (counted as the client sends it: a listing's opendir, readdirs and close, a file's
        reads); a send among them that cannot leave ends the lookup (its connection closed,
        END_GRACE_S past its deadline), the one END_GRACE_S its channel's opening counts."""
        return (self.lock_wait_s + LOOKUP_CHANNELS * self.sftp_channel_at_most_s
                + CHECKPOINT_REQUESTS * self.sftp_s)


@dataclass(frozen=True)
class StepBounds:
    """What the run that marked (or took over) a step counted its remote calls and Slack
    posts at, kept with the step (bot.store's prompt_steps): one remote command's worst case
    (`command_at_most_s`) and one checkpoint lookup's (`lookup_at_most_s`), from the
    deadlines it carries the step out under (`own_bounds`), and one Slack post's
    (`post_at_most_s`: its post deadline, the config's slack.post_deadline_s it runs with,
    then one request, bot.core.slack_bounds.bot_post_at_most_s; None for a step marked
    before it was kept)."""

    command_at_most_s: float
    lookup_at_most_s: float
    post_at_most_s: float | None


def own_bounds(configured: RemoteDeadlines, runner: RemoteDeadlines | None,
               post_deadline_s: float) -> StepBounds:
    """The bounds a run keeps with a step it marks: each remote call's the longer of the
    cluster's configured deadlines' (`configured`) and its SSH runner's own (`runner`: the
    jump host and timeouts it resolved when it was made and keeps using; None when not
    known); one Slack post's from the post deadline its poster runs with
    (`post_deadline_s`)."""
    post_s = bot_post_at_most_s(post_deadline_s)
    if runner is None:
        return StepBounds(configured.command_at_most_s, configured.lookup_at_most_s, post_s)
    return StepBounds(max(configured.command_at_most_s, runner.command_at_most_s),
                      max(configured.lookup_at_most_s, runner.lookup_at_most_s), post_s)


def longest_bounds(*marked: StepBounds | None) -> StepBounds | None:
    """The longest of each bound among `marked` (the steps' kept bounds; None: a step not
    marked, or marked before its bounds were kept); None when none is known. A post bound
    none of them kept is None."""
    known = [m for m in marked if m is not None]
    if not known:
        return None
    posts = [m.post_at_most_s for m in known if m.post_at_most_s is not None]
    return StepBounds(max(m.command_at_most_s for m in known),
                      max(m.lookup_at_most_s for m in known), max(posts, default=None))


SLURM_CHECKS = 2
"""The Slurm client's release and JSON checks, made by its first record read (once per
process, possibly inside the step)."""

SUBMIT_COMMANDS = 1 + 2 + 2 + 2 + SLURM_CHECKS
"""A person's submit from its sbatch on (bot.services.submit.submit_recipe, from its
`submits_in_flight` row to its job recorded): the sbatch or the site's submit command (1);
its end not seen, the lookup by name: squeue and sacct by name (2), the records of what they
found, squeue and sacct by id (2); a site wrapper's job read for the overrides it got,
squeue and sacct (2); the Slurm client's checks (SLURM_CHECKS)."""

CANCEL_COMMANDS = 1 + SLURM_CHECKS + 1
"""An approved cancel's click up to its scancel's end (bot.services.approved_choices._cancel,
from the click, when its `cancelling` or `cancelling_to_resume` step is marked, to the next step
or the approval's end): the job read that checks it still runs (1), the Slurm client's checks
(SLURM_CHECKS), the scancel (1)."""

RESUME_COMMANDS = 3 + 4 + SUBMIT_COMMANDS + 3
"""The rest of a cancel and resume after its scancel
(bot.services.approved_choices._resume_cancelled, from the settle's `cancel_settled` or the
click's `cancel_resuming` step to the approval's end): the release of each competitor held for
the cancelled job (at most 3, the hold questions asked per job: 3); taken over, the look for the
job the dead run's resubmit left, squeue and sacct by name and by id (4); the resubmit
(SUBMIT_COMMANDS); its hold question, the pending competitors and the resubmitted job's record,
squeue and sacct (3)."""


LOOKUP_CHANNELS = 1
"""SFTP channels one checkpoint lookup opens at most: all its requests go on one channel, the
pool's lookup channel (bot.cluster.checkpoints.probe_checkpoints), opened when none is kept.
Opening it is none of the lookup's CHECKPOINT_REQUESTS (no SFTP request: a session, the
subsystem, the version exchange, with deadlines of their own), so it is counted here beside
them."""


SLACK_CALLS = 6
"""Slack calls on the resume's way (the resubmit's announcement and its root's rewrite, up to
three hold questions, the prompt's rewrite), each at the poster's worst case
(bot.core.slack_bounds.bot_post_at_most_s: its deadline, which its attempts, the client's
retries and 429 waits stop at, then one request), as post_takeover_s counts one."""

TAKEOVER_MARGIN_S = 60.0
"""What the store's and the process's own work, and the clocks of two replicas, may add."""



def sent_command_at_most_s(deadlines: RemoteDeadlines, sent: float | None) -> float:
    """One remote command's worst case for a submit in flight: the longer of the one its
    sender counted when it sent the sbatch (`sent`, kept on its row: the jump host and the
    timeouts it had then) and the current config's (`deadlines`), so a config changed since
    (a jump host removed, a shorter timeout, a replica restarted with either) never makes its
    lookup or takeover early while the sender, which kept its own, may still be sending.
    `sent` None (a row written before it was kept): the current config's, as before."""
    if sent is None:
        return deadlines.command_at_most_s
    return max(sent, deadlines.command_at_most_s)


def submit_in_flight_s(deadlines: RemoteDeadlines, sent: float | None = None) -> float:
    """How long a person's submit may stay in flight before bot.services.runs
    .recover_submits_in_flight takes it for one the bot died in: SUBMIT_COMMANDS remote
    commands at their worst (each at sent_command_at_most_s: its sender's bound `sent`, when
    kept, if longer than the current one), plus the margin (1239 s, over 20 minutes, with the
    default deadlines: 10 s to connect, 60 s a command, no jump host; 2139 s, over 35 minutes,
    through a jump host)."""
    return SUBMIT_COMMANDS * sent_command_at_most_s(deadlines, sent) + TAKEOVER_MARGIN_S


def cancel_takeover_s(deadlines: RemoteDeadlines, marked: StepBounds | None = None) -> float:
    """How old an approved cancel's `cancelling` or `cancelling_to_resume` step with no step
    after it must be before bot.services.cancel_settle takes its scancel for one whose end was
    not seen (its click's process died): CANCEL_COMMANDS remote commands at their worst, plus
    the margin (584 s with the default deadlines). Each command at the longer of the click's
    own bound (`marked`: kept with the step) and the current config's, so a click that went
    through a jump host since taken out of the config (or ran with a longer timeout) is not
    taken over while it may still be in its scancel; `marked` None (a step marked before its
    bounds were kept): the current config's, as before."""
    sent = None if marked is None else marked.command_at_most_s
    return CANCEL_COMMANDS * sent_command_at_most_s(deadlines, sent) + TAKEOVER_MARGIN_S


SCANCEL_KILL_AFTER_S = 5.0
"""How long the login node's `timeout` waits, once it has sent SIGTERM to a scancel that
outlived its run, before it sends SIGKILL (`scancel_limits`): at most a quarter of the run."""


def scancel_limits(runner: RemoteDeadlines) -> tuple[float, float]:
    """(term_s, kill_s) of the `timeout -k KILL TERM scancel …` an approved cancel's scancel
    runs under on the login node (bot.core.slurm.scancel, bot.cluster.slurm.SlurmClient.cancel):
    SIGTERM after `term_s`, SIGKILL `kill_s` later, so the scancel ends there within
    `runner.command_s` of its start, the run cancel_takeover_s counts it at (its last
    command's command_at_most_s: the session, then the run) with the deadlines of the runner
    that sends it (`runner`, which the click's kept bounds include: `own_bounds`). Without it
    a scancel whose channel dropped could still reach slurmctld after the takeover (and after
    a settle said "not cancelled"); with it, it has ended by `scancel_over_at`, the trip's
    latency within TAKEOVER_MARGIN_S. The same number bounds the runner's own wait for it."""
    if runner.command_s <= 0:
        raise ValueError(f"a scancel's run bound must be positive, not {runner.command_s:g} s")
    kill_s = min(SCANCEL_KILL_AFTER_S, runner.command_s / 4)
    return runner.command_s - kill_s, kill_s


def settle_takeover_s(deadlines: RemoteDeadlines, sent: float | None = None,
                      marked: StepBounds | None = None, *,
                      post_deadline_s: float) -> float:
    """How old a cancel's `cancel_settled` or `cancel_resuming` step whose approval has no
    outcome yet must be before another run takes it over (bot.services.cancel_settle):
    RESUME_COMMANDS remote commands at their worst, one checkpoint lookup at its worst
    (RemoteDeadlines.lookup_at_most_s), SLACK_CALLS Slack calls each at the poster's worst
    case (its deadline `post_deadline_s`, the config's slack.post_deadline_s, then one
    request: bot.core.slack_bounds.bot_post_at_most_s), plus the margin (5840 s with the
    default deadlines and post deadline). The commands are counted at the longest of the
    current config's bound, the one its resubmit's sender kept on its row in flight (`sent`,
    when one is there) and the one the step's marker kept with the step (`marked`); the
    lookup and each Slack call at the longer of the current config's and the marker's, so a
    replica configured with a shorter post deadline never takes over a step its marker may
    still be posting in. `marked` None (a step marked before its bounds were kept), or its
    post bound None (marked before that was kept): the current config's, as before."""
    looked = deadlines.lookup_at_most_s
    posted = bot_post_at_most_s(post_deadline_s)
    if marked is not None:
        sent = marked.command_at_most_s if sent is None else max(sent, marked.command_at_most_s)
        looked = max(looked, marked.lookup_at_most_s)
        if marked.post_at_most_s is not None:
            posted = max(posted, marked.post_at_most_s)
    return (RESUME_COMMANDS * sent_command_at_most_s(deadlines, sent) + looked
            + SLACK_CALLS * posted + TAKEOVER_MARGIN_S)


def settle_lead_s(deadlines: RemoteDeadlines, sent: float | None = None,
                  marked: StepBounds | None = None, *,
                  post_deadline_s: float) -> float:
    """How long a cancel and resume's resubmit in flight whose approval is still approved is
    left to its settle (bot.services.cancel_settle) before bot.services.runs
    .recover_submits_in_flight looks it up as a person's: the settle's takeover time (its
    step, marked before the row, is that old by then, so a live settle has ended and a dead
    one's takeover was due) plus the submit's own in-flight window (the takeover's lookup and
    resubmit); 7079 s with the default deadlines and post deadline. A settle that cannot
    finish (Slurm no longer knows the cancelled job) then never holds the run's submits for
    ever. `sent`: the resubmit's sender's command bound kept on its row
    (submit_in_flight_s); `marked`: the bounds its settle's steps' markers kept
    (settle_takeover_s); `post_deadline_s`: the config's slack.post_deadline_s
    (settle_takeover_s)."""
    return settle_takeover_s(deadlines, sent, marked, post_deadline_s=post_deadline_s) \
        + submit_in_flight_s(deadlines, sent)


def in_flight_settled_at(deadlines: RemoteDeadlines, sent_at: float, sent: float | None = None,
                         *, settle_leads: bool = False, marked: StepBounds | None = None,
                         post_deadline_s: float) -> float:
    """When bot.services.runs.recover_submits_in_flight settles a submit kept in flight sent
    at `sent_at` (looks its job up, records it or forgets the row), at the earliest: once its
    own window has passed (submit_in_flight_s, at `sent`, its sender's command bound kept on
    its row); for a cancel and resume's resubmit whose approval is still approved
    (`settle_leads`), once its settle's lead has (settle_lead_s, at `marked`, the bounds its
    settle's steps' markers kept): its click, or the settle that takes the click over, is
    left to record it until then. The one answer the refusals and replies that say when a
    row is settled give, and the recovery waits for. `deadlines`: the row's cluster's;
    `post_deadline_s`: the config's slack.post_deadline_s."""
    if settle_leads:
        return sent_at + settle_lead_s(deadlines, sent, marked, post_deadline_s=post_deadline_s)
    return sent_at + submit_in_flight_s(deadlines, sent)


HOLD_STEP_COMMANDS = 1 + SLURM_CHECKS
"""A competitor's hold or release step (bot.services.competitors: from its `holding` or
`releasing` step to its outcome recorded): the `scontrol hold` or `scontrol release` (1), the
Slurm client's checks (SLURM_CHECKS)."""


def hold_step_takeover_s(deadlines: RemoteDeadlines, marked: StepBounds | None = None, *,
                         post_deadline_s: float) -> float:
    """How old a competitor's `holding` or `releasing` step with no outcome after it must be
    before another run takes it for one whose process died (bot.services.competitors):
    HOLD_STEP_COMMANDS remote commands and one Slack post (the release's note in the thread),
    each at its worst, plus the margin (783 s with the default deadlines and post deadline).
    Each at the longer of the marker's bound (`marked`, kept with the step) and the current
    config's (the post at bot.core.slack_bounds.bot_post_at_most_s of `post_deadline_s`, the
    config's slack.post_deadline_s), so a live hold or release is never taken over; `marked`
    None (not kept): the current config's. A release whose `scontrol release` failed waits as
    long before it is tried again."""
    sent = None if marked is None else marked.command_at_most_s
    posted = bot_post_at_most_s(post_deadline_s)
    if marked is not None and marked.post_at_most_s is not None:
        posted = max(posted, marked.post_at_most_s)
    return HOLD_STEP_COMMANDS * sent_command_at_most_s(deadlines, sent) + posted \
        + TAKEOVER_MARGIN_S


def post_takeover_s(post_deadline_s: float, *, kept: float | None) -> float:
    """How old a record whose keyed Slack post its process makes right after it (a hold
    prompt's question: bot.services.competitors) must be, that post still not made, before
    another run makes it: the poster's worst case, its deadline (`post_deadline_s`, the
    config's slack.post_deadline_s) that its attempts, the client's retries and 429 waits
    stop at, then one request (bot.core.slack_bounds.bot_post_at_most_s, as the poster
    counts its own), plus the margin (390 s with the default deadline of 300 s). The post's
    worst case is the longer of that and the one the record's process kept with it (`kept`;
    None: none kept), so a replica configured with a shorter deadline never makes a post
    the record's process may still be making."""
    posted = bot_post_at_most_s(post_deadline_s)
    return (posted if kept is None else max(posted, kept)) + TAKEOVER_MARGIN_S
