"""How a log ends when no error is said: a finished run, a run mid-pass, a shell's prompt.

Read only for a job with no accounting, after the errors (bot.core.diagnose.ending) and the
decisive evidence: a TensorFlow Estimator's final save, an OpenMMLab runner's or pycls's save at
its loop's target or a progress table's closing border ends a finished run (`ends_in_final_save`,
`ends_in_closed_progress_table`), and so does the bar of Keras fit()'s last epoch at its total
(`ends_in_keras_last_epoch`), and so does a last progress line that is the last epoch's report with
its loss, all that epoch's reports printed (`ends_at_last_epoch`); an epoch counter short of its
total means a 100 % progress bar was one epoch's (`epochs_left`), and a last line that is a
progress bar short of its total is a run mid-pass, whatever earlier bars reached
(`ends_in_open_progress_bar`). A last line that is a shell's prompt after progress, or after a
command's start-up output when there is no progress, where none of those speak, is a process that
ended with nothing said (`ends_at_shell_prompt`).
Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from bot.core.catalogue.scanner import normalize_line
from bot.core.detectors import TENSORPACK_EPOCH_START
from bot.core.diagnose.after_target import goes_on_after, starts_next_phase, trains_after
from bot.core.diagnose.ending import says_error
from bot.core.framework_lines import json_stats_epoch, openmmlab_epoch
from bot.core.line_time import message_after_time
from bot.core.metrics import MetricSeries
from bot.core.outer_loop import furthest_passes, outer_loop_open
from bot.core.progress_bars import is_start_up_bar

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
# An epoch counter with its total: `Epoch 3/49`, `Epoch [3/250]`, `[Epoch 10/250]`,
# PaddleOCR's `epoch: [3/500]` (tools/program.py, train), and YOLO's epoch column before the GPU
# memory (`      3/49     11.9G    0.0217 ...`).
_EPOCH_COUNTER = r"\b[Ee]poch\s*(?::\s*)?[\[(]?\s*(\d+)\s*/\s*(\d+)\b"
_EPOCH_OF = re.compile(_EPOCH_COUNTER + r"|^\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G\s")
# tensorpack's epoch start (bot.core.detectors.TENSORPACK_EPOCH_START), group 1, or its main loop
# stopped by StopTraining or an exhausted input (tensorpack/train/base.py 1547a54e: `Training was
# stopped by exception ...`), or its loop's own end after max_epoch (`Training has finished!`,
# also a catalogue end marker): either says no epoch is left after the last one started
_TENSORPACK_EPOCH = re.compile(
    rf"({TENSORPACK_EPOCH_START})"
    r"|@base\.py:[0-9]+\] (?:Training was stopped by exception |Training has finished!)")
# A progress bar's count: tqdm's percentage before its bar (`34%|###3      |`, `Steps:   0%|`)
# and its `n/total [elapsed<remaining` (`670/2000 [14:58<29:42`), Keras's `670/2000 [====>...]`.
_BAR_PERCENT = re.compile(r"(?<![\d.])(\d{1,3})(?:\.\d+)?%\s*\|")
_BAR_COUNT = re.compile(r"(?<![\d.])(\d+)/(\d+)\s*\[(?:(?:\d+:)?\d+:\d+<|[=>.]*\])")
# An interactive shell's prompt with nothing typed after it: the shell got the terminal back,
# so the process it ran had ended. Only a whole line in a prompt's form counts: bash's
# `user@host:~/proj$` (a git branch before the `$` allowed), Red Hat's `[user@host dir]$`,
# zsh's `user@host ~ %`, `bash-5.1$`, PowerShell's `PS C:\x>`, cmd's `C:\Users\me>`, a bare
# `$`, each after a virtualenv's or conda env's `(venv) `; root's `#` in place of `$`.
_PROMPT = (
    r"^(?:\([\w.+-]+\)\s+)?"
    r"(?:[\w.-]+@[\w.-]+:[^\s$#]*(?: \([\w./-]+\))?[$#]"
    r"|\[[\w.-]+@[\w.-]+(?: [^\]\s]+)?\][$#]"
    r"|[\w.-]+@[\w.-]+ [^\s%#]+ [%#]"
    r"|(?:ba|z|da)?sh-\d+(?:\.\d+)*[$#]"
    r"|PS [A-Za-z]:\\[^<>|\"\n]*>"
    r"|[A-Za-z]:\\[^<>|\"\n]*>"
    r"|\$)")
_SHELL_PROMPT = re.compile(_PROMPT + "$")
# A command typed at such a prompt (`user@host:~/proj$ python train.py`): what follows it is
# that command's output.
_COMMAND_LINE = re.compile(_PROMPT + r"\s+\S")
# Training progress that the metric series may not count: an epoch counter (`Epoch 1/10`,
# YOLO's `1/49  11.9G ...`), a loss value, or a progress bar that names training or names
# nothing (Hugging Face Trainer's bare bar), not a start-up bar
# (bot.core.progress_bars' `is_start_up_bar`: `Loading checkpoint shards: 100%|`,
# `Generating train split: 100%|`).
_TRAINING_WORDS = re.compile(r"(?i)\b(?:epoch|train\w*|step|iter\w*|batch\w*|loss)\b")
_LOSS_VALUE = re.compile(r"(?i)\bloss\b\W{0,3}[-+]?(?:\d|\.\d)")
_BAR_DESCRIPTION = re.compile(r"^(.*?)(?<![\d.])\d{1,3}(?:\.\d+)?%\s*\|")
# What a terminal shows when a run was interrupted or suspended by hand before the prompt came
# back (`^C`, `^Z`, bash's `[1]+  Stopped  python train.py`): not an end with nothing said.
_BY_HAND = re.compile(r"^\^[CZ\\]|^\[\d+\][+-]?\s+Stopped\b")


class PromptEnding(NamedTuple):
    """A log that ends at a shell's prompt (`ends_at_shell_prompt`): its class, the prompt's
    line and whether training progress came before it (else only start-up output did)."""

    class_id: str
    lines: tuple[tuple[int, str], ...]
    after_progress: bool


def ends_at_shell_prompt(
    tail: Sequence[tuple[int, str]], series: MetricSeries
) -> PromptEnding | None:
    """The log's last line is a shell's prompt with nothing typed after it (`_SHELL_PROMPT`),
    after training progress or, when the metric series counts none, after the output of the
    command run at it (lines that are not a prompt or a command typed at one; `after_progress`
    when that output shows progress the series does not count, else it was start-up output
    only): the process ended and printed nothing about why. A silent exit, with the prompt as
    its line; None when the last line is anything else, when nothing came before it but
    prompts and commands typed at them (a command whose run printed nothing), or when the run
    was interrupted or suspended by hand just before (`^C`, `^Z`). The decision weighs it
    after errors and after the signs of a finished run (a completion line, the target
    reached, a final save), which a prompt after them does not change."""
    lines = [(n, normalize_line(raw).rstrip(), raw) for n, raw in tail if raw.strip()]
    if not lines or not _SHELL_PROMPT.match(lines[-1][1]):
        return None
    if len(lines) > 1 and _BY_HAND.search(lines[-2][1]):
        return None
    prompt = ((lines[-1][0], lines[-1][2]),)
    if series.samples:
        if lines[-1][0] <= series.samples[-1].line_no:
            return None
        return PromptEnding("silent_exit", prompt, after_progress=True)
    output = [text for _, text, _ in _after_last_command(lines[:-1])
              if not _SHELL_PROMPT.match(text)]
    if not output:
        return None
    return PromptEnding("silent_exit", prompt,
                        after_progress=any(_shows_progress(text) for text in output))


def _shows_progress(text: str) -> bool:
    """An output line shows training progress the metric series may not count: an epoch
    counter, a loss value, a progress bar that names training or nothing (not a start-up
    bar: `Loading checkpoint shards: 100%|`, `Generating train split: 100%|`), read after the
    time the line starts with (`message_after_time`: a bar's label starts there)."""
    text = message_after_time(text)
    if is_start_up_bar(text):
        return False
    if _EPOCH_OF.search(text) or _LOSS_VALUE.search(text):
        return True
    bar = _BAR_DESCRIPTION.match(text)
    if bar is None and not _BAR_COUNT.search(text):
        return False
    return bar is None or not bar.group(1).strip() or bool(_TRAINING_WORDS.search(bar.group(1)))


def _after_last_command(lines: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The lines after the last command typed at a prompt (`_COMMAND_LINE`), all of them when
    none is: that command's output."""
    for i in range(len(lines) - 1, -1, -1):
        if _COMMAND_LINE.match(lines[i][1]):
            return lines[i + 1:]
    return lines


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
    (the series' or `_shows_progress`') or an error (a traceback: `says_error`) between them is
    no end."""
    lines = [(n, message_after_time(normalize_line(t))) for n, t in tail if t.strip()]
    said = [(n, line) for n, line in lines
            if not _BAR_PERCENT.search(line) and not _BAR_COUNT.search(line)]
    if not said or _K_DIFFUSION_DONE.match(said[-1][1]) is None:
        return False
    save = next((i for i in range(len(said) - 2, -1, -1)
                 if _K_DIFFUSION_SAVE.match(said[i][1]) is not None), None)
    if save is None:
        return False
    progress = {s.line_no for s in series.samples if s.iteration is not None}
    return not any(n in progress or _shows_progress(line) or says_error(line)
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


# An epoch's report with its total (`_EPOCH_OF`'s counter, not YOLO's column: `Epoch [10/10]`),
# any other count on its line (`Step [50/100]`, `Iter 3/7`) and a loss or accuracy figure in it.
# A date's parts are no count (PaddleClas's and PaddleOCR's `[2024/10/18 17:05:14] ppcls INFO:
# [Train][Epoch 120/120][Avg]...`: `2024/10` short of its "total" is not a step of the epoch).
_EPOCH_REPORT = re.compile(_EPOCH_COUNTER)
_COUNT = re.compile(r"(?<![\d./])(\d+)\s*/\s*(\d+)(?![\d./])")
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
    bot.core.diagnose.after_target.starts_next_phase); an error after it is read before
    (bot.core.diagnose.ending)."""
    lines = [normalize_line(t) for _, t in tail if t.strip()]
    last = next((line for line in reversed(lines)
                 if _EPOCH_REPORT.search(line)
                 or (_FIGURE.search(line) and not _BEST_SO_FAR.search(line))
                 or _BAR_COUNT.search(line)), None)
    epoch = _EPOCH_REPORT.search(last) if last is not None else None
    if last is None or epoch is None or epoch.group(1) != epoch.group(2):
        return False
    # the last epoch is one pass's (`Fold 1/5`, `seed=0`), or a stage's that a next phase
    # follows (a loading bar, a stage's header: after_target.starts_next_phase)
    if outer_loop_open(lines) or (series is not None and in_open_pass(tail, series, outer_headers)):
        return False
    at = len(lines) - 1 - lines[::-1].index(last)
    if starts_next_phase(lines[:at + 1], lines[at + 1:]):
        return False
    return (int(epoch.group(2)) >= 2 and _FIGURE.search(last) is not None
            and all(done == total for done, total in _COUNT.findall(last))
            and not ends_in_open_progress_bar(tail)
            and (not _only_epoch_count(last) or _last_epoch_reported(
                lines, epoch.group(2), cut=bool(tail) and tail[0][0] > 1)))


def _only_epoch_count(line: str) -> bool:
    """The line's only count is its epoch counter: no step's (`Step [600/600]`) nor a progress
    bar's (`500/500 [00:41<00:00`, `100%|`), which would tell where in its epoch it is."""
    return len(_COUNT.findall(line)) <= 1 and not _BAR_PERCENT.search(line)


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


def ends_in_open_progress_bar(tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last line is a progress bar short of its total (tqdm's `34%|###3  | 670/2000
    [14:58<29:42, 1.34s/it]`, a bar just opened: `Steps:   0%|`, Keras's `670/2000 [====>...]`):
    the run was mid-pass when the log ended, whatever total earlier bars reached (each epoch's
    bar closes at 100 % and the next one opens)."""
    last = next((normalize_line(t) for _, t in reversed(tail) if t.strip()), "")
    count = _BAR_COUNT.search(last)
    if count is not None:  # tqdm rounds 1999/2000 to 100 %: its count decides
        return int(count.group(1)) < int(count.group(2))
    percent = _BAR_PERCENT.search(last)
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
        m = _EPOCH_OF.search(line)
        if m is not None:
            done, total = (int(g) for g in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
            return 0 < total and done < total - 1
    return False


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
            [t for n, t in lines if n > reached.line and not _SHELL_PROMPT.match(t.rstrip())],
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
    if done != total or total < 2 or not all(a == b for a, b in _COUNT.findall(text)):
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
    return (n, text) if all(a == b for a, b in _COUNT.findall(text)) else None


# A program's own sentence that its training finished, in words none of the catalogue's
# `completed` markers has (those read `Training finished`, `Finished training.`, `Training
# complete(d)`, `done training in`, ...): `Done training.`, `INFO: training done`, `All done!`
# `All done!`; a word after the phrase says what it was (`done training epoch`, `All done with
# preprocessing`, `training done for fold 1`): none
_FINISH_SAID = re.compile(r"(?i)(?<![a-z])(?:done training|training (?:is )?done|all done)"
                          r"(?![a-z])(?![ \t]*[a-z0-9])")
# ... unless a stage or a phase is named before them (`[Stage: SFT] training done`, `Phase 1:
# done training`): that stage's end, the next one to come in a multi-stage pipeline
_STAGE_BEFORE = re.compile(r"(?i)(?<![a-z])(?:stage|phase)s?(?![a-z])")
# The program's other closing words, each saying its run ended, whatever framework printed it:
# the run or the whole program named done (`sft done`, `Fine-tuning finished.`, `TRAINING
# COMPLETE`, `Pipeline complete!`; not `training done for fold 1`, `training finished epoch
# 3`, nor a pretraining's end, the first stage of a program that fine-tunes next); the whole
# run's only when nothing qualifies it (`_WHOLE_RUN_LEAD`)
_RUN_DONE = re.compile(
    r"(?i)(?<![a-z-])(?:sft|fine-?tun(?:ing|e)|training|pipeline|program|script|job)"
    r" (?:is )?(?:done|finished|complete[d]?)(?![a-z])"
    r"(?![ \t]*(?:for|with|epoch|step|iter\w*|fold|stage|phase|round|part|on|of)\b)")
# ... the final model saved or exported (`Saving final model to out/`, `Final model saved`,
# `Export complete (35.4s)`, `TensorFlow Lite: export success`)
_FINAL_MODEL = re.compile(
    r"(?i)(?<![a-z])(?:(?:sav(?:ing|ed)|wr(?:iting|ote)|export(?:ing|ed)?) (?:the )?final model"
    r"|final model (?:saved|written|exported|stored)"
    r"|export (?:complete[d]?|success(?:ful)?|finished|done)(?![a-z]))")
# ... or the process's exit with status 0 as a runner reports it (PyCharm's `Process finished
# with exit code 0`)
_EXITED = re.compile(r"(?i)(?<![a-z])process finished with exit code 0(?!\d)")
# An early stop the program announces (`Early stopping`, `Early stopping triggered at epoch
# 18`, Keras's `Epoch 14: early stopping`, `EarlyStopping`, `Stopping training early`): the
# loop ended before its total by design, so the count short of it is no sign of a part; not an
# early stop's counter, wait, tracker or setting, printed each epoch (`EarlyStopping counter:
# 3 out of 10`, `[EarlyStopping] counter 3 of 10`, `Early stop count: 3`, `early stopping wait:
# 3 / 10`, `EarlyStopping tracker: best=0.31`, `Early stopping not triggered`, `early_stopping:
# true`, `early_stopping_patience=5`, `early stopping is enabled with patience 3`)
_STOPPED_EARLY = re.compile(
    r"(?i)(?<![a-z])(?:early[ _-]?stop(?:ping|ped)?|stopp(?:ing|ed)(?: training)? early)"
    r"(?![a-z_])(?![\])]?[ \t]*(?:[:=(]|count(?:er)?\b|wait|tracker|best\b|in\b|not\b|state\b"
    r"|patience|callback|monitor|with\b|(?:is |was )?"
    r"(?:enabled|disabled|active|activated|configured|set|on|off)\b))")


# The whole run named done: `_RUN_DONE` with nothing before its words but a log's level or
# logger (`INFO: training done`, `[INFO] __main__: Training complete`) and `the` or `model`;
# a word naming what trained or ran (`Data pipeline completed`, `Head training complete.`,
# `Tokenizer training complete`, `Warmup training finished`, `Pretraining stage: training
# complete`, `pretrain.py: training finished`) makes it a stage's of a larger job
_WHOLE_RUN_LEAD = re.compile(r"(?i)^(?:[^a-z]|(?<![a-z])(?:info|notice|debug|log|main)(?![a-z]))*"
                             r"(?:(?:the|model) )?$")
# ... and nothing after them announcing the next phase (`SFT done, starting DPO...`, `SFT
# complete, moving to RL stage`, `SFT finished. Merging LoRA`)
_NEXT_PHASE_SAID = re.compile(
    r"(?i)(?<![a-z])(?:start\w*|begin\w*|moving|move on|proceed\w*|switch\w*|next|now|launch\w*"
    r"|load\w*|running|merg\w*|then|continu\w*|resum\w*)(?![a-z])")
# An interruption before the words (`Interrupted`, `KeyboardInterrupt`, `Training interrupted
# by user`): a script's save in a `finally:` or an interrupt handler, not a clean end
_INTERRUPTED = re.compile(r"(?i)(?<![a-z])(?:keyboard ?interrupt|interrupted)(?![a-z])")
# A fit's result figure (`R²=0.8271`, `CV Accuracy:    92.9%`, `ROC-AUC: 0.98`, `val loss 0.31`)
_RESULT_FIGURE = re.compile(r"(?i)(?<![a-z0-9])(?:loss|acc|accuracy|auc|r²|r2|rmse|mae|f1)"
                            r"[ \t]*[:=]?[ \t]*[-+]?(?:\d|\.\d)")


def _whole_run_done(text: str) -> bool:
    """`text` (a normalized line) names the whole run done (`_RUN_DONE`) with nothing
    qualifying what ended before the words (`_WHOLE_RUN_LEAD`) nor a next phase after them
    (`_NEXT_PHASE_SAID`)."""
    message = message_after_time(text)
    return any(_WHOLE_RUN_LEAD.match(message[:m.start()])
               and not _NEXT_PHASE_SAID.search(message[m.end():])
               for m in _RUN_DONE.finditer(message))


def _finish_said(text: str) -> bool:
    """`text` (a normalized line) says training finished (`_FINISH_SAID`) with no stage or
    phase named before the words (`_STAGE_BEFORE`)."""
    message = message_after_time(text)
    return any(not _STAGE_BEFORE.search(message[:m.start()])
               for m in _FINISH_SAID.finditer(message))


def _closing(text: str) -> bool:
    return any(p.search(text) for p in (_FINISH_SAID, _RUN_DONE, _FINAL_MODEL, _EXITED,
                                        _STOPPED_EARLY))


def _count_short(lines: Sequence[str]) -> bool:
    """The last count of progress before the sentence stops short of its total by more than a
    zero-based count's one (`Iter 200/1000 loss 0.7` then `Done training.`): a run that ends its
    loop there stopped early or ended a part, which the sentence does not tell apart from a
    phase's end, so it is no finish."""
    last = next((m for line in reversed(lines) if (m := _PROGRESS_COUNT.search(line))), None)
    return last is not None and int(last.group(1)) < int(last.group(2)) - 1


# A count of training progress (`Iter 200/1000`, `Epoch [3/10]`, `step 200 / 1000`)
_PROGRESS_COUNT = re.compile(r"(?i)(?<![a-z])(?:iter\w*|step|epoch|batch|it)\s*[:\[(]?\s*(\d+)"
                             r"\s*/\s*(\d+)")


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


def stops_early_in_open_pass(tail: Sequence[tuple[int, str]], series: MetricSeries,
                             outer_headers: Sequence[tuple[int, str]], line: int) -> bool:
    """The log's line `line` (a completion marker's) is an early stop (`_STOPPED_EARLY`:
    Keras's `Epoch 25: early stopping`) inside a pass of an outer loop short of its last
    (`in_open_pass`: `Fold 1/5`): the loop it stopped before its total is that pass's, and the
    next pass trains next."""
    text = next((normalize_line(t) for n, t in tail if n == line), "")
    return _STOPPED_EARLY.search(text) is not None and in_open_pass(tail, series, outer_headers)


class FinishSaid(NamedTuple):
    """The line of a log alone that says its training finished in the program's own words
    (`ends_in_finish_said`)."""

    line: int
    text: str


def ends_in_finish_said(tail: Sequence[tuple[int, str]], series: MetricSeries,
                        outer_headers: Sequence[tuple[int, str]] = ()) -> FinishSaid | None:
    """After training progress, the last line saying training finished in the program's own
    words (`_FINISH_SAID`: `Done training.`, `training done`, `All done!`, with no stage named
    before them; the whole run or program named done with no stage before the words nor a next
    phase after them,
    `_whole_run_done`: `sft done`, `TRAINING COMPLETE`, `Pipeline complete!`, which a fit's
    results around it may stand in for progress before; the final model saved or exported,
    `_FINAL_MODEL`; the process's exit 0 as a runner reports it, `_EXITED`, which ends every
    loop it ran, so no outer loop or count short of its total before it undoes it; an early
    stop it announces, `_STOPPED_EARLY`, which no count short of its total undoes), with
    nothing after it but what `ends_after_target` lets follow a target: None when that line or
    one after it trains or names a pass or an epoch (`Done training epoch 3`, `training done
    for fold 1/5`), when the log shows an outer loop short of its last pass (read from
    `outer_headers` too, the log's latest lines with an outer loop's counter before the tail,
    this run's: a `Fold 1/5` more than the tail's lines back still holds an early stop to its
    fold), when the series' progress goes on after it, when the next phase starts after it
    (a loading bar, a tracker's new run), when an interruption comes before it
    (`KeyboardInterrupt` then the final save), or when a signal, an error or an evaluation
    with no result follows it (bot.core.diagnose.after_target.goes_on_after); None with no
    training progress before it (`All done.` after a data-preparation step)."""
    if ends_in_open_progress_bar(tail) or series.ends_inside_evaluation:
        return None
    lines = [(n, normalize_line(t)) for n, t in tail if t.strip()]
    said = next((i for i in range(len(lines) - 1, -1, -1) if _closing(lines[i][1])), None)
    if said is None:
        return None
    n, text = lines[said]
    early = _STOPPED_EARLY.search(text) is not None
    # the process's own exit (`Process finished with exit code 0`) ends every loop it ran,
    # whatever it counted (`Episode 9501/10000, rewards: 41.6`)
    exited = _EXITED.search(text) is not None
    # a stage or the run named done with a qualifier or a next phase (`Head training
    # complete.`, `SFT done, starting DPO...`, `[Stage: SFT] training done`) is a stage's end
    if not any(p.search(text) for p in (_FINAL_MODEL, _EXITED, _STOPPED_EARLY)
               ) and not _finish_said(text) and not _whole_run_done(text):
        return None
    # training progress before the words, or for the whole run named done a fit's results
    # around them (`R²=0.8271`, `CV Accuracy: 92.9%`: a scikit-learn pipeline prints no
    # progress), not a data or setup step's words at a job's start
    if not any(_shows_progress(t) or (exited and _COUNT.search(t)) for _, t in lines[:said]) and (
            not _whole_run_done(text) or not any(_RESULT_FIGURE.search(t) for _, t in lines)):
        return None
    # the next phase starting after the words (its checkpoint's or data's loading bar, a new
    # tracker run, a stage's header: after_target.starts_next_phase), or an interruption after
    # the last progress before them
    last_progress = max((i for i in range(said) if _shows_progress(lines[i][1])), default=-1)
    if starts_next_phase([t for _, t in lines[:said + 1]], [t for _, t in lines[said + 1:]]) or any(
            _INTERRUPTED.search(t) for _, t in lines[last_progress + 1:said]):
        return None
    # the sentence's own line is read as one after it (`Done training epoch 3` trains), but
    # an early stop's names the epoch it stopped at (`Epoch 14: early stopping`)
    after = lines[said + 1:] if early or exited else lines[said:]
    # the series' progress after the sentence goes on only where it trains (not an
    # evaluation's bar at its total: `Evaluating best model: 100%|...| 125/125`)
    progress_after = series.last_iteration_line is not None and any(
        m == series.last_iteration_line and trains_after(t) for m, t in lines[said + 1:]) or (
        series.last_iteration_line is not None and series.last_iteration_line > n
        and not any(m == series.last_iteration_line for m, _ in lines))
    if (not early and not exited and _count_short([t for _, t in lines[:said]])) or (
            progress_after) or (
            (not exited and in_open_pass(tail, series, outer_headers))
            or goes_on_after(
                [t for _, t in after if not _SHELL_PROMPT.match(t.rstrip())], epoch=-1)):
        return None
    return FinishSaid(n, text)
