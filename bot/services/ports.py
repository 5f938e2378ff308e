"""The ports: what the services need from the world outside, as Protocols, in one place.

Adapters implement them: `Slurm` (bot.cluster.slurm.SlurmClient), `Runner` and `SFTP`
(bot.cluster.ssh.SSHRunner and its paramiko SFTP client), `TailReader`
(bot.cluster.tail.ShellTailReader), `ClusterSessions`
(bot.cluster.sessions), `ThreadWriter` (bot.slack.poster.SlackPoster,
bot.slack.console.ConsoleSink), `Renderer` (bot.slack.render.TemplateRenderer) and
`ChartMaker` (bot.charts.series.SeriesCharts). `BotContext` carries them into every service;
bot.app builds it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bot.config import Config
from bot.core.backoff import Backoffs
from bot.core.catalogue import Catalogue
from bot.core.holders import Machine, PidNow
from bot.services.logonce import OnceLog
from bot.services.pyspy_placements import PySpyPlacements
from bot.store import Store

if TYPE_CHECKING:
    from bot.core.metrics import MetricSeries
    from bot.core.models import AttemptTrace, Diagnosis
    from bot.core.sampler_series import SamplerSeries
    from bot.core.slurm.records import JobRecord
    from bot.core.slurm.sbatch import SubmitSpec
    from bot.core.slurm.sstat import StepMemory
    from bot.core.tail import ReadBatch, ReadRequest
    from bot.core.takeover import RemoteDeadlines

Blocks = list[dict[str, Any]]


# ------------------------------------------------------------------------------ the cluster


class CommandOutput(Protocol):
    """What a finished remote command produced."""

    @property
    def exit_code(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...


class SFTPCalls(Protocol):
    """The SFTP calls trainbot makes (paramiko's SFTPClient has them)."""

    def stat(self, path: str) -> Any: ...

    def open(self, filename: str, mode: str = "r", bufsize: int = -1) -> Any: ...

    def listdir_attr(self, path: str = ".") -> list[Any]: ...

    def normalize(self, path: str) -> str: ...


class LookupLease(Protocol):
    """A hold on a cluster's lookup channel (`SFTP.lookup_channel()`): `sftp` while it lasts;
    `abandon()`, from any thread, closes the channel (its request in flight and any later one
    raise bot.cluster.errors.LeaseAbandoned, and the next lease gets a fresh channel); after
    the lease has ended it does nothing."""

    @property
    def sftp(self) -> SFTPCalls: ...

    def abandon(self) -> None: ...


@runtime_checkable
class SFTP(SFTPCalls, Protocol):
    """A cluster's SFTP (bot.cluster.sftp.SFTPPool: any number of threads), and its lookup
    channel for work that may be abandoned half-way (`with sftp.lookup_channel() as lease`:
    outside the shared channels, kept for the next lookup, replaced when one is abandoned).
    Runtime-checkable: a checkpoint lookup given one takes its lookup channel, given plain
    SFTPCalls (one channel already) runs on it (bot.cluster.checkpoints._one_channel)."""

    def lookup_channel(self) -> AbstractContextManager[LookupLease]: ...


class TailReader(Protocol):
    """Reads the new bytes of many files in one request to the login node
    (bot.cluster.tail.ShellTailReader): one answer per request, in order, and what it cost.
    A hung path answers FAILED; a lost connection, or the read's channel closed before its
    end, raises bot.cluster.errors.ClusterUnavailable (ReadCutOff); an answer that cannot
    be read, ClusterError. A reader whose answers are bounded (an output cap, a slow link)
    also has `batch_bytes(files) -> int | None`: the most a batch of that many files may ask
    for, which the files share (bot.core.tail.read_tails); without it, no bound."""

    def read(self, requests: Sequence[ReadRequest]) -> ReadBatch: ...


@runtime_checkable
class Runner(Protocol):
    """One cluster's login node: run an argv (never a shell string), open SFTP."""

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> CommandOutput: ...

    def sftp(self) -> SFTP: ...

    def deadlines(self) -> RemoteDeadlines:
        """Its own deadlines as bot.core.takeover counts them: the timeouts and the jump host
        (from its settings or ssh_config Host entry) it resolved when it was made and keeps
        using, which may differ from the current config's. May raise when its endpoint cannot
        be resolved (an unreadable ssh_config)."""
        ...

    def close(self) -> None: ...


class SlurmJobs(Protocol):
    """What the watcher asks Slurm each tick: the records of the watched jobs (one squeue and
    one sacct). A client that also has `memory(ids)` (one sstat) is asked for the RSS of
    running jobs."""

    def jobs(self, ids: Iterable[int]) -> dict[int, JobRecord]: ...


class Slurm(SlurmJobs, Protocol):
    """The Slurm client's methods the services call. Failures raise bot.cluster.errors
    (ClusterUnavailable when the controller does not answer, never an empty answer)."""

    @property
    def runner(self) -> Runner: ...

    def job(self, job_id: int) -> JobRecord | None: ...

    def array_tasks(self, array_job_id: int) -> dict[int, JobRecord]: ...

    def memory(self, job_ids: Iterable[int]) -> dict[int, StepMemory]: ...

    def pending_competitors(self, *, user: str | None, account: str | None,
                            partition: str | None, qos: str | None,
                            exclude: Iterable[int] = ()) -> list[JobRecord]: ...

    def submit(self, spec: SubmitSpec, *, script: str | None = None) -> int: ...

    def hold(self, job_id: int) -> None: ...

    def release(self, job_id: int) -> None: ...

    def cancel(self, job_id: int) -> None: ...


class LeaseLost(Exception):
    """A scheduled job's side effect refused: this replica no longer holds the job's lease
    (another replica took it over, or this one is stopping). Raised by the fenced ports
    (bot.services.fencing) before anything is done; the run ends there (never caught as a
    failed post or command: what it would have done is now another replica's to do)."""


class LocalProcesses(Protocol):
    """This machine's processes, to prove a lease's holder dead (bot.core.holders;
    bot.ops.procfs.ProcFS reads them from /proc)."""

    def machine(self) -> Machine | None: ...

    def own_start(self) -> int | None: ...

    def pid_now(self, pid: int) -> PidNow: ...


class Abandon:
    """Handed to work its caller may stop waiting for (the watcher's checkpoint lookup, as
    `abandon=`): the caller calls `abandon()` when it gives the work up (its deadline passed);
    what the work registered with `on_abandon` (abandoning its lease on the lookup channel,
    which ends its request at once) runs then, or at once when registered after that. Safe
    across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._actions: list[Callable[[], object]] = []

    def on_abandon(self, action: Callable[[], object]) -> None:
        with self._lock:
            if not self._abandoned:
                self._actions.append(action)
                return
        action()

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            actions, self._actions = self._actions, []
        for action in actions:
            try:
                action()
            except Exception:  # noqa: BLE001 - giving up never fails the tick
                logging.getLogger(__name__).debug("an action of an abandoned lookup failed",
                                                  exc_info=True)


class ClusterSessions(Protocol):
    """Per-cluster adapters by cluster name, opened on first use; `close()` closes them (and
    bot.cluster.sessions' opens none after it: ClusterUnavailable)."""

    def slurm(self, cluster: str) -> Slurm: ...

    def runner(self, cluster: str) -> Runner: ...

    def sftp(self, cluster: str) -> SFTP: ...

    def tail_reader(self, cluster: str) -> TailReader: ...

    def close(self) -> None: ...


# ------------------------------------------------------------------------------ the threads


def root_key(chain_id: int) -> str:
    """The key under which a thread writer records a chain's root message in the store."""
    return f"chain:{chain_id}:root"


class PostError(Exception):
    """The chat refused a post; the message says what and how to fix it. A service logs it
    and goes on: the post is retried by its key."""


class LookupRefused(PostError):
    """The chat refused to look a post up (the bot is out of its channel, the channel is gone
    or archived, a history scope is missing): asking again will not tell, and the post may
    still be there."""


class PostRefused(PostError):
    """The chat answered no to the post itself (the bot out of its channel, the channel gone
    or archived, a scope missing): nothing was sent, and sending it again at once will not
    change that. A transient failure (a 5xx, a rate limit, a connection lost) is a plain
    PostError."""


class MessageRefused(PostRefused):
    """The chat refused the message itself (its size, its blocks: msg_too_long,
    invalid_blocks …): nothing was sent, and the same message will never be taken."""


class PartlyPosted(PostError):
    """A message for several threads (a cluster's notice) went to some of them and the chat
    refused it in others: it has been said, and is to be posted again for the threads that
    have not got it (the others get nothing twice: each post's key)."""


class PostLogged(PostError):
    """A message (for one thread or several) that some did not get, each thread's failure
    logged where it came (bot.services.threads.say_note: a failure series one warning,
    naming the run, the channel, the thread and the chat's error): its publisher logs it at
    debug, so a refused try is not warned of twice."""


class PartlyLogged(PartlyPosted, PostLogged):
    """Said in some of its threads; the failures in the others were logged (PostLogged)."""


class PostDeferred(PostLogged):
    """Not tried this time: the chat refused it lately in a way that asking again at once
    does not change (its lookup refused: the bot out of the channel, a history scope
    missing; or the post itself: PostRefused), and it is tried again later, less and less
    often (bot.core.backoff). The refusal was logged when it came; this one is not worth a
    warning."""


class PartlyDeferred(PartlyLogged, PostDeferred):
    """Said in some of its threads; those left were not tried this time (PostDeferred)."""


class PostGivenUp(PostLogged):
    """Never to be posted: the chat refused the message itself (MessageRefused), which no
    later try changes, or its run still had no thread after bot.core.backoff
    .THREADLESS_TRIES tries. Logged where it came (naming the run, the channel, the chat's
    error and the message); its publisher records it so and publishes it no more (the
    watcher's outbox: `dropped`)."""


class ThreadWriter(Protocol):
    """Where run threads go (Slack, or the terminal in `trainbot demo`). Every post has a
    key and is made once; the root is recorded under `root_key(chain_id)` in the store."""

    def post_root(self, chain_id: int, channel: str, blocks: Blocks, text: str) -> str: ...

    def update_root(self, chain_id: int, blocks: Blocks, text: str) -> None: ...

    def post_reply(self, chain_id: int, key: str, blocks: Blocks, text: str) -> str:
        """Post `key` (once) as a reply in the chain's thread; its ts. Raises PostError;
        LookupRefused when a post left under `key` (an intent: it may be there) cannot be
        looked up because the chat refused the lookup (nothing is sent meanwhile)."""
        ...

    def update_reply(self, chain_id: int, key: str, blocks: Blocks, text: str) -> None:
        """Rewrite the reply posted under `key` in place (a prompt that expired); nothing
        when it was never posted."""
        ...

    def upload_file(self, chain_id: int, key: str, data: bytes, filename: str,
                    title: str) -> str: ...

    def look_up(self, key: str) -> bool:
        """Whether the chat has the post `key`: recorded posted, or an intent of it (a post
        the bot may have sent before it stopped) found in the chat, then recorded posted.
        Raises PostError when it cannot tell (LookupRefused when the chat refused the
        lookup)."""
        ...

    def post_at_most_s(self) -> float:
        """The longest one post may take, its retries and their waits included (how long a
        try of a run's root holds its claim: bot.services.threads.open_thread)."""
        ...


class JsonPoster(Protocol):
    """Where JSON events go besides the threads (a generic webhook); raises PostError."""

    def post_json(self, payload: dict[str, Any]) -> None: ...


class HomePublisher(Protocol):
    """Slack's Home tab of each user (views.publish)."""

    def publish_home(self, user_id: str, blocks: Blocks) -> None:
        """Publish `blocks` as `user_id`'s Home tab (the viewers are kept in the store)."""
        ...


class RenderError(Exception):
    """A template is missing, broken, or produced something that is not Block Kit."""


class Renderer(Protocol):
    """Turns a message's view into Block Kit blocks and its fallback text, in a language;
    a site's template folder (`override_dir`) goes first. `max_json`: the blocks' JSON size
    to trim to (None: a message's; a view, such as the Home tab, holds more)."""

    def render_blocks(self, name: str, lang: str, view: Any, *, override_dir: str | None = None,
                      max_json: int | None = None) -> tuple[Blocks, str]: ...


class ChartMaker(Protocol):
    """Draws a job's charts (PNG bytes by file name) from its series."""

    def charts_for(self, series: MetricSeries, diagnosis: Diagnosis, *, job_id: str,
                   mem_limit_bytes: int | None,
                   earlier_attempts: Sequence[AttemptTrace] = (),
                   sampler: SamplerSeries | None = None, skew: float | None = None,
                   names: Collection[str] = ..., lang: str = "en",
                   override_dir: str | None = None) -> dict[str, bytes]:
        """`lang`: the titles' and labels' language (`override_dir`: a site's catalogue)."""
        ...

    def file_title(self, name: str, *, job_id: str, stage: str, lang: str = "en",
                   override_dir: str | None = None) -> str:
        """The title of chart `name`'s uploaded file (`stage`: "final" or "leak"), in
        `lang`."""
        ...


# What a Slack handler's work is told when a write to Slack goes out, and when Slack refused
# it (`on_sending`).
_ON_SENDING: ContextVar[tuple[Callable[[], None], Callable[[], None]] | None] = ContextVar(
    "trainbot_on_sending", default=None)


def sending() -> None:
    """Said by a thread writer or Home tab publisher (bot.slack.poster.SlackPoster) right
    before each request that may change what Slack shows (chat.postMessage, chat.update, a
    file's completion, views.publish): a write refused before it (the store closed under it,
    a lookup refused) sent nothing. Tells the hook of `on_sending` around it, if any."""
    hooks = _ON_SENDING.get()
    if hooks is not None:
        hooks[0]()


def sent_refused() -> None:
    """Said by the writer when Slack refused the request it last said `sending()` of (it
    answered no: `channel_not_found`, `msg_too_long`…), before the writer records that in
    the store: the write changed nothing Slack shows (the writer sends again only after a
    lookup found no earlier send of it). Tells the `refused` hook of `on_sending`, if any."""
    hooks = _ON_SENDING.get()
    if hooks is not None:
        hooks[1]()


def _nothing() -> None:
    return None


@contextmanager
def on_sending(hook: Callable[[], None],
               refused: Callable[[], None] = _nothing) -> Iterator[None]:
    """`hook` is called at each `sending()` of the writes made in this thread within the
    block, `refused` at each `sent_refused()` (handlers.fence.SideEffects: a Slack post is
    noted once its request goes out, and no longer once Slack refused it)."""
    token = _ON_SENDING.set((hook, refused))
    try:
        yield
    finally:
        _ON_SENDING.reset(token)


@dataclass(frozen=True)
class StoreStep:
    """A committed store write of a Slack command or click that changes what trying it again
    gets, though nothing left trainbot: `claimed` (a prompt claimed by its click), `refused`
    (a prompt dismissed or declined for good), `probe_queued` (a probe's prompt claimed: the
    `probes` job runs it), `unwatched` (an adopted run no longer watched), `in_flight` (a
    submit kept in flight, its sbatch not sent yet), `resubmit_due` (a cancel and resume's
    scancel sent: its resubmit follows, by the click or the settle that takes it over).
    `until`: when trainbot gives the claimed prompt back, or settles the row in flight (the
    resubmit to come, kept in flight or not), at the earliest (None: unknown)."""

    kind: str
    until: float | None = None


class StepNotes(Protocol):
    """Where the services note their `StoreStep`s (handlers.fence.SideEffects, so a command
    the store's close stops says what it left); nowhere else. A step the command undoes
    again (its row in flight removed, its prompt's claim released) is `undone`, so a stop
    after that does not tell the person to wait for it."""

    def noted(self, step: StoreStep) -> None: ...

    def undone(self, step: StoreStep) -> None: ...


class NoNotes:
    """Notes nothing (every context but a Slack handler's)."""

    def noted(self, step: StoreStep) -> None:
        return None

    def undone(self, step: StoreStep) -> None:
        return None


# ------------------------------------------------------------------------------ the context


@dataclass
class BotContext:
    """The adapters every service uses, and the catalogue loaded once at the composition root.
    `sink` (the thread writer) is None where nothing is posted to threads (the CLI); `charts`
    None where no chart is drawn. Handlers read `clock()` once per request and pass it down
    as `now`."""

    config: Config
    store: Store
    clusters: ClusterSessions
    renderer: Renderer
    catalogue: Catalogue
    sink: ThreadWriter | None = None
    charts: ChartMaker | None = None
    home: HomePublisher | None = None
    clock: Callable[[], float] = time.time
    # trainbot's py-spy placed on the clusters, once per cluster for the context's life (the
    # process's: the watcher's forensics and `/train stacks` share it; a fenced copy too)
    pyspy: PySpyPlacements = field(default_factory=PySpyPlacements)
    # warnings said once for the context's life (the process's; its fenced copies share it),
    # at info after that, as a recovery that keeps a row every tick says why
    once: OnceLog = field(default_factory=OnceLog)
    # when each submit in flight kept for its job, its recipe no longer configured, was last
    # looked up in Slurm, by its row's key, for the context's life (its fenced copies share
    # it): bot.services.runs looks such a row up again only once its cluster's in_flight_s
    # has passed since
    kept_looked_up: dict[str, float] = field(default_factory=dict)
    # the thread notes said outside the watcher and the settles (bot.services.threads
    # .thread_note) that the chat has not taken, by key, for the context's life (its fenced
    # copies share it): a note tried from a click and again by the `prompts` job backs off,
    # and is warned of, as one series of tries
    notes: Backoffs = field(default_factory=Backoffs)
    # the store steps a Slack handler's work committed (StoreStep; handlers.fence.SideEffects)
    steps: StepNotes = field(default_factory=NoNotes)
    # the posts and root rewrites made through bot.services.threads.post_safely and
    # refresh_root that the chat has not taken, by run (chain id) then key, for the context's
    # life (its fenced copies share it): their failed tries in a row are one failure series in
    # the log; a run's are forgotten when it ends (bot.services.watch_events.ThreadEvents)
    posts: dict[int, Backoffs] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the py-spy placements' remembered misses follow the context's clock where one was
        # given (a test's), not the process's monotonic time, unless placements were given
        if self.clock is not time.time and self.pyspy.untouched():
            self.pyspy = PySpyPlacements(monotonic=self.clock)
