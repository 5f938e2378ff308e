"""One diagnosis per job: catalogue matches + Slurm accounting + detectors -> `Diagnosis`."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

import numpy as np

from bot.core.catalogue.scanner import normalize_line
from bot.core.detectors import (
    LeakFinding,
    SilentExitFinding,
    StallFinding,
    detect_checkpoint_oom,
    detect_leak,
    detect_silent_exit,
    detect_stall,
    leak_trend,
)
from bot.core.metrics import (
    MetricSeries,
    clean_line,
    compile_bytes_scanner,
    newline_offsets,
)
from bot.core.models import (
    MEMORY_CLASSES,
    Accounting,
    Action,
    Diagnosis,
    DiagnosisMetrics,
    Evidence,
    UpstreamCause,
)
from bot.core.nodes import node_in
from bot.core.policy import DEFAULT_POLICY
from bot.core.units import GIB

CHUNK_BYTES = 16 << 20  # analyze_file reads this much at a time
MAX_LINE_BYTES = 1 << 20  # a "line" longer than this is cut (binary junk, no newlines)
_FIRST_KEEP = 5  # matches kept per class: the first few ...
_LAST_KEEP = 20  # ... and the latest ones
_EVIDENCE_MAX = 6

# What decided a diagnosis (Diagnosis.decided_by): how far a person may trust it.
SIGNATURE = "signature"  # a decisive catalogue line (or a completion marker)
HINT = "hint"  # only how the log ends: a traceback, a native abort, a launcher's exit line
ACCOUNTING = "accounting"  # only Slurm's State / exit code: the log does not say why
DETECTOR = "detector"  # a measured trend: stalled progress, growing memory, too little work
PROGRESS = "progress"  # the log's progress lines (running, or the target reached)

#: Faults of a node (its GPU, the node itself, a collective timed out on it): resubmitted
#: elsewhere, with --exclude=<node> when the log names it.
NODE_CLASSES = frozenset({"gpu_failure", "node_failure", "nccl_timeout"})

# Class ids trainbot uses beyond the catalogue's failure classes.
NONE_CLASS = "none"  # a running job with nothing to report
_ACCOUNTING_FIRST = ("node_failure", "preempted", "time_limit")
# Not started (or waiting to start again): judged like a running job.
_NOT_STARTED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "RESIZING"})
_WRAPPER = re.compile(
    r"ChildFailedError|exitcode\s*:\s*-6|Signal 6 \(SIGABRT\)|Fatal Python error: Aborted"
)
# The last words of a process that died of an unhandled error, where no catalogue hint is:
# a Python exception line, an ERROR/FATAL line, a failed exec, or any line that reports an
# error, a failure or an abort (not a warning). Lines pasted into issues and chats keep their
# quoting (`backticks`, "> ", "* "), so it may come first.
_ERROR_LINE = re.compile(
    r"^[\s`'\">|*#-]*(?!.*(?:[Ww]arning|WARNING|WARN\b))"
    r"(?:[A-Za-z0-9_.]*(?:Error|Exception|Interrupt)\b|(?:ERROR|FATAL|Fatal)\b"
    r"|.*(?:No such file or directory|Permission denied|[Kk]illed)\W*$"
    # a shell that cannot run the command: `bash: torchrun: command not found`, `command
    # torchrun not found`, dash's `sh: 1: torchrun: not found`
    r"|.*(?:command (?:[^\s:]+ )?not found|[^\s:]+: not found\W*$)"
    r"|.*\b(?:[Ee]rror|ERROR|[Ff]ailed|FAILED|[Ff]ailure|FAILURE|[Aa]bort(?:ed|ing)?|ABORT"
    r"|[Ii]llegal|[Ss]egmentation fault|core dumped)\b|.*[a-z](?:Error|Exception)\b)"
)
#: A log (no accounting) that ends in an error whose only specific hint is of one of these
#: classes ended of that cause: a bare `Killed` (host OOM); the training framework's own
#: announcement that it caught the scheduler's signal and requeues (Lightning's `Handling
#: auto-requeue signal`, submitit's `Bypassing signal SIGTERM` ... `Requeued job`); an
#: exhausted allocator whose message is cut off (TensorFlow's `ResourceExhaustedError`).
_DECIDED_BY_LAST_HINT = frozenset({"host_oom", "time_limit", "preempted", "cuda_oom"})
# A rank SIGKILLed (the kernel's OOM killer, when nothing else is said) as launchers report it.
_SIGKILLED = re.compile(r"\(exitcode\s*:\s*-9\)|Signal 9 \(SIGKILL\)"
                        r"|terminated with signal SIGKILL|died with <Signals\.SIGKILL: 9>"
                        r"|\b(?:error|exit|return) code\s*[=:]?\s*-9\b")
# A rank killed by SIGBUS as launchers report it: in a training process that is a write to a
# full /dev/shm (DataLoader batches, NCCL's shared-memory transport), whose fix is the shared
# memory one (the DataLoader worker class's).
_SIGBUSED = re.compile(
    r"\(exitcode\s*:\s*-7\)|exitcode\s*:\s*-7 |Signal 7 \(SIGBUS\)|exits with return code = -7\b"
    r"|terminated with signal SIGBUS|died with <Signals\.SIGBUS: 7>")
# A DataLoader worker that died of exhausted shared memory (/dev/shm), not of host RAM.
_SHM = re.compile(r"[Bb]us error|shared memory|</torch_[^>]*>")
_FINAL_SAVE = re.compile(r"Saving checkpoints? for ([0-9]+) into ")
# An epoch counter with its total: `Epoch 3/49`, `Epoch [3/250]`, `[Epoch 10/250]`, and YOLO's
# epoch column before the GPU memory (`      3/49     11.9G    0.0217 ...`).
_EPOCH_OF = re.compile(r"\b[Ee]poch\s*[:\[(]?\s*(\d+)\s*/\s*(\d+)\b"
                       r"|^\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G\s")
_CHECKPOINT_WORDS = re.compile(r"checkpoint|ckpt|dcp|state.dict", re.IGNORECASE)

# Used when a class id is missing from the catalogue (e.g. `none`: its `detail` says how it
# runs, with no hint after it).
_DEFAULTS: dict[str, tuple[Action, bool, bool, str]] = {
    NONE_CLASS: (Action.NONE, False, False, ""),
}
_LOW_GPU_UTIL_PCT = 70  # a running job's detail mentions a GPU utilisation below this


class _Block(NamedTuple):
    """Complete lines `data[start:end]` (offsets avoid copying a 16 MiB chunk)."""

    data: bytes
    start: int
    end: int


class _Scan(NamedTuple):
    newlines: np.ndarray
    candidates: list[tuple[int, bool]] | None  # None: no RE2, use catalogue.scan_block


@dataclass
class _ClassMatches:
    first: list[Any] = field(default_factory=list)
    last: deque[Any] = field(default_factory=lambda: deque(maxlen=_LAST_KEEP))
    count: int = 0

    def add(self, m: Any) -> None:
        self.count += 1
        if len(self.first) < _FIRST_KEEP:
            self.first.append(m)
        else:
            self.last.append(m)

    def all(self) -> list[Any]:
        return self.first + list(self.last)


class LogAnalysis:
    """Incremental analysis of one log: feed bytes as they arrive, diagnose on demand.

    Memory is bounded: the series downsamples (see bot.core.metrics), matches keep the first
    and last few per class, and only the last `tail_lines` lines are kept as text.
    """

    def __init__(
        self,
        catalogue: Any,
        *,
        extra_patterns: Sequence[str] = (),
        tail_lines: int = 40,
        max_samples: int = 4096,
        fast_scan: bool = True,
    ) -> None:
        self.catalogue = catalogue
        self.series = MetricSeries(max_samples=max_samples, extra_patterns=extra_patterns)
        self.tail: deque[tuple[int, str]] = deque(maxlen=tail_lines)
        self.lines = 0  # complete lines consumed so far
        self.bytes = 0
        self._by_class: dict[str, _ClassMatches] = {}
        self._carry = b""
        self._recent: dict[tuple[str, int], None] = {}  # dedupe of overlapping windows
        self._prefilter = self._signatures = None
        if fast_scan:
            self._prefilter, self._signatures = _build_prefilter(catalogue) or (None, None)

    # feeding ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Feed the next bytes of the log; a trailing partial line waits for the rest."""
        for block in self._split(data):
            self._apply(block, self._prepare(block))

    def finish(self) -> None:
        """End of input: the partial last line (no final newline) counts as a line."""
        for block in self._split_final():
            self._apply(block, self._prepare(block))

    def feed_text(self, text: str) -> None:
        self.feed(text.encode("utf-8", "replace"))

    def add_rss(self, rss_bytes: int, *, source: str, time: float | None = None) -> bool:
        """A host RSS measured outside the log (sstat) at the current line and iteration;
        False when there is no progress line yet to place it at (see MetricSeries.add_rss)."""
        return self.series.add_rss(rss_bytes, source=source, time=time) is not None

    def _split(self, data: bytes) -> list[_Block]:
        """Blocks of complete lines in `data` (plus the carried partial line), no big copies."""
        if not data:
            return []
        self.bytes += len(data)
        blocks: list[_Block] = []
        start = 0
        if self._carry:
            nl = data.find(b"\n")
            if nl == -1:
                self._carry += data
                if len(self._carry) > MAX_LINE_BYTES:  # no newline for too long: cut it
                    head, self._carry = self._carry + b"\n", b""
                    blocks.append(_Block(head, 0, len(head)))
                return blocks
            head = self._carry + data[: nl + 1]
            self._carry = b""
            blocks.append(_Block(head, 0, len(head)))
            start = nl + 1
        last_nl = data.rfind(b"\n", start)
        if last_nl == -1:
            self._carry = data[start:]
            return blocks
        if last_nl + 1 > start:
            blocks.append(_Block(data, start, last_nl + 1))
        self._carry = data[last_nl + 1 :]
        return blocks

    def _split_final(self) -> list[_Block]:
        if not self._carry:
            return []
        carry, self._carry = self._carry, b""
        return [_Block(carry + b"\n", 0, len(carry) + 1)]

    def _prepare(self, block: _Block) -> _Scan:
        """The C-speed part of a block (newline offsets, DFA candidates); touches no state,
        so `analyze_file` runs it for the next block while this one is applied."""
        data, start, end = block
        newlines = newline_offsets(data, start, end)
        candidates: list[tuple[int, bool]] = []  # (line index, may hold a signature)
        if self._prefilter is None:
            return _Scan(newlines, None)
        pos = start
        search = self._prefilter.search
        signature_search = self._signatures.search
        while pos < end:
            m = search(data, pos, end)
            if m is None:
                break
            idx = int(np.searchsorted(newlines, m.start()))
            line_end = int(newlines[idx]) if idx < len(newlines) else end
            # Leftmost hit was a checkpoint word: does the rest of the line hold a signature?
            signature = m.group(1) is not None or (
                signature_search(data, m.end(), line_end) is not None
            )
            candidates.append((idx, signature))
            pos = line_end + 1
        return _Scan(newlines, candidates)

    def _apply(self, block: _Block, scan: _Scan) -> None:
        """The Python part of a block: signatures of candidate lines, metrics, tail."""
        data, start, end = block
        newlines = scan.newlines
        first = self.lines + 1
        event_offsets: list[int] | None = None
        if scan.candidates is not None:
            event_offsets = self._match_candidates(block, newlines, scan.candidates, first)
        else:
            text = data[start:end].decode("utf-8", "replace")
            for m in self.catalogue.scan_block(text, first):
                self._add_match(m)
        self.series.feed_block(
            data, first, start=start, end=end, newlines=newlines, event_offsets=event_offsets
        )
        # The last lines, for evidence when nothing else explains a failure.
        n = len(newlines)
        k = min(n, self.tail.maxlen or 0)
        tail_start = start if k >= n else int(newlines[n - k - 1]) + 1
        for i, line in enumerate(data[tail_start:end].decode("utf-8", "replace").split("\n")[:k]):
            self.tail.append((first + n - k + i, line.rstrip("\r")))
        self.lines += n

    def _match_candidates(
        self,
        block: _Block,
        newlines: np.ndarray,
        candidates: list[tuple[int, bool]],
        first: int,
    ) -> list[int]:
        """Run the catalogue on candidate lines (with neighbours); offsets of save lines."""
        data, start, end = block
        event_offsets: list[int] = []
        n_lines = len(newlines) + (1 if end > start and data[end - 1] != 10 else 0)

        def line_at(i: int) -> tuple[int, str]:
            a = start if i == 0 else int(newlines[i - 1]) + 1
            b = int(newlines[i]) if i < len(newlines) else end
            return a, data[a:b].decode("utf-8", "replace")

        for idx, signature in candidates:
            a, line = line_at(idx)
            if _CHECKPOINT_WORDS.search(line):
                event_offsets.append(a)
            if not signature:
                continue
            # With its neighbours, so that a hard-wrapped signature is joined as in scan().
            lo, hi = max(0, idx - 1), min(n_lines - 1, idx + 1)
            window = [line_at(i)[1] if i != idx else line for i in range(lo, hi + 1)]
            for match in self.catalogue.scan(window, first + lo):
                self._add_match(match)
        return event_offsets

    def _add_match(self, m: Any) -> None:
        key = (m.class_id, m.line_no)
        if key in self._recent:
            return
        self._recent[key] = None
        if len(self._recent) > 256:
            del self._recent[next(iter(self._recent))]
        self._by_class.setdefault(m.class_id, _ClassMatches()).add(m)

    # results ---------------------------------------------------------------------------

    def log_now(self, idle_wall_s: float) -> float | None:
        """`now` on the log's own clock for a watcher: the last log time plus the wall
        seconds since the log last grew. Log timestamps may be in any time zone (they are
        read as UTC), so a watcher must not compare them with its wall clock directly."""
        last = self.series.last_time
        return None if last is None else last + max(0.0, idle_wall_s)

    @property
    def matches(self) -> list[Any]:
        """Kept catalogue matches in line order."""
        out = [m for c in self._by_class.values() for m in c.all()]
        return sorted(out, key=lambda m: m.line_no)

    def diagnose(
        self,
        accounting: Accounting | None = None,
        *,
        now: float | None = None,
        target_iter: int | None = None,
        **options: Any,
    ) -> Diagnosis:
        """Diagnose what was fed so far (call `finish()` first at end of input)."""
        return diagnose(
            self.catalogue,
            matches=self.matches,
            series=self.series,
            tail=list(self.tail),
            accounting=accounting or Accounting(),
            now=now,
            target_iter=target_iter,
            **options,
        )


