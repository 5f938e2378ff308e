"""In-memory stand-ins for the bot's adapters, shared by every test: Slurm, the cluster
sessions, the SSH runner, SFTP, the thread writer (message sink), the watcher's event sink and
its resubmit step. Each records what it was asked, so tests assert on calls, not on mocks.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from support.sftp_requests import (
    FileStat,
    SentRequests,
    WrittenFile,
    counted_listing,
    counted_open,
)
from support.tail_model import answer_batch

from bot.charts.series import SeriesCharts
from bot.cluster.errors import ChannelClosed, ClusterUnavailable
from bot.cluster.pyspy import remote_path
from bot.cluster.sftp import open_failed
from bot.cluster.ssh import CommandResult
from bot.config import Config
from bot.core.catalogue import Catalogue
from bot.core.checkpoints import Checkpoint, iteration_of
from bot.core.slurm.competitors import filter_competitors
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.slurm.sstat import StepMemory
from bot.core.tail import ReadBatch, ReadRequest
from bot.core.takeover import RemoteDeadlines
from bot.services.ports import (
    BotContext,
    ClusterSessions,
    HomePublisher,
    PostError,
    ThreadWriter,
    sending,
)
from bot.services.pyspy_placements import PySpyPlacements
from bot.slack.render import TemplateRenderer
from bot.store import Store

T = TypeVar("T")
T0 = 1_800_000_000.0  # the cluster's wall clock at the start of a test
CONTROLLER_DOWN = "Unable to contact slurm controller (connect failure)"

# --------------------------------------------------------------------------- SSH runner

# How a FakeRunner answers a program: (exit code, stdout, stderr), or an exception to raise,
# or a function of the argv giving one of those (an answer made from the test's world).
Answer = tuple[int, str, str] | Exception | Callable[[list[str]], Any]


class RunCall(NamedTuple):
    argv: list[str]
    stdin: bytes | str | None
    env: dict[str, str]


def program_of(argv: Sequence[str]) -> str:
    """The program an argv runs: its first word after `env VAR=value …` or `timeout -k K S`
    (the bound a scancel runs under on the login node, with the shell that reports its exit
    status: `/bin/sh -c SCRIPT scancel …`, its $0 naming it)."""
    words = list(argv)
    if words and words[0] == "env":
        words = words[1:]
        while words and "=" in words[0]:
            words.pop(0)
    if words[:2] == ["timeout", "-k"]:
        words = words[4:]
        if words[:2] == ["/bin/sh", "-c"]:
            words = words[3:]
    return words[0]


#: A FakeRunner's own deadlines unless it is given some: it answers at once, so its bound adds
#: nothing to the config's (bot.services.submit_deadlines.sender_command_at_most_s counts the
#: longer). Its command bound is 1 s, not 0: a scancel runs under `timeout` with it
#: (bot.core.takeover.scancel_limits), where 0 would mean no bound at all.
INSTANT = RemoteDeadlines(connect_s=0.0, command_s=1.0, sftp_s=0.0)


class FakeRunner:
    """The SSH runner: answers each program from `answers` (or `default`), never raising on a
    non-zero exit (callers check `exit_code`), and records every call. `deadlines`: what its
    deadlines() answers (an exception: raised, as an endpoint that cannot be resolved)."""

    def __init__(self, answers: Mapping[str, Answer] | None = None, *,
                 default: Answer | None = None,
                 deadlines: RemoteDeadlines | Exception = INSTANT) -> None:
        self.answers = dict(answers or {})
        self.default = default
        self.calls: list[RunCall] = []
        self._deadlines = deadlines

    def run(self, argv: Sequence[str], *, stdin: bytes | str | None = None,
            timeout: float | None = None, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        argv = list(argv)
        self.calls.append(RunCall(argv, stdin, dict(env or {})))
        answer = self.answers.get(program_of(argv), self.default)
        if answer is None:
            raise AssertionError(f"FakeRunner has no answer for {argv}")
        if callable(answer) and not isinstance(answer, Exception):
            answer = answer(argv)
        if isinstance(answer, Exception):
            raise answer
        code, out, err = answer
        return CommandResult(tuple(argv), code, out, err)

    def sftp(self) -> Any:
        raise AssertionError("FakeRunner has no SFTP: give the code under test a FakeSFTP")

    def deadlines(self) -> RemoteDeadlines:
        if isinstance(self._deadlines, Exception):
            raise self._deadlines
        return self._deadlines

    def close(self) -> None:
        """Nothing to close (a Runner's close)."""

    def argvs(self) -> list[list[str]]:
        return [call.argv for call in self.calls]

    def commands(self) -> list[str]:
        """The program of each call, in order."""
        return [program_of(call.argv) for call in self.calls]


# --------------------------------------------------------------------------- Slurm


class FakeSlurm:
    """Slurm in memory: a job table, every call logged as (verb, argument), faults on demand.

    `down`: every call fails as when the controller cannot be reached. `submit_error`: submit
    raises it (after logging the call). `hold_answer_lost`: hold takes effect, then raises it
    (its answer lost on the way back). `cancel_answer_lost`: cancel takes effect, then raises it;
    `cancel_lost`: cancel raises it without taking effect (an end not seen, either way).
    Submitted jobs get ids from `first_id` on and join the
    table as PENDING, submitted at `submitted_at` (Slurm's clock). `runner` answers what a
    site submit wrapper runs.
    """

    def __init__(self, records: Mapping[int, JobRecord] | None = None, *,
                 first_id: int = 88887, down: bool = False,
                 submit_error: Exception | None = None, runner: FakeRunner | None = None,
                 submitted_at: float = 2000.0) -> None:
        self.records: dict[int, JobRecord] = dict(records or {})
        self.submitted_at = submitted_at
        self.calls: list[tuple[str, Any]] = []
        self.down = down
        self.submit_error = submit_error
        self.hold_answer_lost: Exception | None = None
        self.cancel_answer_lost: Exception | None = None
        self.cancel_lost: Exception | None = None
        self.runner = runner or FakeRunner()
        self._ids = itertools.count(first_id)

    if TYPE_CHECKING:  # a Slurm to the type checker, but a client without sstat when run:
        # bot.services.watch.sstat asks only a client that has `memory` (SstatSlurm has)
        def memory(self, job_ids: Iterable[int]) -> dict[int, StepMemory]: ...

    # ---- the test's side

    def add(self, job_id: int, **fields: Any) -> JobRecord:
        rec = JobRecord(job_id=job_id, **{"state": "PENDING", "user": "slurmci", **fields})
        self.records[job_id] = rec
        return rec

    def set(self, job_id: int, **fields: Any) -> None:
        self.records[job_id] = replace(self.records[job_id], **fields)

    def acted(self, verb: str) -> list[Any]:
        """The argument of every `verb` call, in order (ids for hold / release / cancel / job,
        id lists for jobs, filters for pending_competitors, the SubmitSpec for submit)."""
        return [arg for name, arg in self.calls if name == verb]

    def submits(self) -> list[SubmitSpec]:
        return self.acted("submit")

    def _call(self, verb: str, arg: Any) -> None:
        self.calls.append((verb, arg))
        if self.down:
            raise ClusterUnavailable(CONTROLLER_DOWN)

    # ---- what the services call (bot.cluster.slurm.SlurmClient)

    def jobs(self, ids: Any) -> dict[int, JobRecord]:
        ids = list(ids)
        self._call("jobs", ids)
        wanted = set(ids)  # as Slurm does: an array's id lists every task of the array too
        return {i: r for i, r in self.records.items()
                if i in wanted or r.array_job_id in wanted}

    def job(self, job_id: int) -> JobRecord | None:
        self._call("job", job_id)
        return self.records.get(job_id)

    def array_tasks(self, array_job_id: int) -> dict[int, JobRecord]:
        self._call("array_tasks", array_job_id)
        return {i: r for i, r in self.records.items() if r.array_job_id == array_job_id}

    def pending_competitors(self, **filters: Any) -> list[JobRecord]:
        self._call("pending_competitors", filters)
        return filter_competitors(self.records.values(), **filters)

    def submit(self, spec: SubmitSpec, *, script: str | None = None) -> int:
        self._call("submit", spec)
        if self.submit_error is not None:
            raise self.submit_error
        return self._queue(spec)

    def _queue(self, spec: SubmitSpec) -> int:
        """Queue `spec`'s job (the next id): its id."""
        job_id = next(self._ids)
        self.add(job_id, name=spec.job_name, partition=spec.partition, account=spec.account,
                 qos=spec.qos, priority=100, submit_time=self.submitted_at)
        return job_id

    def hold(self, job_id: int) -> None:
        self._call("hold", job_id)
        self.set(job_id, reason="JobHeldUser", priority=0)
        if self.hold_answer_lost is not None:
            raise self.hold_answer_lost

    def release(self, job_id: int) -> None:
        self._call("release", job_id)
        self.set(job_id, reason="Priority", priority=1)

    def cancel(self, job_id: int) -> None:
        self._call("cancel", job_id)
        if self.cancel_lost is not None:
            raise self.cancel_lost
        if job_id in self.records:
            self.set(job_id, state="CANCELLED")
        if self.cancel_answer_lost is not None:
            raise self.cancel_answer_lost


class AnswerLostSlurm(FakeSlurm):
    """Slurm whose next `lost` sbatch calls end unseen: each queues its job (unless `queue`
    is False) and then raises `error` (default: its channel closes before the exit status
    comes, ChannelClosed). Its runner answers the lookup by name (`squeue -h --name=N -o %A`)
    from the job table, sacct with nothing; `lookup_error` makes that squeue raise it. An
    sbatch not queued (`queue` False) is queued late by `land()`: an overloaded controller
    taking the request in after its answer was given up on."""

    def __init__(self, *, queue: bool = True, lost: int = 1,
                 error: Exception | None = None, **kw: Any) -> None:
        kw.setdefault("first_id", 90500)
        super().__init__(runner=FakeRunner({"squeue": self._by_name, "sacct": (0, "", "")}),
                         **kw)
        self.queue, self.lost = queue, lost
        self.error = error or ChannelClosed(["sbatch", "--parsable"], "login",
                                            connection_lost=True)
        self.lookup_error: Exception | None = None
        self.unqueued: list[tuple[SubmitSpec, str | None]] = []

    def submit(self, spec: SubmitSpec, *, script: str | None = None) -> int:
        if not self.lost:
            return super().submit(spec, script=script)
        self.lost -= 1
        if self.queue:
            super().submit(spec, script=script)
        else:
            self._call("submit", spec)
            self.unqueued.append((spec, script))
        raise self.error

    def land(self) -> list[int]:
        """Queue the lost sbatches that were not queued (each a job of its own, as Slurm
        queues a request it took in late): their job ids."""
        landed = [self._queue(spec) for spec, _script in self.unqueued]
        self.unqueued.clear()
        return landed

    def queued(self, name: str) -> list[int]:
        return sorted(i for i, r in self.records.items() if r.name == name
                      and r.state in ("PENDING", "RUNNING"))

    def _by_name(self, argv: list[str]) -> tuple[int, str, str]:
        if self.lookup_error is not None:
            raise self.lookup_error
        name = next(a.split("=", 1)[1] for a in argv if a.startswith("--name="))
        return 0, "".join(f"{i}\n" for i in self.queued(name)), ""


class SstatSlurm(FakeSlurm):
    """FakeSlurm with sstat: `memory(ids)` gives each id in `rss` a StepMemory of step `batch`
    with that MaxRSS; `memory_error` makes it raise. (The watcher asks for memory only of a
    Slurm that has `memory`, so plain FakeSlurm stands for a site without sstat.)"""

    def __init__(self, records: Mapping[int, JobRecord] | None = None, **kw: Any) -> None:
        super().__init__(records, **kw)
        self.rss: dict[int, int] = {}
        self.memory_error: Exception | None = None

    def memory(self, ids: Any) -> dict[int, StepMemory]:
        ids = list(ids)
        self._call("memory", ids)
        if self.memory_error is not None:
            raise self.memory_error
        return {i: StepMemory(i, "batch", self.rss[i], self.rss[i], "vm", 0, 1)
                for i in ids if i in self.rss}


# --------------------------------------------------------------------------- SFTP

class FakeSFTP:
    """In-memory files, mtimes from a settable clock: stat + open('rb') like SFTP (open('wb')
    writes one on close; the home is /home/slurmci), and `read` like the cluster's TailReader
    (the read script's rules, tests/support/tail_model.py, through the real framing); counts
    the bytes handed out and the batches. Its SFTP calls send the requests trainbot's SFTP
    client sends (see CountedFile, counted_listing), each given to each_request and counted
    in `requests` by kind."""

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}
        self.mtime: dict[str, int] = {}
        self.bytes_out = 0
        self.batches = 0
        self.inode: dict[str, int] = {}
        self.clock = T0  # the cluster's wall clock: a write sets the file's mtime to it
        self.requests = SentRequests()  # the SFTP requests sent, by kind

    def read(self, requests: Sequence[ReadRequest]) -> ReadBatch:
        self.batches += 1
        lookup = {p: (bytes(data), self.mtime[p], self.inode[p])
                  for p, data in self.files.items()}
        batch = answer_batch(requests, lookup)
        self.bytes_out += sum(len(r.data) for r in batch.results)
        return batch

    def append(self, path: str, data: bytes) -> None:
        self.inode.setdefault(path, len(self.inode) + 1)
        self.files.setdefault(path, bytearray()).extend(data)
        self.mtime[path] = int(self.clock)

    def stat(self, path: str) -> FileStat:
        self.requests.send("stat")
        if path not in self.files:
            raise FileNotFoundError(path)
        return FileStat(len(self.files[path]), self.mtime[path])

    def listdir_attr(self, path: str = ".") -> list[Any]:
        """The files directly under `path` (name, size, mtime), as paramiko answers."""
        prefix = path.rstrip("/") + "/"

        def entries() -> list[Any]:
            names = [p for p in self.files
                     if p.startswith(prefix) and "/" not in p[len(prefix):]]
            if not names:
                raise FileNotFoundError(path)
            return [SimpleNamespace(filename=p[len(prefix):], st_size=len(self.files[p]),
                                    st_mtime=self.mtime[p]) for p in sorted(names)]

        return counted_listing(self.requests, entries)

    def normalize(self, path: str) -> str:
        self.requests.send("realpath")
        return "/home/slurmci" if path == "." else path

    @contextlib.contextmanager
    def lookup_channel(self) -> Iterator[SimpleNamespace]:
        """A lease whose `sftp` is these same files (one channel is all there is here);
        its `abandon` does nothing."""
        yield SimpleNamespace(sftp=self, abandon=lambda: None)

    def open(self, path: str, mode: str = "r", bufsize: int = -1) -> Any:
        if "w" in mode:  # written on close
            self.requests.send("open")

            def written(data: bytes) -> None:
                self.files[path] = bytearray(data)
                self.mtime[path] = int(self.clock)

            return WrittenFile(self.requests, written)

        def data() -> bytes:
            if path not in self.files:
                raise FileNotFoundError(path)
            return bytes(self.files[path])

        def handed_out(n: int) -> None:
            self.bytes_out += n

        return counted_open(self.requests, data, on_read=handed_out)


