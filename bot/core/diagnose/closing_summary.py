"""A finished run's closing summary: the lines a training script prints once, after its last
progress report, when it ends in its own words.

Many scripts print no framework's end marker (bot.core.catalogue, class `completed`): after
their loop they report a final test score, the best epoch, the total time or the path the
model was saved to, in words of their own (`Final test accuracy: 0.9312`, `Best val Acc:
0.954248`, `Total time elapsed: 3h 12m`). What tells such a
summary from a report printed every epoch is that it is new: a line whose shape (its text with
every digit dropped, `line_shape`) the log never printed before its last progress line. A run
still going, cut after an epoch's evaluation, ends in lines it has printed after earlier epochs
too. A report printed only now and then (a test score every tenth epoch) is new the first
time too: a summary is not read while the log's own count says its loop has more to go (its
last epoch counter short of its total, its last progress line's iteration short of the target
that line names by more than a logging interval), unless the lines after it say the run
stopped early (bot.core.diagnose.finish_said `stopped_early`: `Early stopping`, `Patience
exhausted, stopping training.`; not an early stop's counter, one denied or one to come:
`EarlyStopping counter: 3 out of 10`, `No early stopping this epoch`).

The scan (bot.core.diagnose.scan) notes the first line of each shape among lines that hold a
closing word (`CLOSING_WORDS`: a bounded record, `ClosingShapes`); `ends_in_closing_summary`
reads the log's last lines against it. Read only for a job with no accounting, after the errors
and the other ends of bot.core.diagnose.quiet_ending. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.detectors import training_goes_on
from bot.core.diagnose.finish_said import stopped_early
from bot.core.diagnose.progress_shown import epochs_left
from bot.core.metrics import MetricSeries

#: Words of a closing summary: a final or best result, a total, a test set's score, the run
#: done. A bare `test` or `loss` is every evaluation's; `total_loss` is a progress figure (no
#: word boundary after `total`); a save is not (a periodic checkpoint's or a better model's is
#: new the first time too: `_SAVE` lines are never a summary).
CLOSING_WORDS = (
    r"\b(?:[Ff]inal(?:ly)?|FINAL|[Tt]otal|TOTAL|[Bb]est|BEST|[Oo]verall|[Ss]ummary|[Ee]lapsed"
    r"|[Dd]one|DONE|[Ff]inished|[Cc]omplete[d]?|[Ee]nd of"
    r"|[Tt]est(?:ing)? (?:[Aa]cc|[Aa]ccuracy|[Ll]oss|[Ss]et|[Rr]esults?|[Ss]core|[Ee]rror"
    r"|[Mm]etrics?))\b"
)
_CLOSING = re.compile(CLOSING_WORDS)
_SAVE = re.compile(
    r"(?i)\b(?:sav(?:e|ed|ing)|checkpoint|ckpt|wr(?:ite|iting|itten|ote)|dump(?:ed|ing)?)\b")
_DIGITS = b"0123456789"
#: Shapes recorded at most, and lines with a closing word looked at at most (a log whose
#: every progress line says `Total: ...` is not worth a shape a line): past either, no shape is
#: known new and no summary is read.
MAX_SHAPES = 4096
MAX_NOTED_LINES = 200_000
#: Progress lines a run must have printed, with some other line between two of them (an
#: epoch's report: then a report printed every epoch has been seen once before the last):
#: a summary closes a loop that ran.
_MIN_PROGRESS_LINES = 2


def line_shape(line: bytes | str) -> bytes:
    """The line's bytes with every digit dropped and its spaces collapsed: the same report at
    another epoch, with another score, time stamp or rank prefix (`[rank]:`) has the same shape.
    Bytes, so that the scan shapes a raw line at C speed (a str is encoded as UTF-8: a line the
    scan decoded with replacements gets another shape, and is not read as a summary)."""
    raw = line.encode("utf-8", "replace") if isinstance(line, str) else line
    return b" ".join(raw.translate(None, _DIGITS).split())


def has_closing_word(text: str) -> bool:
    """A closing word with a figure (a summary reports one: a score, a time, a count; not
    TensorFlow's `Loss for final step: None.`, no step run), and no save's (`Saving best
    model`, `Final checkpoint written`)."""
    return (_CLOSING.search(text) is not None and _SAVE.search(text) is None
            and any(c.isdigit() for c in text))


class ClosingShapes:
    """The first line number of each shape among the lines with a closing word, bounded: once
    `max_shapes` shapes are known or `max_lines` lines noted, `overflowed` and nothing more is
    recorded."""

    def __init__(self, max_shapes: int = MAX_SHAPES, max_lines: int = MAX_NOTED_LINES) -> None:
        self._first: dict[bytes, int] = {}
        self._max_shapes, self._lines_left = max_shapes, max_lines
        self.overflowed = False

    def note(self, line_no: int, raw: bytes) -> None:
        """A line the scan found a closing word in (its raw bytes, prefixes and all)."""
        if self.overflowed:
            return
        self._lines_left -= 1
        shape = line_shape(raw)
        if shape not in self._first:
            self._first[shape] = line_no
        if self._lines_left <= 0 or len(self._first) > self._max_shapes:
            self.overflowed = True

    def first_seen(self, text: str) -> int | None:
        return self._first.get(line_shape(text))


def ends_in_closing_summary(tail: Sequence[tuple[int, str]], series: MetricSeries,
                            shapes: ClosingShapes | None) -> tuple[int, str] | None:
    """The line of the closing summary the log ends in, or None: after the last line that
    printed an iteration (two or more did, another line between two of them), within the log's
    last lines (`tail`), a line with a closing word and a figure whose shape the log first
    printed after that progress line, a last line of a shape none of the last lines before that
    progress line had, no line after it that says training goes on
    (bot.core.detectors.TRAINING_GOES_ON), and a loop that had no more to go or says it
    stopped early (`_loop_unfinished`). A run whose tail does not reach back to its last
    progress line, or whose shapes overflowed, is not read."""
    last_progress = series.last_iteration_line
    if shapes is None or shapes.overflowed or last_progress is None:
        return None
    progress = [s.line_no for s in series.samples if s.iteration is not None]
    if len(progress) < _MIN_PROGRESS_LINES or not any(
            b - a > 1 for a, b in zip(progress, progress[1:], strict=False)):
        return None  # no line between progress lines yet: every report would be new
    lines = [(n, t) for n, t in tail if t.strip()]
    if not lines or lines[0][0] > last_progress:
        return None
    after = [(n, t) for n, t in lines if n > last_progress]
    if not after or any(training_goes_on(t) for _, t in after):
        return None  # (Lightning's `... Training will continue...` after its stop's best score)
    upto = [(n, t) for n, t in lines if n <= last_progress]
    if line_shape(after[-1][1]) in {line_shape(t) for _, t in upto}:
        return None
    if _loop_unfinished(series, upto) and not any(stopped_early(t) for _, t in after):
        return None  # a report printed every tenth epoch is new the first time too
    for n, text in after:
        first = shapes.first_seen(text) if has_closing_word(text) else None
        if first is not None and first > last_progress:
            return n, text
    return None


def _loop_unfinished(series: MetricSeries, upto: Sequence[tuple[int, str]]) -> bool:
    """The log's own count says its loop has more to go at its last progress line: the last
    epoch counter up to it is short of its total (`Epoch 10/100`), or that line's iteration is
    short of the target it names (`iter 500/10000`) by more than the log's interval between
    progress lines (a per-epoch batch count printed every 100 batches ends at `1200/1251`)."""
    if epochs_left(upto):
        return True
    last = next((s for s in reversed(series.samples) if s.iteration is not None), None)
    return last is not None and series.short_of(last.target_iter)
