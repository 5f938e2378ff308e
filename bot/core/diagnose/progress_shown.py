"""What a log's last lines show of its training progress, for the readings of how a log ends
with no error said (bot.core.diagnose.framework_end, last_epoch, finish_said, shell_prompt):
an epoch counter with its total (`EPOCH_OF`), a progress bar's count (`BAR_COUNT`,
`BAR_PERCENT`), a line that shows training progress the metric series may not count
(`shows_progress`), a last line that is a progress bar short of its total
(`ends_in_open_progress_bar`), epochs left after the last one counted (`epochs_left`) and a
tail inside a pass of an outer loop short of its last (`in_open_pass`).
Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.catalogue.scanner import normalize_line
from bot.core.detectors import TENSORPACK_EPOCH_START
from bot.core.line_time import message_after_time
from bot.core.metrics import MetricSeries
from bot.core.outer_loop import furthest_passes, outer_loop_open
from bot.core.progress_bars import is_start_up_bar

# An epoch counter with its total: `Epoch 3/49`, `Epoch [3/250]`, `[Epoch 10/250]`,
# PaddleOCR's `epoch: [3/500]` (tools/program.py, train), and YOLO's epoch column before the GPU
# memory (`      3/49     11.9G    0.0217 ...`).
EPOCH_COUNTER = r"\b[Ee]poch\s*(?::\s*)?[\[(]?\s*(\d+)\s*/\s*(\d+)\b"
EPOCH_OF = re.compile(EPOCH_COUNTER + r"|^\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G\s")
# tensorpack's epoch start (bot.core.detectors.TENSORPACK_EPOCH_START), group 1, or its main loop
# stopped by StopTraining or an exhausted input (tensorpack/train/base.py 1547a54e: `Training was
# stopped by exception ...`), or its loop's own end after max_epoch (`Training has finished!`,
# also a catalogue end marker): either says no epoch is left after the last one started
_TENSORPACK_EPOCH = re.compile(
    rf"({TENSORPACK_EPOCH_START})"
    r"|@base\.py:[0-9]+\] (?:Training was stopped by exception |Training has finished!)")
# A progress bar's count: tqdm's percentage before its bar (`34%|###3      |`, `Steps:   0%|`)
# and its `n/total [elapsed<remaining` (`670/2000 [14:58<29:42`), Keras's `670/2000 [====>...]`.
BAR_PERCENT = re.compile(r"(?<![\d.])(\d{1,3})(?:\.\d+)?%\s*\|")
BAR_COUNT = re.compile(r"(?<![\d.])(\d+)/(\d+)\s*\[(?:(?:\d+:)?\d+:\d+<|[=>.]*\])")
# A count and its total on a line (`Step [50/100]`, `Iter 3/7`). A date's parts are no count
# (PaddleClas's and PaddleOCR's `[2024/10/18 17:05:14]`: `2024/10` is not a step of an epoch).
COUNT = re.compile(r"(?<![\d./])(\d+)\s*/\s*(\d+)(?![\d./])")
# Training progress that the metric series may not count: an epoch counter (`Epoch 1/10`,
# YOLO's `1/49  11.9G ...`), a loss value, or a progress bar that names training or names
# nothing (Hugging Face Trainer's bare bar), not a start-up bar
# (bot.core.progress_bars' `is_start_up_bar`: `Loading checkpoint shards: 100%|`,
# `Generating train split: 100%|`).
_TRAINING_WORDS = re.compile(r"(?i)\b(?:epoch|train\w*|step|iter\w*|batch\w*|loss)\b")
_LOSS_VALUE = re.compile(r"(?i)\bloss\b\W{0,3}[-+]?(?:\d|\.\d)")
_BAR_DESCRIPTION = re.compile(r"^(.*?)(?<![\d.])\d{1,3}(?:\.\d+)?%\s*\|")


def shows_progress(text: str) -> bool:
    """An output line shows training progress the metric series may not count: an epoch
    counter, a loss value, a progress bar that names training or nothing (not a start-up
    bar: `Loading checkpoint shards: 100%|`, `Generating train split: 100%|`), read after the
    time the line starts with (`message_after_time`: a bar's label starts there)."""
    text = message_after_time(text)
    if is_start_up_bar(text):
        return False
    if EPOCH_OF.search(text) or _LOSS_VALUE.search(text):
        return True
    bar = _BAR_DESCRIPTION.match(text)
    if bar is None and not BAR_COUNT.search(text):
        return False
    return bar is None or not bar.group(1).strip() or bool(_TRAINING_WORDS.search(bar.group(1)))



def ends_in_open_progress_bar(tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last line is a progress bar short of its total (tqdm's `34%|###3  | 670/2000
    [14:58<29:42, 1.34s/it]`, a bar just opened: `Steps:   0%|`, Keras's `670/2000 [====>...]`):
    the run was mid-pass when the log ended, whatever total earlier bars reached (each epoch's
    bar closes at 100 % and the next one opens)."""
    last = next((normalize_line(t) for _, t in reversed(tail) if t.strip()), "")
    count = BAR_COUNT.search(last)
    if count is not None:  # tqdm rounds 1999/2000 to 100 %: its count decides
        return int(count.group(1)) < int(count.group(2))
    percent = BAR_PERCENT.search(last)
    return percent is not None and int(percent.group(1)) < 100


def epochs_left(tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last epoch counter is short of its total (0- or 1-based alike: `3/49`), so a
    progress bar at 100 % is one epoch's (or a validation pass's), not the run's target. So is
    tensorpack's last epoch started and its loop not stopped after it: its bar counts one
    epoch's steps, and only its end marker says the last epoch is done (`_TENSORPACK_EPOCH`)."""
    for _, text in reversed(tail):
        line = normalize_line(text)
        if (tensorpack := _TENSORPACK_EPOCH.search(line)) is not None:
            return tensorpack.group(1) is not None
        m = EPOCH_OF.search(line)
        if m is not None:
            done, total = (int(g) for g in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
            return 0 < total and done < total - 1
    return False



def in_open_pass(tail: Sequence[tuple[int, str]], series: MetricSeries,
                 outer_headers: Sequence[tuple[int, str]]) -> bool:
    """The log's last lines (`tail`) are inside a pass of an outer loop short of its last
    (bot.core.outer_loop.outer_loop_open: `Fold 1/5`, `Score for fold 1`), read with
    `outer_headers`, the log's latest lines with an outer loop's counter before the tail, this
    run's (from `series.run_start`): a pass's header more than the tail's lines back still holds
    an end in the tail (an early stop, a completion marker, the closing words) to its pass."""
    lines = [normalize_line(t) for _, t in tail if t.strip()]
    first = next((n for n, t in tail if t.strip()), 0)
    return outer_loop_open(furthest_passes(
        [t for m, t in outer_headers if (series.run_start or 1) <= m < first]) + lines)
