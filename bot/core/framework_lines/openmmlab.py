"""The lines of OpenMMLab's runners (pure; no I/O), read for bot.core.framework_lines'
`read_framework_line`: mmcv 1.x's TextLoggerHook (mmdet 2.x, mmseg 0.x, mmpose) and mmengine's
LogProcessor (mmdet 3.x and its kin), a training's iteration, pace and GPU memory or an
evaluation's batches; and the epoch of a by-epoch training line, for
bot.core.diagnose.framework_end.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.progress_bars import NUMBER
from bot.core.units import MIB

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# OpenMMLab's runners' lines (mmdet 2.x, mmseg 0.x, mmpose: open-mmlab/mmcv 1.x
# mmcv/runner/hooks/logger/text.py, TextLoggerHook._log_info; mmdet 3.x and its kin:
# open-mmlab/mmengine mmengine/runner/log_processor.py, LogProcessor.get_log_after_iter): a
# header, then the logged values (`lr: 2.000e-04, eta: …, time: 0.512, data_time: 0.010, memory:
# 3512, …, loss: 0.4123`; mmengine's blank-separated). The training's header is `Iter [i/N]` /
# `Iter(train) [i/N]` (by iteration: i from 1 to max_iters N) or `Epoch [E][i/n]` /
# `Epoch(train) [E][i/n]` (by epoch: epochs and the epoch's steps from 1, n its steps; mmengine
# pads both: `Epoch(train)  [1][  50/7330]`); an evaluation's (`Epoch(val) [12][500]`,
# `Iter(val) [500]`, mmengine's `Epoch(val) [12][500/500]`, `Epoch(test) [500/500]`) is no
# training progress but an evaluation's batches (mmcv's, logged once the pass is over, all of
# them: EvalHook's `eval_iter_num`, the same count after each epoch's pass, or the epoch's
# training steps before mmcv 1.3.x: a summary of the pass, Sample.evaluation_done). mmengine
# sums a pass up once it is over too (LogProcessor.get_log_after_epoch: `Epoch(val)
# [12][500/500]    coco/bbox_mAP: 0.3740  …  data_time: 0.0100  time: 0.1000`, `Iter(val)
# [500/500]    mIoU: …`, `Epoch(test) [500/500]    …`): all n of n and the evaluator's metrics,
# no `eta:` (its batch lines, get_log_after_iter's, have one with IterTimerHook, 500/500 too:
# `_OPENMMLAB_ETA`). The logged names may hold `/` and `-` (mmengine's `coco/bbox_mAP`,
# mmcls's `accuracy_top-1`). `time:` is the seconds per step; `memory:`
# torch.cuda.max_memory_allocated in MiB: GPU memory, no host memory.
_OPENMMLAB = re.compile(
    r"(?<![\w(])(Epoch|Iter)(?:\((\w+)\))?\s*(?:\[\s*(\d+)\]\s*)?"
    r"\[\s*(\d+)(?:/(\d+))?\]\s+[\w./-]+: ")
_OPENMMLAB_ETA = re.compile(r"(?<![\w.])eta: ")
# mmengine's and mmcv 1.x's by-epoch lines name no epoch total: their config dump or runner
# announces it before the loop (bot.core.announced_targets), the epochs announced for their lines'
# target. LoggerHook's ignore_last (its default, mmcv's TextLoggerHook's too) leaves an epoch's last
# steps past the last logging interval unlogged (`[12][7300/7330]` is the last epoch's last line):
# CheckpointHook's save once the epoch is over says the rest (bot.core.diagnose.framework_end,
# ends_in_final_save).
_OPENMMLAB_TIME = re.compile(rf"(?<![\w.])time: ({NUMBER})(?=,|\s|$)")
_OPENMMLAB_MEM = re.compile(r"(?<![\w.])memory: (\d+)(?=,|\s|$)")


def read_openmmlab(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """An OpenMMLab runner's line (`_OPENMMLAB`): the training's gives its iteration (`Iter
    [i/N]`: i of the target N; `Epoch [E][i/n]`: the epochs before it, as many steps as this
    one's, and this one's, as an epoch's bar is read: bot.core.progress_bars, read_epoch_bar;
    with every one of the epochs announced as the target, when they were: mmengine's config's,
    mmcv 1.x's runner's) and its seconds per step; an evaluation's (`Epoch(val)`, `Iter(val)`,
    `Epoch(test)`) its batches done and their total, as an evaluation's bar (mmcv's `[500]`,
    printed once the pass is over, and mmengine's `[500/500]` with no `eta:`, its summary
    after the pass: all 500, a summary of the pass, new activity though the pass's last batch
    line or the epoch before printed the same count); any one's `memory:` is the GPU memory in
    MiB."""
    m = _OPENMMLAB.search(body)
    if m is None:
        return
    kind, mode, epoch, step, steps = m.groups()
    mem = _OPENMMLAB_MEM.search(body, m.end())
    if mem is not None:
        s.gpu_mem_bytes = int(mem.group(1)) * MIB
    if mode not in (None, "train"):
        # an evaluation's: its batches, no iteration, target or pace of training
        s.evaluation_batches = (int(step), int(steps if steps is not None else step))
        # a summary once the pass is over: mmcv 1.x's (no total), mmengine's (n of n, no eta)
        s.evaluation_done = steps is None or (
            step == steps and _OPENMMLAB_ETA.search(body, m.start()) is None)
        return
    if steps is None or (kind == "Epoch") != (epoch is not None):
        return
    if epoch is None:
        s.iteration, s.target_iter = int(step), int(steps)
    else:
        s.iteration = (max(int(epoch), 1) - 1) * int(steps) + int(step)
        if targets.epochs is not None and targets.epochs >= int(epoch):
            s.target_iter = targets.epochs * int(steps)
    pace = _OPENMMLAB_TIME.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def openmmlab_epoch(text: str) -> tuple[int, int] | None:
    """The epoch and its steps (`Epoch(train) [12][7300/7330]`, mmcv 1.x's `Epoch
    [12][7300/7330]`: 12, 7330) of an OpenMMLab runner's by-epoch training line's text (its
    message, time and all), or None when it is no such line."""
    m = _OPENMMLAB.search(text) if "Epoch" in text else None
    if (m is None or m.group(1) != "Epoch" or m.group(2) not in (None, "train")
            or m.group(3) is None or m.group(5) is None):
        return None
    return int(m.group(3)), int(m.group(5))