class LocalTreeSFTP:
    """SFTP over a local directory (`/` is `base`, also the home), as the tests' SFTP server
    (tests/support/sftp_peer.py) serves one: listings with their modes (a symlink listed as
    one), stat following links, files opened for reading and writing; each call sends the
    requests trainbot's SFTP client sends (counted_listing, CountedFile). `answer_at_most`:
    the bytes a read is answered with at most."""

    def __init__(self, base: Path, *, answer_at_most: int | None = None) -> None:
        self.base = base
        self.answer_at_most = answer_at_most
        self.requests = SentRequests()  # the SFTP requests sent, by kind

    def _local(self, path: str) -> Path:
        return self.base / path.lstrip("/")

    def normalize(self, path: str) -> str:
        self.requests.send("realpath")
        return "/" + path.lstrip("/") if path not in (".", "") else "/"

    def listdir_attr(self, path: str = ".") -> list[SimpleNamespace]:
        local = self._local(path)

        def entries() -> list[SimpleNamespace]:
            if not local.is_dir():
                raise FileNotFoundError(path)
            out = []
            for p in sorted(local.iterdir()):
                st = p.lstat()
                out.append(SimpleNamespace(filename=p.name, st_mode=st.st_mode,
                                           st_size=st.st_size, st_mtime=int(st.st_mtime)))
            return out

        return counted_listing(self.requests, entries)

    def stat(self, path: str) -> os.stat_result:
        self.requests.send("stat")
        return self._local(path).stat()

    def lstat(self, path: str) -> os.stat_result:
        self.requests.send("lstat")
        return self._local(path).lstat()

    def open(self, path: str, mode: str = "r", bufsize: int = -1) -> Any:
        local = self._local(path)
        if "w" in mode:
            self.requests.send("open")
            if not local.parent.is_dir():
                open_failed("open")
                raise FileNotFoundError(path)
            return WrittenFile(self.requests, local.write_bytes)
        return counted_open(self.requests, local.read_bytes,
                            answer_at_most=self.answer_at_most)

    @contextlib.contextmanager
    def lookup_channel(self) -> Iterator[SimpleNamespace]:
        """A lease whose `sftp` is this same tree; its `abandon` does nothing."""
        yield SimpleNamespace(sftp=self, abandon=lambda: None)


