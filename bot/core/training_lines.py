"""What one line of a training log says: its time, progress and memory figures, a checkpoint
save (pure; no I/O).

The metric parser's grammar: the formats it reads (key=value tokens, Megatron, Hugging Face
Trainer dicts, tqdm bars, leading timestamps, checkpoint save lines, a recipe's own patterns),
read after the line's time and the launcher's prefixes (a bar's label starts there), and the
bars that are not training (start-up bars, an evaluation's own bar: labelled as one, as
Lightning's, or drawn below the training bar, as Hugging Face Trainer's, which is activity,
its batches kept apart from the training's progress) or count one epoch's batches
(Lightning's `Epoch 3:`). `LineParser` turns a line into a `Sample` and/or a
`CheckpointEvent`; bot.core.metrics keeps them as a bounded series.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.logprefix import ANSI_ESCAPE, LINE_PREFIXES, PREFIX_STARTS, TIMED_PREFIXES
from bot.core.units import GIB, MAX_SIZE

_UNITS = {
    "": GIB,  # bare number: GiB (see docs/architecture.md)
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}



#: submitit's first line of each run (submitit/core/submission.py, process_job: `Starting with
#: JobEnvironment(job_id=..., hostname=..., ...)`): a requeued job's log, which each run appends
#: to (sbatch --open-mode=append, submitit/slurm/slurm.py), holds one per run
#: (bot.core.metrics.run_start_lines finds them).
RUN_START = "Starting with JobEnvironment("


@dataclass(slots=True)
class Sample:
    """One progress/memory observation, or an evaluation pass's bar drawn (its batches in
    `evaluation_batches`: activity of the run, no progress of its training); fields a line
    does not show are None."""

    line_no: int
    time: float | None = None
    iteration: int | None = None
    target_iter: int | None = None
    loss: float | None = None
    sec_per_iter: float | None = None
    host_rss_bytes: int | None = None
    gpu_mem_bytes: int | None = None
    gpu_util: float | None = None
    # an evaluation pass's bar (batches done, its total): activity, no training progress
    evaluation_batches: tuple[int, int] | None = None
    text: str = ""

    @property
    def is_metric(self) -> bool:
        return (
            self.iteration is not None
            or self.loss is not None
            or self.host_rss_bytes is not None
            or self.sec_per_iter is not None
            or self.gpu_mem_bytes is not None
            or self.gpu_util is not None
        )


@dataclass(frozen=True, slots=True)
class CheckpointEvent:
    """A checkpoint save starting (`kind="start"`) or finishing (`kind="end"`)."""

    kind: str
    line_no: int
    time: float | None
    iteration: int | None
    duration_s: float | None = None
    text: str = ""


_ANSI = re.compile(ANSI_ESCAPE)
# A time at the start of a line, also in a task runner's bracket (`[task 2025-01-21T16:30:37Z]`)
_ISO = re.compile(r"^\[?(?:[A-Za-z][\w.-]* )?"
                  r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"^\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
_HMS = re.compile(r"^\[?(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?![\d:])")
# An ISO time's zone right after it: UTC (`Z`) or its offset from UTC (`+02:00`, `-0500`).
_ZONE = re.compile(r"Z|([+-])(\d\d):?(\d\d)")
# What closes a time the clock reads at the start of a message: its zone, its bracket, blanks.
_TIME_END = re.compile(rf"(?:{_ZONE.pattern})?\]?[ \t]*")

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_KV = re.compile(
    r"(?<![\w/.-])(iteration|iter|global_step|step|lm_loss|train_loss|loss|sec_per_iter|s/iter|"
    r"s/it|it/s|step_time|iter_time|time_per_iter|host_rss|maxrss|rss|host_mem|cpu_mem|mem|"
    r"gpu_mem|cuda_mem|max_mem_allocated|mem_allocated|gpu_util|util)"
    r"(?:\s*[=:]\s*|\s+)"
    rf"({_NUM}|nan|inf)(?:\s*/\s*(\d+))?"
    r"\s*(GiB|GB|MiB|MB|KiB|KB|TiB|TB|G|M|K|T|%|ms|s)?(?![\w./])",
    re.IGNORECASE,
)
_RATE = re.compile(rf"({_NUM})\s*(s/it(?:er)?|it/s)(?![\w])", re.IGNORECASE)
_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEG_LOSS = re.compile(rf"\blm loss:\s*({_NUM}|nan|inf)", re.IGNORECASE)
_MEG_MS = re.compile(r"elapsed time per iteration \(ms\):\s*([\d.]+)")
_HF = re.compile(r"\{'(?:loss|train_loss|eval_loss|step|epoch|learning_rate|grad_norm)'")
_HF_PAIR = re.compile(rf"'(\w+)':\s*({_NUM}|nan|inf)")
# A tqdm bar drawn below another: tqdm draws a bar at position n >= 1 (one created while another
# is open) after n newlines and moves the cursor back up after it (std.py `moveto`: `\x1b[A`),
# so in a file its draw ends the line with that escape (a pasted log may keep only `[A`).
_NESTED_BAR_END = re.compile(r"\]\s*(?:\x1b)?\[A\s*$")
# A bar with no label: its line's message starts with the percentage (`  2%|▏   | 1/50 [`).
_UNLABELLED_BAR = re.compile(r"\d{1,3}%\|")
_TQDM = re.compile(
    r"(\d+)/(\d+)\s*\[(?:\d+:)?\d+:\d+<(?:(?:\d+:)?\d+:\d+|\?)"
    r"(?:,\s*([\d.]+)\s*(s/it|it/s))?"
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
# `Predicting DataLoader 0`), and loops that name theirs so (`Validation:`), or name the
# evaluation's phase after the epoch (`Epoch 3/10 [val]:`, `Epoch 3 eval:`). It counts the
# evaluation's batches to the evaluation's total: no iteration, target or pace of training.
_EVALUATION_BAR = re.compile(
    r"^(?:(?:validating|validation|testing|predicting)(?: dataloader \d+)?"
    rf"|epoch\s+\d+(?:\s*/\s*\d+)?{_EVALUATION_PHASE})\s*:"
    r"\s*\d{1,3}(?:\.\d+)?%\s*\|", re.IGNORECASE)
# A bar labelled with the epoch it counts (Lightning's TQDMProgressBar: `Epoch 3:  45%|`, its
# `set_description(f"Epoch {trainer.current_epoch}")` at each epoch's start; custom loops'
# `tqdm(loader, desc=f"Epoch {epoch}")`), or with the epoch and the loop's number of epochs
# (custom loops' `tqdm(loader, desc=f"Epoch {epoch + 1}/{num_epochs}")`, Keras's way of
# counting them, `Epoch 3/10:  45%|`), either followed by the training's phase (`Epoch 3/10
# [train]:`): its total is one epoch's batches, not the run's.
_EPOCH_BAR = re.compile(
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
    rf"[0-9.]+\s*(?:s/it|it/s)\s*,[^\]]*\b\w*loss\s*[=:]\s*(?:{_NUM}|nan|inf)", re.IGNORECASE)
_CKPT_WORD = re.compile(r"checkpoint|ckpt|dcp|state[ _]dict", re.IGNORECASE)
_CKPT_NOT_SAVE = re.compile(r"\b(?:load(?:ing|ed)?|resum(?:e|ing|ed)|restor(?:e|ing|ed))\b", re.I)
# Loading or resuming names the iteration of a checkpoint, not progress made by this run
# (`Loaded checkpoint at iteration 8000`, HF's `Loading checkpoint shards: 4/4 [00:02<00:00]`).
_LOADING = re.compile(
    r"\b(?:load(?:ing|ed)?|resum(?:e|ing|ed)|restor(?:e|ing|ed))\b.*"
    r"\b(?:checkpoints?|ckpt|iteration|iter|step|state[ _]dict|weights|shards?)\b"
    r"|\b(?:checkpoint|ckpt)\b.*\b(?:load(?:ing|ed)?|restored|resumed)\b",
    re.IGNORECASE,
)
_CKPT_END = re.compile(
    r"\b(?:saved|finished saving|done saving|wrote)\b.*\b(?:checkpoint|ckpt|state[ _]dict|dcp)"
    r"|\b(?:checkpoint|ckpt|dcp(?:\.save)?|state[ _]dict)\b.*"
    r"\b(?:saved|written|(?:save )?(?:finished|completed|done))\b",
    re.IGNORECASE,
)
_CKPT_START = re.compile(
    r"\b(?:saving|writing|save started|starting (?:to )?save|begin(?:ning)? (?:to )?save)\b.*"
    r"\b(?:checkpoint|ckpt|state[ _]dict|dcp)"
    r"|\b(?:checkpoint|ckpt|dcp(?:\.save)?)\b.*"
    r"\b(?:saving|save (?:start(?:ed)?|begins?)|started)\b",
    re.IGNORECASE,
)
_CKPT_ITER = re.compile(
    r"(?:iteration|iter|step)[\s_=:-]*0*(\d+)|checkpoint[-_]0*(\d+)", re.IGNORECASE
)
_DURATION = re.compile(r"\b(?:in|took|after)\s+([\d.]+)\s*(ms|s|sec|secs|seconds)\b", re.I)

_EXTRA_GROUPS = ("iteration", "target_iter", "loss", "rss", "gpu_mem", "gpu_util",
                 "sec_per_iter", "time")


def parse_mem(value: str, unit: str = "") -> int:
    """Bytes for a memory value as logs print it (`72.1` + `GiB`); GB reads as GiB."""
    number = float(value)
    unit = unit.lower()
    if not unit and number >= 2**20:
        return int(number)  # a bare large number is a byte count
    return int(number * _UNITS.get(unit, GIB))


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


def _float(value: str) -> float:
    return float(value)  # accepts nan/inf/1.2E+00


class LogClock:
    """Turns leading timestamps into monotonic float seconds (see docs/architecture.md): UTC's,
    an ISO time's zone read (`2025-05-20T21:08:57+02:00` is 19:08:57 UTC), a time printed with
    no zone read as UTC, or, glog's and a bare `HH:MM:SS`, in the zone of the last ISO time
    (their date's: the process's local time, as the dated lines print it)."""

    def __init__(self) -> None:
        self.last: float | None = None
        self._base_day: float | None = None  # epoch of midnight of the latest known date
        self._year: int | None = None
        self._bare_day = 0  # day index for bare HH:MM:SS when no date was ever seen
        self._date: tuple[str, ...] = ()  # the last ISO date seen (as printed)
        self._offset = 0  # the last ISO time's offset from UTC in seconds (0: UTC or none)

    def parse_line(self, raw: str) -> float | None:
        """The time of a raw log line (`parse_split` of its `split_line`), or None."""
        return self.parse_split(*split_line(raw))

    def parse_split(self, prefix: str, message: str) -> float | None:
        """The time of a line split by `split_line`: its first timed prefix's (a runner's,
        torchrun's dated one), else the one at the start of its message, or None."""
        timed = TIMED_PREFIXES.search(prefix) if prefix else None
        return self.parse(prefix[timed.start():] if timed else message)

    def parse(self, line: str) -> float | None:
        """The time at the start of `line` (prefix and ANSI already removed), or None."""
        if not line or not (line[0].isdigit() or line[0] == "["):
            return None
        m = _ISO.match(line)
        if m:
            g = m.groups()
            date = g[:3]
            base_day = self._base_day
            if date != self._date or base_day is None:  # one timegm per day, not per line
                self._date = date
                base_day = self._base_day = float(calendar.timegm(
                    (int(g[0]), int(g[1]), int(g[2]), 0, 0, 0)))
                self._year = int(g[0])
            self._offset = _utc_offset(line, m.end())
            t = (base_day + int(g[3]) * 3600 + int(g[4]) * 60 + int(g[5]) + _frac(g[6])
                 - self._offset)
            return self._accept(t, rollover=False)
        m = _GLOG.match(line)
        if m and self._year is not None:
            mo, d, hh, mm, ss = (int(x) for x in m.groups()[:5])
            sod = hh * 3600 + mm * 60 + ss + _frac(m.group(6))
            # glog prints no year: the year of the dated lines, or the one before or after it
            # when that is nearer the log's last time (a line past New Year's midnight)
            try:
                days = [float(calendar.timegm((year, mo, d, 0, 0, 0)))
                        for year in (self._year - 1, self._year, self._year + 1)]
            except ValueError:
                return None  # not a month
            near = self.last if self.last is not None else days[1]
            t = min((day + sod - self._offset for day in days), key=lambda c: abs(c - near))
            return self._accept(t, rollover=False)
        m = _HMS.match(line) or (_GLOG.match(line) if self._year is None else None)
        if m:
            groups = m.groups()
            hh, mm, ss = (int(x) for x in groups[-4:-1])
            if hh > 23 or mm > 59 or ss > 60:
                return None
            sod = hh * 3600 + mm * 60 + ss + _frac(groups[-1])
            if self._base_day is not None:
                t = self._base_day + sod - self._offset
            else:
                t = self._bare_day * 86400 + sod
            return self._accept(t, rollover=True)
        return None

    def _accept(self, t: float, *, rollover: bool) -> float:
        if rollover and self.last is not None and t < self.last - 43200:
            t += 86400  # past midnight
            if self._base_day is not None:
                self._base_day += 86400
                self._date = ()  # the cached ISO date no longer matches _base_day
            else:
                self._bare_day += 1
        if self.last is None or t > self.last:
            self.last = t
        return t


