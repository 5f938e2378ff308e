"""Detectors over a log's metric series and Slurm accounting: stall, leak trend, a checkpoint
save broken by a host OOM or a full disk, silent exit, and how the log ends around a completion
marker (`CompletionEnding`).

Pure: callers pass `now` (log time or wall time, on the same clock as the samples).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bot.core.catalogue.model import Match
from bot.core.catalogue.scanner import normalize_line
from bot.core.framework_lines import SPACY_TABLE_HEADER
from bot.core.metrics import MetricSeries, SaveWindow
from bot.core.models import Accounting
from bot.core.outer_loop import names_pass_short_of_last
from bot.core.policy import DEFAULT_POLICY
from bot.core.training_lines import Sample
from bot.core.units import GIB

# A progress bar up to its count (tqdm's `  0%|          | 30/8000` before `[00:36<2:40:00`):
# the same head again is the bar drawn once more where it stood, no step made.
_BAR_HEAD = re.compile(r"^(.*?(?<![\d.])\d+/\d+)\s*\[")
# Hugging Face Trainer opening its evaluation or prediction loop (trainer.py evaluation_loop,
# `***** Running {description} *****`): its bar (ProgressCallback's prediction_bar, unlabelled)
# counts the evaluation's batches, not training steps.
EVALUATION_START = re.compile(r"\*{5} Running (?:Evaluation|Prediction) \*{5}")
# tensorpack's Trainer.main_loop starting an epoch (tensorpack/tensorpack tensorpack/train/base.py
# 1547a54e, since 582cd482 2017-01: `logger.info("Start Epoch {} ...")`), in its logger's place
# (utils/logger.py _MyFormatter: `[0806 12:34:56 @base.py:273] Start Epoch 3 ...`); the epoch's
# bar (callbacks/steps.py ProgressBar) counts its steps_per_epoch, and max_epoch is logged nowhere.
# The place is green: a raw line holds the colour's reset before the blank (`]\x1b[0m Start`)
TENSORPACK_EPOCH_START = r"@base\.py:[0-9]+\][^ ]* Start Epoch [0-9]+ \.\.\. *$"
# The framework saying training goes on after a line that reads as its end (a completion
# marker), in the message a reader sees (normalize_line):
# - Lightning's stop signalled (EarlyStopping's `... Signaling Trainer to stop.`) below
#   min_epochs or min_steps: the epoch loop's `done` logs it and trains on, to the minimum
#   (Lightning-AI/pytorch-lightning src/lightning/pytorch/loops/training_epoch_loop.py
#   7f0c3436cd3f: `Trainer was signaled to stop but the required `min_epochs=5` or
#   `min_steps=None` has not been met. Training will continue...`; FitLoop.done's before
#   1.8, f3574176e2; before 1.5, ae9803137a, `... but required minimum epochs (5) or minimum
#   steps (None) has not been met. Training will continue...`)
# - fastai's epoch table header, which ProgressCallback.before_fit prints as each fit starts
#   (fastai/fastai fastai/callback/progress.py 7443e0449a39; Recorder.metric_names, `epoch`
#   then `train_loss` first; fastai/fastprogress fastprogress/fastprogress.py 6defb63bf735,
#   ConsoleMasterBar.write: each name padded to 8, joined by two blanks): a fit after one that
#   EarlyStoppingCallback ended (fine_tune's second fit, a loop over folds). Not printed by
#   validate, get_preds or lr_find (their no_logging leaves ProgressCallback no logger)
# - a next fit of Keras after one that EarlyStopping ended (its `Epoch 8: early stopping` is
#   printed by on_train_end, as fit() returns: keras-team/keras keras/src/callbacks/
#   early_stopping.py 040582fc160b): ProgbarLogger.on_epoch_begin's `Epoch 1/10` (keras/src/
#   callbacks/progbar_logger.py 041cdb434c0d; verbose, more than one epoch), a whole line
# - a next train() of Hugging Face's Trainer after its `Training completed.` (a loop over
#   seeds or folds, a hyperparameter search's next trial): `_inner_training_loop` logs
#   `***** Running training *****` before its first step (huggingface/transformers
#   src/transformers/trainer.py 2cda12cbf6e4), as the example scripts that copy it do
# - ParlAI's TrainLoop.log() after one of its loop's ends (a next `parlai train_model` stage, a
#   requeued run appended): `time:120s total_exs:3840 total_steps:120 epochs:0.08 time_left:…s`
#   after its logger's `| ` (facebookresearch/ParlAI parlai/scripts/train_model.py a29567f7),
#   `[ time:120s total_exs:3840 epochs:0.08 ]` print()ed before 21b74e0a (2020-06)
# - a next `spacy train` after its `✔ Saved pipeline to output directory` (a `spacy project run`
#   workflow's second training step): its project runner's `Running command: python -m spacy
#   train …` (explosion/spaCy spacy/cli/project/run.py, weasel's since 3.7), or its training
#   table's header, which the console logger writes as each training starts (spacy/training/
#   loggers.py console_logger, bot.core.framework_lines.SPACY_TABLE_HEADER: `E`, `#` in widths 3
#   and 6 two blanks apart, then each component's `LOSS …` column; `Loss …` before 3.1)
# - a next main loop of tensorpack after its `Training has finished!` (a script that trains
#   again, another config): its epoch's start, `Start Epoch N ...` in its logger's place
#   (`TENSORPACK_EPOCH_START`)
TRAINING_GOES_ON = re.compile(
    r"Trainer was signaled to stop but (?:the )?required .* has not been met\. "
    r"Training will continue|^epoch {5}train_loss(?: |$)|^Epoch [0-9]+/[0-9]+ *$"
    r"|\*{5} Running training \*{5}"
    r"|(?:\| |\[ )time:[0-9]+(?:\.[0-9]+)?s total_exs:[0-9]+ "
    r"|^Running command: .*\bspacy train\b"
    rf"|{SPACY_TABLE_HEADER}|{TENSORPACK_EPOCH_START}")

# The minimums in Lightning's `Training will continue...` (TRAINING_GOES_ON): `min_epochs=5`
# and `min_steps=None` (1.5+), `minimum epochs (5) or minimum steps (None)` before
_LIGHTNING_MINIMUM = re.compile(
    r"(?:`min_epochs=|minimum epochs \()(?P<epochs>[0-9]+|None)\b.*?"
    r"(?:`min_steps=|minimum steps \()(?P<steps>[0-9]+|None)\b")
# Lightning's epoch bar at a line's start (`Epoch 4: 100%|`, epochs counted from 0 since 0.9)
_LIGHTNING_EPOCH = re.compile(r"^Epoch ([0-9]+):")
# Lightning's stop messages (EarlyStopping's, the Timer's): `... Signaling Trainer to stop.`
_LIGHTNING_STOP = "Signaling Trainer to stop"

# Classes whose match in a COMPLETED job's log does not mean the work failed.
_NOT_FAILURES = frozenset({"completed", "memory_leak", "hang"})


@dataclass(frozen=True)
class StallFinding:
    """Progress stopped: no new iteration, nor an evaluation's bar or a bar still drawing on
    the unfinished last line advancing after the last one, since `started_at` (the last
    progress line, or that bar's last advance)."""

    started_at: float
    last_iter: int | None  # the training's last iteration (an evaluation counts none)
    last_line: int  # the line of started_at: the last progress or bar advance
    last_text: str
    stalled_s: float  # now - started_at
    threshold_s: float
    open_save: SaveWindow | None = None  # a save still open (and past its allowance)


@dataclass(frozen=True)
class LeakFinding:
    """Host RSS rises steadily; at this slope it reaches the limit at `projected_oom_iter`."""

    slope_gib_per_100_iter: float
    projected_oom_iter: int | None
    limit_bytes: int | None
    rss_now_bytes: int
    first: Sample
    last: Sample
    n_points: int


@dataclass(frozen=True)
class BrokenSaveFinding:
    """A failure that breaks a save (a host OOM, a full disk) inside a checkpoint save, or
    after a save start with no end: that checkpoint is partial."""

    save: SaveWindow
    open: bool


@dataclass(frozen=True)
class SilentExitFinding:
    """COMPLETED 0:0 while the log says the work did not happen, and why: each fact that is
    set is one reason (`reasons()`: as data, worded by the templates)."""

    failure_line: int | None = None  # the first failure the log shows, and its text
    failure_text: str = ""
    short_elapsed_s: float | None = None  # ran this briefly without showing its work done
    no_iteration: bool = False
    stopped_at: tuple[int, int] | None = None  # (last iteration, target)

    def reasons(self) -> list[dict[str, Any]]:
        """One fact per reason, `kind`: failure_line | short_run | no_iteration | stopped."""
        out: list[dict[str, Any]] = []
        if self.failure_line is not None:
            out.append({"kind": "failure_line", "line": self.failure_line,
                        "text": self.failure_text})
        if self.short_elapsed_s is not None:
            out.append({"kind": "short_run", "elapsed_s": self.short_elapsed_s})
        if self.no_iteration:
            out.append({"kind": "no_iteration"})
        if self.stopped_at is not None:
            last, target = self.stopped_at
            out.append({"kind": "stopped", "last_iter": last, "target_iter": target})
        return out


def detect_stall(
    series: MetricSeries,
    now: float | None,
    *,
    min_s: float = DEFAULT_POLICY.stall_min_s,
    factor: float = DEFAULT_POLICY.stall_factor,
    save_time_s: float = DEFAULT_POLICY.save_time_s,
) -> StallFinding | None:
    """Progress stopped for longer than max(min_s, factor x the usual progress interval).

    The usual interval is the median seconds per iteration times the iterations between two
    progress lines. An evaluation's bar advancing after the last progress line is activity
    (`MetricSeries.last_evaluation`): idleness counts from its last advance, so a long
    validation is no stall and one that stops advancing (a hang inside it) is, with the
    training's last iteration. So is a bar on the log's unfinished last line whose count the
    watcher saw move (`MetricSeries.unfinished_bar`: redrawn after carriage returns, its line
    has no newline yet), from the read that showed it; one frozen at its count is no
    activity. A job Slurm started again with no line of its new run seen yet
    (`MetricSeries.restarted_at`) is idle from that start, not across its wait in the queue;
    one Slurm last showed stopped or suspended (`MetricSeries.paused_at`: SIGSTOP, `scontrol
    suspend`) is idle from then, not across the time its processes did not run.
    Time spent in finished checkpoint saves after the last progress line is excused up to
    `save_time_s` each; a save still open is excused for `save_time_s` from its start, after
    which it is reported as the stall (`open_save`).
    """
    last = series.last_progress
    if now is None or last is None or last.time is None:
        return None
    interval = series.progress_interval_s() or 0.0
    threshold = max(min_s, factor * interval)
    # the last line of activity, its text and its time
    active_line, active_text, since = last.line_no, last.text, last.time
    evaluation = series.last_evaluation
    if (evaluation is not None and evaluation.time is not None
            and evaluation.line_no > last.line_no and evaluation.time > since):
        active_line, active_text, since = evaluation.line_no, evaluation.text, evaluation.time
    drawing = series.unfinished_bar
    if drawing is not None and drawing.line_no >= last.line_no and drawing.advanced_at > since:
        # a bar still drawing on the unfinished last line advanced then (its line may be the
        # last progress line, complete since: its time is when it started)
        active_line, active_text, since = drawing.line_no, drawing.text, drawing.advanced_at
    if series.restarted_at is not None and series.restarted_at > since:
        since = series.restarted_at  # Slurm started the job again since: silent from then
    if series.paused_at is not None and series.paused_at > since:
        since = series.paused_at  # its processes were stopped until then: no hang of theirs
    idle = now - since
    if idle <= threshold:
        return None
    excused = 0.0
    open_save = None
    for w in series.save_windows():
        if w.start_time is None or w.start_line < last.line_no:
            continue
        if w.end_line is None:
            open_save = w
        else:
            overlap = max(0.0, min(w.end_time or now, now) - max(w.start_time, since))
            excused += min(overlap, save_time_s)
    if open_save is not None:
        # A save still running is fine up to its allowance; past it, the save itself hangs.
        if now - (open_save.start_time or now) <= save_time_s:
            return None
    elif idle - excused <= threshold:
        return None
    return StallFinding(
        started_at=since,
        last_iter=last.iteration,
        last_line=active_line,
        last_text=active_text,
        stalled_s=idle,
        threshold_s=threshold,
        open_save=open_save,
    )


def theil_sen(x: np.ndarray, y: np.ndarray, max_points: int = 300) -> tuple[float, float, float]:
    """Theil–Sen line through (x, y): (slope, intercept, share of pairwise slopes > 0).

    The median of pairwise slopes ignores up to ~29 % outliers (one spike, a save peak).
    Above `max_points`, an evenly spaced subset keeps it O(max_points²).
    """
    if len(x) > max_points:
        idx = np.linspace(0, len(x) - 1, max_points).round().astype(int)
        x, y = x[idx], y[idx]
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    ok = dx != 0
    slopes = (y[j] - y[i])[ok] / dx[ok]
    if slopes.size == 0:
        return 0.0, float(np.median(y)), 0.0
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * x))
    return slope, intercept, float(np.mean(slopes > 0))


