"""The catalogue matches the decision sets aside before it weighs them: lines that name a failure
the run survived, or a failure that is not the one the log shows.

- Megatron's transient-error verdict on a non-fatal check, which training (or Megatron's own
  notice that it goes on) follows: a warning, not what ended the run;
- DeepSpeed's fp16 loss scaler overflowing at its minimum scale once or twice: a spike the run
  may survive, where three or more are a divergence;
- Inductor's `CppCompileError` when a compiler's own diagnostic on a source file is in the log:
  the compiler ran and rejected the generated code, so no compiler is missing.
- an out-of-memory error that fairseq caught and recovered from (its recovery line right after
  it, `attempting to recover from OOM in forward/backward pass`, then training or a completion
  marker): what its log says of an OOM the run survived, not what ended it;
- an end-of-training report that a trainer prints from a finally block (detectron2's `Total
  training time`, YOLOX's `Training of experiment is done`) after the same trainer logged the
  exception that ended its loop (`Exception during training:`, `Exception in training:`): the
  loop's end it reports was a failure.

The decision (bot.core.diagnose.decide) reads the matches `deciding_matches` keeps. Pure.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

from bot.core.diagnose.ending import GOES_ON_AFTER_OOM, NOT_FATAL_VALIDATION, OOM_RECOVERY
from bot.core.logprefix import labelled_rank
from bot.core.metrics import MetricSeries

# A C/C++ compiler's own diagnostic on a source file (gcc's and clang's `file:line:col: error:`,
# as the catalogue's unknown_failure hint has it): the compiler ran.
_COMPILER_DIAGNOSTIC = re.compile(
    r"\.(?:c|cc|cpp|cxx|h|hpp|cu|cuh):[0-9]+:[0-9]+: (?:fatal )?error: ")
# Inductor's wrapper of a failed build, whatever the compiler said or whether it ran at all.
_CPP_COMPILE_ERROR = re.compile(r"CppCompileError")
# End-of-training reports that a trainer prints from a finally block (completion markers), each
# with the line its trainer logs, before that block, for the exception that ended its loop:
# detectron2's IterationTimer.after_train and TrainerBase.train's `logger.exception("Exception
# during training:")` (facebookresearch/detectron2 detectron2/engine/train_loop.py, hooks.py
# 02b5c4e295e9); YOLOX's Trainer.after_train and Trainer.train's `logger.error("Exception in
# training: ", e)` (Megvii-BaseDetection/YOLOX yolox/core/trainer.py 6ddff48, loguru's
# `... | ERROR    | yolox.core.trainer:79 - Exception in training: `; before 58c2dd0, 2024-07,
# it logged nothing there and the traceback after the report decides).
_FINALLY_REPORTS = (
    (re.compile(r"Total training time: .* on hooks\)"), re.compile(r"Exception during training:")),
    (re.compile(r"Training of experiment is done and the best AP is"),
     re.compile(r"yolox\.core\.trainer:(?:train:)?[0-9]+ - Exception in training:")),
)
# DeepSpeed's fp16 loss scaler overflowing at its minimum scale (the catalogue's nan_loss line),
# and how many of them make a divergence.
_OVERFLOW_AT_MINIMUM = re.compile(r"OVERFLOW! Rank [0-9]+ Skipping step\. Attempted loss scale: 1")
_OVERFLOWS_AT_MINIMUM = 3
# Megatron's transient-error verdict (the step's rerun on the same GPU gave another result).
# Fatal, it ends the run (exit 17, `Exiting now. ...`); on a non-fatal check (`validate_result(...,
# fatal=False)`: the spiky-loss and large-grads checks) it is a warning, after which Megatron
# prints that it goes on (ending.NOT_FATAL_VALIDATION) and trains on.
_TRANSIENT_VERDICT = re.compile(r"iteration #[0-9]+: Possible transient error!")
# A Python traceback's header (the catalogue's unknown_failure hint): an exception nothing caught.
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")


def deciding_matches(matches: Iterable[Any], series: MetricSeries,
                     tail: Sequence[tuple[int, str]]) -> list[Any]:
    """The matches in line order, less those set aside: Megatron's transient-error verdicts the
    run survived, out-of-memory errors its framework recovered from, DeepSpeed's overflows at the
    minimum loss scale when too few to be a divergence, Inductor's compile error beside a
    compiler's own diagnostic, a trainer's end-of-loop report after its loop's exception."""
    return _without_failed_loop_reports(_without_single_overflows(_without_rejected_compiles(
        _without_recovered_ooms(_without_survived_verdicts(
            sorted(matches, key=lambda m: m.line_no), series, tail), series, tail))))


