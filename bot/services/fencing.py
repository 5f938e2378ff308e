"""The ports of a scheduled job fenced with its lease: each side effect made only while the
replica still holds it (`fenced_context`). The same wrapping, with a `Fence` that only notes
them, tells which side effects a Slack handler's work set going (handlers.fence.SideEffects)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from bot.core.takeover import RemoteDeadlines
from bot.services.ports import (
    SFTP,
    BotContext,
    ClusterSessions,
    CommandOutput,
    HomePublisher,
    Runner,
    Slurm,
    TailReader,
    ThreadWriter,
)

T = TypeVar("T")


class Fence(Protocol):
    """What the fenced ports go through: `acting(what)` around each side effect, `heartbeat()`
    around each read (bot.services.leases.LeaseFence: the lease a scheduled job runs under).
    A remote command is fenced with `acting` even when its caller says it only reads
    (`read=True`, `read_only`: a probe, a lookup, a py-spy dump; "reads" here includes
    trainbot's writes to its own cache directory on the cluster, the placing of its py-spy
    copy: mkdir, an SFTP write, chmod, mv, nothing of a person's jobs or files): it may run
    long, and the lease is kept through it; only a fence that notes side effects tells it
    apart (handlers.fence.SideEffects, which notes it as a read). A Slack write
    (`SLACK_WRITES`) is started once its writer says its request goes out
    (bot.services.ports.sending)."""

    def acting(self, what: str, *, read: bool = False) -> AbstractContextManager[None]: ...

    def heartbeat(self, what: str = ...) -> None: ...


# The labels of the fenced Slack writes (FencedThreadWriter, FencedHomePublisher).
SLACK_WRITES = frozenset({"Slack post (thread root)", "Slack update (thread root)", "Slack post",
                          "Slack update", "Slack file upload", "Slack Home tab publish"})


def fenced_context(ctx: BotContext, fence: Fence) -> BotContext:
    """`ctx` whose cluster sessions, thread writer and Home tab publisher are fenced with
    `fence`."""
    return replace(ctx, clusters=FencedClusters(ctx.clusters, fence),
                   sink=FencedThreadWriter(ctx.sink, fence) if ctx.sink is not None else None,
                   home=FencedHomePublisher(ctx.home, fence) if ctx.home is not None else None)


def _read(fence: Fence, call: Callable[[], T]) -> T:
    """A read: the lease is renewed (when due) before it, and checked after it: a read that
    outlasted the lease ends the run before anything is done with what it returned."""
    fence.heartbeat()
    result = call()
    fence.heartbeat()
    return result


class FencedRunner:
    """A `Runner` whose every command is a side effect (an argv may submit, hold or cancel),
    fenced as one under its program's name; `reads`: its caller runs only commands that
    change nothing a person would check (`read_only`)."""

    def __init__(self, inner: Runner, fence: Fence, *, reads: bool = False) -> None:
        self.inner, self.fence, self.reads = inner, fence, reads

    def run(self, argv: Sequence[str], *, stdin: bytes | str | None = None,
            timeout: float | None = None, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandOutput:
        with self.fence.acting(" ".join(argv[:1]) or "a remote command", read=self.reads):
            return self.inner.run(argv, stdin=stdin, timeout=timeout, check=check, env=env)

    def sftp(self) -> SFTP:
        return _read(self.fence, self.inner.sftp)

    def deadlines(self) -> RemoteDeadlines:
        """The wrapped runner's: read from its settings, nothing sent (no lease renewal)."""
        return self.inner.deadlines()

    def close(self) -> None:
        self.inner.close()


def read_only(runner: Runner) -> Runner:
    """`runner`, its commands said to be reads by their caller: a probe, a lookup of a lost
    submit, a py-spy dump, and the placing of trainbot's py-spy, which writes in trainbot's
    own cache directory on the cluster (mkdir, chmod, mv; its SFTP write) and changes no job.
    A fenced one still fences each (`Fence.acting(read=True)`); any other is `runner`
    itself."""
    if isinstance(runner, FencedRunner):
        return FencedRunner(runner.inner, runner.fence, reads=True)
    return runner


class FencedSlurm:
    """A `Slurm` client: queries renew the lease, sbatch/hold/release/cancel are fenced."""

    def __init__(self, inner: Slurm, fence: Fence) -> None:
        self.inner, self.fence = inner, fence

    @property
    def runner(self) -> Runner:
        return FencedRunner(self.inner.runner, self.fence)

    def jobs(self, ids: Iterable[int]) -> Any:
        return _read(self.fence, lambda: self.inner.jobs(ids))

    def job(self, job_id: int) -> Any:
        return _read(self.fence, lambda: self.inner.job(job_id))

    def array_tasks(self, array_job_id: int) -> Any:
        return _read(self.fence, lambda: self.inner.array_tasks(array_job_id))

    def memory(self, job_ids: Iterable[int]) -> Any:
        return _read(self.fence, lambda: self.inner.memory(job_ids))

    def pending_competitors(self, **filters: Any) -> Any:
        return _read(self.fence, lambda: self.inner.pending_competitors(**filters))

    def submit(self, *args: Any, **options: Any) -> int:
        with self.fence.acting("sbatch"):
            return self.inner.submit(*args, **options)

    def hold(self, job_id: int) -> None:
        with self.fence.acting(f"scontrol hold {job_id}"):
            self.inner.hold(job_id)

    def release(self, job_id: int) -> None:
        with self.fence.acting(f"scontrol release {job_id}"):
            self.inner.release(job_id)

    def cancel(self, job_id: int) -> None:
        with self.fence.acting(f"scancel {job_id}"):
            self.inner.cancel(job_id)


class FencedTailReader:
    """A `TailReader` whose batches are reads (the lease renewed around each)."""

    def __init__(self, inner: TailReader, fence: Fence) -> None:
        self.inner, self.fence = inner, fence

    def read(self, requests: Sequence[Any]) -> Any:
        return _read(self.fence, lambda: self.inner.read(requests))

    def batch_bytes(self, files: int) -> int | None:
        """The inner reader's bound on a batch (bot.cluster.tail.ShellTailReader), if any."""
        bound = getattr(self.inner, "batch_bytes", None)
        return bound(files) if bound is not None else None


class FencedClusters:
    """`ClusterSessions` handing out fenced Slurm clients and runners."""

    def __init__(self, inner: ClusterSessions, fence: Fence) -> None:
        self.inner, self.fence = inner, fence

    def slurm(self, cluster: str) -> Slurm:
        return FencedSlurm(self.inner.slurm(cluster), self.fence)

    def runner(self, cluster: str) -> Runner:
        return FencedRunner(self.inner.runner(cluster), self.fence)

    def sftp(self, cluster: str) -> SFTP:
        return _read(self.fence, lambda: self.inner.sftp(cluster))

    def tail_reader(self, cluster: str) -> TailReader:
        return FencedTailReader(self.inner.tail_reader(cluster), self.fence)

    def close(self) -> None:
        self.inner.close()


class FencedThreadWriter:
    """A `ThreadWriter` whose posts, updates and uploads are fenced. A method the wrapped
    writer lacks is lacking here too (`getattr(sink, "update_root", None)` stays None)."""

    def __init__(self, inner: ThreadWriter, fence: Fence) -> None:
        self.inner, self.fence = inner, fence

    def _fenced(self, name: str, what: str) -> Callable[..., Any]:
        call = getattr(self.inner, name)  # AttributeError when the writer has no such method

        def fenced(*args: Any, **kwargs: Any) -> Any:
            with self.fence.acting(what):
                return call(*args, **kwargs)

        return fenced

    @property
    def post_root(self) -> Callable[..., str]:
        return self._fenced("post_root", "Slack post (thread root)")

    @property
    def update_root(self) -> Callable[..., None]:
        return self._fenced("update_root", "Slack update (thread root)")

    @property
    def post_reply(self) -> Callable[..., str]:
        return self._fenced("post_reply", "Slack post")

    @property
    def update_reply(self) -> Callable[..., None]:
        return self._fenced("update_reply", "Slack update")

    @property
    def upload_file(self) -> Callable[..., str]:
        return self._fenced("upload_file", "Slack file upload")

    @property
    def look_up(self) -> Callable[[str], bool]:
        """A read (whether Slack has a post the bot may have sent): the lease renewed around
        it, as the other reads."""
        call = self.inner.look_up  # AttributeError when the writer has none, as _fenced's

        def look_up(key: str) -> bool:
            return _read(self.fence, lambda: call(key))

        return look_up

    def post_at_most_s(self) -> float:
        return self.inner.post_at_most_s()


class FencedHomePublisher:
    """A `HomePublisher` whose views.publish (a run's change refreshing viewers' tabs) is
    fenced."""

    def __init__(self, inner: HomePublisher, fence: Fence) -> None:
        self.inner, self.fence = inner, fence

    def publish_home(self, user_id: str, blocks: Any) -> None:
        with self.fence.acting("Slack Home tab publish"):
            self.inner.publish_home(user_id, blocks)