def detect_leak(
    series: MetricSeries,
    mem_limit_bytes: int | None,
    *,
    target_iter: int | None = None,
    horizon_iters: int = 100_000,
    min_samples: int = DEFAULT_POLICY.leak_min_samples,
    warn_margin: float = DEFAULT_POLICY.leak_warn_margin,
    min_growth_gib: float = 2.0,
    min_positive_share: float = 0.6,
    trend: LeakTrend | None = None,
) -> LeakFinding | None:
    """Host RSS grows with the iteration count and will come near `mem_limit_bytes` in time.

    Robust slope (Theil–Sen) of RSS over iteration, samples inside checkpoint saves left out.
    A finding needs: `min_samples` samples, a positive trend in most pairs, a fitted growth
    of at least `min_growth_gib` over the observed iterations, and — when the limit is
    known — a projected crossing of limit x (1 - `warn_margin`) before the target iteration
    (or within `horizon_iters` of the last one when there is no target); its
    `projected_oom_iter` is where it crosses the limit itself. Without a limit, a clear trend
    is reported with no projection. `trend` reuses an already computed `leak_trend`.
    """
    fit = trend if trend is not None else leak_trend(series, mem_limit_bytes)
    if fit is None:
        return None
    if fit.n_points < min_samples or fit.slope_gib_per_100_iter <= 0:
        return None
    span = (fit.last.iteration or 0) - (fit.first.iteration or 0)
    if fit.slope_gib_per_100_iter * span / 100 < min_growth_gib:
        return None
    if fit.positive_share < min_positive_share:
        return None
    if mem_limit_bytes is not None:
        warn_iter = fit.iteration_reaching(mem_limit_bytes * (1.0 - warn_margin))
        if warn_iter is None:
            return None
        last_iter = fit.last.iteration or 0
        limit_iter = target_iter if target_iter else last_iter + horizon_iters
        if warn_iter > limit_iter:
            return None
    return fit.finding


