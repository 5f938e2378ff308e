"""A framework's own sign that its loop ended, read for a job with no accounting after the
errors (bot.core.diagnose.ending) and the decisive evidence: a TensorFlow Estimator's final save,
an OpenMMLab runner's or pycls's save at its loop's target or k-diffusion's at its end step
(`ends_in_final_save`), a progress table's closing border (`ends_in_closed_progress_table`) and
the bar of Keras fit()'s last epoch at its total (`ends_in_keras_last_epoch`).
Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from bot.core.catalogue.scanner import normalize_line
from bot.core.diagnose.ending import says_error
from bot.core.diagnose.progress_shown import BAR_COUNT, BAR_PERCENT, shows_progress
from bot.core.framework_lines import json_stats_epoch, openmmlab_epoch
from bot.core.line_time import message_after_time
from bot.core.metrics import MetricSeries

# TensorFlow's Estimator (and Keras/Slim) writing a checkpoint: `Saving checkpoints for N into`.
_FINAL_SAVE = re.compile(r"Saving checkpoints? for ([0-9]+) into ")
# mmengine's CheckpointHook (open-mmlab/mmengine mmengine/hooks/checkpoint_hook.py 25434293),
# and mmcv 1.x's before it (open-mmlab/mmcv mmcv/runner/hooks/checkpoint.py):
# `Saving checkpoint at {epoch + 1} epochs` in after_train_epoch, once that epoch's every step
# ran, and `Saving checkpoint at {iter + 1} iterations` in after_train_iter, every interval and
# (save_last, its default) at the loop's last epoch or iteration; the last epoch's validation
# follows it (`Epoch(val) [12][5000/5000]  coco/bbox_mAP: …`), then the loop's after_train
# hooks, which print nothing of their own.
_OPENMMLAB_SAVE = re.compile(r"(?<![\w:])Saving checkpoint at ([0-9]+) (epochs|iterations) *$")
# pycls's train_model (facebookresearch/pycls pycls/core/trainer.py 5719de641657): after each
# epoch's training and test, `Wrote checkpoint to: {OUT_DIR}/checkpoints/model_epoch_0100.pyth`
# (pycls/core/checkpoint.py, get_checkpoint: `model_epoch_{:04d}.pyth`, the epoch from 1), the
# last thing its loop prints; older releases wrote it every CHECKPOINT_PERIOD epochs and at the
# last.
_PYCLS_SAVE = re.compile(r"(?<![\w:])Wrote checkpoint to: \S*model_epoch_([0-9]+)\.pyth *$")
# k-diffusion's train.py (crowsonkb/k-diffusion train.py 4601bf0): save() says `Saving to
# {name}_{step:08}.pth...` every save_every steps and once the step count reaches --end-step,
# after which, only there, the loop says `Done!` and main returns; a KeyboardInterrupt leaves the
# loop saying nothing. Both through tqdm.write, on stdout: the epoch's bar (stderr) is drawn
# again after them, and once more as the process ends. Between the two, save() writes the
# checkpoint (accelerator.save, json.dump, wandb.save): what those say on stderr (a warning and
# the source line Python shows under it, wandb's `wandb: WARNING …`) lands there too, and is
# neither progress nor an error.
_K_DIFFUSION_SAVE = re.compile(r"^Saving to \S+_[0-9]{8}\.pth\.\.\. *$")
_K_DIFFUSION_DONE = re.compile(r"^Done! *$")
# A trainer's progress table (Turi Create's and GraphLab's toolkits: `| Iteration | Loss |
# Elapsed Time |`, one row per iteration or epoch) and the border that closes it.
_TABLE_BORDER = re.compile(r"^\+(?:-+\+)+\s*$")
_PROGRESS_TABLE_HEADER = re.compile(r"(?i)^\|\s*(?:iteration|iter|epoch|step|pass)s?\s*\|")
_PROGRESS_TABLE_ROW = re.compile(r"^\|\s*\d+\s*\|")
# Keras's fit() (keras/src/callbacks/progbar_logger.py, ProgbarLogger: `Epoch {epoch + 1}/
# {epochs}` on each epoch's start when epochs > 1, the epoch's bar finalized at its end;
# keras/src/utils/progbar.py, Progbar.update: `469/469 ━━━━ 3s 6ms/step - loss: ...` at
# verbose 1, `469/469 - 3s - 6ms/step - loss: ...` at verbose 2; tf.keras 2's `469/469
# [==============================] - 3s 6ms/step - loss: ...`): the epoch header, and a bar at
# its total (an earlier update of the same bar is short of it).
_KERAS_EPOCH = re.compile(r"^Epoch (\d+)/(\d+)\s*$")
_KERAS_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:━+\s+\d|\[[=>.]+\]\s+-\s|-\s+\d)")


def ends_in_final_save(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """The log ends with the checkpoint a TensorFlow Estimator (or Keras/Slim's
    `Saving checkpoints for N into`) writes when training stops: its step is past the last
    progress line and off the progress lines' step grid (a periodic save of a running job
    lands on the grid or is followed by more progress); or with an OpenMMLab runner's save at
    its target (`_openmmlab_save_at_target`), or k-diffusion's at its end step
    (`_k_diffusion_done`)."""
    lines = [t for _, t in tail if t.strip()]
    m = _FINAL_SAVE.search(lines[-1]) if lines else None
    every, last = series.log_every(), series.last_iteration
    if m is None or last is None or every <= 1:
        return (_openmmlab_save_at_target(series, tail) or _pycls_save_at_target(series, tail)
                or _k_diffusion_done(series, tail))
    step = int(m.group(1))
    return step > last and step % every != 0


def _k_diffusion_done(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last line, but for its progress bar's draws, is k-diffusion's `Done!` after its
    save (`_K_DIFFUSION_SAVE`), with nothing between them but what the save's writing may say
    on stderr (a warning): the save at --end-step. A bare `Done!` (many a script's word), a
    save with no `Done!` after it (every save_every steps' save), or one with training progress
    (the series' or `shows_progress`') or an error (a traceback: `says_error`) between them is
    no end."""
    lines = [(n, message_after_time(normalize_line(t))) for n, t in tail if t.strip()]
    said = [(n, line) for n, line in lines
            if not BAR_PERCENT.search(line) and not BAR_COUNT.search(line)]
    if not said or _K_DIFFUSION_DONE.match(said[-1][1]) is None:
        return False
    save = next((i for i in range(len(said) - 2, -1, -1)
                 if _K_DIFFUSION_SAVE.match(said[i][1]) is not None), None)
    if save is None:
        return False
    progress = {s.line_no for s in series.samples if s.iteration is not None}
    return not any(n in progress or shows_progress(line) or says_error(line)
                   for n, line in said[save + 1:-1])


