"""The streaming scan of one log: bytes in, bounded state out.

`LogAnalysis` is fed a log's bytes as they arrive (a watcher feeds each tick's new bytes;
`analyze_file` streams a whole file in large chunks, the DFA scan of the next block in a worker
thread). Bytes are cut into blocks of complete lines (`(data, start, end)` offsets, no copies);
one RE2 prefilter over every catalogue pattern picks the lines that go through the catalogue's
own scan (with their neighbours, for hard-wrapped signatures); every block feeds the metric
series (bot.core.metrics: the last run's, in a requeued job's log of several). What is kept
is bounded: the first and last few matches per class, the downsampled series and the last
lines as text. `LogAnalysis.diagnose` hands that state to the decision
(bot.core.diagnose.decide).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from bot.core.detectors import (
    EVALUATION_START,
    TRAINING_GOES_ON,
    opens_evaluation,
    training_goes_on,
)
from bot.core.diagnose.closing_summary import CLOSING_WORDS, ClosingShapes
from bot.core.diagnose.decide import diagnose
from bot.core.diagnose.epilogue import EPILOGUE_LINE, EPILOGUE_REACH
from bot.core.metrics import MetricSeries, compile_bytes_scanner, newline_offsets
from bot.core.models import Accounting, Diagnosis
from bot.core.outer_loop import OUTER_LOCATOR, keeps_outer_line

CHUNK_BYTES = 16 << 20  # analyze_file reads this much at a time
MAX_LINE_BYTES = 1 << 20  # a "line" longer than this is cut (binary junk, no newlines)
_FIRST_KEEP = 5  # matches kept per class: the first few ...
_LAST_KEEP = 20  # ... and the latest ones
_EPILOGUE_KEEP = 32  # the latest lines that may be an epilogue's
_OUTER_KEEP = 8  # the latest lines with an outer loop's counter (`Fold 1/5`)
_CHECKPOINT_WORDS = re.compile(r"checkpoint|ckpt|dcp|state.dict", re.IGNORECASE)
# The framework opening its evaluation (detectors.EVALUATION_START), found in the raw bytes
_EVALUATION_LOCATOR = compile_bytes_scanner(EVALUATION_START.pattern.encode())


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
        # the line of the last evaluation the framework opened after the last run's first
        # completion marker (looked for from that marker on, however long the evaluation's
        # log is)
        self.evaluation_start: int | None = None
        # the line of the last line from there on that says training goes on after a marker
        # (Lightning's `Training will continue...`, fastai's next fit's table header)
        self.goes_on_at: int | None = None
        self.goes_on_text: str | None = None  # that line's text
        self.bytes = 0
        self._by_class: dict[str, _ClassMatches] = {}
        self._carry = b""
        self._recent: dict[tuple[str, int], None] = {}  # dedupe of overlapping windows
        # lines that may be a batch system's epilogue (bot.core.diagnose.epilogue), numbered
        self._epilogue: deque[tuple[int, str]] = deque(maxlen=_EPILOGUE_KEEP)
        # the first line of each shape among lines with a closing word (a finished run's own
        # summary: bot.core.diagnose.closing_summary)
        self.closing_shapes = ClosingShapes()
        # the latest lines, numbered, with an outer loop's counter and its total (`Fold 1/5`,
        # `Running seed 1 of 3`) or a k-fold loop's fold count (`Running 10-fold CV`), however
        # far before the tail (bot.core.outer_loop.keeps_outer_line)
        self.outer_headers: deque[tuple[int, str]] = deque(maxlen=_OUTER_KEEP)
        # (the RE2 prefilter, its signatures-only part); None: the catalogue's own scan
        self._prefilter = _build_prefilter(catalogue) if fast_scan else None

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
        search = self._prefilter[0].search
        signature_search = self._prefilter[1].search
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
        # the framework's completion markers in this block: the bars after one are no training
        completed = self._by_class.get("completed")
        done = [m.line_no for m in (completed.all() if completed is not None else ())
                if m.primary and m.line_no >= first]
        self.series.feed_block(
            data, first, start=start, end=end, newlines=newlines, event_offsets=event_offsets,
            completion_lines=done,
        )
        self._find_after_marker(block, newlines, first)
        _note_closing_lines(block, newlines, first, self.closing_shapes)
        _note_lines(block, newlines, first, _OUTER_LOCATOR, keeps_outer_line,
                    self.outer_headers)
        # The last lines, for evidence when nothing else explains a failure, and among the last
        # EPILOGUE_REACH those that may be a PBS or Torque epilogue's
        n = len(newlines)
        k = min(n, max(self.tail.maxlen or 0, EPILOGUE_REACH))
        tail_start = start if k >= n else int(newlines[n - k - 1]) + 1
        kept = n - min(n, self.tail.maxlen or 0)
        for i, line in enumerate(data[tail_start:end].decode("utf-8", "replace").split("\n")[:k]):
            numbered = (first + n - k + i, line.rstrip("\r"))
            if n - k + i >= kept:
                self.tail.append(numbered)
            if EPILOGUE_LINE.search(line):
                self._epilogue.append(numbered)
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

    def _find_after_marker(self, block: _Block, newlines: np.ndarray, first: int) -> None:
        """Update `evaluation_start` and `goes_on_at` from the block's lines at or after the
        last run's first completion marker (none before one is seen: no scan of the whole
        log). A requeued job's later run (`series.run_start`, the block already fed to the
        series) drops an earlier run's lines and looks from its own marker on."""
        run_start = self.series.run_start or 1
        if self.evaluation_start is not None and self.evaluation_start < run_start:
            self.evaluation_start = None
        if self.goes_on_at is not None and self.goes_on_at < run_start:
            self.goes_on_at = self.goes_on_text = None
        completed = self._by_class.get("completed")
        marker = next((m.line_no for m in (completed.all() if completed is not None else ())
                       if m.line_no >= run_start), None)
        if marker is None:
            return
        data, start, end = block
        marker_idx = marker - first  # a marker in this block: from it on
        pos = start if marker_idx <= 0 else int(newlines[marker_idx - 1]) + 1
        self.evaluation_start = _last_line(
            block, newlines, pos, _EVALUATION_LOCATOR, opens_evaluation, first,
            self.evaluation_start)
        held: list[str] = []

        def goes_on(text: str) -> bool:
            if training_goes_on(text):
                held.append(text)
                return True
            return False

        self.goes_on_at = _last_line(
            block, newlines, pos, _GOES_ON_LOCATOR, goes_on, first, self.goes_on_at)
        if held:
            self.goes_on_text = held[-1]

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
            epilogue=[(n, text) for n, text in self._epilogue if n > self.lines - EPILOGUE_REACH],
            accounting=accounting or Accounting(),
            now=now,
            target_iter=target_iter,
            evaluation_start=self.evaluation_start,
            goes_on_at=self.goes_on_at,
            goes_on_text=self.goes_on_text,
            closing_shapes=self.closing_shapes,
            outer_headers=list(self.outer_headers),
            **options,
        )