@dataclass(frozen=True)
class LeakTrend:
    """The fitted RSS line (GiB = intercept + slope x iteration) and the finding it gives."""

    finding: LeakFinding
    positive_share: float
    slope_gib_per_iter: float
    intercept_gib: float

    def iteration_reaching(self, rss_bytes: float) -> int | None:
        """The iteration at which the fitted RSS reaches `rss_bytes` (the last one seen when
        it already has); None when RSS does not grow."""
        if self.slope_gib_per_iter <= 0:
            return None
        crossing = (rss_bytes / GIB - self.intercept_gib) / self.slope_gib_per_iter
        if not math.isfinite(crossing):
            return None
        return int(round(max(crossing, float(self.last.iteration or 0))))

    @property
    def n_points(self) -> int:
        return self.finding.n_points

    @property
    def slope_gib_per_100_iter(self) -> float:
        return self.finding.slope_gib_per_100_iter

    @property
    def first(self) -> Sample:
        return self.finding.first

    @property
    def last(self) -> Sample:
        return self.finding.last


def leak_trend(series: MetricSeries, mem_limit_bytes: int | None) -> LeakTrend | None:
    """The RSS trend whatever its size (for `rss_gib_per_100_iter`); None under 3 points."""
    starts, ends = _window_bounds(series.save_windows())
    kept = [  # (sample, its iteration, its RSS) outside checkpoint saves
        (s, s.iteration, s.host_rss_bytes) for s in series.rss_points()
        if s.iteration is not None and s.host_rss_bytes is not None
        and not _inside(s.line_no, starts, ends)
    ]
    if len(kept) < 3 or kept[-1][1] == kept[0][1]:
        return None
    points = [s for s, _, _ in kept]
    x = np.array([float(iteration) for _, iteration, _ in kept])
    y = np.array([rss / GIB for _, _, rss in kept])
    slope, intercept, share = theil_sen(x, y)
    rss_now = intercept + slope * float(kept[-1][1])
    finding = LeakFinding(
        slope_gib_per_100_iter=slope * 100,
        projected_oom_iter=None,
        limit_bytes=mem_limit_bytes,
        rss_now_bytes=int(max(rss_now, 0) * GIB),
        first=points[0],
        last=points[-1],
        n_points=len(points),
    )
    trend = LeakTrend(finding, share, slope, intercept)
    if mem_limit_bytes is None:
        return trend
    projected = trend.iteration_reaching(mem_limit_bytes)
    return replace(trend, finding=replace(finding, projected_oom_iter=projected))


