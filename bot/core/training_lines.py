"""What one line of a training log says: its time, progress and memory figures, a checkpoint
save (pure; no I/O).

The metric parser's grammar: the formats it reads (key=value tokens, Megatron, Hugging Face
Trainer dicts, tqdm bars, checkpoint save lines, a recipe's own patterns), read after the
line's time and the launcher's prefixes (a bar's label starts there). Where those end and what
time the line gives is bot.core.line_time's; which bars are not training (start-up bars, an
evaluation's own bar) or count one epoch's batches is bot.core.progress_bars'; what named
frameworks' own loggers print (torchvision's MetricLogger, OpenMMLab's runners) is
bot.core.framework_lines', the totals some announce before their loop
bot.core.announced_targets'. `LineParser` turns a line into a `Sample` and/or a
`CheckpointEvent`; bot.core.metrics keeps them as a bounded series.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.announced_targets import (
    AnnouncedTargets,
    ConfigDictLines,
    Counted,
    ResolvedConfigLines,
    Where,
    announced_totals,
)
from bot.core.framework_lines import (
    MASKRCNN_EVALUATION_START,
    is_openpcdet_train_bar,
    openpcdet_epochs_bar_total,
    read_framework_line,
    spacy_table_columns,
)
from bot.core.line_time import LogClock, message_after_time, split_line
from bot.core.progress_bars import (
    EPOCH_BAR,
    EVALUATION_BAR,
    MMCV_PROGRESS_BAR,
    NUMBER,
    NUMBER_FROM_RUN_START,
    TQDM_BAR,
    ProgressBars,
    is_start_up_bar,
    read_rich_bar,
)
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

# A summary table's column rule, `|` or rich's heavy `┃` (the character itself, which the bytes
# scanners read as its UTF-8), and the blanks between a rule and a column's name (coloured on a
# terminal: SGR codes among them), for `TRAINING_START`.
_COLUMN_RULE = "(?:\\||\u2503)"
_CELL_GAP = r"(?:\x1b\[[0-9;]*m| )+"

#: A training framework's banner as its training starts, printed once per run of its training
#: loop: a later one starts another run in the same log (a user's rerun into the same output
#: file, torchrun restarting its worker group, a resumed run appended to the log) once the run
#: before it showed progress (bot.core.metrics.MetricSeries.feed_block: a banner with no progress
#: before it is the first run's, as is each node's copy of it in a multi-node job). Confirmed in
#: each framework's source:
#: - Hugging Face Trainer's `***** Running training *****` (huggingface/transformers
#:   src/transformers/trainer.py, Trainer._inner_training_loop, before its first step; the
#:   example scripts that copy its loop print it alike)
#: - BasicSR's `Start training from epoch: 0, iter: 0` (XPixelGroup/BasicSR basicsr/train.py,
#:   main: `f'Start training from epoch: {start_epoch}, iter: {current_iter}'`, a resumed run's
#:   at its checkpoint's epoch and iteration)
#: - torch.distributed.elastic's agent restarting the worker group (pytorch/pytorch
#:   torch/distributed/elastic/agent/server/api.py, SimpleElasticAgent._invoke_run:
#:   `[default] Worker group FAILED. 3/3 attempts left; will restart worker group`, and on a
#:   membership change `[default] Detected 1 new nodes from group_rank=0; will restart worker
#:   group`)
#: - Lightning's model summary table's header (Lightning-AI/pytorch-lightning
#:   src/lightning/pytorch/callbacks/model_summary.py, ModelSummary.on_fit_start: once per fit,
#:   on global rank zero; utilities/model_summary/model_summary.py, _format_summary_table: the
#:   columns' names, each padded to its column's width, joined by ` | `: `  | Name | Type |
#:   Params | Mode`), and RichModelSummary's (callbacks/rich_model_summary.py, summarize: a rich
#:   Table of the columns ` `, `Name`, `Type`, `Params` and more, which rich draws in its
#:   default box, HEAVY_HEAD: `┃   ┃ Name    ┃ Type       ┃ Params ┃ Mode  ┃`, or, on an output
#:   that takes ASCII only, `|   | Name  | Type       | Params | Mode  |`; its header_style
#:   (`bold magenta`) colours each cell only on a terminal: `┃\x1b[1;35m \x1b[0m\x1b[1;35mName
#:   \x1b[0m…`)
#: - StyleGAN2-ADA's and StyleGAN3's `Training for 25000 kimg...` (NVlabs/stylegan2-ada-pytorch
#:   training/training_loop.py, training_loop: once, right before its loop; also the total its
#:   tick lines are read against, bot.core.announced_targets)
#: - OpenPCDet's `**********************Start training cfgs/kitti_models/pointpillar(default)
#:   **********************` (open-mmlab/OpenPCDet tools/train.py 8cacccec11db, main: once,
#:   right before train_model; 22 stars each side, since 405730d 2020-06)
#: - torchtune's `Running FullFinetuneRecipeSingleDevice with resolved config:` (pytorch/torchtune
#:   torchtune/config/_utils.py bd2a0fc7c314, log_config: each recipe's recipe_main logs it once,
#:   on rank zero, before its recipe's setup; its config dump follows, whose `epochs: 3` is the
#:   run's, bot.core.announced_targets)
#: - MONAI's trainers' run as ignite logs its start (pytorch/ignite ignite/engine/engine.py
#:   de08e799cfb5, Engine.run: `Engine run starting with max_epochs=100.` for a new state, else
#:   `Engine run resuming from iteration 0, epoch 0 until 100 epochs`, which a MONAI trainer
#:   prints: its Workflow sets the state's max_epochs before the run, Project-MONAI/MONAI
#:   monai/engines/workflow.py d388d1c6fec8), once per Workflow.run, by a logger that names the
#:   trainer's class (`ignite.engine.engine.SupervisedTrainer`); not its evaluators', whose runs
#:   start at each validation (as catalogue.yaml's end marker of the trainer's run)
#: Unanchored (bot.core.metrics scans raw lines, with their prefixes, for it).
#: A rerun that crashes before its banner (at import, loading its data or model) is read with
#: the run before it: nothing it prints is safely a new process's. An import-time crash prints
#: only its traceback, before any line of the script's own (Hugging Face's example scripts log
#: `Process rank: …` and `Training/evaluation parameters …` from main(), after their imports;
#: other scripts print nothing alike), and a traceback of the script's `<module>` frames ending
#: in an ImportError is also what one process prints when a script that trains at module level
#: imports after its training (`import matplotlib.pyplot` to plot): a cut there would read a
#: finished training as a run with no progress. Read together, the rerun's crash still decides
#: the class (its traceback, or sacct's state), the run before's figures beside it.
TRAINING_START = re.compile(
    r"\*{5} Running training \*{5}|Start training from epoch: [0-9]+, iter: [0-9]+"
    r"|; will restart worker group|Training for [0-9]+ kimg\.\.\.|\*{22}Start training [^*]+\*{22}"
    r"|Running \w+ with resolved config:"
    r"|ignite\.engine\.engine\.(?:SupervisedTrainer|GanTrainer|AdversarialTrainer)[^A-Za-z\n]"
    r"[^\n]*Engine run (?:starting with max_(?:epochs|iters)=|resuming from iteration )[0-9]+"
    rf"|{_COLUMN_RULE}{_CELL_GAP}Name{_CELL_GAP}{_COLUMN_RULE}{_CELL_GAP}Type{_CELL_GAP}"
    rf"{_COLUMN_RULE}{_CELL_GAP}Params\b")


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
    # the line sums up an evaluation pass once it is over (maskrcnn-benchmark's `[Validation]:`
    # line, mmcv's `Epoch(val) [12][500]`, mmengine's `Epoch(val) [12][500/500]    coco/…`): a
    # pass of its own, new activity whatever batches it counts (the same every epoch, and as
    # the pass's last batch line's), no training figure
    evaluation_done: bool = False
    text: str = ""

    @property
    def is_evaluation(self) -> bool:
        """The line is an evaluation's (its bar or its summary): activity of the run, and its
        loss and pace are no training's."""
        return self.evaluation_batches is not None or self.evaluation_done

    @property
    def is_training(self) -> bool:
        """The line shows the training's figures (`is_metric`) and is no evaluation's: a sample
        of the series (bot.core.metrics.MetricSeries)."""
        return self.is_metric and not self.is_evaluation

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


