"""How a log ends, for a job with no accounting (a pasted log, `trainbot diagnose` of a file).

Without Slurm's State the log's last lines are the only witness: an unhandled error after the
last progress line is a failure (`ends_in_error`: its class when the last hint names a cause,
else `unknown_failure`), a TensorFlow Estimator's final save ends a finished run
(`ends_in_final_save`), and an epoch counter short of its total means a 100 % progress bar was
one epoch's (`epochs_left`). The decision (bot.core.diagnose.decide) weighs these after the
decisive evidence (signatures, detectors).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.core.catalogue.scanner import normalize_line
from bot.core.metrics import MetricSeries

# The last words of a process that died of an unhandled error, where no catalogue hint is:
# a Python exception line, an ERROR/FATAL line, a failed exec, or any line that reports an
# error, a failure or an abort (not a warning). Lines pasted into issues and chats keep their
# quoting (`backticks`, "> ", "* "), so it may come first.
_ERROR_LINE = re.compile(
    r"^[\s`'\">|*#-]*(?!.*(?:[Ww]arning|WARNING|WARN\b))"
    r"(?:[A-Za-z0-9_.]*(?:Error|Exception|Interrupt)\b|(?:ERROR|FATAL|Fatal)\b"
    r"|.*(?:No such file or directory|Permission denied|[Kk]illed)\W*$"
    # a shell that cannot run the command: `bash: torchrun: command not found`, `command
    # torchrun not found`, dash's `sh: 1: torchrun: not found`
    r"|.*(?:command (?:[^\s:]+ )?not found|[^\s:]+: not found\W*$)"
    r"|.*\b(?:[Ee]rror|ERROR|[Ff]ailed|FAILED|[Ff]ailure|FAILURE|[Aa]bort(?:ed|ing)?|ABORT"
    r"|[Ii]llegal|[Ss]egmentation fault|core dumped)\b|.*[a-z](?:Error|Exception)\b)"
)
#: A log (no accounting) that ends in an error whose only specific hint is of one of these
#: classes ended of that cause: a bare `Killed` (host OOM); the training framework's own
#: announcement that it caught the scheduler's signal and requeues (Lightning's `Handling
#: auto-requeue signal`, submitit's `Bypassing signal SIGTERM` ... `Requeued job`); an
#: exhausted allocator whose message is cut off (TensorFlow's `ResourceExhaustedError`).
_DECIDED_BY_LAST_HINT = frozenset({"host_oom", "time_limit", "preempted", "cuda_oom"})
# A rank SIGKILLed (the kernel's OOM killer, when nothing else is said) as launchers report it.
_SIGKILLED = re.compile(r"\(exitcode\s*:\s*-9\)|Signal 9 \(SIGKILL\)"
                        r"|terminated with signal SIGKILL|died with <Signals\.SIGKILL: 9>"
                        r"|\b(?:error|exit|return) code\s*[=:]?\s*-9\b")
# A rank killed by SIGBUS as launchers report it: in a training process that is a write to a
# full /dev/shm (DataLoader batches, NCCL's shared-memory transport), whose fix is the shared
# memory one (the DataLoader worker class's).
_SIGBUSED = re.compile(
    r"\(exitcode\s*:\s*-7\)|exitcode\s*:\s*-7 |Signal 7 \(SIGBUS\)|exits with return code = -7\b"
    r"|terminated with signal SIGBUS|died with <Signals\.SIGBUS: 7>")
# A DataLoader worker that died of exhausted shared memory (/dev/shm), not of host RAM.
_FINAL_SAVE = re.compile(r"Saving checkpoints? for ([0-9]+) into ")
# An epoch counter with its total: `Epoch 3/49`, `Epoch [3/250]`, `[Epoch 10/250]`, and YOLO's
# epoch column before the GPU memory (`      3/49     11.9G    0.0217 ...`).
_EPOCH_OF = re.compile(r"\b[Ee]poch\s*[:\[(]?\s*(\d+)\s*/\s*(\d+)\b"
                       r"|^\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G\s")


def ends_in_error(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> str | None:
    """The class of the unhandled error a log ends in, None when it does not: a hint
    (traceback, native abort, launcher or wrapper exit line) or an error line among its last
    lines and no progress line after it. A log that ends in progress is running (`none`),
    whatever errors it printed and survived before. The error is `unknown_failure` unless the
    last hint is one that names its cause when nothing follows it (a bare `Killed`: host OOM;
    the framework requeueing the job on the scheduler's signal: time limit or preemption;
    TensorFlow's `ResourceExhaustedError` without its message: a device OOM), or
    the launcher reports ranks killed by a signal and nothing else (SIGBUS: /dev/shm exhausted,
    the DataLoader worker class; SIGKILL: host OOM)."""
    if not tail:
        return None
    done = [m.line_no for m in matches if m.class_id == "completed"]
    after = max(tail[0][0], series.samples[-1].line_no if series.samples else 0,
                done[-1] if done else 0)
    hints = [m for m in matches
             if not m.primary and m.line_no >= after and m.class_id != "completed"]
    errors = [normalize_line(t) for n, t in tail if n >= after]
    # The error block names its cause when its only specific hint is one of these (a bare
    # `Killed`), or when nothing but a rank SIGKILLed and the launcher's traceback around it.
    specific = {m.class_id for m in hints} - {"unknown_failure"}
    if not specific and any(_SIGBUSED.search(t) for t in errors):
        return "dataloader_worker_killed"
    if not specific and any(_SIGKILLED.search(t) for t in errors):
        return "host_oom"
    if len(specific) == 1 and specific <= _DECIDED_BY_LAST_HINT:
        return next(iter(specific))
    if hints or any(_ERROR_LINE.match(t) for t in errors):
        return "unknown_failure"
    return None


def ends_in_final_save(series: MetricSeries, tail: Sequence[tuple[int, str]]) -> bool:
    """The log ends with the checkpoint a TensorFlow Estimator (or Keras/Slim's
    `Saving checkpoints for N into`) writes when training stops: its step is past the last
    progress line and off the progress lines' step grid (a periodic save of a running job
    lands on the grid or is followed by more progress)."""
    lines = [t for _, t in tail if t.strip()]
    m = _FINAL_SAVE.search(lines[-1]) if lines else None
    every, last = series.log_every(), series.last_iteration
    if m is None or last is None or every <= 1:
        return False
    step = int(m.group(1))
    return step > last and step % every != 0


def epochs_left(tail: Sequence[tuple[int, str]]) -> bool:
    """The log's last epoch counter is short of its total (0- or 1-based alike: `3/49`), so a
    progress bar at 100 % is one epoch's (or a validation pass's), not the run's target."""
    for _, text in reversed(tail):
        m = _EPOCH_OF.search(normalize_line(text))
        if m is not None:
            done, total = (int(g) for g in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
            return 0 < total and done < total - 1
    return False