def _window_bounds(windows: list[SaveWindow]) -> tuple[list[int], list[float]]:
    """Save windows as sorted start lines and their end lines (inf while open)."""
    ordered = sorted(windows, key=lambda w: w.start_line)
    return (
        [w.start_line for w in ordered],
        [float(w.end_line) if w.end_line is not None else math.inf for w in ordered],
    )


def _inside(line_no: int, starts: list[int], ends: list[float]) -> bool:
    """Is `line_no` inside one of the (non-overlapping, sorted) save windows?"""
    k = bisect.bisect_right(starts, line_no) - 1
    return k >= 0 and line_no <= ends[k]


def detect_broken_save(
    series: MetricSeries,
    failed_line: int | None = None,
    *,
    failed_time: float | None = None,
) -> BrokenSaveFinding | None:
    """Did the failure (at `failed_line`, else `failed_time`, else the end of the log) break a
    checkpoint save? The diagnosis asks it of the failures that leave the save they interrupt
    partial: a host OOM, a full disk. It broke one it fell inside: between the save's start and
    end lines (or times), or after the last save start when that save never logged its end.
    """
    if failed_line is None and failed_time is None:
        failed_line = series.lines_seen + 1
    for w in reversed(series.save_windows()):
        if failed_line is not None:
            if w.start_line > failed_line:
                continue
            if w.end_line is None or w.end_line >= failed_line:
                return BrokenSaveFinding(w, open=w.end_line is None)
            return None
        assert failed_time is not None  # one of the two is given (or failed_line set above)
        if w.start_time is None or w.start_time > failed_time:
            continue
        if w.end_time is None or w.end_time >= failed_time:
            return BrokenSaveFinding(w, open=w.end_line is None)
        return None
    return None


