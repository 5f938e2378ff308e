"""The lines of MosaicML composer's Trainer (pure; no I/O), read for bot.core.framework_lines'
`read_framework_line`: its ProgressBarLogger's tqdm bars (the training's and its evaluators')
and its ConsoleLogger's progress and evaluation lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.framework_lines.epoch_steps import target_of_announced_epochs
from bot.core.progress_bars import NUMBER, TQDM_BAR

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# MosaicML composer's Trainer (mosaicml/composer 6405188805a0). Its ProgressBarLogger, on by
# default (progress_bar=True; composer/loggers/progress_bar_logger.py, _build_pbar), draws tqdm
# bars with `bar_format=desc + ' {l_bar}{bar:25}{r_bar}'`, desc the dataloader's label padded to
# 15 (`f'{state.dataloader_label:15}'`: the training's `train`, an evaluator's own, `eval`)
# then, with max_duration in epochs, `Epoch {n:3}: ` (n from 0; an evaluation mid-epoch `Batch
# {batch:3}: `), or for an evaluation with max_duration in another unit `{Unit:6} {value:5}: `,
# its unit `ba`: `train          Epoch   0:  45%|███████████▎             | 352/782 [00:18<00:22,
# 18.93ba/s, loss/train/total=0.4123]`. In epochs there is a training bar per epoch, counting
# its batches (their target every epoch's batches, as many as this one's, when the epochs
# max_duration names were printed, in its hyperparameters' dump: bot.core.announced_targets;
# else none); in another unit
# one bar for the whole training, its label `train` padded further, counting to max_duration
# (the generic grammar reads it). An evaluator's bar counts its batches: an evaluation's
# (`_COMPOSER_BAR`). Its ConsoleLogger (log_to_console=True; composer/loggers/console_logger.py)
# prints `[{unit}={n}/{max_duration}]` (`[batch=120/4800]:`, in batches, samples or tokens) or
# in epochs `[epoch={epoch + 1}][batch={batch_in_epoch}/{dataloader_len}]:`, each followed by
# its metrics on lines of their own (`\t Train loss/train/total: 2.1102`), and an evaluation's
# `[Eval batch={batch}/{total}] Eval on {label} data` at the deciles of its batches, then at
# eval_end the same with `:` and its metrics after it, the pass's summary (`_COMPOSER_CONSOLE`,
# `_COMPOSER_EVAL`). Trainer.fit prints nothing of its own after its loop (the ConsoleLogger's
# last line at fit_end, when the last batch's was not just printed): a run in batches, samples
# or tokens ends by progress; one in epochs too when its max_duration was dumped, else it has
# nothing to tell its end from a cut.
_COMPOSER_BAR = re.compile(r"^(\S+) *(?:(Epoch|Batch|Sample|Token) +(\d+):)? +\d{1,3}%\|")
_COMPOSER_BAR_PACE = re.compile(rf"\b({NUMBER})(ba/s|s/ba)\b")
_COMPOSER_BAR_LOSS = re.compile(rf"\bloss/train[\w/]*=({NUMBER}|nan|inf)\b")
_COMPOSER_CONSOLE = re.compile(
    r"^(?:\[epoch=(\d+)\])?\[(?:batch|sample|token)=(\d+)(?:/(\d+))?\]:?$")
_COMPOSER_EVAL = re.compile(r"^\[Eval batch=(\d+)/(\d+)\] Eval on \S+ data(:?)$")
# desc's label is padded to this many characters, the training bar's (in another unit than
# epochs) to as many as an evaluation's label and point: its percentage's `%|` after them
_COMPOSER_LABEL_WIDTH = 15
_COMPOSER_TRAINING_PERCENT_END = _COMPOSER_LABEL_WIDTH + 14 + 4


def read_composer_bar(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A composer ProgressBarLogger's bar (`_COMPOSER_BAR`, its label padded to 15): the
    training's in epochs (`train          Epoch   N:`) gives the batches of the epochs before
    it (as many as this one's) and this one's as the iteration, every announced epoch's
    (`targets`: max_duration's, in the hyperparameters' dump) as the target; the training's in
    another unit (`train`, padded further) is the generic grammar's, its count of
    max_duration; either one's loss and pace are read; an evaluator's bar gives its batches,
    as an evaluation's bar. The body left for the rest of the grammar: without the epoch's
    bar's count (one epoch's batches, not the run's)."""
    m = _COMPOSER_BAR.match(body)
    bar = TQDM_BAR.search(body, m.end()) if m is not None else None
    if m is None or bar is None:
        return body
    label, kind = m.group(1), m.group(2)
    if kind is None:
        if label != "train" or body.find("%|") != _COMPOSER_TRAINING_PERCENT_END:
            return body
    elif m.start(2) != max(_COMPOSER_LABEL_WIDTH, len(label)):
        return body
    elif label != "train":
        s.evaluation_batches = (int(bar.group(1)), int(bar.group(2)))
        return body
    elif kind != "Epoch":
        return body
    if (loss := _COMPOSER_BAR_LOSS.search(body, bar.end())) is not None:
        s.loss = float(loss.group(1))
    if (pace := _COMPOSER_BAR_PACE.search(body, bar.end())) is not None and float(pace.group(1)):
        rate = float(pace.group(1))
        s.sec_per_iter = rate if pace.group(2) == "s/ba" else 1 / rate
    if kind is None:
        return body
    s.iteration = int(m.group(3)) * int(bar.group(2)) + int(bar.group(1))
    target_of_announced_epochs(s, int(bar.group(2)), targets)
    return body[:bar.start()] + body[bar.end():]


def read_composer_console(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A composer ConsoleLogger's progress line (`_COMPOSER_CONSOLE`): its count of
    max_duration's unit as the iteration and max_duration as the target, or in epochs the
    batches of the epochs before it (as many as this one's) and this one's, every announced
    epoch's (`targets`) the target; or an
    evaluation's (`_COMPOSER_EVAL`): its batches, and at its end (`:`, its metrics after it)
    the pass's summary."""
    if (m := _COMPOSER_CONSOLE.match(body)) is not None:
        epoch, done, total = m.groups()
        if epoch is None and total is not None:
            s.iteration, s.target_iter = int(done), int(total)
        elif epoch is not None and total is not None:
            s.iteration = (max(int(epoch), 1) - 1) * int(total) + int(done)
            target_of_announced_epochs(s, int(total), targets)
    elif (m := _COMPOSER_EVAL.match(body)) is not None:
        s.evaluation_batches = (int(m.group(1)), int(m.group(2)))
        s.evaluation_done = m.group(3) == ":"