# --------------------------------------------------------------------------- cluster sessions


class FakeClusters:
    """ClusterSessions in memory: the same FakeSlurm for every cluster, or one per name; SFTP
    and an SSH runner only when given one."""

    def __init__(self, slurm: FakeSlurm | Mapping[str, FakeSlurm],
                 sftp: FakeSFTP | None = None, runner: FakeRunner | None = None) -> None:
        self._slurm = slurm
        self._sftp = sftp
        self._runner = runner

    def slurm(self, cluster: str) -> FakeSlurm:
        if isinstance(self._slurm, FakeSlurm):
            return self._slurm
        return self._slurm[cluster]

    @property
    def has_ssh(self) -> bool:
        """Whether the test gave an SSH runner (commands on the login node)."""
        return self._runner is not None

    def runner(self, cluster: str) -> Any:
        if self._runner is None:
            raise AssertionError("no SSH in this test")
        return self._runner

    def sftp(self, cluster: str) -> FakeSFTP:
        if self._sftp is None:
            raise AssertionError("no SFTP in this test")
        return self._sftp

    def tail_reader(self, cluster: str) -> FakeSFTP:
        return self.sftp(cluster)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- sinks


class RecordingMessageSink:
    """A thread writer (bot.services.ports.ThreadWriter) remembering posts; post_root marks
    the root posted in the store, as the Slack poster does. The next `fail_next` replies
    fail as a post Slack refused does (PostError, nothing posted)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.posts: list[tuple[str, int, str, str]] = []  # (kind, chain, key, text)
        self.blocks: dict[str, list] = {}  # key -> the blocks last posted or updated
        self.fail_next = 0

    if TYPE_CHECKING:  # a ThreadWriter to the type checker, but without these two when run:
        # the services look them up with getattr (a writer may lack them), so nothing here
        # updates a root or uploads a chart
        def update_root(self, chain_id: int, blocks: list, text: str) -> None: ...

        def upload_file(self, chain_id: int, key: str, data: bytes, filename: str,
                        title: str) -> str: ...

    def post_root(self, chain_id: int, channel: str, blocks: list, text: str) -> str:
        key = f"chain:{chain_id}:root"
        self.store.slack_posts.record_intent(key, channel=channel, kind="root",
                                             chain_id=chain_id, now=0)
        sending()  # as the Slack poster says before its request
        self.store.slack_posts.record_posted(key, ts=f"{chain_id}.0001", now=0)
        self.posts.append(("root", chain_id, key, text))
        return f"{chain_id}.0001"

    def post_reply(self, chain_id: int, key: str, blocks: list, text: str) -> str:
        """Post `key` once, as the Slack poster does (bot.slack.poster: a key the store has
        posted is never sent again, its ts returned; the intent is stored before sending)."""
        posted = self.store.slack_posts.get(key)
        if posted is not None and posted.posted and posted.ts is not None:
            return posted.ts
        if posted is not None and self.look_up(key):  # an intent Slack has: not sent again
            found = self.store.slack_posts.get(key)
            assert found is not None and found.ts is not None
            return found.ts
        root = self.store.slack_posts.get(f"chain:{chain_id}:root")
        self.store.slack_posts.record_intent(key, channel=root.channel if root else "",
                                             kind="reply", chain_id=chain_id, now=0)
        sending()  # as the Slack poster says before its request
        if self.fail_next:
            self.fail_next -= 1
            raise PostError(f"Slack chat.postMessage failed for {key!r}: service_unavailable")
        self.posts.append(("reply", chain_id, key, text))
        self.blocks[key] = blocks
        ts = f"{chain_id}.{len(self.posts):04d}"
        self.store.slack_posts.record_posted(key, ts=ts, now=0)
        return ts

    def look_up(self, key: str) -> bool:
        """Whether "Slack" (the posts made) has `key`, as the Slack poster looks an intent up
        (bot.slack.poster.SlackPoster.look_up: found, it is recorded posted)."""
        post = self.store.slack_posts.get(key)
        if post is None or post.posted:
            return post is not None
        made = [i for i, p in enumerate(self.posts) if p[0] == "reply" and p[2] == key]
        if not made:
            return False
        self.store.slack_posts.record_posted(key, ts=f"{post.chain_id}.{made[0] + 1:04d}",
                                             now=0)
        return True

    def post_at_most_s(self) -> float:
        return 0.0  # a post is a list's append

    def update_reply(self, chain_id: int, key: str, blocks: list, text: str) -> None:
        """Rewrite a reply posted under `key`; nothing when it was never posted (as the Slack
        poster, which says its chat.update goes out before its request)."""
        if any(p[0] == "reply" and p[2] == key for p in self.posts):
            sending()  # as the Slack poster says before its request
            self.posts.append(("update", chain_id, key, text))
            self.blocks[key] = blocks

    def texts(self) -> list[str]:
        return [p[3] for p in self.posts]


class RecordingHomePublisher:
    """A Home tab publisher (bot.services.ports.HomePublisher) remembering each publish."""

    def __init__(self) -> None:
        self.published: list[tuple[str, list]] = []  # (user, blocks)

    def publish_home(self, user_id: str, blocks: list) -> None:
        sending()
        self.published.append((user_id, blocks))

    def users(self) -> list[str]:
        return [user for user, _ in self.published]


class RecordingEventSink:
    """The watcher's EventSink remembering events; `fail_next` publishes fail (Slack down)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.changed: list[int] = []  # chain_changed calls (root rewrites), in order
        self.progressed: list[int] = []  # progress_changed calls (root rewrites), in order
        self.fail_next = 0

    def publish(self, event: Any) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("slack is down")
        self.events.append(event)

    def chain_changed(self, chain_id: int) -> None:
        self.changed.append(chain_id)

    def progress_changed(self, chain_id: int) -> None:
        self.progressed.append(chain_id)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