@dataclass(frozen=True)
class CompletionEnding:
    """How the log ends around the training framework's completion marker (a `completed`
    signature: `Training completed`, Lightning's EarlyStopping `Signaling Trainer to stop`),
    read once per diagnosis (`completion_ending`) for the decision (bot.core.diagnose.decide)
    and `detect_silent_exit` alike.

    `marker_line` is the line of the log's last marker (None: the log has none).
    `ends_in_marker`: no training progress comes after it (no later line that printed an
    iteration), nor a line that says training goes on (`TRAINING_GOES_ON`: Lightning's
    `Training will continue...` below min_epochs, the start of a next fit or train() of
    fastai, Keras or Hugging Face's Trainer). Progress
    after one means the marker was not the end: Lightning keeps training to `min_epochs`
    after EarlyStopping signals a stop, a per-epoch or per-iteration report reads like a
    marker; the log's later lines decide. The training bar
    drawn once more where it stood (Hugging Face's ProgressCallback closing it after
    `Training completed`: the same bar at the same count) is no progress, nor is the bar that
    opens the marker's own line (tqdm leaves its line open, so a message logged meanwhile ends
    it: Lightning's EarlyStopping after the epoch's bar), and neither is an
    evaluation that the framework opened after the marker (Hugging Face Trainer's `*****
    Running Evaluation *****`, wherever it is after the marker), which counts its batches on a bar
    of its own. `evaluates_after_marker`: the marker ends the log only because that
    evaluation's bar is no training progress: training completed there and the framework
    evaluates after it."""

    marker_line: int | None = None
    ends_in_marker: bool = False
    evaluates_after_marker: bool = False