def _unanchored(pattern: str) -> str:
    """The pattern for a scan of whole blocks of raw lines: `^` dropped (a raw line keeps its
    prefixes; dropping an anchor only widens a prefilter) and `$` also matching before the
    newline (in RE2 it matches only at the end of the block), outside character classes."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]" or out[-1] == "[" or out[-2:] == ["[", "^"]
        elif ch == "[":
            in_class = True
        elif ch == "^":
            i += 1
            continue
        elif ch == "$":
            ch = r"(?:\n|$)"
        out.append(ch)
        i += 1
    return "".join(out)


def _build_prefilter(catalogue: Any) -> tuple[Any, Any] | None:
    """One RE2 pattern for every catalogue pattern (anchors dropped: lines are raw, with
    prefixes), the catalogue's long triggers and ANSI escapes (lines that need normalizing)
    as group 1, then checkpoint words; and the group-1 part alone.

    None when RE2 is missing or rejects a pattern: then the catalogue's own scan_block runs.
    """
    try:
        patterns = list(catalogue.grep_patterns())
    except AttributeError:
        return None
    parts = [f"(?:{_unanchored(p)})" for p in patterns]
    # The catalogue's literal triggers of 5+ characters: the halves of a hard-wrapped
    # signature (scan() joins the line with its neighbours).
    triggers = getattr(catalogue, "triggers", lambda: ())()
    parts += [re.escape(t) for t in triggers if len(t) >= 5]
    parts.append("\x1b")
    signatures = "(" + "|".join(parts) + ")"
    combined = compile_bytes_scanner(
        (signatures + "|(?i:checkpoint|ckpt|dcp|state.dict)").encode()
    )
    only = compile_bytes_scanner(signatures.encode())
    if isinstance(combined, re.Pattern) or isinstance(only, re.Pattern):
        return None  # no RE2: the catalogue's scan_block is the better slow path
    return combined, only


def analyze_file(
    stream: IO[bytes],
    catalogue: Any,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    pipeline: bool = True,
    **options: Any,
) -> LogAnalysis:
    """Stream a whole log through a `LogAnalysis` in `chunk_bytes` reads (bounded memory)."""
    analysis = LogAnalysis(catalogue, **options)
    if not pipeline:
        while chunk := stream.read(chunk_bytes):
            analysis.feed(chunk)
        analysis.finish()
        return analysis
    # Two-stage pipeline: the DFA scan and newline offsets of block k+1 (C code that releases
    # the GIL) run in one worker thread while block k's metrics are parsed here. Same
    # results as feeding sequentially; at most three chunks are held at once.
    pending: deque[tuple[_Block, Future[_Scan]]] = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainbot-scan") as pool:
        while True:
            chunk = stream.read(chunk_bytes)
            blocks = analysis._split(chunk) if chunk else analysis._split_final()
            pending.extend((b, pool.submit(analysis._prepare, b)) for b in blocks)
            while len(pending) > (1 if chunk else 0):
                block, scan = pending.popleft()
                analysis._apply(block, scan.result())
            if not chunk:
                break
    return analysis


# --- the decision -----------------------------------------------------------------------


def diagnose(
    catalogue: Any,
    *,
    matches: Iterable[Any],
    series: MetricSeries,
    tail: Sequence[tuple[int, str]] = (),
    accounting: Accounting | None = None,
    now: float | None = None,
    target_iter: int | None = None,
    stall_min_s: float = DEFAULT_POLICY.stall_min_s,
    stall_factor: float = DEFAULT_POLICY.stall_factor,
    save_time_s: float = DEFAULT_POLICY.save_time_s,
    leak_min_samples: int = DEFAULT_POLICY.leak_min_samples,
    leak_warn_margin: float = DEFAULT_POLICY.leak_warn_margin,
    min_elapsed_s: float = 60.0,
) -> Diagnosis:
    """ONE diagnosis from catalogue matches, the metric series and accounting.

    `now` is the time on the log's clock at which a running job is judged (default: the
    last timestamp in the log). `target_iter` defaults to what the log printed (`/8000`).
    The thresholds are a policy's (bot.core.policy.PolicyParams, same names; its defaults).
    """
    acct = accounting or Accounting()
    matches = sorted(matches, key=lambda m: m.line_no)
    target = target_iter if target_iter is not None else series.target_iter
    judge_at = now if now is not None else series.last_time
    primary = [m for m in matches if m.primary and m.class_id in catalogue.classes]
    failed_classes = {m.class_id for m in primary} - {"completed"}
    state_classes = _deciding_accounting(catalogue, acct, matches)

    trend = leak_trend(series, acct.mem_limit_bytes)
    leak = detect_leak(series, acct.mem_limit_bytes, target_iter=target, trend=trend,
                       min_samples=leak_min_samples, warn_margin=leak_warn_margin)
    secondary: list[str] = []
    upstream: UpstreamCause | None = None
    stall: StallFinding | None = None
    during_save = False
    evidence: list[Evidence] = []
    silent: SilentExitFinding | None = None

    chosen = _choose(catalogue, failed_classes, state_classes, acct)
    decided_by = (SIGNATURE if chosen in failed_classes else ACCOUNTING) if chosen else PROGRESS
    running = acct.is_running or acct.state in _NOT_STARTED or (
        acct.state is None and chosen is None
    )

    if chosen is None and running:
        stall = detect_stall(
            series, judge_at, min_s=stall_min_s, factor=stall_factor, save_time_s=save_time_s
        )
        if stall is not None:
            chosen, decided_by = "hang", DETECTOR
            evidence = [Evidence(stall.last_line, stall.last_text)]
        elif leak is not None:
            chosen, decided_by = "memory_leak", DETECTOR
            evidence = _leak_evidence(leak)
        elif acct.state is None and (ended := _ends_in_error(matches, tail, series)):
            chosen, decided_by = ended, HINT  # no accounting; the log ends in an error
        elif acct.state is None and (
            (_target_reached(series, target)
             and (target_iter is not None or not _epochs_left(tail)))
            or "completed" in {m.class_id for m in primary}
            or _ends_in_final_save(series, tail)
        ):
            chosen = "completed"
            if "completed" in {m.class_id for m in primary}:
                decided_by = SIGNATURE
        else:
            chosen = NONE_CLASS
    elif chosen is None:
        chosen, silent = _settle_finished(
            catalogue, acct, series, matches, target, min_elapsed_s
        )
        decided_by = DETECTOR if silent is not None else ACCOUNTING

    abort = next((m for m in primary if m.class_id == "nccl_timeout"), None)
    if chosen == "nccl_timeout" and abort is not None:
        abort_time = _line_time(series, abort.text) or judge_at
        stall = detect_stall(
            series, abort_time, min_s=stall_min_s, factor=stall_factor, save_time_s=save_time_s
        )
        if stall is not None and stall.last_line < abort.line_no:
            upstream = UpstreamCause(
                class_id="hang",
                started_at=stall.started_at,
                last_iter=stall.last_iter,
                seconds_before_failure=stall.stalled_s,
            )
            secondary.append("hang")
            evidence.append(Evidence(stall.last_line, stall.last_text))
    if chosen == "host_oom":
        oom_lines = [m.line_no for m in primary if m.class_id == "host_oom"]
        finding = detect_checkpoint_oom(series, oom_lines[0] if oom_lines else None)
        if finding is not None:
            during_save = True
            evidence.append(Evidence(finding.save.start_line, finding.save.start_text))

    # A fault of the node itself: which node, so a resubmit can avoid it (--exclude).
    # An NCCL timeout only when its own lines trace it to one node.
    node = None
    if chosen in NODE_CLASSES:
        lines = [e.text for e in evidence]
        node = node_in(lines if chosen == "nccl_timeout" else lines + [t for _, t in tail])
    leak_fit = None
    if chosen in MEMORY_CLASSES and trend is not None and detect_leak(
            series, None, trend=trend, min_samples=leak_min_samples) is not None:
        start_iter = trend.finding.first.iteration or 0
        leak_fit = {"slope_gib_per_100_iter": round(trend.slope_gib_per_100_iter, 3),
                    "start_iter": start_iter,
                    "start_gib": round(trend.intercept_gib
                                       + trend.slope_gib_per_iter * start_iter, 2)}

    if chosen == "silent_exit":
        evidence += [Evidence(m.line_no, m.text) for m in matches
                     if m.class_id not in ("completed",)][:_EVIDENCE_MAX]
    evidence += [Evidence(m.line_no, m.text) for m in primary if m.class_id == chosen]
    evidence += [Evidence(m.line_no, m.text) for m in matches
                 if not m.primary and m.class_id == chosen]
    if chosen in ("unknown_failure", "silent_exit") and len(evidence) < _EVIDENCE_MAX:
        evidence += [Evidence(n, t) for n, t in tail[-10:] if t.strip()]

    for cid in sorted(failed_classes, key=lambda c: -_priority(catalogue, c)):
        if cid != chosen and cid not in secondary:
            secondary.append(cid)
    if leak is not None and chosen != "memory_leak" and "memory_leak" not in secondary:
        secondary.append("memory_leak")
    for cid in state_classes:
        if cid not in (chosen, "completed", "unknown_failure") and cid not in secondary:
            secondary.append(cid)
    completed_ok = acct.state == "COMPLETED" and not acct.exit_code and not acct.signal
    if completed_ok and chosen not in ("completed", "silent_exit", NONE_CLASS):
        secondary.append("silent_exit")  # Slurm said COMPLETED 0:0 although this failed

    stall_seconds = None
    if upstream is not None:
        stall_seconds = upstream.seconds_before_failure
    elif stall is not None:
        stall_seconds = stall.stalled_s
    metrics = DiagnosisMetrics(
        last_iter=series.last_iteration,
        target_iter=target,
        sec_per_iter=_round(series.sec_per_iter(), 3),
        last_loss=series.last_loss,
        rss_gib_per_100_iter=_round(trend.slope_gib_per_100_iter, 2) if trend else None,
        projected_oom_iter=leak.projected_oom_iter if leak else None,
        stall_seconds=_round(stall_seconds, 1),
    )
    action, retryable, charges, hint = _class_info(catalogue, chosen)
    cls = catalogue.classes.get(chosen)
    return Diagnosis(
        class_id=chosen,
        action=action,
        retryable=retryable,
        charges_budget=charges,
        hint=hint,
        title=cls.title if cls is not None else "",
        detail=case_detail(chosen, series, leak, stall, upstream, during_save, silent,
                           shm=chosen == "dataloader_worker_killed" and any(
                               _SHM.search(m.text) for m in matches)),
        translations=dict(getattr(cls, "translations", None) or {}),
        evidence=_dedupe(evidence),
        secondary=tuple(secondary),
        metrics=metrics,
        upstream=upstream,
        during_checkpoint_save=during_save,
        decided_by=decided_by,
        leak_fit=leak_fit,
        node=node,
    )


def _deciding_accounting(catalogue: Any, acct: Accounting, matches: Sequence[Any]) -> list[str]:
    """Classes sacct decides: a State (OUT_OF_MEMORY, TIMEOUT, ...) always; an exit code or
    signal (137, 9, 6) only when the log has a hint of the same class that is not a mere
    wrapper line (`ChildFailedError`, `exitcode: -6`, `Signal 6 (SIGABRT)`)."""
    if acct.state is None and acct.exit_code is None and acct.signal is None:
        return []
    logged = {m.class_id for m in matches if not _WRAPPER.search(m.text)}
    out = []
    for am in catalogue.accounting_matches(acct.state, acct.exit_code, acct.signal):
        if am.class_id in catalogue.classes and (am.primary or am.class_id in logged):
            out.append(am.class_id)
    return list(dict.fromkeys(out))


def _priority(catalogue: Any, class_id: str) -> int:
    cls = catalogue.classes.get(class_id)
    return int(getattr(cls, "priority", 0)) if cls is not None else 0


def _choose(
    catalogue: Any, failed: set[str], state_classes: list[str], acct: Accounting
) -> str | None:
    """The class from decisive evidence, or None when only detectors can tell."""
    decisive = set(failed)
    for cid in state_classes:
        if cid not in ("completed", "unknown_failure"):
            decisive.add(cid)
    # Scheduler verdicts explain the end even when the log shows collateral errors.
    for cid in _ACCOUNTING_FIRST:
        if cid in state_classes:
            return cid
    if not decisive:
        return None
    return max(decisive, key=lambda c: _priority(catalogue, c))


def _settle_finished(
    catalogue: Any,
    acct: Accounting,
    series: MetricSeries,
    matches: Sequence[Any],
    target: int | None,
    min_elapsed_s: float,
) -> tuple[str, SilentExitFinding | None]:
    """A finished job with no primary failure signature: completed, silent_exit (with its
    finding) or unknown_failure."""
    if acct.state == "COMPLETED" and acct.exit_code in (0, None) and acct.signal in (0, None):
        finding = detect_silent_exit(
            acct, series, matches, target_iter=target, min_elapsed_s=min_elapsed_s
        )
        if finding is not None:
            return "silent_exit", finding
        return "completed", None
    return "unknown_failure", None


def _ends_in_error(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> str | None:
    """The class of the unhandled error a log ends in, None when it does not: a hint
    (traceback, native abort, launcher or wrapper exit line) or an error line among its last
    lines and no progress line after it. A log that ends in progress is running (`none`),
    whatever errors it printed and survived before. The error is `unknown_failure` unless the
    last hint is one that names its cause when nothing follows it (a bare `Killed`: host OOM;
    the framework requeueing the job on the scheduler's signal: time limit or preemption;
    TensorFlow's `ResourceExhaustedError` without its message: a device OOM), or
    the launcher reports ranks killed by a signal and nothing else (SIGBUS: /dev/shm exhausted,
    the DataLoader worker class; SIGKILL: host OOM)."""
    if not tail:
        return None
    done = [m.line_no for m in matches if m.class_id == "completed"]
    after = max(tail[0][0], series.samples[-1].line_no if series.samples else 0,
                done[-1] if done else 0)
    hints = [m for m in matches
             if not m.primary and m.line_no >= after and m.class_id != "completed"]
    errors = [normalize_line(t) for n, t in tail if n >= after]
    # The error block names its cause when its only specific hint is one of these (a bare
    # `Killed`), or when nothing but a rank SIGKILLed and the launcher's traceback around it.
    specific = {m.class_id for m in hints} - {"unknown_failure"}
    if not specific and any(_SIGBUSED.search(t) for t in errors):
        return "dataloader_worker_killed"
    if not specific and any(_SIGKILLED.search(t) for t in errors):
        return "host_oom"
    if len(specific) == 1 and specific <= _DECIDED_BY_LAST_HINT:
        return next(iter(specific))
    if hints or any(_ERROR_LINE.match(t) for t in errors):
        return "unknown_failure"
    return None


def _ends_in_final_save(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """The log ends with the checkpoint a TensorFlow Estimator (or Keras/Slim's
    `Saving checkpoints for N into`) writes when training stops: its step is past the last
    progress line and off the progress lines' step grid (a periodic save of a running job
    lands on the grid or is followed by more progress)."""
    lines = [t for _, t in tail if t.strip()]
    m = _FINAL_SAVE.search(lines[-1]) if lines else None
    every, last = series.log_every(), series.last_iteration
    if m is None or last is None or every <= 1:
        return False
    step = int(m.group(1))
    return step > last and step % every != 0


def _epochs_left(tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last epoch counter is short of its total (0- or 1-based alike: `3/49`), so a
    progress bar at 100 % is one epoch's (or a validation pass's), not the run's target."""
    for _, text in reversed(tail):
        m = _EPOCH_OF.search(normalize_line(text))
        if m is not None:
            done, total = (int(g) for g in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
            return 0 < total and done < total - 1
    return False


def _target_reached(series: MetricSeries, target: int | None) -> bool:
    return target is not None and series.last_iteration is not None and (
        series.last_iteration >= target
    )


def _line_time(series: MetricSeries, text: str) -> float | None:
    return series.parser.clock.parse(clean_line(text))


def _leak_evidence(leak: LeakFinding) -> list[Evidence]:
    return [Evidence(leak.first.line_no, leak.first.text), Evidence(leak.last.line_no,
                                                                    leak.last.text)]


def _class_info(catalogue: Any, class_id: str) -> tuple[Action, bool, bool, str]:
    cls = catalogue.classes.get(class_id)
    if cls is None:
        return _DEFAULTS.get(class_id, (Action.ASK, False, True, ""))
    return Action(cls.action), bool(cls.retryable), bool(cls.charges_budget), cls.hint.strip()


def case_detail(
    class_id: str,
    series: MetricSeries,
    leak: LeakFinding | None,
    stall: StallFinding | None,
    upstream: UpstreamCause | None,
    during_save: bool,
    silent: SilentExitFinding | None,
    *,
    shm: bool = False,
) -> dict[str, Any] | None:
    """This case's figures that the explanation states before the catalogue's hint (the
    templates word them: templates/_common.j2 `detail_text`); None when there are none."""
    if silent is not None:
        return {"kind": "silent_exit", "reasons": silent.reasons()}
    if class_id == "memory_leak" and leak is not None:
        return {"kind": "leak", "slope_gib_per_100_iter": leak.slope_gib_per_100_iter,
                "rss_now_gib": leak.rss_now_bytes / GIB,
                "limit_gib": leak.limit_bytes / GIB if leak.limit_bytes else None,
                "projected_oom_iter": leak.projected_oom_iter}
    if class_id == "hang" and stall is not None:
        return {"kind": "stall", "last_iter": stall.last_iter, "stalled_s": stall.stalled_s,
                "threshold_s": stall.threshold_s,
                "open_save_line": stall.open_save.start_line if stall.open_save else None}
    if upstream is not None:
        return {"kind": "upstream", "last_iter": upstream.last_iter,
                "seconds_before_failure": upstream.seconds_before_failure}
    if class_id == "host_oom" and during_save:
        return {"kind": "saving"}
    if shm:
        return {"kind": "shm"}
    if class_id == NONE_CLASS:
        utils = [s.gpu_util for s in series.samples[-50:] if s.gpu_util is not None]
        util = sum(utils) / len(utils) if utils else None
        return {"kind": "running", "last_iter": series.last_iteration,
                "sec_per_iter": series.sec_per_iter(),
                "low_gpu_util_pct": util if util is not None and util < _LOW_GPU_UTIL_PCT
                else None}
    return None


def _dedupe(evidence: list[Evidence]) -> tuple[Evidence, ...]:
    seen: set[int] = set()
    out = []
    for e in evidence:
        if e.line in seen:
            continue
        seen.add(e.line)
        out.append(Evidence(e.line, e.text.rstrip()))
        if len(out) >= _EVIDENCE_MAX * 2:
            break
    return tuple(sorted(out, key=lambda e: e.line))


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