def _openmmlab_save_at_target(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """After the log's last progress line, with no progress after it, mmengine's (or mmcv
    1.x's) CheckpointHook saved at the loop's target (`_OPENMMLAB_SAVE`): at the iteration its
    `Iter(train) [i/N]` lines name, or at the epochs that, with the steps of the epoch the last
    `Epoch(train) [E][i/n]` (mmcv 1.x's `Epoch [E][i/n]`) line counts, make the target the
    announced epochs gave them (its config's max_epochs, mmcv's runner's `max: N epochs`:
    bot.core.framework_lines): a loop whose logger left its last steps unlogged
    (`[12][7300/7330]`) ran them all. A save at an earlier epoch, or none after the last
    progress line (a run cut there), is no end."""
    save = _save_after_progress(series, tail, _OPENMMLAB_SAVE)
    if save is None:
        return False
    if save.group(2) == "iterations":
        return series.target_iter is not None and int(save.group(1)) >= series.target_iter
    return _saved_at_last_epoch(series, int(save.group(1)), openmmlab_epoch)


def _pycls_save_at_target(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """After the log's last progress line, with no progress after it, pycls saved its last
    epoch's checkpoint (`_PYCLS_SAVE`): the epoch of its last `train_iter` line, whose
    epochs' steps are the target (bot.core.framework_lines, `json_stats_epoch`): its last
    steps, left unlogged when LOG_PERIOD does not divide them, all ran. An earlier epoch's
    save, or none after the last progress line, is no end."""
    save = _save_after_progress(series, tail, _PYCLS_SAVE)
    return save is not None and _saved_at_last_epoch(series, int(save.group(1)), json_stats_epoch)


def _save_after_progress(series: MetricSeries, tail: Sequence[tuple[int, str]],
                         save: re.Pattern[str]) -> re.Match[str] | None:
    """The last line of the tail after the series' last progress line that `save` matches
    (a framework's save of its checkpoint), None when there is none or the series has no
    target."""
    last_line = series.last_iteration_line
    if series.target_iter is None or last_line is None:
        return None
    return next((m for n, t in reversed(tail) if n > last_line
                 and (m := save.search(normalize_line(t))) is not None), None)


def _saved_at_last_epoch(series: MetricSeries, epoch_saved: int,
                         epoch_of: Callable[[str], tuple[int, int] | None]) -> bool:
    """A save at `epoch_saved` is the loop's last: the series' last progress line is of that
    epoch (`epoch_of` its text: its epoch and that epoch's steps), and that many epochs of its
    steps are the series' target."""
    last = next((s for s in reversed(series.samples)
                 if s.line_no == series.last_iteration_line), None)
    epoch = epoch_of(last.text) if last is not None else None
    return (epoch is not None and epoch[0] == epoch_saved
            and epoch_saved * epoch[1] == series.target_iter)


def ends_in_closed_progress_table(tail: Sequence[tuple[int, str]]) -> bool:
    """The log ends with the bottom border a trainer prints under its progress table when its
    loop ends (Turi Create's `+----+----+` under its `| Iteration | Loss | ... |` rows): the
    table's header names the iteration, epoch or step and its rows count them. A table of
    other figures (an evaluation's per-class table) or one still open is not the end."""
    lines = [normalize_line(t) for _, t in tail if t.strip()]
    if not lines or not _TABLE_BORDER.match(lines[-1]):
        return False
    top = len(lines) - 2
    while top >= 0 and _PROGRESS_TABLE_ROW.match(lines[top]):
        top -= 1
    return (top < len(lines) - 2 and top >= 1 and bool(_TABLE_BORDER.match(lines[top]))
            and bool(_PROGRESS_TABLE_HEADER.match(lines[top - 1])))


def ends_in_keras_last_epoch(tail: Sequence[tuple[int, str]]) -> bool:
    """The log ends with the bar of Keras fit()'s last epoch at its total: `Epoch 10/10`, then
    that epoch's bar (its updates, one a line when the output is no terminal), the last at its
    total (`469/469 ━━━━ 3s 6ms/step - loss: 0.0611`). ProgbarLogger finalizes it as the epoch
    ends, after which fit() returns (an evaluate() after it draws one more bar at its total,
    which ends the log alike). An epoch short of the total, a bar short of its own, or any other
    line after them (an error, a warning) is not this end."""
    lines = [normalize_line(t) for _, t in tail if t.strip()]
    last = _KERAS_BAR.match(lines[-1]) if lines else None
    if last is None or last.group(1) != last.group(2):
        return False
    top = len(lines) - 2
    while top >= 0 and _KERAS_BAR.match(lines[top]):
        top -= 1
    epoch = _KERAS_EPOCH.match(lines[top]) if top >= 0 else None
    return epoch is not None and epoch.group(1) == epoch.group(2)
