"""The cause a diagnosis' explanation states for the class the decision chose.

`stated_cause` names it, first found first: the finding that decided the class (a leak, a
stall, the hang upstream of an NCCL abort), a host OOM inside a checkpoint save, the cause
within the class that the log's lines name (bot.core.diagnose.line_cause), torchrun's,
DeepSpeed's launcher's or Lightning's SIGTERM alone in a log without accounting, Megatron's
request to rerun a step on another GPU, Megatron's --exit-interval stop (`stopped_at_target`:
at the run's target or past it, nothing is left to resume), a completed run's end short of its
target, or a running job's progress. bot.core.diagnose.decide calls it once it has chosen the
class; bot.core.diagnose.cause holds the `Cause` sum type it returns. Pure: no file or clock
access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.core.detectors import LeakFinding, StallFinding
from bot.core.diagnose.cause import (
    NONE_CLASS,
    Cause,
    DiedSaving,
    EndedEarly,
    ExitInterval,
    Leak,
    RerunElsewhere,
    Running,
    SigtermOnly,
    Stall,
    Upstream,
)
from bot.core.diagnose.ending import ends_in_sigterm
from bot.core.diagnose.line_cause import line_cause
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting, UpstreamCause

# Megatron's --exit-interval stop (`[exiting program at iteration 3000]`): it saved a checkpoint
# there and exited 0, a planned stop the explanation names with its iteration.
_EXIT_INTERVAL = re.compile(r"exiting program at iteration ([0-9]+)")
# Megatron's rerun machine exiting 16 (EXIT_CODE_RESUME_TO_DISAMBIGUATE): the step's result
# came out the same again on the suspected GPU, and only a resume on another GPU gives the
# verdict (a faulty GPU or the model's own result); the explanation says it is still to come.
_RERUN_ELSEWHERE = re.compile(r"resume the job from the (?:same )?checkpoint to rerun the last "
                              r"iteration and establish a diagnostic")
_LOW_GPU_UTIL_PCT = 70  # a running job's detail mentions a GPU utilisation below this


def stated_cause(
    class_id: str,
    *,
    series: MetricSeries,
    leak: LeakFinding | None,
    stall: StallFinding | None,
    upstream: UpstreamCause | None,
    during_save: bool,
    acct: Accounting,
    matches: Sequence[Any],
    tail: Sequence[tuple[int, str]],
    target: int | None,
) -> Cause | None:
    """The cause the explanation states for the chosen class, first found first: the finding
    that decided it (a leak, a stall, the hang upstream of an NCCL abort), a host OOM inside a
    save, the cause within the class that the log's lines name (bot.core.diagnose.line_cause),
    in a log without accounting torchrun's, DeepSpeed's launcher's or Lightning's SIGTERM alone
    (who sent it the log cannot tell), a GPU fault that is only Megatron's request to rerun the step
    elsewhere (its verdict is still to come), Megatron's --exit-interval stop (its iteration),
    a completed run's end short of its target (early stopping, a lowered max_steps), or a
    running job's progress."""
    primary = [m for m in matches if m.primary and m.class_id == class_id]
    if class_id == "memory_leak" and leak is not None:
        return Leak(leak)
    if class_id == "hang" and stall is not None:
        return Stall(stall)
    if upstream is not None:
        return Upstream(upstream)
    if class_id == "host_oom" and during_save:  # disk_full's hint says it of any save
        return DiedSaving()
    if (named := line_cause(class_id, matches, series)) is not None:
        return named
    if class_id == "unknown_failure" and acct.state is None and (
            launcher := ends_in_sigterm(matches, tail, series)):
        return SigtermOnly(launcher)
    if class_id == "gpu_failure" and primary and all(
            _RERUN_ELSEWHERE.search(m.text) for m in primary):
        return RerunElsewhere()
    if (iteration := _exit_interval_iteration(class_id, primary)) is not None:
        return ExitInterval(iteration)
    last = series.last_iteration
    if class_id == "completed" and last is not None and target and series.short_of(target):
        return EndedEarly(last, target)
    if class_id == NONE_CLASS:
        utils = [s.gpu_util for s in series.samples[-50:] if s.gpu_util is not None]
        util = sum(utils) / len(utils) if utils else None
        return Running(series.last_iteration, series.sec_per_iter(),
                       util if util is not None and util < _LOW_GPU_UTIL_PCT else None)
    return None


def _exit_interval_iteration(chosen: str, primary: Sequence[Any]) -> int | None:
    """The iteration at which Megatron stopped itself (--exit-interval), when that stop decided
    a time limit; None otherwise."""
    if chosen != "time_limit":
        return None
    found = (_EXIT_INTERVAL.search(m.text) for m in primary if m.class_id == chosen)
    return next((int(f.group(1)) for f in found if f), None)


def stopped_at_target(primary: Sequence[Any], target: int | None) -> bool:
    """Every time-limit signature is Megatron's --exit-interval stop, at the run's target
    iteration or past it: the run ended there, nothing is left to resume."""
    stops = [_EXIT_INTERVAL.search(m.text) for m in primary if m.class_id == "time_limit"]
    return target is not None and bool(stops) and all(
        s is not None and int(s.group(1)) >= target for s in stops)