# --------------------------------------------------------------------------- checkpoint lookup


@dataclass
class FakeCheckpoints:
    """The watcher's checkpoint lookup (`Watcher(checkpoint=…)`): every recipe's latest
    complete checkpoint is `found` (an iteration N: the dir `iter_000000N`; a name: a pointer
    naming that dir, its iteration whatever its name says; None: none). A lookup raises
    `fails` when set (an SFTP error), and waits for `hangs` to be set (a stuck filesystem; at
    most 120 s) before it answers. Records each lookup as (recipe, task)."""

    found: int | str | None = None
    fails: Exception | None = None
    hangs: threading.Event | None = None
    calls: list[tuple[str, int | None]] = field(default_factory=list)

    def __call__(self, recipe: str, task: int | None = None,
                 abandon: Any = None) -> Checkpoint | None:
        self.calls.append((recipe, task))
        if self.fails is not None:
            raise self.fails
        if self.hangs is not None:
            self.hangs.wait(120)
        if self.found is None:
            return None
        if isinstance(self.found, int):
            return Checkpoint(f"/ck/{recipe}/iter_{self.found:07d}", self.found, "scan")
        return Checkpoint(f"/ck/{recipe}/{self.found}", iteration_of(self.found), "pointer")


# --------------------------------------------------------------------------- resubmit step