_KV = re.compile(
    r"(?<![\w/.-])(iteration|iter|global_step|step|lm_loss|train_loss|loss|sec_per_iter|s/iter|"
    r"s/it|it/s|step_time|iter_time|time_per_iter|host_rss|maxrss|rss|host_mem|cpu_mem|mem|"
    r"gpu_mem|cuda_mem|max_mem_allocated|mem_allocated|gpu_util|util)"
    r"(?:\s*[=:]\s*|\s+)"
    rf"({NUMBER}|nan|inf)(?:\s*/\s*(\d+))?"
    r"\s*(GiB|GB|MiB|MB|KiB|KB|TiB|TB|G|M|K|T|%|ms|s)?(?![\w./])",
    re.IGNORECASE,
)
_RATE = re.compile(rf"({NUMBER_FROM_RUN_START})\s*(s/it(?:er)?|it/s)(?![\w])", re.IGNORECASE)
_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEG_LOSS = re.compile(rf"\blm loss:\s*({NUMBER}|nan|inf)", re.IGNORECASE)
_MEG_MS = re.compile(r"elapsed time per iteration \(ms\):\s*([\d.]+)")
_HF = re.compile(r"\{'(?:loss|train_loss|eval_loss|step|epoch|learning_rate|grad_norm)'")
_HF_PAIR = re.compile(rf"'(\w+)':\s*({NUMBER}|nan|inf)")
_CKPT_WORD = re.compile(r"checkpoint|ckpt|dcp|state[ _]dict", re.IGNORECASE)
_CKPT_NOT_SAVE = re.compile(r"\b(?:load(?:ing|ed)?|resum(?:e|ing|ed)|restor(?:e|ing|ed))\b", re.I)
# Loading or resuming names the iteration of a checkpoint, not progress made by this run
# (`Loaded checkpoint at iteration 8000`, HF's `Loading checkpoint shards: 4/4 [00:02<00:00]`).
# A report of the best step so far names an earlier step, not progress: OpenNMT-py's early stop
# (onmt/utils/earlystopping.py, EarlyStopping._log_best_step: `Best model found at step {}`,
# printed after its `Training finished after not improving. Early Stop!` or `... after stalled
# validations. Early Stop!`, as the trainer leaves its loop).
_BEST_STEP = re.compile(r"\b[Bb]est model (?:found )?at (?:step|iteration|iter)\b")
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