def _without_recovered_ooms(matches: list[Any], series: MetricSeries,
                            tail: Sequence[tuple[int, str]]) -> list[Any]:
    """The matches less the out-of-memory errors (cuda_oom's primary matches) that fairseq
    caught and recovered from, and the reports of going on after an OOM (`GOES_ON_AFTER_OOM`,
    cuda_oom hints: fairseq's recoveries, Lightning's batch size finder backing off) that a
    training line (the series' last sample) or a completion marker follows: the report of an
    error survived (no failure of a COMPLETED job). Only fairseq's recovery (`OOM_RECOVERY`)
    answers an OOM line, and only those just before it (`_answered_ooms`); Lightning's finder
    logs none of the OOMs it backs off from. An OOM with no recovery just after it, or whose
    recovery the log ends in, still decides."""
    recoveries = [m for m in matches if m.class_id == "cuda_oom" and not m.primary
                  and GOES_ON_AFTER_OOM.search(m.text)]
    if not recoveries:
        return matches
    went_on = max([series.samples[-1].line_no if series.samples else 0,
                   *(m.line_no for m in matches if m.primary and m.class_id == "completed")])
    survived = [m for m in recoveries if m.line_no < went_on]
    trained = [s.line_no for s in series.samples]
    raw = dict(tail)
    aside = list(survived)
    for recovery in (m for m in survived if OOM_RECOVERY.search(m.text)):
        before = bisect_left(trained, recovery.line_no)
        since = max([trained[before - 1] if before else 0,
                     *(m.line_no for m in recoveries if m.line_no < recovery.line_no)])
        aside += _answered_ooms(
            [m for m in matches if since < m.line_no < recovery.line_no], recovery, raw)
    return [m for m in matches if m not in aside]


def _answered_ooms(between: list[Any], recovery: Any, raw: dict[int, str]) -> list[Any]:
    """The OOM lines fairseq's `recovery` answers, among the matches `between` it and the last
    training line or other recovery before it: those of the recovery's rank (the launcher's
    label on their raw lines among the log's last lines `raw`, `labelled_rank`, or none),
    unless a `Traceback` is among them. fairseq logs the OOM it catches (Trainer._log_oom:
    `OOM: Ran out of memory with exception: ...`, its memory summary) and its recovery right
    after it, with no traceback; an OOM raised through a traceback, or another rank's, is one
    nothing caught."""
    if any(_TRACEBACK.search(m.text) for m in between):
        return []
    rank = labelled_rank(raw.get(recovery.line_no, ""))
    return [m for m in between if m.primary and m.class_id == "cuda_oom"
            and labelled_rank(raw.get(m.line_no, "")) == rank]


def _without_failed_loop_reports(matches: list[Any]) -> list[Any]:
    """The matches less the completion markers a trainer prints from a finally block after its
    loop (`_FINALLY_REPORTS`: detectron2's `Total training time`, YOLOX's `Training of experiment
    is done`) that the same trainer's log of its loop's exception precedes: the trainer logs the
    exception that ended its loop, re-raises it, and its finally block prints that report all
    the same; the loop failed."""
    aside = []
    for report, exception in _FINALLY_REPORTS:
        failed = next((m.line_no for m in matches if exception.search(m.text)), None)
        if failed is not None:
            aside += [m for m in matches if m.class_id == "completed" and m.line_no > failed
                      and report.search(m.text)]
    return [m for m in matches if m not in aside] if aside else matches


def _without_survived_verdicts(matches: list[Any], series: MetricSeries,
                               tail: Sequence[tuple[int, str]]) -> list[Any]:
    """The matches less Megatron's transient-error verdicts that the run survived: one that
    a training progress line or Megatron's own `not fatal` notice (among the log's last lines)
    follows was the warning of a non-fatal check, not what ended the run (nor a failure that a
    COMPLETED job hid); a fatal one ends the log with its exit line (`Exiting now. ...`), which
    decides by itself."""
    survived = [n for n, text in tail if NOT_FATAL_VALIDATION.search(text)]
    after = max([series.last_iteration_line or 0, *survived])
    return [m for m in matches if not (m.line_no < after and _TRANSIENT_VERDICT.search(m.text))]


def _without_single_overflows(matches: list[Any]) -> list[Any]:
    """The matches less DeepSpeed's overflows at its minimum loss scale (`Attempted loss
    scale: 1, reducing to 1`) when fewer than `_OVERFLOWS_AT_MINIMUM` are there: the gradients
    overflowing unscaled again and again is a divergence, once or twice a spike the run may
    survive."""
    at_minimum = [m for m in matches if m.class_id == "nan_loss" and _OVERFLOW_AT_MINIMUM.search(
        m.text)]
    if not at_minimum or len(at_minimum) >= _OVERFLOWS_AT_MINIMUM:
        return matches
    return [m for m in matches if m not in at_minimum]


def _without_rejected_compiles(matches: list[Any]) -> list[Any]:
    """The matches less Inductor's `CppCompileError: C++ compile error` when the log holds a
    compiler's own diagnostic on a source file (`kernel.cpp:14:53: error: no matching function
    for call to ...`): a compiler that ran and rejected the generated code is there, so the
    error is the code's or the compiler's bug (no class), not a missing compiler; a missing
    header the compiler names (`Python.h: No such file or directory`) still decides."""
    if not any(_COMPILER_DIAGNOSTIC.search(m.text) for m in matches):
        return matches
    return [m for m in matches if not (m.primary and m.class_id == "compiler_missing"
                                       and _CPP_COMPILE_ERROR.search(m.text))]