@dataclass
class FakeResubmit:
    """The watcher's resubmit step: records (recipe, chain, resume_from); the first
    `fail_first` calls fail as sbatch would, the others add the new job (90001, …) as
    submit_recipe does: an attempt of the chain (resumed from the decision's checkpoint, at
    FakeCheckpoints' path) and a watched job of `cluster`."""

    store: Store
    fail_first: int = 0
    cluster: str = "dev"
    calls: list[tuple[str, int, int | None]] = field(default_factory=list)

    def __call__(self, recipe: str, chain_id: int, decision: Any, *, intent: str) -> int:
        self.calls.append((recipe, chain_id, decision.resume_from))
        if self.fail_first:
            self.fail_first -= 1
            raise RuntimeError("sbatch: error: Slurm temporarily unable to accept job")
        new_id = 90000 + len(self.calls)
        path = f"/ck/{recipe}/{decision.resume_checkpoint}" if decision.resume_checkpoint \
            else None  # where FakeCheckpoints puts it
        self.store.attempts.record(chain_id=chain_id, job_id=str(new_id), now=T0,
                                   start_iter=decision.resume_from, checkpoint_path=path,
                                   charge_retry=decision.charged)
        self.store.watched_jobs.add(self.cluster, str(new_id), now=T0 + 1300,  # after the failure
                                    chain_id=chain_id)
        return new_id