def _utc_offset(line: str, end: int) -> int:
    """The offset from UTC, in seconds, of the ISO time ending at `end` in `line`: its zone
    (`+02:00` is 7200, `-0500` -18000), 0 for `Z`, no zone or no offset a zone has."""
    m = _ZONE.match(line, end)
    if m is None or m.group(1) is None:
        return 0
    hours, minutes = int(m.group(2)), int(m.group(3))
    if hours > 14 or minutes > 59:
        return 0
    return (1 if m.group(1) == "+" else -1) * (hours * 3600 + minutes * 60)


def _frac(text: str | None) -> float:
    return float("0." + text) if text else 0.0


def split_line(line: str) -> tuple[str, str]:
    """The prefixes and the message of a line as a reader sees it (last carriage-return
    segment, after the line's own time and prefixes: `_last_draw`; no ANSI): the launcher's,
    process's and runner's prefixes the catalogue's scanner strips too (bot.core.logprefix),
    then the message, stripped of blanks."""
    line = _visible(_last_draw(line) if "\r" in line else line)
    m = LINE_PREFIXES.match(line) if line[:1] in PREFIX_STARTS else None
    if m:
        return line[:m.end()], line[m.end():].strip()
    return "", line.strip()


def _visible(text: str) -> str:
    """`text` without ANSI escapes and leading blanks."""
    return (_ANSI.sub("", text) if "\x1b" in text else text).lstrip()


