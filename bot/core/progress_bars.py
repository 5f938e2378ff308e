"""Progress bars in a training log (pure; no I/O): tqdm's draws, which of them are no training
progress (start-up bars, an evaluation's own bar: labelled as one, as Lightning's, or drawn below
the training bar, as Hugging Face Trainer's) and which count one epoch's batches (Lightning's
`Epoch 3:`), and what the log has shown of its bars so far (`ProgressBars`). The metric parser
(bot.core.training_lines `LineParser`) reads each line's bar through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A number as a log prints it (`3`, `-0.31`, `.5`, `1.2E+00`), as a regex.
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: `NUMBER` that starts nowhere inside a run of digits: the same leftmost `search` match, but a
#: long digit run (a printed tensor, a hex dump) is tried from its start only, not from each digit.
NUMBER_FROM_RUN_START = r"[-+]?(?<!\d)(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"

# A tqdm bar drawn below another: tqdm draws a bar at position n >= 1 (one created while another
# is open) after n newlines and moves the cursor back up after it (std.py `moveto`: `\x1b[A`),
# so in a file its draw ends the line with that escape (a pasted log may keep only `[A`).
_NESTED_BAR_END = re.compile(r"\]\s*(?:\x1b)?\[A\s*$")
# A bar with no label: its line's message starts with the percentage (`  2%|▏   | 1/50 [`).
_UNLABELLED_BAR = re.compile(r"\d{1,3}%\|")
# (A count starts where no digit precedes it, and its runs of digits and blanks are taken whole:
# the same leftmost match, but a long digit run is not retried from each of its digits.)
TQDM_BAR = re.compile(
    r"(?<!\d)(\d++)/(\d++)\s*+\[(?:\d++:)?\d++:\d++<(?:(?:\d++:)?\d++:\d++|\?)"
    r"(?:,\s*+([\d.]++)\s*+(s/it|it/s))?"
)
#: How the labels (tqdm's `desc`, before the percentage) of the progress bars start that a
#: program prints while it prepares its data or loads before training starts, as regexes
#: (case ignored): Hugging Face datasets' `Map`, `Filter`, `Generating train split`, `Casting
#: the dataset`, `Flattening the indices`, `Resolving data files`, `Extracting data files`;
#: transformers' examples' `Running tokenizer on dataset` and `Grouping texts in chunks of
#: 1024`; the Hub's `Downloading …` and `Fetching 5 files`; TRL's `Tokenizing train dataset`,
#: `Applying chat template to train dataset`, `Packing train dataset`, `Truncating train
#: dataset`; YOLO's `Scanning …` and `Caching images` (after the data split's name: `train:
#: Scanning`); Lightning's `Sanity Checking` (before 1.7: `Validation sanity check`) pass
#: before its first epoch; and loaders' bars
#: that name what they load: transformers' `Loading checkpoint shards` and `Loading weights`,
#: vLLM's `Loading safetensors checkpoint shards`, datasets' `Loading dataset shards`,
#: diffusers' `Loading pipeline components`, `Loading data` (a bar labelled `Loading` alone may
#: be a training loop's own, and so is one with a rate and a loss: `is_start_up_bar`). Such a
#: bar is start-up output: it shows no training progress and reaches no target.
START_UP_BAR_LABELS = (
    r"map\b", r"filter\b", r"generating \S+ split\b", r"casting\b", r"flattening the indices",
    r"resolving data files", r"extracting\b", r"running tokenizer\b", r"grouping texts\b",
    r"tokeniz", r"download", r"fetching \d+ files\b", r"applying chat template", r"packing\b",
    r"truncating\b", r"preprocess", r"scanning\b", r"caching\b", r"sanity checking\b",
    r"validation sanity check\b",
    r"loading (?:[\w-]+ )?(?:checkpoints?|shards?|datasets?|data|weights|model|pipeline)\b",
)
_START_UP_BAR = re.compile(
    r"^(?:[\w-]+:\s+)?(?:" + "|".join(START_UP_BAR_LABELS)
    + r")[^|%]*?(?<![\d.])\d{1,3}(?:\.\d+)?%\s*\|",
    re.IGNORECASE,
)
# The phase a loop names after an epoch's number (`desc=f"Epoch {epoch}/{epochs} [{phase}]"`):
# training (`Epoch 3/10 [train]:`, `Epoch 3 training:`, `Epoch 3/10 - (train):`), or evaluation.
_TRAINING_PHASE = r"(?:[\s-]*[\[(]?train(?:ing)?[\])]?)"
_EVALUATION_PHASE = r"(?:[\s-]*[\[(]?(?:val(?:id|idation)?|eval(?:uation)?|test(?:ing)?)[\])]?)"
# An evaluation pass's own bar, by its label: Lightning's TQDMProgressBar draws one for each
# validation, test and predict pass (`Validating` before 1.7, then its `validation_description`
# and the dataloader: `Validation DataLoader 0`; `Testing`, `Testing DataLoader 0`,
# `Predicting DataLoader 0`), and loops that name theirs so (`Validation:`, PaddleOCR's
# `eval model::`: tools/program.py, eval, `tqdm(…, desc='eval model:')`), or name the
# evaluation's phase after the epoch (`Epoch 3/10 [val]:`, `Epoch 3 eval:`). It counts the
# evaluation's batches to the evaluation's total: no iteration, target or pace of training.
EVALUATION_BAR = re.compile(
    r"^(?:(?:validating|validation|testing|predicting)(?: dataloader \d+)?|eval model:"
    rf"|epoch\s+\d+(?:\s*/\s*\d+)?{_EVALUATION_PHASE})\s*:"
    r"\s*\d{1,3}(?:\.\d+)?%\s*\|", re.IGNORECASE)
# mmcv 1.x's ProgressBar (open-mmlab/mmcv mmcv/utils/progressbar.py 069a70c; mmengine's
# mmengine/utils/progressbar.py alike), drawn on stdout: `[{' ' * width}] 0/{task_num}, elapsed:
# 0s, ETA:` as it starts, then at each update, after a carriage return, `[{'>' * marks}{' ' *
# rest}] {completed}/{task_num}, {fps:.1f} task/s, elapsed: {s}s, ETA: {eta:5}s` (fps `inf` at
# 0 s), with no newline after its last draw. OpenMMLab's test loops draw it over the dataset's
# images (mmdet's, mmseg's and mmpose's single_gpu_test and multi_gpu_test, rank 0's:
# `mmcv.ProgressBar(len(dataset))`), which mmcv's EvalHook runs between training epochs or
# iterations and tools/test.py after training; mmcv's training draws none (its TextLoggerHook
# logs lines). It counts an evaluation's images to their total: no iteration, target or pace of
# training.
MMCV_PROGRESS_BAR = re.compile(
    r"^\[[> ]{2,}\] (\d+)/(\d+), (?:(?:[\d.]+|inf) task/s, )?elapsed: \d+s, ETA:")
# A Rich progress bar (Textualize/rich rich/progress.py, Progress: its columns rendered in a
# grid, one blank between them, each task on a line of its own) as Lightning's RichProgressBar
# configures it (Lightning-AI/pytorch-lightning src/lightning/pytorch/callbacks/progress/
# rich_progress.py, configure_columns and MetricsTextColumn): the task's description, the bar
# (rich/progress_bar.py: `━` across its width, `╸` or `╺` where the done part ends; no colour in
# a file), BatchesProcessedColumn's `{completed}/{total}`, CustomTimeColumn's `{elapsed} •
# {remaining}` (`str(timedelta(…))`: `0:01:02`, `-:--:--` unknown), ProcessingSpeedColumn's
# `{speed:.2f}it/s`, and for the training's task its progress-bar metrics, `{name}: {value:.3f}`
# joined by blanks: `Epoch 3/9  ━━━━━━━━━━ 120/200 0:01:02 • 0:00:40 3.21it/s v_num: 0
# train_loss: 0.512`. A plain rich.progress bar with a count column (MofNCompleteColumn's
# `{completed}/{total}`, a percentage before it) reads alike. In a file rich writes a task's
# line once its Progress stops (the end of fit, an exception) and, where the console is forced
# to be a terminal, at each refresh after the cursor moves that ANSI removal drops. A bar drawn
# in ASCII (`-`, a console encoding that has no `━`) is not read: dashes and a count are too
# common in other lines.
# (Its label ends where no blank precedes, nor a bar's character inside the bar, and its runs of
# blanks, bar and digits are taken whole: the same shortest label, but a long run of blanks or of
# the bar's characters is not retried from each of its characters.)
RICH_BAR = re.compile(
    r"^(.*?)(?<!\s)(?!(?<=[━╸╺])[━╸╺])\s*+[━╸╺]{3,}+\s++(?:\d{1,3}%\s++)?(\d++)/(\d++)(?![\d/])"
    r"(.*)$")
# Lightning's descriptions of its tasks (callbacks/progress/progress_bar.py, ProgressBar): the
# training's `Epoch {current_epoch}`, then `/{max_epochs - 1}` when it has a number of epochs
# (RichProgressBar._get_train_description; `-2` for max_epochs -1, no end), both from 0,
# padded to `Validation`'s length; `Sanity Checking` (start-up), `Validation`, `Testing` and
# `Predicting` (an evaluation's batches).
_RICH_EPOCH = re.compile(r"^Epoch (\d+)(?:/(-?\d+))?$")
_RICH_EVALUATION = re.compile(
    r"^(?:validation|validating|testing|predicting|eval(?:uat(?:e|ing|ion))?|test)\b", re.I)


# A bar labelled with the epoch it counts (Lightning's TQDMProgressBar: `Epoch 3:  45%|`, its
# `set_description(f"Epoch {trainer.current_epoch}")` at each epoch's start; custom loops'
# `tqdm(loader, desc=f"Epoch {epoch}")`), or with the epoch and the loop's number of epochs
# (custom loops' `tqdm(loader, desc=f"Epoch {epoch + 1}/{num_epochs}")`, Keras's way of
# counting them, `Epoch 3/10:  45%|`), either followed by the training's phase (`Epoch 3/10
# [train]:`): its total is one epoch's batches, not the run's.
EPOCH_BAR = re.compile(
    rf"^Epoch\s+(\d+)(?:\s*/\s*(\d+))?{_TRAINING_PHASE}?\s*:\s*\d{{1,3}}(?:\.\d+)?%\s*\|",
    re.IGNORECASE)
# Lightning's `Epoch N` bar counted its epochs from 1 (`Epoch {epoch + 1}`; 0.8.0 and 0.8.1 from
# a `current_epoch` counted from 1) from 0.5.3, where it came, to 0.8.5 (from 0 since 0.9.0).
# Until 0.6 its bar was `tqdm(unit='batch')` and its postfix (`set_postfix(**training_tqdm_dict)`,
# keys sorted) named the batch: `batch_nb` (0.5), `batch_idx` (0.6): `Epoch 11: 100%|…| 74/74
# [16:04<00:00, 13.04s/batch, batch_nb=48, gpu=0,`.
_LIGHTNING_EPOCH_FROM_ONE = re.compile(r"(?:s/batch|batch/s),.*?\bbatch_(?:nb|idx)=\d")
# 0.7's postfix is `set_postfix(**trainer.training_tqdm_dict)` too, tqdm sorting its keys: `loss`,
# `split_idx`, `v_num` and the training step's progress-bar metrics (`acc=0.91, loss=0.693,
# v_num=3`); from 0.8 on (0.8's bar is 0.9's but for its epoch's number) it passes the dict as
# it is, in its order: `loss`, `split_idx`, `v_num`, then the metrics (`loss=0.693, v_num=3,
# acc=0.91`; since 2.0 `v_num` first). Sorted keys with a metric before `v_num` show 0.7; with
# none (`loss=0.693, v_num=3`) the bar is any version's, as 0.8's always is.
_BAR_POSTFIX = re.compile(r"(?:s/it|it/s),\s*([^\]]*)")
_POSTFIX_KEY = re.compile(r"(?:^|,\s*)(\w+)=")
# A bar's rate and the loss its postfix reports (tqdm's `set_postfix(loss=…)`: `[01:02<01:16,
# 7.20it/s, loss=0.31]`, Keras-like `loss: 0.31`): a training loop's bar, whatever its label.
_BAR_RATE_AND_LOSS = re.compile(
    rf"(?<![0-9.])[0-9.]+\s*(?:s/it|it/s)\s*,[^\]]*\b\w*loss\s*[=:]\s*(?:{NUMBER}|nan|inf)",
    re.IGNORECASE)


def _shows_lightning_epochs_from_one(bar: str) -> bool:
    """Whether an `Epoch N` bar shows a Lightning that counted its epochs from 1: 0.5 and 0.6's
    unit and batch number (`_LIGHTNING_EPOCH_FROM_ONE`), or 0.7's sorted postfix with a metric
    before `v_num` (`_BAR_POSTFIX`), which no later Lightning draws."""
    if _LIGHTNING_EPOCH_FROM_ONE.search(bar):
        return True
    postfix = _BAR_POSTFIX.search(bar)
    keys = _POSTFIX_KEY.findall(postfix.group(1)) if postfix is not None else []
    return ("loss" in keys and "v_num" in keys and keys == sorted(keys)
            and any(key not in ("loss", "split_idx") for key in keys[:keys.index("v_num")]))



def _last_segment(line: str) -> str:
    """The last carriage-return segment of a raw line with more than blanks (what a terminal
    shows of it), unstripped."""
    parts = [p for p in line.rstrip("\n").split("\r") if p.strip()]
    return parts[-1] if parts else ""


def _first_draw(raw: str) -> tuple[int, int] | None:
    """The count and total of a raw line's first bar draw (tqdm redraws a bar in place after
    a carriage return: a line may hold many), None when it draws no bar."""
    m = TQDM_BAR.search(raw)
    return (int(m.group(1)), int(m.group(2))) if m is not None else None


def drawn_count(message: str) -> tuple[int, int] | None:
    """The count and total one bar's draw shows (`message`: a draw's message after its time):
    mmcv's ProgressBar (`[>>>   ] 45/100, 9.0 task/s, elapsed: 5s, ETA:`) or tqdm's (`45/100
    [00:10<00:12`, Lightning's bars too); None when it draws no bar."""
    m = MMCV_PROGRESS_BAR.match(message) if message[:1] == "[" else None
    if m is None and "/" in message:
        m = TQDM_BAR.search(message)
    return (int(m.group(1)), int(m.group(2))) if m is not None else None



def summed_up_later(message: str) -> bool:
    """Whether an evaluation's bar (`message`: its draw, after the line's time) is one whose
    framework logs a line of its own once the pass is over, so that until that line the pass
    is not over, its bar at its total or not: mmcv 1.x's ProgressBar (`MMCV_PROGRESS_BAR`),
    drawn by single_gpu_test or multi_gpu_test in EvalHook._do_evaluate (mmdet's, mmseg's
    core/evaluation/eval_hooks.py), which then sets the log buffer's `eval_iter_num`, runs the
    dataset's evaluate (COCO's: minutes, its tables logged) and puts its results in the
    buffer, which TextLoggerHook logs as `Epoch(val) [12][500]\tbbox_mAP: …` (`Iter(val)
    [500]`: `Sample.evaluation_done`)."""
    return message[:1] == "[" and MMCV_PROGRESS_BAR.match(message) is not None


def is_start_up_bar(message: str) -> bool:
    """A progress bar of data preparation or loading before training (its label starts with
    one of `START_UP_BAR_LABELS`: `Map: 100%|██████████| 1000/1000 [00:01<00:00, …]`): start-up
    output, which shows no training progress and reaches no target. `message` is a line's
    message (`clean_line`) after its time, if it starts with one. Training's own bars
    (`Epoch 3:  45%|`, `Training:`, Hugging Face Trainer's unlabelled `  5%|▌  | 50/1000`)
    are not, nor is a bar with an iteration rate and a loss, whatever its label (`Loading
    data:  45%|…| 450/1000 [01:02<01:16, 7.20it/s, loss=0.31]`: a training loop that names its
    batches so): no start-up step has a loss."""
    # It runs on every line the parser reads: two substring tests leave the regex the lines
    # that may be bars (a key=value line's `gpu_util=93%` has no `|`).
    return ("%" in message and "|" in message and _START_UP_BAR.match(message) is not None
            and ("loss" not in message.lower() or _BAR_RATE_AND_LOSS.search(message) is None))



@dataclass(frozen=True, slots=True)
class RichDraw:
    """What one Rich progress bar's line (`RICH_BAR`) shows: `evaluation_batches` for an
    evaluation's task (its batches done and their total: no training progress), else the
    training's `iteration` and `target` (None: none; no iteration either: a start-up task's,
    which shows nothing), and `rest`, the columns after its count (its pace and metrics)."""

    iteration: int | None
    target: int | None
    evaluation_batches: tuple[int, int] | None
    rest: str


def read_rich_bar(message: str) -> RichDraw | None:
    """A Rich progress bar's line (`RICH_BAR`: `message`, a line's message after its time),
    None for another line. A start-up task's (`Sanity Checking`, `is_start_up_bar`'s labels)
    shows nothing (no iteration, no batches). Lightning's `Epoch 3/9` counts one epoch's
    batches, its epochs numbered from 0 to the last: its iteration is the batches of the
    epochs before it and this one's, its target all the epochs' batches (none without a
    number of epochs: `Epoch 3`, `Epoch 3/-2`). A task described as an evaluation
    (`Validation`, `Testing`, `Predicting`) counts its batches; any other task (unlabelled, a
    loop's own) counts the training's to its total, as an unlabelled tqdm bar does."""
    m = RICH_BAR.match(message) if "━" in message else None
    if m is None:
        return None
    label, done, total, rest = m.group(1).strip(), int(m.group(2)), int(m.group(3)), m.group(4)
    if _START_UP_BAR.match(f"{label} 0%|") is not None:
        return RichDraw(None, None, None, rest)
    if _RICH_EVALUATION.match(label) is not None:
        return RichDraw(None, None, (done, total), rest)
    epoch = _RICH_EPOCH.match(label)
    if epoch is None:
        return RichDraw(done, total, None, rest)
    last = int(epoch.group(2)) if epoch.group(2) is not None else -1
    return RichDraw(int(epoch.group(1)) * total + done,
                    (last + 1) * total if last >= 0 else None, None, rest)


class ProgressBars:
    """What a log's progress bars have shown so far (the training bar's total, whether it
    counts steps of its own, how its epochs are numbered), by which each bar drawn is read.

    Hugging Face Trainer's evaluation during training draws a bar of its own below the training
    bar (ProgressCallback.on_prediction_step: `tqdm(total=len(eval_dataloader), leave=False)`,
    created while the training bar is open, so tqdm puts it at position 1), printed between
    two training steps: unlabelled like the training bar, with no loss, counting the
    evaluation's batches to their own total. Such a bar gives no iteration, target or pace of
    training: the last bar drawn at the top (not below another) is the training's, and a bare
    bar below it with another total is not, once the log has shown it is the Trainer's: one of
    its logged dicts, `{'loss': …}` / `{'eval_loss': …}` (ProgressCallback.on_log), seen
    before, or the training bar counting steps of its own (ProgressCallback.on_train_begin's
    `tqdm(total=max_steps)`, advanced at each step: two draws of it with no bar below in
    between), which an evaluation before the first logged loss (eval_steps < logging_steps)
    follows too. A custom loop's nested bars (`for epoch in tqdm(…): for batch in
    tqdm(loader)`) are drawn the same way, bare, the batches below the epochs, but the upper
    bar advances only after the lower one ran: there the lower bar is the training's progress.

    A bar labelled with its epoch (Lightning's TQDMProgressBar, `Epoch 3:  45%|`) counts one
    epoch's batches (before Lightning 2.0, and its validation's): its iteration is the
    batches of the epochs before it and of this one (epochs counted from 0, as Lightning
    has since 0.9, from 1 once a bar showed a Lightning that counted so: 0.5 and 0.6's, 0.7's
    with a metric of its own in its postfix; a log of 0.8, of 0.7 showing no such metric, or
    of a loop counting from 1, reads one epoch ahead), and it has no target, so a bar at 100 %
    is the end of an epoch, not of the run; Lightning's end of training is its `Trainer.fit`
    stopped line (the catalogue's). Lightning's validation, test and predict
    bars (`Validation DataLoader 0:`) are evaluations: no iteration, target or pace.
    """

    def __init__(self) -> None:
        # the total of the last progress bar drawn at the top: the training's (None: none yet)
        self.training_bar_total: int | None = None
        # a Hugging Face Trainer's logged dict has been seen (its bars are the Trainer's)
        self.trainer_dicts_seen = False
        # the total of a bar drawn at the top seen counting steps of its own (None: none yet)
        self.steps_bar_total: int | None = None
        # an `Epoch 0/10` bar was seen: its loop counts its epochs from 0 (`read_epoch_bar`)
        self.epochs_from_zero = False
        # an `Epoch 0/9` and an `Epoch 9/9` bar were seen: its loop numbers its epochs 0 to 9
        self.epochs_zero_to_number = False
        # an `Epoch N` bar showed a Lightning that counted its epochs from 1 (`read_epoch_bar`)
        self.lightning_epochs_from_one = False
        self._top_bar: tuple[int, int] | None = None  # the last top bar's (count, total)
        self._drawn_below = False  # a bar was drawn below the top one since its last draw
        # the run's completion marker was seen (`training_completed`): bare bars with another
        # total than the training bar's are its evaluation's or prediction's from here on
        self._completed = False
        # the framework said its evaluation starts (`evaluation_started`) and no training
        # progress came since: bare bars with another total than the training bar's are its
        self._evaluating = False

    def training_completed(self) -> None:
        """The run's training ended here (the framework's completion marker: Hugging Face
        Trainer's `train_runtime` metrics, `Training completed`): a bare bar drawn after it (no
        label, no loss) counting to another total than the training bar's is no training
        progress, wherever it is drawn: the evaluation or prediction the script runs next
        (`trainer.evaluate()` after `trainer.train()`: the training bar is closed, so the
        evaluation's bar is drawn at the top, `45%|████▌     | 45/100`). The training bar drawn
        again at its total, or a labelled or loss-reporting bar, is still read as before."""
        self._completed = True

    def evaluation_started(self) -> None:
        """The framework said its evaluation starts here (maskrcnn-benchmark's `Start
        evaluation on … dataset(N images).`): until training progresses again
        (`training_progressed`), a bare bar (no label, no loss) counting to another total than
        the training bar's is the evaluation's, wherever it is drawn, as after the run's
        completion marker (`training_completed`)."""
        self._evaluating = True

    @property
    def evaluating(self) -> bool:
        """Whether an evaluation the framework said it started (`evaluation_started`) is open:
        no line showed training progress since (`training_progressed`)."""
        return self._evaluating

    def training_progressed(self) -> None:
        """A line showed training progress again: the evaluation `evaluation_started` opened
        is over."""
        self._evaluating = False

    def start_run(self) -> None:
        """A new process draws its bars from here (a requeued job's later run, appended to the
        log): its first bar is not read against the last run's, so the bar drawn at the top,
        its total and whether one was drawn below it are forgotten. What the log showed of how
        the program draws its bars (Trainer's dicts, a bar counting steps of its own, how it
        numbers epochs) carries over: a resumed run often shows it no more (`Epoch 5/10` first,
        no `Epoch 0/10`)."""
        self.training_bar_total = None
        self._top_bar = None
        self._drawn_below = False
        self._completed = False
        self._evaluating = False

    def is_evaluation_draw(self, raw: str, body: str, count: int | None, total: int,
                           has_loss: bool) -> bool:
        """Note a progress bar's draw (`raw`, its line; `body`, the line's message after its
        time; `count` of `total`), and whether it is an evaluation's: drawn at the top, it is
        the training's (its total kept); below a training bar that is the Trainer's
        (`_evaluates_below_training`), a bare one drawn below it (`_NESTED_BAR_END`, no label,
        no loss) counting to another total is an evaluation's: no iteration, target or pace of
        training. After the run's completion marker (`training_completed`), or in an evaluation
        the framework said it started (`evaluation_started`), a bare bar counting to another
        total than the training bar's is an evaluation's too, drawn at the top or not."""
        if ((self._completed or self._evaluating) and total != self.training_bar_total
                and not has_loss and _UNLABELLED_BAR.match(body) is not None):
            return True
        if "[A" not in raw or _NESTED_BAR_END.search(_last_segment(raw)) is None:
            self._top_bar_drawn(raw, count, total)
            return False
        evaluation = (self._evaluates_below_training() and total != self.training_bar_total
                      and not has_loss and _UNLABELLED_BAR.match(body) is not None)
        self._drawn_below = True
        return evaluation

    def _top_bar_drawn(self, raw: str, count: int | None, total: int) -> None:
        """Keep a bar drawn at the top as the training's, and whether it counts steps of its
        own: it advanced from one draw to the next with no bar drawn below it in between, in
        the line (tqdm redraws it in place) or from the last line's draw."""
        if count is None:
            return
        if self.steps_bar_total != total:
            before = self._top_bar if not self._drawn_below else None
            if before is None or before[1] != total:
                before = _first_draw(raw)
            if before is not None and before[1] == total and before[0] < count:
                self.steps_bar_total = total
        self._top_bar = (count, total)
        self._drawn_below = False
        self.training_bar_total = total

    def _evaluates_below_training(self) -> bool:
        """Whether a bare bar drawn below the training bar is an evaluation's: the log showed
        one of Hugging Face Trainer's logged dicts, or the training bar counts steps of its
        own (`steps_bar_total`), as the Trainer's does; a loop's outer bar advances only
        after the bar below it ran (`for epoch in tqdm(…): for batch in tqdm(loader)`)."""
        return self.training_bar_total is not None and (
            self.trainer_dicts_seen or self.steps_bar_total == self.training_bar_total)

    def read_epoch_bar(self, epoch: re.Match[str], done: int, total: int
                       ) -> tuple[int, int | None]:
        """The iteration and target (None: none) of one epoch's bar (`EPOCH_BAR`, `done` of
        its `total` batches): its iteration is the batches of the epochs before it (as many as
        this one's) and this one's. `Epoch 3:` (Lightning's, from 0, from 1 once a bar showed
        Lightning 0.5, 0.6 or 0.7: `_shows_lightning_epochs_from_one`) has no target: the
        run's is no epoch's total. `Epoch 3/10:` counts to the loop's number of epochs, its
        target all their batches, from where the log shows the numbers start: from 0 once it
        showed an `Epoch 0/10` bar (`epochs_from_zero`: `range(num_epochs)` printed as it is),
        and then to 10 once it showed an `Epoch 10/10` bar too (`epochs_zero_to_number`: 11
        epochs numbered by the last one, `desc=f"Epoch {epoch}/{num_epochs - 1}"`); else from
        1 (an `Epoch 10/10` bar alone shows it). A log with neither (cut, or started mid-run)
        is read from 1, the reading that does not overstate progress: a loop counting from 0
        then reads one epoch behind (its last epoch ends one epoch's batches short of the
        target), never ahead."""
        number, epochs = int(epoch.group(1)), epoch.group(2)
        if epochs is None:
            self.lightning_epochs_from_one = (
                self.lightning_epochs_from_one or _shows_lightning_epochs_from_one(epoch.string))
            first = 1 if number and self.lightning_epochs_from_one else 0
            return (number - first) * total + done, None
        last = int(epochs)
        self.epochs_from_zero = self.epochs_from_zero or number == 0
        self.epochs_zero_to_number = self.epochs_zero_to_number or (
            self.epochs_from_zero and number == last)
        return ((number if self.epochs_from_zero else number - 1) * total + done,
                (last + 1 if self.epochs_zero_to_number else last) * total)
