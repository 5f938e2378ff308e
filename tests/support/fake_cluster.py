"""The fake cluster of tests (tests/fakes.py re-exports it: tests import it from `fakes`):
Slurm (FakeSlurm and its variants), the SSH runner, SFTP and the cluster sessions over them.
Each records what it was asked, so tests assert on calls, not on mocks.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from bot.cluster.errors import ChannelClosed, ClusterUnavailable
from bot.cluster.sftp import open_failed
from bot.cluster.ssh import CommandResult
from bot.core.slurm.competitors import filter_competitors
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.slurm.sstat import StepMemory
from bot.core.tail import ReadBatch, ReadRequest
from bot.core.takeover import RemoteDeadlines
from support.sftp_requests import (
    FileStat,
    SentRequests,
    WrittenFile,
    counted_listing,
    counted_open,
)
from support.tail_model import answer_batch

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