def _last_draw(line: str) -> str:
    """The last carriage-return segment of a line with more than blanks (tqdm redraws a bar in
    place after a carriage return: a line may hold many draws), after the prefixes and the time
    the line starts with, unless the segment has its own: what writes the log puts them once,
    before the first draw (`2025-05-14 16:10:00 ` or srun --label's `0: `, then the draws), and
    the line's time is the one the last draw gets (when the line started: the nearest known)."""
    parts = [p for p in line.split("\r") if p.strip()]
    if len(parts) < 2:
        return parts[0] if parts else ""
    first, last = _visible(parts[0]), _visible(parts[-1])
    lead = first[:_lead_end(first)]
    return lead + last if lead and not _lead_end(last) else parts[-1]


def _lead_end(text: str) -> int:
    """Where the prefixes and the time at the start of `text` (ANSI and blanks removed) end:
    the launcher's, process's and runner's prefixes (bot.core.logprefix), then a time
    (`_time_end`); 0 when it starts with neither."""
    m = LINE_PREFIXES.match(text) if text[:1] in PREFIX_STARTS else None
    end = m.end() if m is not None else 0
    return end + _time_end(text[end:])


def message_after_time(message: str) -> str:
    """A line's message (`clean_line`, the catalogue scanner's `normalize_line`) after the
    time it starts with and the launcher's prefixes after that time (`_time_end`), where a
    progress bar's label starts: `2025-05-14 16:10:00 [rank3]: Map: 100%|…` is read as
    `Map: 100%|…`; the message itself when it starts with no time."""
    return message[_time_end(message):]