def _last_line(block: _Block, newlines: np.ndarray, pos: int, locator: Any,
               holds: Callable[[str], bool], first: int, last: int | None) -> int | None:
    """The number of the block's last line from offset `pos` on that `locator` finds and
    `holds` confirms (`last` when none does)."""
    data, start, end = block
    while (m := locator.search(data, pos, end)) is not None:
        idx = int(np.searchsorted(newlines, m.start()))
        line_end = int(newlines[idx]) if idx < len(newlines) else end
        line_start = start if idx == 0 else int(newlines[idx - 1]) + 1
        if holds(data[line_start:line_end].decode("utf-8", "replace")):
            last = first + idx
        pos = line_end + 1
    return last


def _note_closing_lines(block: _Block, newlines: np.ndarray, first: int,
                        shapes: ClosingShapes) -> None:
    """Note in `shapes` the block's lines that `_CLOSING_LOCATOR` finds a closing word in."""
    data, start, end = block
    pos = start
    while not shapes.overflowed and (m := _CLOSING_LOCATOR.search(data, pos, end)) is not None:
        idx = int(np.searchsorted(newlines, m.start()))
        line_end = int(newlines[idx]) if idx < len(newlines) else end
        line_start = start if idx == 0 else int(newlines[idx - 1]) + 1
        shapes.note(first + idx, data[line_start:line_end])
        pos = line_end + 1


def _note_lines(block: _Block, newlines: np.ndarray, first: int, locator: Any,
                holds: Callable[[str], bool], kept: deque[tuple[int, str]]) -> None:
    """Append to `kept` the block's lines, numbered, that `locator` finds and `holds`
    confirms."""
    data, start, end = block
    pos = start
    while (m := locator.search(data, pos, end)) is not None:
        idx = int(np.searchsorted(newlines, m.start()))
        line_end = int(newlines[idx]) if idx < len(newlines) else end
        line_start = start if idx == 0 else int(newlines[idx - 1]) + 1
        text = data[line_start:line_end].decode("utf-8", "replace").rstrip("\r")
        if holds(text):
            kept.append((first + idx, text))
        pos = line_end + 1


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


# A line saying training goes on after a marker (detectors.TRAINING_GOES_ON, unanchored: raw
# lines keep their prefixes; the line itself is checked normalized)
_CLOSING_LOCATOR = compile_bytes_scanner(CLOSING_WORDS.encode())
_OUTER_LOCATOR = compile_bytes_scanner(OUTER_LOCATOR.encode())
_GOES_ON_LOCATOR = compile_bytes_scanner(_unanchored(TRAINING_GOES_ON.pattern).encode())


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


class ByteStream(Protocol):
    """What `analyze_file` reads: a binary file, stdin's buffer, a progress-counting wrapper."""

    def read(self, size: int = -1, /) -> bytes: ...


def analyze_file(
    stream: ByteStream,
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