# --------------------------------------------------------------------------- a context of fakes


def present(value: T | None) -> T:
    """`value`, which the test expects there (a store row it made, a match): not None."""
    assert value is not None
    return value


def make_config(*, slack_lang: str = "en", **recipe_over: Any) -> Config:
    """One cluster `dev`, one recipe `mix` (with `recipe_over` on top), a Slack channel and the
    groups `robots` (submitters) and `leads` (approvers); the bot speaks `slack_lang` (a
    recipe's own `lang=` goes in `recipe_over`)."""
    recipe = {
        "cluster": "dev",
        "sbatch_script": "/home/slurmci/train.sbatch",
        "partition": "debug",
        "account": "root",
        "owners": ["U0OWNER"],
        "submitters": ["robots"],
        "approvers": ["leads"],
        "channel": "training",
        "overridable": {"lr": "float", "target_iter": "int"},
        **recipe_over,
    }
    return Config.model_validate({
        "clusters": {"dev": {"host": "127.0.0.1", "port": 2222, "user": "slurmci",
                             "key_file": "/nonexistent"}},
        "recipes": {"mix": recipe},
        "slack": {"channels": {"training": "C0TRAIN"}, "default_channel": "training",
                  "approvers": ["leads"], "lang": slack_lang,
                  "groups": {"robots": ["U0ALICE"], "leads": ["W0LEAD", "U0APPR"]}},
    })