def _time_end(message: str) -> int:
    """Where the time at the start of a message ends (0: it starts with none): a time the clock
    reads (`2025-05-14 16:10:00,123`, `2025-05-14T16:10:00+02:00`, `[2025-05-14 16:10:00]`,
    `16:10:00`, glog's `I0514 16:10:00.123`) with its zone, bracket and blanks, and the
    launcher's prefixes after it (`2025-05-14 16:10:00 [rank3]: `, srun --label's `… 0: `)."""
    if not message or not (message[0].isdigit() or message[0] == "["):
        return 0
    m = _ISO.match(message) or _GLOG.match(message) or _HMS.match(message)
    if m is None:
        return 0
    closed = _TIME_END.match(message, m.end())
    end = closed.end() if closed is not None else m.end()
    rest = message[end:]
    after = LINE_PREFIXES.match(rest) if rest[:1] in PREFIX_STARTS else None
    return end + after.end() if after is not None else end


def _last_segment(line: str) -> str:
    """The last carriage-return segment of a raw line with more than blanks (what a terminal
    shows of it), unstripped."""
    parts = [p for p in line.rstrip("\n").split("\r") if p.strip()]
    return parts[-1] if parts else ""


def _first_draw(raw: str) -> tuple[int, int] | None:
    """The count and total of a raw line's first bar draw (tqdm redraws a bar in place after
    a carriage return: a line may hold many), None when it draws no bar."""
    m = _TQDM.search(raw)
    return (int(m.group(1)), int(m.group(2))) if m is not None else None