def completion_ending(matches: Iterable[Any], series: MetricSeries,
                      evaluation_start: int | None = None,
                      goes_on_at: int | None = None,
                      goes_on_text: str | None = None) -> CompletionEnding:
    """How the log ends around its last completion marker (`CompletionEnding`), from the
    catalogue matches (in line order), the metric series, the line of the last evaluation
    the framework opened after the last run's first marker (`opens_evaluation`) and the last
    line from there on that says training goes on (`training_goes_on`: after the last marker,
    the marker was not the end, whatever follows; `goes_on_text` its text); bot.core.diagnose.scan
    looks for both from that marker on. A Lightning stop after Lightning's `Training will
    continue...` below the minimum that line names is no end either (`below_lightning_minimum`)."""
    # a marker naming a pass of an outer loop short of its total (`training finished for fold
    # 1/5`) ends that pass, not the run
    done = [m for m in matches if m.primary and m.class_id == "completed"
            and not names_pass_short_of_last(m.text)]
    if not done:
        return CompletionEnding()
    last = done[-1]
    if goes_on_at is not None and (goes_on_at > last.line_no or (
            goes_on_text is not None and _LIGHTNING_STOP in last.text
            and below_lightning_minimum(last.line_no, series, goes_on_text))):
        return CompletionEnding(marker_line=last.line_no)
    done = [m.line_no for m in done]
    ends_training = no_progress_after(done[-1], series)
    ends_in_marker = ends_training if evaluation_start is None else no_progress_after(
        done[-1], series, evaluation_start=evaluation_start)
    # an evaluation's bar drawn after the marker (the series reads a bare bar of another total
    # after one as an evaluation's: bot.core.progress_bars `training_completed`), and not
    # closed by the training's bar drawn again at its count after it (Lightning's validation
    # on a stop mid-epoch, then the epoch's bar redrawn with its metrics: `no_progress_after`)
    last_eval = series.last_evaluation
    evaluated = last_eval is not None and last_eval.line_no > done[-1] and not (
        series.last_iteration_line is not None
        and series.last_iteration_line > last_eval.line_no)
    return CompletionEnding(marker_line=done[-1], ends_in_marker=ends_in_marker,
                            evaluates_after_marker=ends_in_marker and (
                                not ends_training or evaluated))


def overridden_markers(matches: Iterable[Any], series: MetricSeries,
                       goes_on_at: int | None = None,
                       goes_on_text: str | None = None) -> frozenset[int]:
    """The lines of the completion markers (`completed` matches) that training went on after,
    so that none of them ended the run: each before the last line that says training goes on
    (`goes_on_at`: Lightning's `Training will continue...`, a next fit's start), and each
    Lightning stop after it that came below the minimum that line names (`goes_on_text`,
    `below_lightning_minimum`: since 1.8 the line is logged once per fit). A completed run's
    evidence shows only the markers that decided it, never the stops Lightning overrode."""
    if goes_on_at is None:
        return frozenset()
    return frozenset(
        m.line_no for m in matches if m.class_id == "completed" and (
            m.line_no < goes_on_at or (
                goes_on_text is not None and _LIGHTNING_STOP in m.text
                and below_lightning_minimum(m.line_no, series, goes_on_text))))


