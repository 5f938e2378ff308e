"""Which rank is stuck, and where: the Python stacks py-spy dumped on each node of a job,
grouped by identical stack, with the odd ranks named, and every failure to collect as a cause.

Pure: `parse_node_output` reads what the node script (bot.probes.stacks) printed,
`summarize` groups the ranks' main-thread stacks, `collection_problem` names why nothing (or
not everything) was collected, `format_dump` is the full text attached to the thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core.text import Text

MARKER = "TRAINBOT_STACKS_JSON "

# Why stacks could not be collected (one clear line each in the thread, templates/stacks).
PYSPY_ABSENT = "pyspy_absent"  # no py-spy where it was looked for, or it cannot run
PYSPY_NOT_PLACED = "pyspy_not_placed"  # placing trainbot's py-spy outlasted its deadline
# trainbot's copy, intact on the login node, is not found or cannot run on the nodes (a home
# not shared with them, mounted noexec): only the site's own `py_spy` path helps there
PYSPY_UNSEEN = "pyspy_unseen"
PERMISSION_DENIED = "permission_denied"  # ptrace refused (another uid, ptrace_scope)
JOB_ENDED = "job_ended"  # the job (or the process) ended before or during the collection
NO_PROCESSES = "no_processes"  # the job runs no Python process trainbot could find
TIMED_OUT = "timed_out"  # the collection outlasted its deadline
FAILED = "failed"  # anything else: the detail says what
CAUSES = (PYSPY_ABSENT, PYSPY_NOT_PLACED, PYSPY_UNSEEN, PERMISSION_DENIED, JOB_ENDED,
          NO_PROCESSES, TIMED_OUT, FAILED)

_PERMISSION = re.compile(r"permission denied|operation not permitted|EPERM|ptrace", re.I)
_GONE = re.compile(r"no such process|failed to find process|process \d+ not found"
                   r"|failed to find python version|ESRCH|not running", re.I)
_JOB_GONE = re.compile(r"invalid job id|already completing or completed|job has (already )?"
                       r"finished|job \d+ (has )?(already )?(completed|ended|finished|expired)"
                       r"|step creation disabled|job not found|not found or no longer"
                       r"|\*\*\* (step|job) \S+ on \S+ cancelled|job step aborted"
                       r"|due to time limit", re.I)
_SRUN_ABSENT = re.compile(r"srun: (command )?not found|no such file or directory: .?srun", re.I)


@dataclass(frozen=True)
class Frame:
    """One Python frame (py-spy's JSON: function, file as short as it shows it, line)."""

    name: str
    file: str
    line: int | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({self.file}:{self.line})" if self.line else \
            f"{self.name} ({self.file})"


@dataclass(frozen=True)
class ThreadStack:
    """A thread's frames, innermost first."""

    thread_id: int | None
    name: str
    active: bool
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class RankStack:
    """One trainer process: its rank (None when the job sets none), where it runs, its
    threads; `main` is the thread the grouping compares."""

    host: str
    pid: int
    rank: int | None
    step: str | None
    threads: tuple[ThreadStack, ...]
    cmd: str = ""

    @property
    def main(self) -> ThreadStack | None:
        for t in self.threads:
            if t.thread_id == self.pid or t.name == "MainThread":
                return t
        return self.threads[0] if self.threads else None

    @property
    def who(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"


@dataclass(frozen=True)
class ProcessFailure:
    """A process (or a whole node, `pid` None) whose stack could not be read, and why."""

    host: str
    pid: int | None
    rank: int | None
    cause: str
    detail: Text | str = ""  # a Text: trainbot's sentence, translated where shown


@dataclass(frozen=True)
class NodeReport:
    """What the node script printed on one node."""

    host: str
    stacks: tuple[RankStack, ...] = ()
    failures: tuple[ProcessFailure, ...] = ()
    truncated: Truncated | None = None


@dataclass(frozen=True)
class Truncated:
    """What a node left out of its report to keep within its `share` of the bytes the
    collection sends back (bot.probes.stacks): `threads` other than its processes' main
    ones, the stacks of `procs` processes (each also a failure saying so)."""

    threads: int
    procs: int
    share: int


@dataclass(frozen=True)
class StackGroup:
    """Ranks whose main threads have the same stack (function and file of every frame)."""

    frames: tuple[Frame, ...]
    members: tuple[RankStack, ...]

    @property
    def where(self) -> tuple[str, ...]:
        """The innermost frame's function and its caller's, e.g. (`all_gather`,
        `train_step`): what the summary says the ranks are in."""
        return tuple(f.name for f in self.frames[:2])

    @property
    def ranks(self) -> list[str]:
        return [m.who for m in self.members]

    @property
    def hosts(self) -> list[str]:
        return sorted({m.host for m in self.members})

    def to_view(self) -> dict[str, Any]:
        return {"count": len(self.members), "where": list(self.where),
                "ranks": [{"rank": m.rank, "pid": m.pid, "host": m.host, "step": m.step}
                          for m in self.members],
                "hosts": self.hosts}


@dataclass(frozen=True)
class StackSummary:
    """The groups, largest first; `odd` are the groups outside the one largest group (none
    when every rank is in one group or no group is the largest alone)."""

    groups: tuple[StackGroup, ...]
    odd: tuple[StackGroup, ...]
    failures: tuple[ProcessFailure, ...] = ()

    @property
    def ranks(self) -> int:
        return sum(len(g.members) for g in self.groups)

    @property
    def majority(self) -> StackGroup | None:
        return self.groups[0] if self.groups and self.odd else None

    def to_view(self) -> dict[str, Any]:
        """The template's view (templates/stacks.json.j2)."""
        causes: dict[str, list[ProcessFailure]] = {}
        for f in self.failures:
            causes.setdefault(f.cause, []).append(f)
        majority = self.majority
        return {"ranks": self.ranks,
                "groups": [g.to_view() for g in self.groups],
                "majority": majority.to_view() if majority is not None else None,
                "odd": [g.to_view() for g in self.odd],
                "failures": [{"cause": c, "count": len(fs), "detail": fs[0].detail,
                              "host": fs[0].host} for c, fs in causes.items()]}


# --------------------------------------------------------------------------- parsing


def _frames(raw: Iterable[Mapping[str, Any]]) -> tuple[Frame, ...]:
    out = []
    for f in raw:
        name = str(f.get("name") or "?")
        file = str(f.get("short_filename") or f.get("filename") or "?")
        line = f.get("line")
        out.append(Frame(name, file, int(line) if isinstance(line, int) and line > 0 else None))
    return tuple(out)


def _threads(raw: Any) -> tuple[ThreadStack, ...]:
    if not isinstance(raw, list):
        return ()
    out = []
    for t in raw:
        if not isinstance(t, Mapping):
            continue
        tid = t.get("os_thread_id")
        out.append(ThreadStack(int(tid) if isinstance(tid, int) else None,
                               str(t.get("thread_name") or ""), bool(t.get("active")),
                               _frames(x for x in t.get("frames") or () if isinstance(x, Mapping))))
    return tuple(out)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def process_cause(error: str, *, gone: bool = False) -> str:
    """The cause of one failed `py-spy dump` from its stderr (and whether the process was
    still there afterwards)."""
    if gone or _GONE.search(error):
        return JOB_ENDED
    if _PERMISSION.search(error):
        return PERMISSION_DENIED
    return FAILED


def _node(obj: Mapping[str, Any]) -> NodeReport:
    host = str(obj.get("host") or "?")
    failures: list[ProcessFailure] = []
    stacks: list[RankStack] = []
    if obj.get("error"):
        cause = str(obj["error"])
        failures.append(ProcessFailure(host, None, None, cause if cause in CAUSES else FAILED,
                                       str(obj.get("detail") or "")))
    for p in obj.get("procs") or ():
        if not isinstance(p, Mapping):
            continue
        pid, rank = _int(p.get("pid")) or 0, _int(p.get("rank"))
        if p.get("ok"):
            stacks.append(RankStack(host, pid, rank, p.get("step"), _threads(p.get("threads")),
                                    str(p.get("cmd") or "")))
        else:
            error = str(p.get("error") or "")
            failures.append(ProcessFailure(host, pid, rank,
                                           process_cause(error, gone=bool(p.get("gone"))),
                                           _last_line(error)))
    cut = obj.get("truncated")
    truncated = Truncated(_int(cut.get("threads")) or 0, _int(cut.get("procs")) or 0,
                          _int(cut.get("share")) or 0) if isinstance(cut, Mapping) else None
    return NodeReport(host, tuple(stacks), tuple(failures), truncated)


def parse_node_output(stdout: str) -> list[NodeReport]:
    """Every node's report in the collection's stdout (one marker line per node; noise from
    the job's environment around it is ignored, a partial line too)."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith(MARKER):
            continue
        try:
            obj = json.loads(line[len(MARKER):])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, Mapping):
            out.append(_node(obj))
    return out


def _last_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[: limit - 1] + "…"


def collection_problem(exit_code: int | None, stderr: str,
                       nodes: Sequence[NodeReport]) -> ProcessFailure | None:
    """Why the collection as a whole gave nothing, from the srun's exit and stderr and the
    node reports; None when at least one stack was read. `exit_code` None: timed out."""
    if any(n.stacks for n in nodes):
        return None
    node_failures = [f for n in nodes for f in n.failures]
    if exit_code is None:
        return ProcessFailure("", None, None, TIMED_OUT, _last_line(stderr))
    for cause in (PYSPY_ABSENT, PERMISSION_DENIED, JOB_ENDED, NO_PROCESSES, FAILED):
        found = [f for f in node_failures if f.cause == cause]
        if found:
            return found[0]
    if _JOB_GONE.search(stderr):
        return ProcessFailure("", None, None, JOB_ENDED, _last_line(stderr))
    if _PERMISSION.search(stderr):  # srun refused a step in another user's job
        return ProcessFailure("", None, None, PERMISSION_DENIED, _last_line(stderr))
    if _SRUN_ABSENT.search(stderr):
        return ProcessFailure("", None, None, FAILED, _last_line(stderr))
    if nodes:
        return ProcessFailure(nodes[0].host, None, None, NO_PROCESSES, "")
    detail = _last_line(stderr) or f"srun exited {exit_code} with no report"
    return ProcessFailure("", None, None, FAILED, detail)


# --------------------------------------------------------------------------- grouping


def _signature(stack: RankStack) -> tuple[tuple[str, str], ...]:
    main = stack.main
    return tuple((f.name, f.file) for f in main.frames) if main is not None else ()


def _order(stack: RankStack) -> tuple[int, int, str, int]:
    return (0 if stack.rank is not None else 1, stack.rank or 0, stack.host, stack.pid)


def summarize(nodes: Sequence[NodeReport]) -> StackSummary:
    """Group the ranks by their main thread's stack (function and file of each frame; the
    line numbers may differ, e.g. inside one loop). Largest group first; when one group is
    larger than every other, the others are the odd ones out."""
    by_sig: dict[tuple[tuple[str, str], ...], list[RankStack]] = {}
    for n in nodes:
        for s in n.stacks:
            by_sig.setdefault(_signature(s), []).append(s)
    groups = []
    for members in by_sig.values():
        members.sort(key=_order)
        main = members[0].main
        groups.append(StackGroup(main.frames if main is not None else (), tuple(members)))
    groups.sort(key=lambda g: (-len(g.members), _order(g.members[0])))
    odd: tuple[StackGroup, ...] = ()
    if len(groups) > 1 and len(groups[0].members) > len(groups[1].members):
        odd = tuple(groups[1:])
    failures = tuple(f for n in nodes for f in n.failures)
    return StackSummary(tuple(groups), odd, failures)


def format_dump(job_id: str, nodes: Sequence[NodeReport], summary: StackSummary,
                collected_at: str) -> str:
    """The full dump attached to the thread: the groups, then every rank's threads, then
    what a node left out to keep its report bounded (one `truncated on` line per node)."""
    lines = [f"Python stacks of job {job_id}, collected {collected_at} with py-spy", ""]
    for i, g in enumerate(summary.groups, 1):
        lines.append(f"group {i}: {len(g.members)} × {', '.join(g.ranks)} "
                     f"on {', '.join(g.hosts)}")
        lines.extend(f"    {f.label}" for f in g.frames)
    for f in summary.failures:
        who = f"rank {f.rank}" if f.rank is not None else \
            (f"pid {f.pid}" if f.pid is not None else "node")
        lines.append(f"not read: {who} on {f.host}: {f.cause} {f.detail}".rstrip())
    stacks = sorted((s for n in nodes for s in n.stacks), key=_order)
    for s in stacks:
        step = f", step {s.step}" if s.step is not None else ""
        lines += ["", f"=== {s.who} (pid {s.pid}) on {s.host}{step}: {s.cmd}".rstrip()]
        for t in s.threads:
            state = "active" if t.active else "idle"
            lines.append(f"Thread {t.thread_id} ({state}): \"{t.name}\"")
            lines.extend(f"    {f.label}" for f in t.frames)
    cut = [n for n in nodes if n.truncated is not None]
    if cut:
        lines += [""] + [
            f"truncated on {n.host}: {n.truncated.threads} thread(s) other than the main "
            f"ones and the stacks of {n.truncated.procs} process(es) left out, to keep "
            f"within the node's {n.truncated.share}-byte share of what the collection sends "
            f"back" for n in cut if n.truncated is not None]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class StackReport:
    """One collection's result: the summary when stacks were read, else `problem`; the
    full dump text (empty without stacks)."""

    job_id: str
    summary: StackSummary | None
    problem: ProcessFailure | None
    dump: str = ""
    nodes: tuple[NodeReport, ...] = field(default=(), repr=False)

    def to_view(self) -> dict[str, Any]:
        problem = self.problem
        return {"job_id": self.job_id,
                "summary": self.summary.to_view() if self.summary is not None else None,
                "problem": None if problem is None else {
                    "cause": problem.cause, "detail": problem.detail, "host": problem.host}}


def build_report(job_id: str, exit_code: int | None, stdout: str, stderr: str, *,
                 collected_at: str) -> StackReport:
    """The report of one collection from the srun's exit code (None: timed out), stdout and
    stderr."""
    nodes = parse_node_output(stdout)
    problem = collection_problem(exit_code, stderr, nodes)
    if problem is not None:
        return StackReport(job_id, None, problem, "", tuple(nodes))
    summary = summarize(nodes)
    return StackReport(job_id, summary, None,
                       format_dump(job_id, nodes, summary, collected_at), tuple(nodes))