def clean_line(line: str) -> str:
    """The message of a line as a reader sees it (`split_line`)."""
    return split_line(line)[1]


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


class LineParser:
    """Parses one line into a `Sample` and/or a `CheckpointEvent`; stateful for time and for
    the total of the training's progress bar (`training_bar_total`).

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
    bars (`Validation DataLoader 0:`) are evaluations: no iteration, target or pace."""

    def __init__(self, extra_patterns: Sequence[str | re.Pattern[str]] = ()) -> None:
        self.clock = LogClock()
        # the total of the last progress bar drawn at the top: the training's (None: none yet)
        self.training_bar_total: int | None = None
        # a Hugging Face Trainer's logged dict has been seen (its bars are the Trainer's)
        self.trainer_dicts_seen = False
        # the total of a bar drawn at the top seen counting steps of its own (None: none yet)
        self.steps_bar_total: int | None = None
        # an `Epoch 0/10` bar was seen: its loop counts its epochs from 0 (`_read_epoch_bar`)
        self.epochs_from_zero = False
        # an `Epoch 0/9` and an `Epoch 9/9` bar were seen: its loop numbers its epochs 0 to 9
        self.epochs_zero_to_number = False
        # an `Epoch N` bar showed a Lightning that counted its epochs from 1 (`_read_epoch_bar`)
        self.lightning_epochs_from_one = False
        self._top_bar: tuple[int, int] | None = None  # the last top bar's (count, total)
        self._drawn_below = False  # a bar was drawn below the top one since its last draw
        self.extra = [re.compile(p) if isinstance(p, str) else p for p in extra_patterns]
        for pattern in self.extra:
            unknown = set(pattern.groupindex) - set(_EXTRA_GROUPS)
            if unknown:
                raise ValueError(
                    f"recipe metric pattern {pattern.pattern!r} has unknown group(s) "
                    f"{sorted(unknown)}; use {', '.join(_EXTRA_GROUPS)}"
                )

    def parse(self, raw: str, line_no: int) -> tuple[Sample | None, CheckpointEvent | None]:
        prefix, line = split_line(raw)
        if not line:
            return None, None
        t = self.clock.parse_split(prefix, line)
        # the grammar reads the message after its time (a bar's label starts there)
        body = message_after_time(line)
        s = Sample(line_no=line_no, time=t)
        event = None
        low = line.lower()
        try:
            self._metrics(line, body, s)
            if s.target_iter is not None and "|" in body and _TQDM.search(body):
                self._read_bar(raw, body, s)
            if s.iteration is not None and _LOADING.search(line):
                s.iteration = s.target_iter = None
            if (
                ("checkpoint" in low or "ckpt" in low or "dcp" in low or "state" in low)
                and _CKPT_WORD.search(line)
                and not _CKPT_NOT_SAVE.search(line)
            ):
                event = self._checkpoint(line, line_no, t)
                if event is not None:
                    s.iteration = s.target_iter = None  # "saving at iteration N" is not progress
        except _ABSURD_NUMBER:
            return None, None
        _drop_implausible(s)
        if event is not None and not _plausible_iter(event.iteration):
            event = None
        if not s.is_metric and s.evaluation_batches is None:
            return None, event
        s.text = line[:300]
        return s, event

    def _read_bar(self, raw: str, body: str, s: Sample) -> None:
        """A progress bar: drawn at the top, the training's (its total kept); below a
        training bar that is the Trainer's (`_evaluates_below_training`), a bare one drawn
        below it (`_NESTED_BAR_END`, no label, no loss) counting to another total is an
        evaluation's: no iteration, target or pace of training."""
        if "[A" not in raw or _NESTED_BAR_END.search(_last_segment(raw)) is None:
            self._top_bar_drawn(raw, s)
            return
        if (self._evaluates_below_training() and s.target_iter != self.training_bar_total
                and s.loss is None and _UNLABELLED_BAR.match(body) is not None):
            if s.iteration is not None and s.target_iter is not None:
                s.evaluation_batches = (s.iteration, s.target_iter)
            s.iteration = s.target_iter = s.sec_per_iter = None
        self._drawn_below = True

    def _top_bar_drawn(self, raw: str, s: Sample) -> None:
        """Keep a bar drawn at the top as the training's, and whether it counts steps of its
        own: it advanced from one draw to the next with no bar drawn below it in between, in
        the line (tqdm redraws it in place) or from the last line's draw."""
        total = s.target_iter
        if s.iteration is None or total is None:
            return
        if self.steps_bar_total != total:
            before = self._top_bar if not self._drawn_below else None
            if before is None or before[1] != total:
                before = _first_draw(raw)
            if before is not None and before[1] == total and before[0] < s.iteration:
                self.steps_bar_total = total
        self._top_bar = (s.iteration, total)
        self._drawn_below = False
        self.training_bar_total = total

    def _evaluates_below_training(self) -> bool:
        """Whether a bare bar drawn below the training bar is an evaluation's: the log showed
        one of Hugging Face Trainer's logged dicts, or the training bar counts steps of its
        own (`steps_bar_total`), as the Trainer's does; a loop's outer bar advances only
        after the bar below it ran (`for epoch in tqdm(…): for batch in tqdm(loader)`)."""
        return self.training_bar_total is not None and (
            self.trainer_dicts_seen or self.steps_bar_total == self.training_bar_total)

    def parse_event(self, raw: str, line_no: int) -> CheckpointEvent | None:
        """Only the checkpoint event of a line (for lines found by the event locator)."""
        prefix, line = split_line(raw)
        low = line.lower()
        if not (("checkpoint" in low or "ckpt" in low or "dcp" in low or "state" in low)
                and _CKPT_WORD.search(line) and not _CKPT_NOT_SAVE.search(line)):
            return None
        try:
            event = self._checkpoint(line, line_no, self.clock.parse_split(prefix, line))
        except _ABSURD_NUMBER:
            return None
        return event if event is None or _plausible_iter(event.iteration) else None

    def _metrics(self, line: str, body: str, s: Sample) -> None:
        """The figures of a line's message: a recipe's patterns read all of it (its time too),
        the built-in grammar its `body`, the message after its time (`_time_end`)."""
        for pattern in self.extra:
            m = pattern.search(line)
            if m:
                _apply_extra(m, s, self.clock)
        if is_start_up_bar(body):
            return  # data preparation or loading: no iteration, target or pace of training
        if "%" in body and "|" in body and _EVALUATION_BAR.match(body) is not None:
            # an evaluation pass's bar: its batches, no iteration, target or pace of training
            m = _TQDM.search(body)
            if m:
                s.evaluation_batches = (int(m.group(1)), int(m.group(2)))
            return
        m = _MEGATRON.search(body) if "iteration" in body else None
        if m:
            s.iteration, s.target_iter = int(m.group(1)), int(m.group(2))
            lm = _MEG_LOSS.search(body)
            if lm:
                s.loss = _float(lm.group(1))
            ms = _MEG_MS.search(body)
            if ms:
                s.sec_per_iter = float(ms.group(1)) / 1000
        elif "{'" in body and _HF.search(body):
            pairs = dict(_HF_PAIR.findall(body))
            # Trainer.log adds the epoch to every dict it logs (its loss, its evaluation's)
            if "epoch" in pairs and ("loss" in pairs or "eval_loss" in pairs):
                self.trainer_dicts_seen = True
            if "loss" in pairs or "train_loss" in pairs:
                s.loss = _float(pairs["loss"] if "loss" in pairs else pairs["train_loss"])
            if "step" in pairs:
                s.iteration = int(float(pairs["step"]))
        if "<" in body and "/" in body:
            m = _TQDM.search(body)
            if m:
                done, total = int(m.group(1)), int(m.group(2))
                epoch = _EPOCH_BAR.match(body) if s.iteration is None else None
                if epoch is not None:
                    self._read_epoch_bar(epoch, done, total, s)
                else:
                    s.iteration = s.iteration if s.iteration is not None else done
                    s.target_iter = s.target_iter or total
                if m.group(3):
                    rate = float(m.group(3))
                    s.sec_per_iter = rate if m.group(4) == "s/it" else (1 / rate if rate else None)
        for m in _KV.finditer(body):
            _apply_kv(m, s)
        if s.sec_per_iter is None:
            m = _RATE.search(body)
            if m:
                rate = float(m.group(1))
                if m.group(2).lower().startswith("s/"):
                    s.sec_per_iter = rate
                elif rate > 0:
                    s.sec_per_iter = 1 / rate

    def _read_epoch_bar(self, epoch: re.Match[str], done: int, total: int, s: Sample) -> None:
        """One epoch's bar (`_EPOCH_BAR`): its iteration is the batches of the epochs before it
        (as many as this one's) and this one's. `Epoch 3:` (Lightning's, from 0, from 1 once a
        bar showed Lightning 0.5, 0.6 or 0.7: `_shows_lightning_epochs_from_one`) has no
        target: the run's is no epoch's total. `Epoch 3/10:` counts to the loop's number of
        epochs, its target all their batches, from where the log shows the numbers start: from
        0 once it showed an `Epoch 0/10` bar (`epochs_from_zero`: `range(num_epochs)` printed
        as it is), and then to 10 once it showed an `Epoch 10/10` bar too
        (`epochs_zero_to_number`: 11 epochs numbered by the last one, `desc=f"Epoch
        {epoch}/{num_epochs - 1}"`); else from 1 (an `Epoch 10/10` bar alone shows it). A log
        with neither (cut, or started mid-run) is read from 1, the reading that does not
        overstate progress: a loop counting from 0 then reads one epoch behind (its last
        epoch ends one epoch's batches short of the target), never ahead."""
        number, epochs = int(epoch.group(1)), epoch.group(2)
        if epochs is None:
            self.lightning_epochs_from_one = (
                self.lightning_epochs_from_one or _shows_lightning_epochs_from_one(epoch.string))
            first = 1 if number and self.lightning_epochs_from_one else 0
            s.iteration = (number - first) * total + done
            return
        last = int(epochs)
        self.epochs_from_zero = self.epochs_from_zero or number == 0
        self.epochs_zero_to_number = self.epochs_zero_to_number or (
            self.epochs_from_zero and number == last)
        s.iteration = (number if self.epochs_from_zero else number - 1) * total + done
        s.target_iter = (last + 1 if self.epochs_zero_to_number else last) * total

    def _checkpoint(self, line: str, line_no: int, t: float | None) -> CheckpointEvent | None:
        if _CKPT_END.search(line):
            kind = "end"
        elif _CKPT_START.search(line):
            kind = "start"
        else:
            return None
        m = _CKPT_ITER.search(line)
        iteration = int(m.group(1) or m.group(2)) if m else None
        d = _DURATION.search(line)
        duration = None
        if d:
            duration = float(d.group(1)) / (1000 if d.group(2).lower() == "ms" else 1)
        return CheckpointEvent(kind, line_no, t, iteration, duration, line[:300])