def below_lightning_minimum(stop_line: int, series: MetricSeries, goes_on: str) -> bool:
    """Was Lightning's stop at `stop_line` signalled below the min_epochs or min_steps that its
    earlier `Training will continue...` (`goes_on`) names, so that Lightning trains on after it?
    Since 1.8 that line is logged once per fit (the epoch loop's WarningCache), so a later stop
    below the minimum has none after it. Lightning stops once `epoch_progress.processed >=
    min_epochs` and `global_step >= min_steps` (FitLoop._can_stop_early): a stop in epoch N
    (its bar's `Epoch N:`, from 0) is below min_epochs when N + 1 < min_epochs, whether it came
    at the epoch's end or mid-epoch; below min_steps when the batches trained by then (the
    series' iteration, never fewer than the optimizer steps) are fewer. Unknown: not below."""
    found = _LIGHTNING_MINIMUM.search(normalize_line(goes_on))
    if found is None:
        return False
    min_epochs, min_steps = (None if v == "None" else int(v)
                             for v in found.group("epochs", "steps"))
    before = [s for s in series.samples if s.iteration is not None and s.line_no <= stop_line]
    if not before:
        return False
    if min_epochs is not None and (epoch := _LIGHTNING_EPOCH.match(before[-1].text)):
        if int(epoch.group(1)) + 1 < min_epochs:
            return True
    assert before[-1].iteration is not None  # `before` holds samples with an iteration
    return min_steps is not None and before[-1].iteration < min_steps


def training_goes_on(text: str) -> bool:
    """A raw log line says training goes on after a completion marker before it
    (`TRAINING_GOES_ON`, in the message a reader sees)."""
    return TRAINING_GOES_ON.search(normalize_line(text)) is not None


def opens_evaluation(text: str) -> bool:
    """A raw log line opens the framework's evaluation or prediction loop (`EVALUATION_START`,
    in the message a reader sees: bot.core.catalogue.scanner.normalize_line)."""
    return EVALUATION_START.search(normalize_line(text)) is not None


def no_progress_after(marker_line: int, series: MetricSeries, *,
                       evaluation_start: int | None = None) -> bool:
    """No training progress after the line at `marker_line` (a completion marker, a stop on a
    non-finite metric): no line that printed an iteration, other than the last bar before the
    marker drawn again at its count, up to
    the evaluation opened at `evaluation_start` when that comes after the marker: the
    progress after that line is the evaluation's."""
    last_progress = series.last_iteration_line
    if last_progress is None or marker_line > last_progress:
        return True
    if marker_line == last_progress and _opens_with_bar(series, marker_line):
        return True  # the last progress is the bar the marker was written after, on its line
    evaluated = evaluation_start is not None and evaluation_start > marker_line
    end = evaluation_start if evaluated and evaluation_start else last_progress + 1
    before = [s for s in series.samples if s.iteration is not None and (
        s.line_no < marker_line or s.line_no == marker_line and _BAR_HEAD.match(s.text))]
    after = [s for s in series.samples
             if s.iteration is not None and marker_line < s.line_no < end]
    if not evaluated and (not after or after[-1].line_no != last_progress):
        return False  # progress the series kept no sample of: unknown, not a redrawn bar
    return not after or bool(before) and all(_redrawn(s, before[-1]) for s in after)


def _opens_with_bar(series: MetricSeries, line_no: int) -> bool:
    """The series' sample of `line_no` is a progress bar that opens the line (`_BAR_HEAD`): a
    tqdm bar left open (no line end until it closes) that a message written meanwhile ends,
    as Lightning's EarlyStopping and Timer messages end its epoch bar's line."""
    return any(s.line_no == line_no and s.iteration is not None and _BAR_HEAD.match(s.text)
               for s in reversed(series.samples))


