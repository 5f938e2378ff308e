"""Progress and memory metrics parsed from training log lines, incrementally, in bounded memory."""

from __future__ import annotations

import calendar
import math
import re
import statistics
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bot.core.logprefix import ANSI_ESCAPE, LINE_PREFIXES, PREFIX_STARTS, TIMED_PREFIXES
from bot.core.units import GIB, MAX_SIZE

try:  # RE2: one DFA pass a block; optional (extra `re2`), `re` gives the same answers slower.
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None

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


@dataclass(slots=True)
class Sample:
    """One progress/memory observation; fields a line does not show are None."""

    line_no: int
    time: float | None = None
    iteration: int | None = None
    target_iter: int | None = None
    loss: float | None = None
    sec_per_iter: float | None = None
    host_rss_bytes: int | None = None
    gpu_mem_bytes: int | None = None
    gpu_util: float | None = None
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


# --- line parsing -----------------------------------------------------------------------

_ANSI = re.compile(ANSI_ESCAPE)
# A time at the start of a line, also in a task runner's bracket (`[task 2025-01-21T16:30:37Z]`)
_ISO = re.compile(r"^\[?(?:[A-Za-z][\w.-]* )?"
                  r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"^\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
_HMS = re.compile(r"^\[?(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?![\d:])")

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
_TQDM = re.compile(
    r"(\d+)/(\d+)\s*\[(?:\d+:)?\d+:\d+<(?:(?:\d+:)?\d+:\d+|\?)"
    r"(?:,\s*([\d.]+)\s*(s/it|it/s))?"
)
#: How the labels (tqdm's `desc`, before the percentage) of the progress bars start that a
#: program prints while it prepares its data or loads before training starts, as regexes
#: (case ignored): Hugging Face datasets' `Map`, `Filter`, `Generating train split`, `Casting
#: the dataset`, `Flattening the indices`, `Resolving data files`, `Extracting data files`;
#: transformers' examples' `Running tokenizer on dataset` and `Grouping texts in chunks of
#: 1024`, its `Loading checkpoint shards`; the Hub's `Downloading …` and `Fetching 5 files`;
#: TRL's `Tokenizing train dataset`, `Applying chat template to train dataset`, `Packing train
#: dataset`, `Truncating train dataset`; YOLO's `Scanning …` and `Caching images` (after the
#: data split's name: `train: Scanning`); Lightning's `Sanity Checking` pass before its first
#: epoch. Such a bar is start-up output: it shows no training progress and reaches no target.
START_UP_BAR_LABELS = (
    r"map\b", r"filter\b", r"generating \S+ split\b", r"casting\b", r"flattening the indices",
    r"resolving data files", r"extracting\b", r"running tokenizer\b", r"grouping texts\b",
    r"tokeniz", r"loading\b", r"download", r"fetching \d+ files\b", r"applying chat template",
    r"packing\b", r"truncating\b", r"preprocess", r"scanning\b", r"caching\b",
    r"sanity checking\b",
)
_START_UP_BAR = re.compile(
    r"^(?:[\w-]+:\s+)?(?:" + "|".join(START_UP_BAR_LABELS)
    + r")[^|%]*?(?<![\d.])\d{1,3}(?:\.\d+)?%\s*\|",
    re.IGNORECASE,
)
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
# Bytes locator for checkpoint lines in sparse mode (only there; dense mode sees each line).
_CKPT_LOCATOR = compile_bytes_scanner(rb"checkpoint|ckpt|dcp|state.dict", ignore_case=True)

_EXTRA_GROUPS = ("iteration", "target_iter", "loss", "rss", "gpu_mem", "gpu_util",
                 "sec_per_iter", "time")


def parse_mem(value: str, unit: str = "") -> int:
    """Bytes for a memory value as logs print it (`72.1` + `GiB`); GB reads as GiB."""
    number = float(value)
    unit = unit.lower()
    if not unit and number >= 2**20:
        return int(number)  # a bare large number is a byte count
    return int(number * _UNITS.get(unit, GIB))


def _float(value: str) -> float:
    return float(value)  # accepts nan/inf/1.2E+00


class LogClock:
    """Turns leading timestamps into monotonic float seconds (see docs/architecture.md)."""

    def __init__(self) -> None:
        self.last: float | None = None
        self._base_day: float | None = None  # epoch of midnight of the latest known date
        self._year: int | None = None
        self._bare_day = 0  # day index for bare HH:MM:SS when no date was ever seen
        self._date: tuple[str, ...] = ()  # the last ISO date seen (as printed)

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
            t = base_day + int(g[3]) * 3600 + int(g[4]) * 60 + int(g[5]) + _frac(g[6])
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
            t = min((day + sod for day in days), key=lambda c: abs(c - near))
            return self._accept(t, rollover=False)
        m = _HMS.match(line) or (_GLOG.match(line) if self._year is None else None)
        if m:
            groups = m.groups()
            hh, mm, ss = (int(x) for x in groups[-4:-1])
            if hh > 23 or mm > 59 or ss > 60:
                return None
            sod = hh * 3600 + mm * 60 + ss + _frac(groups[-1])
            if self._base_day is not None:
                t = self._base_day + sod
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


def _frac(text: str | None) -> float:
    return float("0." + text) if text else 0.0


def split_line(line: str) -> tuple[str, str]:
    """The prefixes and the message of a line as a reader sees it (last carriage-return
    segment, no ANSI): the launcher's, process's and runner's prefixes the catalogue's scanner
    strips too (bot.core.logprefix), then the message, stripped of blanks."""
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    line = line.lstrip()
    m = LINE_PREFIXES.match(line) if line[:1] in PREFIX_STARTS else None
    if m:
        return line[:m.end()], line[m.end():].strip()
    return "", line.strip()


def clean_line(line: str) -> str:
    """The message of a line as a reader sees it (`split_line`)."""
    return split_line(line)[1]


def is_start_up_bar(message: str) -> bool:
    """A progress bar of data preparation or loading before training (its label starts with
    one of `START_UP_BAR_LABELS`: `Map: 100%|██████████| 1000/1000 [00:01<00:00, …]`): start-up
    output, which shows no training progress and reaches no target. `message` is a line's
    message (`clean_line`). Training's own bars (`Epoch 3:  45%|`, `Training:`, Hugging Face
    Trainer's unlabelled `  5%|▌  | 50/1000`) are not."""
    return "%" in message and _START_UP_BAR.match(message) is not None


class LineParser:
    """Parses one line into a `Sample` and/or a `CheckpointEvent` (stateful for time only)."""

    def __init__(self, extra_patterns: Sequence[str | re.Pattern[str]] = ()) -> None:
        self.clock = LogClock()
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
        s = Sample(line_no=line_no, time=t)
        event = None
        low = line.lower()
        try:
            self._metrics(line, s)
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
        if not s.is_metric:
            return None, event
        s.text = line[:300]
        return s, event

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

    def _metrics(self, line: str, s: Sample) -> None:
        for pattern in self.extra:
            m = pattern.search(line)
            if m:
                _apply_extra(m, s, self.clock)
        if is_start_up_bar(line):
            return  # data preparation or loading: no iteration, target or pace of training
        m = _MEGATRON.search(line) if "iteration" in line else None
        if m:
            s.iteration, s.target_iter = int(m.group(1)), int(m.group(2))
            lm = _MEG_LOSS.search(line)
            if lm:
                s.loss = _float(lm.group(1))
            ms = _MEG_MS.search(line)
            if ms:
                s.sec_per_iter = float(ms.group(1)) / 1000
        elif "{'" in line and _HF.search(line):
            pairs = dict(_HF_PAIR.findall(line))
            if "loss" in pairs or "train_loss" in pairs:
                s.loss = _float(pairs["loss"] if "loss" in pairs else pairs["train_loss"])
            if "step" in pairs:
                s.iteration = int(float(pairs["step"]))
        if "<" in line and "/" in line:
            m = _TQDM.search(line)
            if m:
                s.iteration = s.iteration if s.iteration is not None else int(m.group(1))
                s.target_iter = s.target_iter or int(m.group(2))
                if m.group(3):
                    rate = float(m.group(3))
                    s.sec_per_iter = rate if m.group(4) == "s/it" else (1 / rate if rate else None)
        for m in _KV.finditer(line):
            _apply_kv(m, s)
        if s.sec_per_iter is None:
            m = _RATE.search(line)
            if m:
                rate = float(m.group(1))
                if m.group(2).lower().startswith("s/"):
                    s.sec_per_iter = rate
                elif rate > 0:
                    s.sec_per_iter = 1 / rate

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


# --- the series -------------------------------------------------------------------------


class MetricSeries:
    """Samples and checkpoint events of one log, fed incrementally with bounded memory."""

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
        self.samples: list[Sample] = []
        self.events: deque[CheckpointEvent] = deque(maxlen=max_events)
        self.stride = 1
        self.lines_seen = 0
        self.last_iteration: int | None = None
        self.last_progress: Sample | None = None  # first sample at the highest iteration
        # the number of the latest line that printed an iteration: not last_progress's, as
        # each epoch's bar starts again at 0; exact in sparse mode too (feed_block adds each
        # block's last such line)
        self.last_iteration_line: int | None = None
        self.target_iter: int | None = None
        self.last_loss: float | None = None
        self._step_s: deque[float] = deque(maxlen=256)  # recent seconds per iteration
        self._log_every: deque[int] = deque(maxlen=256)  # iterations between progress lines
        self._reported_spi: deque[float] = deque(maxlen=256)
        self._prev_progress: Sample | None = None
        self._next_line = 1  # sparse mode: next line number to look at
        self.log_rss_seen = False  # has the log itself printed a host RSS?
        self.external_rss_source: str | None = None  # e.g. "sstat", see add_rss
        self._last_external: Sample | None = None

    # feeding ---------------------------------------------------------------------------

    @property
    def last_time(self) -> float | None:
        """The latest log time seen on any parsed line."""
        return self.parser.clock.last

    def feed_line(self, text: str, line_no: int) -> None:
        """Parse one line (always, whatever the stride)."""
        sample, event = self.parser.parse(text, line_no)
        if event is not None:
            self._add_event(event)
        if sample is not None:
            self._add(sample)
        self.lines_seen = max(self.lines_seen, line_no)

    def feed_lines(self, lines: Iterable[str], first_line_no: int = 1) -> None:
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
    ) -> int:
        """Feed a block of complete lines (`data[start:end]`); returns how many lines it held.

        `newlines` (offsets of b"\\n" in `data[start:end]`, absolute) and `event_offsets`
        (offsets of lines that may be checkpoint events) let a caller that already scanned the
        block share the work; slicing by offsets avoids copying big blocks.
        """
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        end = len(data) if end is None else end
        if newlines is None:
            newlines = newline_offsets(data, start, end)
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
        # Sparse: checkpoint lines (every one), then one line in `stride`.
        if event_offsets is None:
            event_offsets = [m.start() for m in _CKPT_LOCATOR.finditer(data, start, end)]
        event_idx = sorted({int(x) for x in np.searchsorted(newlines, list(event_offsets))})
        pending_events = deque(i for i in event_idx if first_line_no + i >= self._next_line)
        i = max(0, self._next_line - first_line_no)
        last_sampled = -1
        while i < n_lines:
            while pending_events and pending_events[0] < i:
                j = pending_events.popleft()
                self._event_only(line_at(j), first_line_no + j)
            found = False
            for k in range(i, min(i + 16, n_lines)):
                sample, event = self.parser.parse(line_at(k), first_line_no + k)
                if event is not None:
                    self._add_event(event)
                    if pending_events and pending_events[0] == k:
                        pending_events.popleft()
                if sample is not None:
                    self._add(sample)
                    last_sampled = k
                    found = True
                    break
            i = (last_sampled if found else i + 15) + self.stride
        while pending_events:
            j = pending_events.popleft()
            self._event_only(line_at(j), first_line_no + j)
        # Always the block's last metric line, so latest iteration and progress are exact.
        tail_from = max(last_sampled + 1, n_lines - 64)
        for k in range(n_lines - 1, tail_from - 1, -1):
            sample, _ = self.parser.parse(line_at(k), first_line_no + k)
            if sample is not None and sample.iteration is not None:
                self._add(sample)
                break
        # The latest timestamp of the block (for `now` of offline logs).
        for k in range(n_lines - 1, max(last_sampled, n_lines - 64), -1):
            if self.parser.clock.parse_line(line_at(k)) is not None:
                break
        self._next_line = max(self._next_line, last_line_no + 1, first_line_no + i)
        self.lines_seen = max(self.lines_seen, last_line_no)
        return n_lines

    def _event_only(self, text: str, line_no: int) -> None:
        event = self.parser.parse_event(text, line_no)
        if event is not None:
            self._add_event(event)

    def _add_event(self, event: CheckpointEvent) -> None:
        if self.events and self.events[-1].line_no >= event.line_no:
            return
        self.events.append(event)

    def _add(self, s: Sample) -> None:
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

    def progress_interval_s(self) -> float | None:
        """Typical seconds between two progress lines (log times first: they include
        data loading and logging that a printed s/iter may leave out)."""
        timed = statistics.median(self._step_s) if self._step_s else None
        spi = max(timed or 0.0, self.sec_per_iter() or 0.0) or None
        return None if spi is None else spi * self.log_every()

    def rss_points(self) -> list[Sample]:
        return [s for s in self.samples if s.host_rss_bytes is not None]

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


def newline_offsets(data: bytes, start: int = 0, end: int | None = None) -> np.ndarray:
    """Offsets of every b"\\n" in `data[start:end]` (numpy: one C pass, no per-line Python)."""
    end = len(data) if end is None else end
    if end <= start:
        return np.empty(0, dtype=np.int64)
    view = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    return np.flatnonzero(view == 10) + start