def _float(value: str) -> float:
    return float(value)  # accepts nan/inf/1.2E+00


class LineParser:
    """Parses one line into a `Sample` and/or a `CheckpointEvent`; stateful for time (`clock`),
    for what the log's progress bars have shown (`bars`: bot.core.progress_bars, which says
    which bars are the training's progress) and for the totals a framework announced before
    its loop (`targets`: bot.core.announced_targets; bot.core.framework_lines' lines take their
    target from them)."""

    def __init__(self, extra_patterns: Sequence[str | re.Pattern[str]] = ()) -> None:
        self.clock = LogClock()
        self.bars = ProgressBars()
        self.targets = AnnouncedTargets()
        # the line each total in `targets` was announced on (`start_run` keeps the later ones)
        self._announced_on: dict[Counted, int] = {}
        # where the lines stand in a config dump's long dict (its key lines announce a total)
        self._config_dicts = ConfigDictLines()
        # whether the lines are in torchtune's config dump (its `epochs: 3` announces a total)
        self._resolved_config = ResolvedConfigLines()
        # whether the run showed OpenPCDet's train bar (its `epochs:` bar is then OpenPCDet's and
        # announces the epochs), and the last `epochs:` bar's total and line until then
        self._openpcdet_bars = False
        self._epochs_bar: tuple[int, int] | None = None
        # the columns of the spaCy training table whose header the run showed, and its line
        # (its rows are progress only under it)
        self._spacy_table: tuple[int, int] | None = None
        self.extra = [re.compile(p) if isinstance(p, str) else p for p in extra_patterns]
        for pattern in self.extra:
            unknown = set(pattern.groupindex) - set(_EXTRA_GROUPS)
            if unknown:
                raise ValueError(
                    f"recipe metric pattern {pattern.pattern!r} has unknown group(s) "
                    f"{sorted(unknown)}; use {', '.join(_EXTRA_GROUPS)}"
                )

    def start_run(self, announced_from: int) -> None:
        """A later run's output starts (a requeued job's, appended to the log): its progress
        bars are read afresh (`ProgressBars.start_run`), and the totals announced before line
        `announced_from` are the earlier run's, forgotten (its `Scheduled epochs: 300.` is no
        target of a rerun that announced none); one announced on that line or after it is the
        new run's (BasicSR's `Total epochs: …; iters: …`, logged before the banner that starts
        its run). The clock carries over."""
        self.bars.start_run()
        kept = {counted: line for counted, line in self._announced_on.items()
                if line >= announced_from}
        targets = AnnouncedTargets()
        for counted in kept:
            targets = targets.with_total(counted, getattr(self.targets, counted))
        self.targets, self._announced_on = targets, kept
        self._openpcdet_bars = False
        if self._epochs_bar is not None and self._epochs_bar[1] < announced_from:
            self._epochs_bar = None
        if self._spacy_table is not None and self._spacy_table[1] < announced_from:
            self._spacy_table = None

    def training_completed(self) -> None:
        """The run's completion marker was the last line read: the bars after it are read as
        `ProgressBars.training_completed` says (no evaluation's bar is training progress)."""
        self.bars.training_completed()

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
            total = s.target_iter
            if (total is not None and "|" in body and TQDM_BAR.search(body)
                    and self.bars.is_evaluation_draw(raw, body, s.iteration, total,
                                                     s.loss is not None)):
                # an evaluation's bar: its batches, no iteration, target or pace of training
                if s.iteration is not None:
                    s.evaluation_batches = (s.iteration, total)
                s.iteration = s.target_iter = s.sec_per_iter = None
            if s.iteration is not None and (_LOADING.search(line) or _BEST_STEP.search(line)):
                s.iteration = s.target_iter = None
            if (
                ("checkpoint" in low or "ckpt" in low or "dcp" in low or "state" in low)
                and _CKPT_WORD.search(line)
                and not _CKPT_NOT_SAVE.search(line)
            ):
                event = self._checkpoint(line, line_no, t)
                if event is not None:
                    s.iteration = s.target_iter = None  # "saving at iteration N" is not progress
            if s.iteration is not None:
                self.bars.training_progressed()  # an evaluation the framework opened is over
        except _ABSURD_NUMBER:
            return None, None
        _drop_implausible(s)
        if event is not None and not _plausible_iter(event.iteration):
            event = None
        if not s.is_metric and not s.is_evaluation:
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

    def read_announcement(self, raw: str, line_no: int) -> None:
        """Only the totals a line announces (for lines found by the announcement locator)."""
        try:
            self._announce(message_after_time(split_line(raw)[1]), line_no)
        except _ABSURD_NUMBER:
            return

    def _announce(self, body: str, line_no: int) -> None:
        """Keep the totals line `line_no`'s message `body` announces (`announced_totals`, in a
        config dump's dict when the lines before it opened one), unless a later line announced
        one of the same count (a series read sparsely reads a block's located lines before its
        tail's: `MetricSeries._feed_run_block`)."""
        inside: set[Where] = set()
        if self._config_dicts.inside(body, line_no):
            inside.add("config dict")
        if self._resolved_config.inside(body):
            inside.add("resolved config")
        for counted, total in announced_totals(body, inside=frozenset(inside)):
            self._keep_total(counted, total, line_no)
        if (columns := spacy_table_columns(body)) is not None:
            self._spacy_table = (columns, line_no)
        epochs = openpcdet_epochs_bar_total(body)
        if epochs is not None:
            if self._openpcdet_bars:
                self._keep_total("epochs", epochs, line_no)
            elif self._epochs_bar is None or line_no >= self._epochs_bar[1]:
                self._epochs_bar = (epochs, line_no)

    def _keep_total(self, counted: Counted, total: int, line_no: int) -> None:
        """Keep a total line `line_no` announced, unless a later line announced one of the same
        count (`_announce`)."""
        if line_no >= self._announced_on.get(counted, 0):
            self.targets = self.targets.with_total(counted, total)
            self._announced_on[counted] = line_no

    def _openpcdet_train_bar_shown(self) -> None:
        """The run showed OpenPCDet's train bar: its `epochs:` bars are OpenPCDet's, the last one
        before it announced the epochs (its first draw comes before the train bar's)."""
        self._openpcdet_bars = True
        if self._epochs_bar is not None:
            self._keep_total("epochs", *self._epochs_bar)

    def _metrics(self, line: str, body: str, s: Sample) -> None:
        """The figures of a line's message: a recipe's patterns read all of it (its time too),
        the built-in grammar its `body`, the message after its time (`_time_end`)."""
        for pattern in self.extra:
            m = pattern.search(line)
            if m:
                _apply_extra(m, s, self.clock)
        if is_start_up_bar(body):
            return  # data preparation or loading: no iteration, target or pace of training
        if "%" in body and "|" in body and EVALUATION_BAR.match(body) is not None:
            # an evaluation pass's bar: its batches, no iteration, target or pace of training
            m = TQDM_BAR.search(body)
            if m:
                s.evaluation_batches = (int(m.group(1)), int(m.group(2)))
            return
        if body[:1] == "[" and (m := MMCV_PROGRESS_BAR.match(body)) is not None:
            # OpenMMLab's test loop's bar: an evaluation's images, no training progress
            s.evaluation_batches = (int(m.group(1)), int(m.group(2)))
            return
        if "━" in body and (rich := read_rich_bar(body)) is not None:
            # a Rich progress bar (Lightning's RichProgressBar): an evaluation's batches, a
            # start-up task (nothing), or the training's progress, its pace and loss after it
            s.evaluation_batches = rich.evaluation_batches
            if rich.iteration is not None:
                s.iteration, s.target_iter = rich.iteration, rich.target
                _read_figures(rich.rest, s)
            return
        self._announce(body, s.line_no)
        if "Start evaluation on " in body and MASKRCNN_EVALUATION_START.search(body) is not None:
            self.bars.evaluation_started()
        if not self._openpcdet_bars and is_openpcdet_train_bar(body):
            self._openpcdet_train_bar_shown()
        body = read_framework_line(
            body, s, self.targets, openpcdet_bars=self._openpcdet_bars,
            spacy_columns=self._spacy_table[0] if self._spacy_table is not None else None)
        if s.is_evaluation:
            return  # a framework's evaluation line: its loss and figures are no training's
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
                self.bars.trainer_dicts_seen = True
            if "loss" in pairs or "train_loss" in pairs:
                s.loss = _float(pairs["loss"] if "loss" in pairs else pairs["train_loss"])
            if "step" in pairs:
                s.iteration = int(float(pairs["step"]))
        if "<" in body and "/" in body:
            m = TQDM_BAR.search(body)
            if m:
                done, total = int(m.group(1)), int(m.group(2))
                epoch = EPOCH_BAR.match(body) if s.iteration is None else None
                if epoch is not None:
                    s.iteration, epochs_target = self.bars.read_epoch_bar(epoch, done, total)
                    if epochs_target is not None:
                        s.target_iter = epochs_target
                else:
                    s.iteration = s.iteration if s.iteration is not None else done
                    s.target_iter = s.target_iter or total
                if m.group(3):
                    rate = float(m.group(3))
                    s.sec_per_iter = rate if m.group(4) == "s/it" else (1 / rate if rate else None)
        _read_figures(body, s)

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


def _read_figures(body: str, s: Sample) -> None:
    """The key-value figures of a message (`_KV`: `loss=0.31`, `s/iter: 4.5`, `rss=45GiB`)
    and, if none gave a pace, its rate (`7.20it/s`, `2.1 s/it`), where `s` has none yet."""
    for m in _KV.finditer(body):
        _apply_kv(m, s)
    if s.sec_per_iter is None:
        rate_m = _RATE.search(body)
        if rate_m:
            rate = float(rate_m.group(1))
            if rate_m.group(2).lower().startswith("s/"):
                s.sec_per_iter = rate
            elif rate > 0:
                s.sec_per_iter = 1 / rate


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