# An evaluation's or a test's figure (`'eval_loss': 0.12`, `test_acc=0.91`, `val loss: 0.3`)
_EVALUATION_FIGURE = re.compile(
    r"(?i)(?<![a-z])(?:eval|evaluation|test|val|valid|validation)[_ ]?(?:loss|acc\w*|f1|metrics?"
    r"|runtime|score)(?![a-z])")


def _redrawn(sample: Sample, last: Sample) -> bool:
    """`sample` is the bar of `last` drawn again at its count (`_BAR_HEAD`), or an evaluation's
    report at the step training ended (Hugging Face's final `{'eval_loss': ..., 'step': 3000}`
    after `train_runtime`): no new iteration."""
    if sample.iteration == last.iteration and _EVALUATION_FIGURE.search(sample.text):
        return True
    head = _BAR_HEAD.match(sample.text)
    return (head is not None and sample.iteration == last.iteration
            and head.group(1) == (m.group(1) if (m := _BAR_HEAD.match(last.text)) else None))


def detect_silent_exit(
    accounting: Accounting,
    series: MetricSeries,
    matches: Iterable[Match],
    *,
    target_iter: int | None,
    min_elapsed_s: float = 60.0,
    completion: CompletionEnding | None = None,
) -> SilentExitFinding | None:
    """Slurm says COMPLETED 0:0 but the work did not happen.

    Reasons (any one is enough): the log shows a failure (a catalogue match of a failure
    class), or its progress doubts the work was done (`progress_doubts`: no iteration was
    reached, the last iteration is below the target, or the job ran for less than
    `min_elapsed_s` without reaching it). A completion marker with no training progress
    after it (`completion`'s `ends_in_marker`; when not given, read from `matches` and the
    series without the log's last lines, so with no evaluation after the marker) is
    the framework's own word that training finished: it stands in for iterations the log
    format did not show, and a run that ended in one short of its target stopped early by
    design (early stopping, a lowered max_steps), as the log alone reads it; a run that
    reached its target or ended in such a marker may be short (a resume with little left).
    A marker that training followed is no evidence of the end: the progress after it is
    judged as if it were not there; an evaluation after it is not (`CompletionEnding`)."""
    if accounting.state != "COMPLETED" or accounting.exit_code not in (0, None):
        return None
    if accounting.signal not in (0, None):
        return None
    matches = list(matches)
    if completion is None:
        completion = completion_ending(matches, series)
    found = [m for m in matches if m.class_id not in _NOT_FAILURES]
    first = found[0] if found else None
    doubts = SilentExitFinding() if completion.ends_in_marker else progress_doubts(
        accounting, series, target_iter=target_iter, min_elapsed_s=min_elapsed_s)
    finding = replace(doubts, failure_line=first.line_no if first is not None else None,
                      failure_text=first.text.strip() if first is not None else "")
    return finding if finding.reasons() else None


def progress_doubts(
    accounting: Accounting,
    series: MetricSeries,
    *,
    target_iter: int | None,
    min_elapsed_s: float = 60.0,
) -> SilentExitFinding:
    """The reasons a COMPLETED 0:0 run's progress gives to doubt that its work was done, with
    no completion marker to vouch for it: no iteration reached, the last iteration short of
    the target, a run shorter than `min_elapsed_s` that did not reach its target; a finding
    with none of them set when there are none. The log's failures are `detect_silent_exit`'s
    to add."""
    last_iter = series.last_iteration
    reached = target_iter is not None and last_iter is not None and last_iter >= target_iter
    short = (not reached and accounting.elapsed_s is not None
             and accounting.elapsed_s < min_elapsed_s)
    return SilentExitFinding(
        short_elapsed_s=accounting.elapsed_s if short else None,
        no_iteration=last_iter is None,
        stopped_at=((last_iter, target_iter) if last_iter is not None
                    and target_iter is not None and last_iter < target_iter else None),
    )