# int() refuses more than 4300 digits (ValueError) and int(float("9" * 400)) is int(inf)
# (OverflowError): a line with such a number is garbage, not a metric line.
_ABSURD_NUMBER = (ValueError, OverflowError)
_MAX_ITERATION = 10**15


def _plausible_iter(value: int | None) -> bool:
    return value is None or 0 <= value < _MAX_ITERATION


def _drop_implausible(s: Sample) -> None:
    """Forget values no training prints (hundreds of digits, inf): they would overflow the
    projections and charts made from them."""
    if not _plausible_iter(s.iteration):
        s.iteration = None
    if not _plausible_iter(s.target_iter):
        s.target_iter = None
    for attr in ("sec_per_iter", "gpu_util"):
        value = getattr(s, attr)
        if value is not None and not (math.isfinite(value) and abs(value) < 1e15):
            setattr(s, attr, None)
    for attr in ("host_rss_bytes", "gpu_mem_bytes"):
        value = getattr(s, attr)
        if value is not None and not 0 <= value <= MAX_SIZE:
            setattr(s, attr, None)


def _apply_kv(m: re.Match[str], s: Sample) -> None:
    key = m.group(1).lower()
    value, target, unit = m.group(2), m.group(3), m.group(4) or ""
    if key in ("iteration", "iter", "step", "global_step"):
        if s.iteration is None and value.isdigit():
            s.iteration = int(value)
            if target:
                s.target_iter = int(target)
    elif key in ("loss", "lm_loss", "train_loss"):
        if s.loss is None:
            s.loss = _float(value)
    elif key in ("sec_per_iter", "s/iter", "s/it", "step_time", "iter_time", "time_per_iter"):
        if s.sec_per_iter is None:
            s.sec_per_iter = float(value) / (1000 if unit.lower() == "ms" else 1)
    elif key == "it/s":
        if s.sec_per_iter is None and float(value) > 0:
            s.sec_per_iter = 1 / float(value)
    elif key in ("host_rss", "maxrss", "rss", "host_mem", "cpu_mem", "mem"):
        if s.host_rss_bytes is None and unit not in ("%", "s", "ms"):
            s.host_rss_bytes = parse_mem(value, unit)
    elif key in ("gpu_mem", "cuda_mem", "max_mem_allocated", "mem_allocated"):
        if s.gpu_mem_bytes is None and unit not in ("%", "s", "ms"):
            s.gpu_mem_bytes = parse_mem(value, unit)
    elif key in ("gpu_util", "util"):
        if s.gpu_util is None:
            s.gpu_util = float(value)


def _apply_extra(m: re.Match[str], s: Sample, clock: LogClock) -> None:
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    if "iteration" in g:
        s.iteration = int(g["iteration"])
    if "target_iter" in g:
        s.target_iter = int(g["target_iter"])
    if "loss" in g:
        s.loss = _float(g["loss"])
    if "sec_per_iter" in g:
        s.sec_per_iter = float(g["sec_per_iter"])
    if "gpu_util" in g:
        s.gpu_util = float(g["gpu_util"].rstrip("%"))
    for key, attr in (("rss", "host_rss_bytes"), ("gpu_mem", "gpu_mem_bytes")):
        if key in g:
            mm = re.match(r"\s*([\d.]+)\s*([A-Za-z]*)", g[key])
            if mm:
                setattr(s, attr, parse_mem(mm.group(1), mm.group(2)))
    if "time" in g and s.time is None:
        try:
            s.time = float(g["time"])
        except ValueError:
            s.time = clock.parse(g["time"])

