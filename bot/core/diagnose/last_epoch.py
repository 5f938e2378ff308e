"""A log whose last progress is its run's last epoch: the last epoch's report as the last
progress line (`ends_at_last_epoch`), and the run's own target reached with only reports after
it (`ends_after_target`, its `TargetEnding`), read for a job with no accounting after the errors
and the decisive evidence. A pass of an outer loop short of its last (`Fold 1/5`) or a next
phase after it is no end. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from bot.core.catalogue.scanner import normalize_line
from bot.core.diagnose.after_target import ends_in_started_step, goes_on_after, starts_next_phase
from bot.core.diagnose.progress_shown import (
    BAR_COUNT,
    BAR_PERCENT,
    COUNT,
    EPOCH_COUNTER,
    ends_in_open_progress_bar,
    in_open_pass,
)
from bot.core.diagnose.shell_prompt import SHELL_PROMPT
from bot.core.metrics import MetricSeries
from bot.core.outer_loop import outer_loop_open

# An epoch's report with its total (`EPOCH_OF`'s counter, not YOLO's column: `Epoch [10/10]`),
# any other count on its line (`Step [50/100]`, `Iter 3/7`) and a loss or accuracy figure in it.
# A date's parts are no count (PaddleClas's and PaddleOCR's `[2024/10/18 17:05:14] ppcls INFO:
# [Train][Epoch 120/120][Avg]...`: `2024/10` short of its "total" is not a step of the epoch).
_EPOCH_REPORT = re.compile(EPOCH_COUNTER)
_FIGURE = re.compile(r"(?i)\b(?:loss|acc|accuracy)\b\s*[:=]?\s*[-+]?\d")
# The loop's steps so far on an epoch's report (PaddleOCR's `global_step: 1000`, its older
# releases' `iter: 1000`): counted over all the epochs, so the report an epoch ends with is one
# epoch's steps after the epoch before's.
_STEP_SO_FAR = re.compile(r"(?i)\b(?:global_step|iteration|iter|step)\s*[:=]\s*(\d+)\b")
# The best result so far, on a line of its own with no epoch counter (PaddleOCR's `best metric,
# acc: 0.91, …, best_epoch: 120`, which train() prints after each evaluation and once more after
# its last epoch's save): a report of the evaluations, no progress of the loop.
_BEST_SO_FAR = re.compile(r"(?i)\bbest\b")


def ends_at_last_epoch(tail: Sequence[tuple[int, str]], series: MetricSeries | None = None,
                       outer_headers: Sequence[tuple[int, str]] = ()) -> bool:
    """The log's last progress line is the report of the last epoch (`Epoch [10/10], Loss:
    0.0123`, `Epoch 10/10 - loss: 0.21 - acc: 0.93`): its counter at its total (two epochs or
    more), every other count on the line at its own total, a loss or accuracy in it, and after
    it no line with an epoch counter, a loss or a progress bar's count (a test's or a save's
    lines may follow, and a best result so far with no counter: `_BEST_SO_FAR`). With no other
    count on it, the last epoch must also have printed all its reports
    (`_last_epoch_reported`: a loop that prints its epoch counter at every step with no step
    count is mid-epoch until then). An earlier epoch, a step of the last epoch short of its
    total (`Step [50/100]`), a bare `Epoch 10/10` header or a bar left open after it is not
    this end, nor is the last epoch of a pass of an outer loop short of its last (`Fold 1/5`,
    read from `outer_headers` too, however far back: `in_open_pass`) or one a next phase
    starts after (`Loading checkpoint shards: 100%|`, `Stage 2/2: DPO`:
    bot.core.diagnose.after_target.starts_next_phase), nor a log whose last line starts a step
    with no result after it (`TensorRT: starting export ...`: `ends_in_started_step`); an
    error after it is read before (bot.core.diagnose.ending)."""
    lines = [normalize_line(t) for _, t in tail if t.strip()]
    last = next((line for line in reversed(lines)
                 if _EPOCH_REPORT.search(line)
                 or (_FIGURE.search(line) and not _BEST_SO_FAR.search(line))
                 or BAR_COUNT.search(line)), None)
    epoch = _EPOCH_REPORT.search(last) if last is not None else None
    if last is None or epoch is None or epoch.group(1) != epoch.group(2):
        return False
    # the last epoch is one pass's (`Fold 1/5`, `seed=0`), or a stage's that a next phase
    # follows (a loading bar, a stage's header: after_target.starts_next_phase)
    if outer_loop_open(lines) or (series is not None and in_open_pass(tail, series, outer_headers)):
        return False
    at = len(lines) - 1 - lines[::-1].index(last)
    if starts_next_phase(lines[:at + 1], lines[at + 1:]) or ends_in_started_step(lines[at + 1:]):
        return False
    return (int(epoch.group(2)) >= 2 and _FIGURE.search(last) is not None
            and all(done == total for done, total in COUNT.findall(last))
            and not ends_in_open_progress_bar(tail)
            and (not _only_epoch_count(last) or _last_epoch_reported(
                lines, epoch.group(2), cut=bool(tail) and tail[0][0] > 1)))


def _only_epoch_count(line: str) -> bool:
    """The line's only count is its epoch counter: no step's (`Step [600/600]`) nor a progress
    bar's (`500/500 [00:41<00:00`, `100%|`), which would tell where in its epoch it is."""
    return len(COUNT.findall(line)) <= 1 and not BAR_PERCENT.search(line)


def _last_epoch_reported(lines: Sequence[str], total: str, *, cut: bool,
                         figure: re.Pattern[str] = _FIGURE) -> bool:
    """The last epoch has printed as many reports (lines with its counter of `total` epochs, a
    loss or accuracy and no other count) as any earlier epoch whose reports are all in `lines`:
    a loop that prints one report an epoch (or one a rank, or a training and a validation line)
    has then reported its last epoch; a loop that prints its epoch counter at every step with no
    step count (`Epoch 10/10 loss: 0.41` again and again, the loss changing) is still in its
    last epoch while it has printed fewer lines in it than in the epoch before. When `lines` do
    not start at the log's first line (`cut`), their first epoch may have begun before them, so
    it is not compared; with no earlier epoch to compare, only one report an epoch so far reads
    as reported. Reports that show the loop's steps so far (PaddleOCR's `global_step: 1000`)
    are weighed by them instead when they can tell (`_last_epoch_over`): an epoch's count of
    reports varies when the print interval does not divide its steps."""
    counts: dict[str, int] = {}
    ends: dict[int, int] | None = {}  # each epoch's last report's steps so far, while all show
    for line in lines:
        m = _EPOCH_REPORT.search(line)
        if (m is not None and m.group(2) == total and figure.search(line)
                and _only_epoch_count(line)):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
            step = _STEP_SO_FAR.search(line)
            if ends is not None:
                ends = None if step is None else ends | {int(m.group(1)): int(step.group(1))}
    over = _last_epoch_over(ends, int(total)) if ends else None
    if over is not None:
        return over
    last = counts.pop(total, 0)
    earlier = list(counts.values())
    whole = earlier[1:] if cut else earlier
    if whole:
        return last >= max(whole)
    return last == 1 and all(c == 1 for c in earlier)


def _last_epoch_over(ends: dict[int, int], total: int) -> bool | None:
    """Whether the last epoch (`total`) has run all its steps, by the steps so far its reports
    show (`ends`: each epoch's last report's): its last report one epoch's steps after the
    epoch before's, where a loop ends each epoch with a report (PaddleOCR's, at its last step,
    however many its print interval gave before it), which the earlier epochs show: as many
    steps between each two of their last reports. None when that is not known: fewer than four
    epochs in a row ending at `total`, earlier spans that differ (a loop that reports only
    every so many steps) or steps that do not grow (a step counted within its epoch)."""
    epochs = sorted(ends)
    if len(epochs) < 4 or epochs[-1] != total or epochs != list(range(epochs[0], total + 1)):
        return None
    spans = [ends[e] - ends[e - 1] for e in epochs[1:]]
    if len(set(spans[:-1])) != 1 or spans[0] <= 0:
        return None
    return spans[-1] >= spans[0]



# A report's figure, named alone or with its split (`loss: 0.31`, `train_loss 0.3`, `val_acc=0.9`,
# `Acc: 0.9`): what an epoch's report carries and its header does not.
_METRIC_FIGURE = re.compile(r"(?i)(?<![a-z0-9])(?:loss|acc|accuracy)\b\s*[:=]?\s*[-+]?(?:\d|\.\d)")


class TargetEnding(NamedTuple):
    """A log whose training progress reached the run's own target and then ended with no
    training after it and no error (`ends_after_target`): the last epoch's report (`line`,
    `text`) and its epoch (`done` of `total`)."""

    line: int
    text: str
    done: int
    total: int


def ends_after_target(tail: Sequence[tuple[int, str]], series: MetricSeries,
                      outer_headers: Sequence[tuple[int, str]] = ()) -> TargetEnding | None:
    """The run's training reached its own target and the log ends after it with no training
    and no error: only what a program prints once its loop is over may follow (an evaluation's
    or a test's results, a save line, a summary, a banner, a shell's prompt), or nothing. The
    target is the one the run named itself: its last epoch's report at its total (`Epoch
    [10/10] ... loss: 0.31`, with `ends_at_last_epoch`'s checks on that line: every other count
    on it at its own total and, with no other count, all that epoch's reports printed). The
    reasoning, not a framework's end line: a loop stops at its target, and a loop still
    training prints progress again, so nothing but reports after the target is a loop that
    ended. It stays a hint: no line says the program ended (it may still be writing its
    reports). None when progress stops short of the target; when the log shows a loop around
    the training whose last pass it cannot tell ended (bot.core.outer_loop.outer_loop_open:
    `Fold 1/5`, `Trial 0 finished`; the pass's header read from `outer_headers` too, however
    far back: `in_open_pass`); when a next phase starts after the target (a loading bar, a
    stage's header: after_target.starts_next_phase); when the series' progress or any line
    after the target trains, announces training or an outer loop's next pass, is an error's or
    a signal's or an abort's, or the log ends in an evaluation announced with no result
    (`after_target.goes_on_after`); or when the log ends in a progress bar short of its total
    or inside an evaluation its framework has yet to sum up."""
    if ends_in_open_progress_bar(tail) or series.ends_inside_evaluation:
        return None
    lines = [(n, normalize_line(t)) for n, t in tail if t.strip()]
    reached = _last_epoch_report(lines, cut=bool(tail) and tail[0][0] > 1)
    if reached is None or not any(n == reached.line for n, _ in lines) or (
            series.last_iteration_line is not None and series.last_iteration_line > reached.line):
        return None
    if in_open_pass(tail, series, outer_headers) or starts_next_phase(
            [t for n, t in lines if n <= reached.line],
            [t for n, t in lines if n > reached.line]) or goes_on_after(
            [t for n, t in lines if n > reached.line and not SHELL_PROMPT.match(t.rstrip())],
            reached.done):
        return None
    return reached


def _last_epoch_report(lines: Sequence[tuple[int, str]], *, cut: bool) -> TargetEnding | None:
    """The last epoch's report, when the last line with an epoch counter is at its total (two
    epochs or more): that line when it is a report (a figure on it, `_METRIC_FIGURE`, every
    other count at its own total and, with no other count, all the last epoch's reports
    printed: `_last_epoch_reported`), or when it is the epoch's header (no figure: Keras's
    `Epoch 10/10`, a loop's `Epoch 24/24` then `train Loss: …` and `val Loss: …`) the line that
    completes as many figure lines after it as the epoch before printed after its own header
    (`_epoch_reports_done`)."""
    found = next(((i, m) for i in range(len(lines) - 1, -1, -1)
                  if (m := _EPOCH_REPORT.search(lines[i][1])) is not None), None)
    if found is None:
        return None
    i, epoch = found
    n, text = lines[i]
    done, total = int(epoch.group(1)), int(epoch.group(2))
    if done != total or total < 2 or not all(a == b for a, b in COUNT.findall(text)):
        return None
    if _METRIC_FIGURE.search(text) is None:
        report = _epoch_reports_done(lines, i, epoch.group(2))
        return None if report is None else TargetEnding(*report, done, total)
    if _only_epoch_count(text) and not _last_epoch_reported(
            [t for _, t in lines[:i + 1]], epoch.group(2), cut=cut, figure=_METRIC_FIGURE):
        return None
    return TargetEnding(n, text, done, total)


def _epoch_reports_done(lines: Sequence[tuple[int, str]], header: int, total: str
                        ) -> tuple[int, str] | None:
    """After the last epoch's header (`lines[header]`), the line that completes as many figure
    lines (`_METRIC_FIGURE`: its bar at its total, its training and validation reports) as the
    epoch before printed between its header (of the same total) and the next; None when the
    epoch before is not all among `lines`, printed none, or the last epoch has printed fewer so
    far (mid-epoch)."""
    before = next((j for j in range(header - 1, -1, -1)
                   if (m := _EPOCH_REPORT.search(lines[j][1])) is not None), None)
    if before is None or (m := _EPOCH_REPORT.search(lines[before][1])) is None or (
            m.group(2) != total or _METRIC_FIGURE.search(lines[before][1])):
        return None
    each = sum(1 for _, t in lines[before + 1:header] if _METRIC_FIGURE.search(t))
    reports = [(n, t) for n, t in lines[header + 1:] if _METRIC_FIGURE.search(t)]
    if not 0 < each <= len(reports):
        return None
    n, text = reports[each - 1]
    return (n, text) if all(a == b for a, b in COUNT.findall(text)) else None
