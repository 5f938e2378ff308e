"""Diagnosis of a training job's log: the streaming scan, then one decision.

- bot.core.diagnose.scan: `LogAnalysis` / `analyze_file` read a log's bytes (RE2 prefilter,
  catalogue matches, metric series, last lines) into bounded state;
- bot.core.diagnose.decide: `diagnose` turns that state plus Slurm's `Accounting` into ONE
  `Diagnosis` (class, evidence, causal chain, `decided_by`);
- bot.core.diagnose.line_cause: `line_cause`, the cause within the chosen class that the
  log's lines name when its fix differs from the class's hint (/dev/shm, open files, a
  missing compiler, a failed execve, an MPI message over the size limit);
- bot.core.diagnose.cause: `Cause`, the one cause a case's explanation states (a leak, a
  missing CUDA tool, Megatron's planned stop), and `case_detail`, its `detail` data;
- bot.core.diagnose.ending: how a log with no accounting ends in an error (an unhandled
  error, a deciding text cut off), and how it ends when no error is said, which the decision
  weighs last: bot.core.diagnose.framework_end (a framework's final save, a closed progress
  table, Keras's last epoch), last_epoch (the last epoch's report, the run's target reached),
  finish_said (the program's own closing words), shell_prompt (a shell's prompt come back), over
  progress_shown (what the last lines show of progress: a bar left open, epochs left);
- bot.core.diagnose.set_aside: `deciding_matches`, the matches the decision weighs (less the
  failures the run survived);
- bot.core.diagnose.requeue: a job that starts again by itself, requeued by Slurm or by its
  framework (Lightning, submitit), as the `Requeued` detail.

Import from here; the modules are the package's layout.
"""

from bot.core.diagnose.cause import Cause, case_detail
from bot.core.diagnose.decide import (
    ACCOUNTING,
    DETECTOR,
    HINT,
    NODE_CLASSES,
    NONE_CLASS,
    PROGRESS,
    SIGNATURE,
    diagnose,
)
from bot.core.diagnose.scan import CHUNK_BYTES, MAX_LINE_BYTES, LogAnalysis, analyze_file

__all__ = [
    "ACCOUNTING",
    "CHUNK_BYTES",
    "DETECTOR",
    "HINT",
    "MAX_LINE_BYTES",
    "NODE_CLASSES",
    "NONE_CLASS",
    "PROGRESS",
    "SIGNATURE",
    "Cause",
    "LogAnalysis",
    "analyze_file",
    "case_detail",
    "diagnose",
]