def failed_run(ctx: BotContext, *, now: float, channel: str, job_id: str = "88154") -> int:
    """Run `mix` whose job `job_id` failed before `now`: a chain (the id returned) with its
    attempt and its thread's root in `channel`."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=now - 100)
    attempt = ctx.store.attempts.record(chain_id=chain.id, job_id=job_id, now=now - 100)
    ctx.store.attempts.update(attempt.attempt.id, state="FAILED", result="FAILED")
    assert ctx.sink is not None
    ctx.sink.post_root(chain.id, channel, [], "mix")
    return chain.id


def make_context(store: Store, slurm: FakeSlurm | Mapping[str, FakeSlurm] | None = None, *,
                 sftp: FakeSFTP | None = None, clusters: ClusterSessions | None = None,
                 config: Config | None = None, slack: bool = True,
                 sink: ThreadWriter | None = None, charts: bool = True,
                 home: HomePublisher | None = None, clock: Callable[[], float] = time.time,
                 slack_lang: str = "en", **recipe_over: Any) -> BotContext:
    """The one BotContext of tests, as bot.app.build_context has it but with fakes: `config`
    (default: make_config() in `slack_lang` with `recipe_over` on its recipe) and its catalogue
    (the packaged one and `catalogue.extra`), the store, FakeClusters of `slurm` (a new
    FakeSlurm by default; one per cluster name from a mapping) and `sftp`, or `clusters` a
    test built itself.
    The thread writer is `sink` (default: a RecordingMessageSink, read back with recorded()),
    with charts unless `charts` is False, and `home` publishes Home tabs (default: a
    RecordingHomePublisher, read back with homes()); without `slack`, none of them (what would
    be posted is logged), as bot.app.build_context without Slack. `clock` is the handlers'
    clock.
    Without an SSH runner (FakeClusters' has_ssh), trainbot's py-spy counts as placed on
    every cluster already (`ctx.pyspy`, as a bot that ran before leaves it), so a watcher
    built on the context (bot.app.build_watcher: its forensics begin the placement at the
    first poll) does not try commands the test has none of; over a runner the test gave, the
    placement runs and a failure of it is logged, as in production."""
    if config is not None and (recipe_over or slack_lang != "en"):
        raise TypeError("make_context: recipe fields and slack_lang go to make_config, "
                        "not beside a config")
    if clusters is not None and (slurm is not None or sftp is not None):
        raise TypeError("make_context: give `clusters`, or `slurm` and `sftp`, not both")
    if not slack and sink is not None:
        raise TypeError("make_context: a thread writer without Slack")
    config = config or make_config(slack_lang=slack_lang, **recipe_over)
    if not slack and home is not None:
        raise TypeError("make_context: a Home tab publisher without Slack")
    if slack and sink is None:
        sink = RecordingMessageSink(store)
    if slack and home is None:
        home = RecordingHomePublisher()
    if clusters is None:
        clusters = FakeClusters(slurm or FakeSlurm(), sftp)
    catalogue = Catalogue.load(config.catalogue.extra)
    placed = {} if getattr(clusters, "has_ssh", True) else {
        name: remote_path("/home/slurmci", metadata.version("py-spy")) for name in config.clusters}
    return BotContext(config=config, store=store, clusters=clusters, sink=sink, home=home,
                      renderer=TemplateRenderer(config.redactor()), catalogue=catalogue,
                      charts=SeriesCharts(catalogue) if sink is not None and charts else None,
                      clock=clock, pyspy=PySpyPlacements(
                          placed, monotonic=time.monotonic if clock is time.time else clock))


def fake_slurm(ctx: BotContext, cluster: str = "dev") -> FakeSlurm:
    """`ctx`'s Slurm of `cluster`: a FakeSlurm (make_context's)."""
    slurm = ctx.clusters.slurm(cluster)
    assert isinstance(slurm, FakeSlurm), slurm
    return slurm


def homes(ctx: BotContext) -> RecordingHomePublisher:
    """`ctx`'s Home tab publisher: the RecordingHomePublisher make_context gives by default."""
    assert isinstance(ctx.home, RecordingHomePublisher), ctx.home
    return ctx.home


def writer(ctx: BotContext) -> ThreadWriter:
    """`ctx`'s thread writer (a context made with Slack has one)."""
    assert ctx.sink is not None
    return ctx.sink


def recorded(ctx: BotContext) -> RecordingMessageSink:
    """`ctx`'s thread writer: the RecordingMessageSink make_context gives by default."""
    assert isinstance(ctx.sink, RecordingMessageSink), ctx.sink
    return ctx.sink


def adopt(ctx: BotContext, job_id: int, *, actor: str, now: float,
          channel: str = "C0TRAIN") -> int:
    """`/train watch JOB` by `actor`: trainbot adopts a job it did not submit; its chain id."""
    from bot.core.train_grammar import Watch
    from bot.services.train import execute

    reply = execute(ctx, Watch(job_id), actor=actor, channel=channel, now=now)
    assert reply.chain_id is not None, reply.text
    return reply.chain_id
