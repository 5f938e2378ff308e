"""Progress and memory metrics of a training log as a series, fed incrementally, in bounded
memory; what each line says is read by bot.core.training_lines (`LineParser`).

A log may hold several runs one after the other (a requeued job's: submitit appends each to
the same file, from its `RUN_START` line; torchrun restarting its worker group; a user's rerun
into the same output file): the series is the last run's. Its iterations, pace, loss, RSS
points, checkpoint saves and last progress start afresh at each later run's start line
(`run_start_lines`, the one place that finds them: submitit's, and a framework's
start-of-training banner, `TRAINING_START`, once the run before it showed progress; the
diagnosis reads the last run's catalogue matches from the same line, `MetricSeries.run_start`),
so no figure spans two processes: the iteration that falls back to the resumed checkpoint's (or
to 0), the hours the job waited in the queue, the RSS of a fresh process, a finished run's
target or end before a run still going: the target is the last one the run's own lines named
(the parser forgets the totals a framework announced before the run, `LineParser.start_run`).
Whether the log prints its RSS carries over: it is the job's, not the run's. A run that writes
no start line of its own starts at its first line timed after the start Slurm gives it
(`MetricSeries.restarted`, told by the watcher).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from bot.core.announced_targets import ANNOUNCEMENT_MARKERS
from bot.core.framework_lines import EVALUATION_MARKERS, SPACY_TABLE_MARKER
from bot.core.line_time import message_after_time, split_line
from bot.core.progress_bars import drawn_count, summed_up_later
from bot.core.training_lines import (
    RUN_START,
    TRAINING_START,
    CheckpointEvent,
    LineParser,
    Sample,
)
from bot.core.units import GIB

try:  # RE2: one DFA pass a block; optional (extra `re2`), `re` gives the same answers slower.
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None


def compile_bytes_scanner(pattern: bytes, *, ignore_case: bool = False):
    """A compiled bytes regex for whole-block scans: RE2 when installed, else `re`.

    Both objects offer `search(data, pos, endpos)` / `finditer`; RE2 runs one DFA pass
    (hundreds of MB/s) where `re` backtracks on every position of an alternation.
    """
    if _re2 is not None:
        try:
            options = _re2.Options()
            options.case_sensitive = not ignore_case
            options.max_mem = 256 << 20
            return _re2.compile(pattern, options)
        except Exception:  # noqa: BLE001 - RE2 rejects some syntax; fall back to re
            pass
    return re.compile(pattern, re.IGNORECASE if ignore_case else 0)


@dataclass(frozen=True, slots=True)
class SaveWindow:
    """A checkpoint save: from its start line to its end line (None while still open)."""

    start_line: int
    start_time: float | None
    iteration: int | None
    end_line: int | None = None
    end_time: float | None = None
    start_text: str = ""

    def contains_line(self, line_no: int) -> bool:
        return self.start_line <= line_no and (self.end_line is None or line_no <= self.end_line)


@dataclass(frozen=True, slots=True)
class UnfinishedBar:
    """A progress bar drawn on a log's unfinished last line (tqdm's, mmcv's ProgressBar,
    Lightning's: redrawn in place after a carriage return, with no newline until it ends), as
    the reads of that line last showed its count change (`unfinished_bar_drawn`)."""

    line_no: int
    count: tuple[int, int]  # its last draw's count and total
    advanced_at: float  # log time of the read that first showed that count
    text: str  # that draw, as the line's evidence

    def to_json(self) -> list[Any]:
        """As kept with the log's offset (bot.services.watch.logs), so a restart goes on
        from it (`from_json`)."""
        return [self.line_no, *self.count, self.advanced_at, self.text]

    @classmethod
    def from_json(cls, kept: Any) -> UnfinishedBar | None:
        """The bar `to_json` kept; None for anything else (nothing kept, an older form)."""
        try:
            line_no, done, total, advanced_at, text = kept
            return cls(int(line_no), (int(done), int(total)), float(advanced_at), str(text))
        except (TypeError, ValueError):
            return None


# How far back from an unfinished line's end its last draws are looked for: a draw is one
# terminal line, the line itself may hold a megabyte of redraws.
_LAST_DRAWS_BYTES = 4096


def unfinished_bar_drawn(seen: UnfinishedBar | None, line_no: int, line: bytes,
                         at: float) -> UnfinishedBar | None:
    """What the log's unfinished last line (`line_no`, its bytes so far) read at log time `at`
    says of the bar drawn on it, after `seen`: the bar at `at` when it shows a count `seen`
    did not on this line (advanced, or started again), or a line `seen` was not; `seen` as it
    was when the line draws the same count again (a hung job's bar stays frozen: redrawing
    it, its elapsed time with it, is no activity) or shows no bar. Its last draw is read, or
    the one before it when the last is still being written."""
    draws = [d for d in line[-_LAST_DRAWS_BYTES:].decode("utf-8", "replace").split("\r")
             if d.strip()]
    for draw in reversed(draws[-2:]):
        message = message_after_time(split_line(draw)[1])
        count = drawn_count(message)
        if count is None:
            continue
        if seen is not None and (seen.line_no, seen.count) == (line_no, count):
            return seen
        return UnfinishedBar(line_no, count, at, message[:300])
    return seen


def _draw_count(draw: bytes) -> tuple[int, int] | None:
    """The count one draw of a bar shows (None: no bar, or a draw still being written)."""
    return drawn_count(message_after_time(split_line(draw.decode("utf-8", "replace"))[1]))


def count_drawn_at(line: bytes, end: int, since: tuple[int, float], read_at: float) -> float:
    """When the count the bar on an unfinished `line` shows now was first drawn, never earlier
    than it was, as far as the file tells: `line` ends at byte `end` of the file, read when
    the file's mtime was `read_at`; `since` is (its size, its mtime) at an earlier read. The
    draws that end the line at that count (those with no count, one still being written,
    skipped) start with the first draw of it: a first draw already there at the earlier read
    was drawn by `since`'s mtime; one written since, at `read_at`, the file's last write (the
    count's own draw when nothing followed it: a frozen bar not redrawn, a moving bar; later,
    never earlier, when the bar was redrawn or other lines were written since). `read_at`
    when the line draws no count, or the file is shorter than at the earlier read."""
    size, at = since
    draws = line.split(b"\r")
    last = None
    first_end = None
    pos = len(line)
    for draw in reversed(draws):
        draw_end = pos
        pos -= len(draw) + 1
        count = _draw_count(draw) if draw.strip() else None
        if count is None:
            continue
        if last is None:
            last = count
        elif count != last:
            break
        first_end = draw_end
    if first_end is not None and end - len(line) + first_end <= size <= end:
        return min(at, read_at)  # drawn by the earlier read (a file since cut: not known)
    return read_at


MIN_RSS_CHART_POINTS = 2
"""An RSS chart is drawn from at least this many (iteration, host RSS) points
(MetricSeries.rss_at_iterations); fewer draw none."""

# Bytes locator for checkpoint lines in sparse mode (only there; dense mode sees each line).
_CKPT_LOCATOR = compile_bytes_scanner(rb"checkpoint|ckpt|dcp|state.dict", ignore_case=True)


class LineCut(IntEnum):
    """Why `MetricSeries.feed_block` cuts a block before a line; where a completion marker's
    cut and a run start's fall before the same line, the completion's comes first (the
    members' order)."""

    AFTER_COMPLETION = 0  # the line after a completion marker: later bars are no training
    BEFORE_RUN_START = 1  # a run's start line: the series starts afresh there
    # a framework's start-of-training banner: the series starts afresh there once the run
    # before it showed progress
    BEFORE_TRAINING_START = 2


# Bytes locator, in one scan of a block, for the lines a series read sparsely reads besides its
# sampled ones (`MetricSeries._located_only`): those announcing a framework's total (a later
# run's may lie between the last progress and the banner that starts it: `LineParser.start_run`)
# and those opening or summing up a framework's evaluation (the bars after maskrcnn-benchmark's
# `Start evaluation on` are its evaluation's only once that line was read: LineParser,
# ProgressBars.evaluation_started), and spaCy's table's header (its rows are progress only
# under it: bot.core.framework_lines)
_MARKED_LINE_LOCATOR = compile_bytes_scanner(
    "|".join(re.escape(marker) for marker in (*ANNOUNCEMENT_MARKERS, *EVALUATION_MARKERS,
                                               SPACY_TABLE_MARKER))
    .encode())

# Bytes locators of the lines that may start a run (`run_start_lines`)
_RUN_START = compile_bytes_scanner(re.escape(RUN_START).encode())
_TRAINING_START = compile_bytes_scanner(TRAINING_START.pattern.encode())


# --- the series -------------------------------------------------------------------------


class MetricSeries:
    """Samples and checkpoint events of one log's last run, fed incrementally with bounded
    memory."""

    def __init__(
        self,
        *,
        max_samples: int = 4096,
        max_events: int = 512,
        extra_patterns: Sequence[str | re.Pattern[str]] = (),
    ) -> None:
        if max_samples < 16:
            raise ValueError("max_samples must be at least 16")
        self.parser = LineParser(extra_patterns)
        self.max_samples = max_samples
        self.events: deque[CheckpointEvent] = deque(maxlen=max_events)
        self.lines_seen = 0
        self.log_rss_seen = False  # has the log itself printed a host RSS?
        self.external_rss_source: str | None = None  # e.g. "sstat", see add_rss
        # the runs the log showed (0: it showed no run's start): its first run, by submitit's
        # start line (`RUN_START`), and each later run the series starts afresh at
        # (`start_run`: a start line, a framework's banner after progress, Slurm starting the
        # job again), with the run before it; and the line where the last run started when the
        # log holds more than one (None: one run, the series is the whole log's)
        self.runs = 0
        self.run_start: int | None = None
        # Slurm started the job again (a requeue) at this log time and no line of that run has
        # been seen yet (`restarted`); None once one has, or when Slurm never said so
        self.restarted_at: float | None = None
        # the last log time Slurm showed the job's processes stopped or suspended (`paused`)
        self.paused_at: float | None = None
        self._first_line: int | None = None  # the first line fed: 1 unless read from inside
        self._reset_run(1)

    def _reset_run(self, next_line: int) -> None:
        """The figures of one run, empty: what `__init__` starts with and `start_run` clears."""
        self.samples: list[Sample] = []
        self.events.clear()
        self.stride = 1
        self.last_iteration: int | None = None
        self.target_iter: int | None = None  # the last target a progress line named
        self.last_progress: Sample | None = None  # first sample at the highest iteration
        # the number of the latest line that printed an iteration: not last_progress's, as
        # each epoch's bar starts again at 0; exact in sparse mode too (feed_block adds each
        # block's last such line)
        self.last_iteration_line: int | None = None
        # the last line of an evaluation pass's bar that advanced (its batches differ from the
        # same pass's draw before), or that sums up a pass over (`Sample.evaluation_done`): the run
        # is active, though its training makes no progress
        self.last_evaluation: Sample | None = None
        self._evaluation_batches: tuple[int, int] | None = None
        # the bar last seen advancing on the log's unfinished last line (`unfinished_line`)
        self.unfinished_bar: UnfinishedBar | None = None
        self.last_loss: float | None = None
        self._step_s: deque[float] = deque(maxlen=256)  # recent seconds per iteration
        self._log_every: deque[int] = deque(maxlen=256)  # iterations between progress lines
        self._reported_spi: deque[float] = deque(maxlen=256)
        self._next_line = next_line  # sparse mode: next line number to look at
        self._last_external: Sample | None = None

    # feeding ---------------------------------------------------------------------------

    @property
    def ends_inside_evaluation(self) -> bool:
        """The run's last activity is an evaluation pass it started after its last training
        progress whose framework sums the pass up in a line of its own once it is over
        (`progress_bars.summed_up_later`: mmcv's ProgressBar, then `Epoch(val) [12][500]`),
        with no such line after it, its bar at its total or not. A run cut there is not proven
        finished, whatever its training reached. (Another framework's bar, which no such line
        follows, is over at its total; one short of it at the log's end is
        `ends_in_open_progress_bar`'s.)"""
        evaluation = self.last_evaluation
        if evaluation is None or evaluation.evaluation_batches is None or (
                self.last_iteration_line is not None
                and evaluation.line_no <= self.last_iteration_line):
            return False  # none, a pass summed up, or training went on after it
        return summed_up_later(message_after_time(evaluation.text))

    @property
    def last_time(self) -> float | None:
        """The latest log time seen on any parsed line."""
        return self.parser.clock.last

    def feed_line(self, text: str, line_no: int) -> None:
        """Parse one line (always, whatever the stride)."""
        sample, event = self.parser.parse(text, line_no)
        self._maybe_next_run(line_no, self.parser.clock.last)  # its first timed line, if read
        if event is not None:
            self._add_event(event)
        if sample is not None:
            self._add(sample)
        self.lines_seen = max(self.lines_seen, line_no)

    def feed_lines(self, lines: Iterable[str], first_line_no: int = 1) -> None:
        """Parse lines of one run, each (a log's runs are told apart by `feed_block`)."""
        for i, line in enumerate(lines):
            self.feed_line(line, first_line_no + i)

    def feed_block(
        self,
        data: bytes | str,
        first_line_no: int = 1,
        *,
        start: int = 0,
        end: int | None = None,
        newlines: np.ndarray | None = None,
        event_offsets: Iterable[int] | None = None,
        completion_lines: Iterable[int] = (),
    ) -> int:
        """Feed a block of complete lines (`data[start:end]`); returns how many lines it held.

        `newlines` (offsets of b"\\n" in `data[start:end]`, absolute) and `event_offsets`
        (offsets of lines that may be checkpoint events) let a caller that already scanned the
        block share the work; slicing by offsets avoids copying big blocks. submitit's start line
        (`run_start_lines`) after an earlier run's, or after lines of a log read from inside
        (`first_line_no` above 1 at the first block), starts the series afresh (`start_run`), and
        so does a framework's start-of-training banner after the run before it showed progress
        (an iteration above 0: a bar drawn at 0 before the first step is none): one with none
        before it is that run's own (the first run's, a node's copy of the banner of the run
        it starts).
        `completion_lines` are the block's lines (numbers) that are the training framework's
        completion marker (the catalogue's `completed` signatures): the progress bars after one
        are read as the parser reads them after a run's end (`LineParser.training_completed`:
        an evaluation's bar is no training progress).
        """
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        end = len(data) if end is None else end
        if newlines is None:
            newlines = newline_offsets(data, start, end)
        offsets = None if event_offsets is None else [int(x) for x in event_offsets]
        if self._first_line is None:
            self._first_line = first_line_no

        def part(a: int, b: int) -> list[int] | None:
            return None if offsets is None else [x for x in offsets if a <= x < b]

        n_lines = len(newlines) + (1 if end > start and data[end - 1] != 10 else 0)

        def offset(idx: int) -> int:
            """Where the block's line `idx` (0-based) starts; `end` past its last line."""
            if idx == 0:
                return start
            return int(newlines[idx - 1]) + 1 if idx <= len(newlines) else end

        after_completions = [(line - first_line_no + 1, LineCut.AFTER_COMPLETION)
                             for line in completion_lines if 0 <= line - first_line_no < n_lines]
        cuts = sorted(after_completions + run_start_lines(data, start, end, newlines))
        fed = 0
        line0, pos, nl0 = first_line_no, start, 0  # the part of the block not fed yet
        for idx, why in cuts:  # by line, then `LineCut`'s order
            if why is LineCut.BEFORE_RUN_START and self.runs == 0 and self._first_line == 1:
                self.runs = 1
                continue  # the log's first run: what came before it is its preamble
                # (read from inside the log, as a restarted watcher's warm-up reads it, the
                # lines before the first start seen are an earlier run's)
            cut = offset(idx)
            fed += self._feed_run_block(data, line0, pos, cut, newlines[nl0:idx], part(pos, cut))
            if why is LineCut.AFTER_COMPLETION:
                self.parser.training_completed()
            elif why is LineCut.BEFORE_RUN_START:
                self.start_run(first_line_no + idx)
            elif self.last_iteration:
                # the banner's run may have announced its totals before it (BasicSR)
                self.start_run(first_line_no + idx,
                               announced_from=self._after_last_progress(first_line_no + idx))
            line0, pos, nl0 = first_line_no + idx, cut, min(idx, len(newlines))
        return fed + self._feed_run_block(data, line0, pos, end, newlines[nl0:], part(pos, end))

    def start_run(self, line_no: int, *, announced_from: int | None = None) -> None:
        """A later run of the job starts at `line_no` (a requeued job's, appended to the log):
        the series is its from here on, and the parser reads its progress bars afresh and
        forgets the totals announced before line `announced_from` (`LineParser.start_run`; by
        default `line_no`: a run's own start line is its first); `runs` counts it. Whether the
        log prints its RSS, where sstat's RSS comes from and the log's clock carry over."""
        self.runs = max(self.runs, 1) + 1
        self.run_start = line_no
        self.restarted_at = None
        self._reset_run(line_no)
        self.parser.start_run(line_no if announced_from is None else announced_from)

    def _after_last_progress(self, line_no: int) -> int:
        """The line after the run's last progress line (`line_no` when it showed none): a
        next run that starts at `line_no` with no line of its own before it (a framework's
        banner, the first line timed after Slurm started the job again) may have printed its
        first lines from there."""
        return line_no if self.last_iteration_line is None else self.last_iteration_line + 1

    def restarted(self, at: float) -> None:
        """Slurm started the job again at log time `at` (a requeue: squeue's start time of the
        same job moved on), whether or not its next run writes a start line of its own. Its
        first line timed at or after `at` starts that run (`_maybe_next_run`), unless a start
        line does first; until then the job's silence counts from `at`
        (bot.core.detectors.detect_stall), not across the time it waited in the queue."""
        self.restarted_at = at

    def paused(self, at: float) -> None:
        """Slurm showed the job's processes stopped (STOPPED: sent SIGSTOP) or suspended at
        log time `at`: its silence until then is theirs, so it counts from `at`
        (bot.core.detectors.detect_stall), not from the last line before the stop."""
        self.paused_at = at if self.paused_at is None else max(self.paused_at, at)

    def unfinished_line(self, line_no: int, line: bytes, at: float) -> None:
        """The log's last line `line_no` is unfinished (`line`: its bytes so far, no newline
        yet), as read at log time `at`: a bar drawn on it whose count moved since the last
        read is the run's activity from `at` (`unfinished_bar_drawn`,
        bot.core.detectors.detect_stall). The line is parsed once, when complete (`feed_block`),
        never from here."""
        self.unfinished_bar = unfinished_bar_drawn(self.unfinished_bar, line_no, line, at)

    def _maybe_next_run(self, line_no: int, time: float | None) -> None:
        """A line of the run Slurm started again (`restarted`): the series is that run's. A
        line read sparsely (a long run's series) starts it at its first progress or checkpoint
        line read, a little after its first timed line."""
        if self.restarted_at is not None and time is not None and time >= self.restarted_at:
            self.start_run(line_no, announced_from=self._after_last_progress(line_no))

    def _feed_run_block(self, data: bytes, first_line_no: int, start: int, end: int,
                        newlines: np.ndarray, event_offsets: Iterable[int] | None) -> int:
        """`feed_block` for lines of one run."""
        partial = end > start and data[end - 1] != 10
        n_lines = len(newlines) + (1 if partial else 0)
        if n_lines == 0:
            return 0
        starts = np.empty(n_lines, dtype=np.int64)
        starts[0] = start
        starts[1:] = newlines[: n_lines - 1] + 1
        ends = np.empty(n_lines, dtype=np.int64)
        ends[: len(newlines)] = newlines
        if partial:
            ends[-1] = end

        def line_at(i: int) -> str:
            return data[starts[i] : ends[i]].decode("utf-8", "replace")

        last_line_no = first_line_no + n_lines - 1
        if self.stride == 1 and self._next_line <= first_line_no:
            # Dense: every line, until the series fills up and the stride grows.
            i = 0
            while i < n_lines and self.stride == 1:
                self.feed_line(line_at(i), first_line_no + i)
                i += 1
            self._next_line = first_line_no + i
            if i >= n_lines:
                return n_lines
        # Sparse: checkpoint lines, announced totals and an evaluation's opening and summing-up
        # lines (every one: `_CKPT_LOCATOR`, `_MARKED_LINE_LOCATOR`), then one line in `stride`;
        # every line from an evaluation's opening line to the training line that closes it
        # (`ProgressBars.evaluating`: the lines between two sampled windows are never read, so
        # a closing line there would leave the evaluation open, the training's bars after it
        # read as the evaluation's).
        if event_offsets is None:
            event_offsets = [m.start() for m in _CKPT_LOCATOR.finditer(data, start, end)]
        marked = [m.start() for m in _MARKED_LINE_LOCATOR.finditer(data, start, end)]
        located = sorted({int(x) for x in np.searchsorted(newlines, [*event_offsets, *marked])})
        pending = deque(i for i in located if first_line_no + i >= self._next_line)
        i = max(0, self._next_line - first_line_no)
        last_sampled = -1
        bars = self.parser.bars
        while True:
            while pending and pending[0] < i:
                j = pending.popleft()
                self._located_only(line_at(j), first_line_no + j)
                if bars.evaluating:
                    i = j + 1  # the evaluation it opened is read from its next line on
                    break
            if i >= n_lines:
                break
            found = False
            k = i - 1  # the window's last line read
            while k + 1 < n_lines and (k + 1 < i + 16 or bars.evaluating):
                k += 1
                sample, event = self.parser.parse(line_at(k), first_line_no + k)
                if event is not None:
                    self._add_event(event)
                if sample is not None:
                    self._add(sample)
                    if sample.is_training:
                        # an evaluation's line is none, a figure on it or not
                        # (maskrcnn-benchmark's `[Validation]:` shows a GPU memory): the block's
                        # last training line before it stays in the tail's reach
                        last_sampled = k
                        found = True
                        if not bars.evaluating:
                            break
                        # a line with no iteration (a loss alone) closes no evaluation: read
                        # on to the line that does
            # the located lines the window read are read (read again after the training line
            # that ends it, an evaluation's opening line would open it again)
            while pending and pending[0] <= k:
                pending.popleft()
            if bars.evaluating:
                i = k + 1  # still open at the block's end: the next block is read from its start
            elif found:
                i = last_sampled + self.stride
            else:
                i = max(i + 15, k) + self.stride
        # Always the block's last metric line, so latest iteration and progress are exact,
        # and an evaluation bar's last line after it, so is the run's last activity. The tail
        # is parsed in the log's order: the parser's state at the block's end is the log's (an
        # evaluation opened after the last training line is still open for the next block).
        progress = evaluation = None
        for k in range(max(last_sampled + 1, n_lines - 64), n_lines):
            sample, _ = self.parser.parse(line_at(k), first_line_no + k)
            if sample is None:
                continue
            if sample.iteration is not None:
                progress, evaluation = sample, None
            elif sample.is_evaluation:
                evaluation = sample
        for sample in (progress, evaluation):
            if sample is not None:
                self._add(sample)
        # The latest timestamp of the block (for `now` of offline logs).
        for k in range(n_lines - 1, max(last_sampled, n_lines - 64), -1):
            if self.parser.clock.parse_line(line_at(k)) is not None:
                break
        self._next_line = max(self._next_line, last_line_no + 1, first_line_no + i)
        self.lines_seen = max(self.lines_seen, last_line_no)
        return n_lines

    def _located_only(self, text: str, line_no: int) -> None:
        """A line located in sparse mode that no window read: its checkpoint event and the
        totals it announces (or the spaCy table its header opens); a line opening or summing
        up an evaluation (`EVALUATION_MARKERS`) is read whole (the parser then reads the bars
        after an opening line as the evaluation's, and a summary is the run's activity:
        `_add`)."""
        if any(marker in text for marker in EVALUATION_MARKERS):
            sample, _ = self.parser.parse(text, line_no)
            if sample is not None and sample.is_evaluation:
                self._add(sample)
        self.parser.read_announcement(text, line_no)
        event = self.parser.parse_event(text, line_no)
        if event is not None:
            self._add_event(event)

    def _add_event(self, event: CheckpointEvent) -> None:
        self._maybe_next_run(event.line_no, event.time)
        if self.events and self.events[-1].line_no >= event.line_no:
            return
        self.events.append(event)

    def _add(self, s: Sample) -> None:
        """A parsed line's sample, read densely or sparsely: a training line's figures
        (`Sample.is_training`) are the series' samples; an evaluation's line (its bar, its
        summary) is the run's activity (`_evaluation_drawn`) and none, a figure on it or not
        (maskrcnn-benchmark's `[Validation]:` shows a GPU memory): kept out of the charts,
        pace and leak fit, as the sparse reader's window passes it by for a training line."""
        self._maybe_next_run(s.line_no, s.time)
        if s.is_evaluation:
            self._evaluation_drawn(s)
            return
        if self.samples and self.samples[-1].line_no >= s.line_no:
            return
        if s.host_rss_bytes is not None:
            self.log_rss_seen = True
        if s.iteration is None and s.host_rss_bytes is not None:
            s.iteration = self.last_iteration  # a memory-only line: at the current iteration
        elif s.iteration is not None:
            self.last_iteration_line = s.line_no
            advanced = self.last_iteration is None or s.iteration > self.last_iteration
            if advanced:
                prev = self.last_progress
                if prev is not None and prev.iteration is not None:
                    di = s.iteration - prev.iteration
                    if prev.time is not None and s.time is not None and s.time > prev.time:
                        self._step_s.append((s.time - prev.time) / di)
                    if self.stride == 1:
                        self._log_every.append(di)
                self.last_progress = s
            if advanced:
                self.last_iteration = s.iteration
        if s.target_iter:
            self.target_iter = s.target_iter
        if s.loss is not None:
            self.last_loss = s.loss
        if s.sec_per_iter is not None:
            self._reported_spi.append(s.sec_per_iter)
        self.samples.append(s)
        if len(self.samples) > self.max_samples:
            self._compact()

    def _evaluation_drawn(self, s: Sample) -> None:
        """An evaluation's line: the last evaluation when its batches moved since the bar's
        draw before in the same pass (a redraw at the same count is no activity), or when it
        sums up a pass that is over (`Sample.evaluation_done`: each is a pass of its own). A
        bar drawn after a summary is the next pass's, new activity whatever it counts: mmcv's
        EvalHook draws each pass's ProgressBar to the same total its last summary counted
        (`Epoch(val) [11][500]`, then the next epoch's bar at 500/500), and that bar at its
        total is no end of its pass (`ends_inside_evaluation`: the summary follows it)."""
        last = self.last_evaluation
        if last is not None and last.line_no >= s.line_no:
            return
        if s.evaluation_done or s.evaluation_batches != self._evaluation_batches:
            self.last_evaluation = s
        self._evaluation_batches = None if s.evaluation_done else s.evaluation_batches

    def add_rss(self, rss_bytes: int, *, source: str, time: float | None = None
                ) -> Sample | None:
        """A host RSS measured outside the log (e.g. `sstat`'s MaxRSS) as a sample at the
        last line read and the current iteration, so the leak fit and the RSS chart use it
        like a printed one (and leave it out when it falls inside a checkpoint save).

        Samples are ordered by log line: a second one before the log moved on replaces the
        first instead of piling up at one point. Nothing is added (None) before the first
        progress line: without an iteration it has no place on the leak fit's axis.
        `time` is on the log's clock when given.
        """
        if self.last_iteration is None or rss_bytes is None or rss_bytes <= 0:
            return None
        self.external_rss_source = source
        line_no = self.lines_seen
        last = self._last_external
        if last is not None and self.samples and self.samples[-1] is last \
                and last.line_no == line_no:
            last.host_rss_bytes = int(rss_bytes)
            last.time = time
            last.text = f"host RSS {int(rss_bytes) / GIB:.2f} GiB ({source})"
            return last
        s = Sample(line_no=line_no, time=time, iteration=self.last_iteration,
                   host_rss_bytes=int(rss_bytes),
                   text=f"host RSS {int(rss_bytes) / GIB:.2f} GiB ({source})")
        self.samples.append(s)  # not _add: it may share the last log sample's line number
        self._last_external = s
        if len(self.samples) > self.max_samples:
            self._compact()
        return s

    def _compact(self) -> None:
        keep = {0, len(self.samples) - 1}
        rss = [(x.host_rss_bytes, i) for i, x in enumerate(self.samples) if x.host_rss_bytes]
        if rss:
            keep.add(max(rss)[1])
        losses = [
            (x.loss, i) for i, x in enumerate(self.samples)
            if x.loss is not None and not math.isnan(x.loss)
        ]
        if losses:
            keep.add(min(losses)[1])
            keep.add(max(losses)[1])
        self.samples = [x for i, x in enumerate(self.samples) if i % 2 == 0 or i in keep]
        self.stride *= 2

    # queries ---------------------------------------------------------------------------

    def sec_per_iter(self) -> float | None:
        """Median seconds per iteration as the log prints it, else from log times."""
        if self._reported_spi:
            return statistics.median(self._reported_spi)
        if self._step_s:
            return statistics.median(self._step_s)
        return None

    def log_every(self) -> int:
        """Typical iterations between two progress lines (1 if unknown)."""
        return int(statistics.median(self._log_every)) if self._log_every else 1

    def short_of(self, target: int | None) -> bool:
        """The last iteration is short of `target` by more than the iterations between two
        progress lines: a loop that prints every 10 of an epoch's 32 batches ends at `30/32`
        (or at step 999 of 1,000, counting from 0) having run them all."""
        return (target is not None and self.last_iteration is not None
                and target - self.last_iteration > self.log_every())

    def progress_interval_s(self) -> float | None:
        """Typical seconds between two progress lines (log times first: they include
        data loading and logging that a printed s/iter may leave out)."""
        timed = statistics.median(self._step_s) if self._step_s else None
        spi = max(timed or 0.0, self.sec_per_iter() or 0.0) or None
        return None if spi is None else spi * self.log_every()

    def rss_points(self) -> list[Sample]:
        return [s for s in self.samples if s.host_rss_bytes is not None]

    def rss_at_iterations(self) -> list[tuple[int, int]]:
        """(iteration, host RSS bytes) of the samples that have both: the points of the RSS
        chart (bot.charts.series), which is drawn from MIN_RSS_CHART_POINTS of them."""
        return [(s.iteration, s.host_rss_bytes) for s in self.rss_points()
                if s.iteration is not None and s.host_rss_bytes is not None]

    def save_windows(self) -> list[SaveWindow]:
        """Checkpoint saves in log order; an end without a start is a zero-length window."""
        windows: list[SaveWindow] = []
        open_start: CheckpointEvent | None = None
        for e in self.events:
            if e.kind == "start":
                # Several "saving"/"writing" lines of one save: keep the first start.
                same = open_start is not None and (
                    e.iteration is None
                    or open_start.iteration is None
                    or e.iteration == open_start.iteration
                )
                if open_start is not None and not same:
                    windows.append(_window(open_start, None))
                if not same:
                    open_start = e
            elif open_start is not None:
                windows.append(_window(open_start, e))
                open_start = None
            else:
                start_time = e.time - e.duration_s if e.time and e.duration_s else e.time
                windows.append(
                    SaveWindow(e.line_no, start_time, e.iteration, e.line_no, e.time, e.text)
                )
        if open_start is not None:
            windows.append(_window(open_start, None))
        return windows

    def open_save(self) -> SaveWindow | None:
        """The save that started and has not finished, if any (the last one)."""
        windows = self.save_windows()
        return windows[-1] if windows and windows[-1].end_line is None else None


def _window(start: CheckpointEvent, end: CheckpointEvent | None) -> SaveWindow:
    iteration = start.iteration if start.iteration is not None else (
        end.iteration if end is not None else None)
    return SaveWindow(
        start.line_no,
        start.time,
        iteration,
        end.line_no if end else None,
        end.time if end else None,
        start.text,
    )


def run_start_lines(data: bytes, start: int, end: int, newlines: np.ndarray
                    ) -> list[tuple[int, LineCut]]:
    """The lines of `data[start:end]` (by index; `newlines` as `newline_offsets` gives them)
    that may start a run, in order, each with what it is: submitit's start line (`RUN_START`,
    `LineCut.BEFORE_RUN_START`: a requeued job's log holds one per run) or a framework's
    start-of-training banner (`TRAINING_START`, `LineCut.BEFORE_TRAINING_START`: a run of its
    training starts there once the run before it showed progress)."""
    found: list[tuple[int, LineCut]] = []
    for locator, why in ((_RUN_START, LineCut.BEFORE_RUN_START),
                         (_TRAINING_START, LineCut.BEFORE_TRAINING_START)):
        pos = start
        while pos < end and (hit := locator.search(data, pos, end)) is not None:
            idx = int(np.searchsorted(newlines, hit.start()))
            found.append((idx, why))
            if idx >= len(newlines):
                break
            pos = int(newlines[idx]) + 1
    return sorted(found)


def newline_offsets(data: bytes, start: int = 0, end: int | None = None) -> np.ndarray:
    """Offsets of every b"\\n" in `data[start:end]` (numpy: one C pass, no per-line Python)."""
    end = len(data) if end is None else end
    if end <= start:
        return np.empty(0, dtype=np.int64)
    view = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    return np.flatnonzero(view == 10) + start
