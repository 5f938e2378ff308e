"""How a log ends in an error, for a job with no accounting (a pasted log, a file diagnosed).

Without Slurm's State the log's last lines are the only witness: an unhandled error after the
last progress line (an error line, a catalogue hint, a shell's notice of a fatal signal) is a
failure (`ends_in_error`: its class when the last hint names a cause, else the one cause the
error's own words name (`named_by_vocabulary`), else `unknown_failure`), and a last line that is
a deciding text cut off before its end names that text's class (`ends_cut_off`). How a log ends
when no error is said (a finished run's last lines, a run mid-pass, a shell's prompt) is
bot.core.diagnose.framework_end's, last_epoch's, finish_said's and shell_prompt's (over
progress_shown's); a completion marker with no training progress after it is
bot.core.detectors' `CompletionEnding`, which the silent exit detector shares.
The decision (bot.core.diagnose.decide) weighs these after the decisive evidence (signatures,
detectors). One of them is weighed with accounting too: an error block that holds NCCL's
remote error names the cause another rank's failure or the fabric gave it
(`remote_error_cause`), which Slurm's exit code or signal for the rank that reported it cannot;
so does a run interrupted by hand while it waited (a hang), which SIGINT's cannot, apex's
loss scale underflowing (a divergence) and torch.load reading a checkpoint cut short (its
pickle's `Ran out of input`), which exit 1 cannot (`traceback_cause`). torchrun's,
DeepSpeed's launcher's or Lightning's SIGTERM with no other error (`ends_in_sigterm`) names no
sender: the explanation says so. OpenNMT-py's removed batch as a log's last words
(`exits_after_removed_batch`) is weighed against Slurm's COMPLETED 0:0: its tensor-parallel
trainer exits 0 on the OOM it caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from bot.core.catalogue.scanner import normalize_line
from bot.core.logprefix import labelled_rank
from bot.core.metrics import MetricSeries

# A warning: a line labelled one (`UserWarning: ...`, `warning: ...`, `[Warning]`, a WARN or
# WARNING level) or the source line Python shows under it (`  warnings.warn(...)`,
# `rank_zero_warn(`), not a line that only mentions one (`Received pre-emption warning signal`).
# A warning: Python's and loggers' words for one, and glog's / TensorFlow's `W` severity before
# the source file (`W0302 10:00:01.123 4242 loader.cc:88]`, `…: W tensorflow/…/dso_loader.cc:64]`).
_WARNING = re.compile(r"[A-Za-z]*[Ww]arning\s*[:\]]|\bWARN(?:ING)?\b|[A-Za-z_.]*warn\("
                      r"|(?:^|[\s:])W(?:\d{4} [\d:.]+ +\d+)? [\w/.-]+\.\w+:\d+\]")
# The last words of a process that died of an unhandled error, where no catalogue hint is:
# a Python exception line, an ERROR/FATAL line, a failed exec, or any line that reports an
# error, a failure or an abort (not a warning), or a file the program could not open or write
# (darknet's `Couldn't open file: backup//yolo-obj_last.weights`, `cannot open file`, the
# system's `No such file or directory`, a full disk or quota), not a line that only names a
# file (`Opening file x`, `saved to file x`). Lines pasted into issues and chats keep their
# quoting (`backticks`, "> ", "* "), so it may come first.
_ERROR_LINE = re.compile(
    r"^[\s`'\">|*#-]*"
    r"(?:[A-Za-z0-9_.]*(?:Error|Exception|Interrupt)\b|(?:ERROR|FATAL|Fatal)\b"
    r"|.*(?:Permission denied|[Kk]illed)\W*$"
    r"|.*\b(?:No such file or directory|No space left on device|Disk quota exceeded)\b"
    r"|.*\b(?:[Cc]ouldn[\u2019']?t|[Cc]ould not|[Cc]an(?:no|[\u2019']?)t|[Cc]an not|[Uu]nable to)"
    r"\s+(?:open|write|create|save)\b"
    # a shell that cannot run the command: `bash: torchrun: command not found`, `command
    # torchrun not found`, dash's `sh: 1: torchrun: not found`
    # (`.*` takes all but the name's last character: one try per position on a long digit run)
    r"|.*(?:command (?:[^\s:]+ )?not found|[^\s:]: not found\W*$)"
    # glog's and absl's FATAL severity, whose LOG(FATAL) aborts the process after its line
    # (`F1207 12:00:00.123456  1234 device.cc:12] Unexpected event status: 1`, TensorFlow's
    # `2026-12-07 12:00:00.123456: F tensorflow/core/kernels/conv_ops.cc:1153] ...`)
    r"|F\d{4} [\d:.]+ +\d+ [\w/.-]+\.\w+:\d+\]|[\d-]+[ T][\d:.]+: F [\w/.-]+\.\w+:\d+\]"
    r"|.*\b(?:[Ee]rror|ERROR|[Ff]ailed|FAILED|[Ff]ailure|FAILURE|[Aa]bort(?:ed|ing)?|ABORT"
    r"|[Ii]llegal|[Ss]egmentation fault|core dumped)\b|.*[a-z](?:Error|Exception)\b)"
)
# A metric named an error, not a report of one, anywhere on a line: a training's or evaluation's
# error (`Test Error: Avg loss: 0.0629`, `val_error=0.12`, `top-1 error: 23.5 %`, `Mean squared
# error: 0.31`, `Finished training epoch: Avg Loss: 0.31, Avg Error: 0.09`) whose value, or
# another metric's, follows it. A bare `Error: ...` or `error: ... 0.5` names no metric.
_METRIC_VALUE = (r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*%?"
                 r"(?:\s*(?:$|[,;|(\[/])|\s+[A-Za-z][\w ]{0,20}[:=])")
_METRIC_ERROR = re.compile(
    r"(?i)(?<![a-z0-9])"
    r"(?:train[a-z]*|test[a-z]*|val[a-z]*|eval[a-z]*|dev|top-?\d+|mean|avg|average|squared"
    r"|absolute|relative|reconstruction|classification|prediction|rms|word|char[a-z]*|token"
    r"|frame|pixel)[ _-](?:[a-z]+[ _-])?error(?:[ _-]rate)?\s*[:=]\s*"
    rf"(?:{_METRIC_VALUE}|[A-Za-z][\w ./-]{{0,30}}[:=]\s*{_METRIC_VALUE})")
# tensorpack's ScalarPrinter (tensorpack/tensorpack tensorpack/callbacks/monitor.py 1547a54e,
# after each epoch: `logger.info('{}: {:.5g}'.format(k, v))`, its logger's `@monitor.py:476]`
# before it): a monitored scalar, whatever its name (`val-error-top1: 0.52`, `error: 0.31`), no
# report of an error
_TENSORPACK_SCALAR = re.compile(
    r"@monitor\.py:[0-9]+\] [\w./>-]+: (?:-?[0-9.]+(?:e[-+]?[0-9]+)?|nan|-?inf)\s*$")
# A shell's notice of a process killed by a signal whose default is to end it, in glibc's
# names of the signals (strsignal) that no error word covers: bare (`Floating point
# exception`), in bash's job notice (`line 3:  1098 Terminated  python train.py`) or zsh's
# (`zsh: floating point exception  python train.py`, `[1]  + 4242 hangup  python ...`).
_SIGNAL_NAMES = (r"(?:floating[- ]point exception|terminated|hangup|quit|trace/breakpoint trap"
                 r"|cpu time limit exceeded|file size limit exceeded|bad system call|alarm clock"
                 r"|user defined signal [12]|profiling timer expired|virtual timer expired)")
_SIGNAL_NOTICE = re.compile(
    rf"(?i)^[\s`'\">|*#-]*{_SIGNAL_NAMES}(?:\s*\(core dumped\))?\W*$"
    rf"|\bline [0-9]+:\s+[0-9]+\s+{_SIGNAL_NAMES}(?:[\s(]|$)"
    rf"|^(?:zsh: |\[[0-9]+\]\s*[+-]?\s*[0-9]+\s+){_SIGNAL_NAMES}(?:[\s(]|$)")
#: A log (no accounting) that ends in an error whose only specific hint is of one of these
#: classes ended of that cause: a bare `Killed` (host OOM); the training framework's own
#: announcement that it caught the scheduler's signal and requeues (Lightning's `Handling
#: auto-requeue signal`, submitit's `Requeued job` after its verdict); an
#: exhausted allocator whose message is cut off (TensorFlow's `ResourceExhaustedError`); a
#: distributed runtime's stall inspector warning that ranks wait for the rest (Horovod's), with
#: no progress after it: the job hung there; the shell's notice that the process died of SIGBUS
#: (`Bus error (core dumped)`: a full /dev/shm, the DataLoader worker class's fix).
_DECIDED_BY_LAST_HINT = frozenset({"host_oom", "time_limit", "preempted", "cuda_oom", "hang",
                                   "dataloader_worker_killed"})
#: Of those, the classes a framework announces on the scheduler's signal (which also reaches
#: ranks that srun or torchrun stop because another rank failed first).
_SIGNAL_ANNOUNCED = frozenset({"time_limit", "preempted"})
# The exceptions a signal itself raises in a training process.
_SIGNALS_OWN = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?:KeyboardInterrupt|SystemExit"
                          r"|SignalException)\b")
# torchrun's agent stopped by SIGTERM (torch/distributed/elastic/multiprocessing/api.py,
# _terminate_process_handler: `SignalException: Process 1234 got signal: 15`).
_SIGTERM_EXCEPTION = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*SignalException: Process [0-9]+ "
                                r"got signal: 15\b")
# DeepSpeed's launcher stopped by SIGTERM (deepspeed/launcher/launch.py, sigkill_handler: it
# kills its ranks, `Main process received SIGTERM, exiting`, exit 1); a rank that failed makes it
# print `exits with return code = N` instead.
_DEEPSPEED_SIGTERM = re.compile(r"Main process received SIGTERM, exiting")
# Lightning stopping on SIGTERM, whoever sent it (lightning/pytorch/trainer/connectors/
# signal_connector.py, _sigterm_notifier_fn, 2.0 on: `[rank: 0] Received SIGTERM: 15`, then
# SIGTERMException; 1.6 to 1.9 with fault tolerance: `Received signal 15. Saving a
# fault-tolerant checkpoint and terminating.`).
_LIGHTNING_SIGTERM = re.compile(r"(?:\[rank: [0-9]+\] )?Received SIGTERM: 15\b"
                                r"|Received signal 15\. Saving a fault-tolerant checkpoint")
# The handlers of Slurm's --signal=USR1 warning before the time limit, as the lines they print
# show they ran: Lightning's auto-requeue (the catalogue's time_limit hints: `handling SIGUSR1`
# before 2.0, `Handling auto-requeue signal: 10`), and latent-diffusion's melk (CompVis/
# latent-diffusion main.py a506df575647, stable-diffusion's and taming-transformers' alike:
# `signal.signal(signal.SIGUSR1, melk)`, `Summoning checkpoint.` then its save, and training
# goes on; Lightning 1.6 on keeps a handler the script set, its 1.4 replaced it by its own). melk
# also prints it on an exception out of trainer.fit (re-raised: its traceback follows) and on a
# KeyboardInterrupt Lightning caught (fit() returns): no training follows either. A run warned so
# whose log then ends in nothing but a stop (the limit's SIGTERM and SIGKILL, melk's save cut)
# ended at the time limit.
_SIGUSR1_HANDLED = re.compile(r"[Hh]andling (?:auto-requeue signal|SIGUSR1)")
_SUMMONED = re.compile(r"^Summoning checkpoint\.$")
# Slurm ending a job's step or allocation from outside: slurmstepd's `*** STEP 608.0 ON gpub003
# CANCELLED AT 2023-09-15T12:22:07 ***` (a reason after it, `DUE TO ...`, is a class's own
# line) and salloc's or srun's `Job allocation 608 has been revoked` (a preemption or a
# scancel). Slurm then SIGKILLs the tasks still running after its KillWait: a task srun reports
# `Killed` after it, or a shell's `Killed`, was killed by Slurm, not by the OOM killer.
_SLURM_ENDED = re.compile(r"\*\*\* (?:JOB|STEP) [0-9][^ ]* ON [^ ]+ CANCELLED AT "
                          r"|Job allocation [0-9]+ has been revoked")
# Of host_oom's hints, those that report a process killed (srun's `task 0: Killed`, exit 137,
# signal 9), not memory use (slurmstepd's `Exceeded job memory limit at some point`).
_MEMORY_USE = re.compile(r"memory limit")
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
# NCCL's report that a peer went away (ncclRemoteError): a symptom, not a cause. Its threads end
# in another rank that died first (its own error, elsewhere in the log, is the cause) or in a
# node's network fault, which NCCL names in its `Last error:` (an InfiniBand completion error).
_REMOTE_ERROR = re.compile(r"ncclRemoteError|remote process exited or there was a network error")
# The class whose hints the remote error is among (with NCCL's DistBackendError and the abort).
_REMOTE_ERROR_CLASS = "nccl_timeout"
# NCCL's InfiniBand transport names a fault of the fabric or the HCA: a work completion with an
# error status (`with error 12, opcode 0` before 2.19, `with status=12 opcode=0` or
# `with status=transport retry counter exceeded(12)` since), a port or device event from its
# async thread (`Got non-fatal async event: port error(10)`, `async fatal event: local
# catastrophic error`).
_NETWORK_FAULT = re.compile(
    r"NET/IB(?:/GIN)? ?: Got completion from peer .* with (?:error|status=)"
    r"|NET/IB ?: .*(?:port|link) (?:is )?down|ibv_poll_cq .*error"
    r"|NET/IB ?: .*async (?:fatal )?event ?: (?:port error|local catastrophic)")
# NCCL before 2.13 returned its InfiniBand completion errors as a system error (`unhandled system
# error`): with one of the faults above in the error block, the same node network fault.
_SYSTEM_ERROR = re.compile(r"ncclSystemError|unhandled system error")
# Exceptions a rank raises because a peer or the fabric failed (NCCL's own, a lost connection
# of the store or of gloo, a timeout) and the launchers' wrappers around a rank's failure: not
# another rank's own cause, which every other exception in an error block with NCCL's remote
# error is (a ValueError, an assertion).
_COLLATERAL_EXCEPTION = re.compile(
    r"NCCL|[Nn]ccl|Dist[A-Za-z]*Error|ChildFailedError|CalledProcessError|TCPStore|gloo"
    r"|[Cc]onnection (?:reset|closed|refused|aborted)|[Bb]roken pipe|[Tt]imed? ?out|[Tt]imeout")
# Megatron's rerun machine going on after a non-fatal check failed (megatron/core/
# rerun_state_machine.py: `validate_result(..., fatal=False)`, the spiky-loss and large-grads
# checks): the verdict before it (`Possible transient error!`) was a warning the run survived.
NOT_FATAL_VALIDATION = re.compile(
    r"Continuing normal execution because failed validation was not fatal")
# fairseq's reports that it caught the out-of-memory error it logged just before and goes on
# (the catalogue's cuda_oom hints, verbatim): that OOM was no cause if training or a completion
# marker follows (bot.core.diagnose.set_aside).
FAIRSEQ_OOM_RECOVERIES = (
    "attempting to recover from OOM in forward/backward pass",
    "ran out of memory in validation step, retrying batch",
    "OOM in all workers, skipping update",
)
# Lightning's batch size finder backing off from a trial's OOM, which it never logs (a
# catalogue cuda_oom hint, verbatim): it recovers from no OOM line of the log.
LIGHTNING_BATCH_SIZE_BACK_OFF = "Batch size [0-9]+ failed, trying batch size [0-9]+"
# OpenNMT-py's trainer skipping the batch whose step ran out of GPU memory (a catalogue cuda_oom
# hint, verbatim): the OOM's only line (its traceback is never printed), the error it caught.
# With more than one GPU in tensor-parallel mode the process then ends (onmt/trainer.py
# 97111d97551c, since 16aaba80 2023-09: `torch.distributed.destroy_process_group()`,
# `sys.exit()`), each rank after its own line: a log that ends in it ended of that OOM.
OPENNMT_BATCH_REMOVED = "Step [0-9]+, cuda OOM - batch removed"
_OPENNMT_BATCH_REMOVED = re.compile(OPENNMT_BATCH_REMOVED)
OOM_RECOVERY = re.compile("|".join(FAIRSEQ_OOM_RECOVERIES))
# A framework's report that it caught an out-of-memory error and goes on (fairseq's recovery,
# Lightning's finder backing off, OpenNMT-py's removed batch): a log that ends after it ends in
# no error, and the block an error after it is in starts after it (its words are no cause).
GOES_ON_AFTER_OOM = re.compile("|".join(
    (*FAIRSEQ_OOM_RECOVERIES, LIGHTNING_BATCH_SIZE_BACK_OFF, OPENNMT_BATCH_REMOVED)))


# When an error block names no cause in the catalogue's words, its own words may: for each
# class, a subject and what happened to it, on one line (`... NCCL ... timed out`, `GPU ... out
# of memory`, `loss ... nan`). Traceback frames and the source lines under them are skipped
# (code mentions anything), and so are warnings. A subject anywhere on the line is tested from
# its start only (`^(?=.*…)`), and a word that rules a class out (`CUDA error` for nccl_timeout)
# by skipping past its last occurrence (`^(?:.*(?=…).)?+`): what a lookahead tried from each
# position found, in one pass over a long line instead of one per character. A subject before
# what happened to it (`\bgpu\b.*\bnot responding`) is its first occurrence on the line
# (`^(?>.*?subject)`, a whole word or phrase: none ends before it), not each one in turn.
_VOCABULARY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cuda_oom", re.compile(
        r"(?i)^(?=.*\b(?:cuda|gpu|device|vram|hbm|cudnn|cublas)\b).*\b(?:out of memory|oom"
        r"|not enough memory|insufficient memory|memory (?:is )?exhausted)\b")),
    ("host_oom", re.compile(
        r"(?i)\boom[-_ ]?kill|\bmemory cgroup\b|^(?:.*(?=\b(?:cuda|gpu|device)\b).)?+"
        r"(?=.*\b(?:host|system|cpu|ram|physical)\b).*\b(?:out of memory|not enough memory"
        r"|insufficient memory|memory (?:is )?exhausted)\b")),
    # a NaN/inf as a value (`loss: nan`, `grad norm is inf`), not Megatron's `nan iterations: 0`
    ("nan_loss", re.compile(
        r"(?i)^(?=.*\b(?:loss|grad\w*|norm|diverg\w*)\b).*(?:(?:[=:(\[,]\s*|\b(?:is|was|are"
        r"|became|becomes|become|got|to)\s+)-?(?:nan|inf)\b|non-finite|not finite)")),
    # not a watchdog that reports a CUDA error (`Process group watchdog thread terminated with
    # exception: CUDA error: an illegal memory access was encountered`)
    ("nccl_timeout", re.compile(
        r"(?i)^(?:.*(?=\bCUDA error\b).)?+"
        r"(?=.*\b(?:nccl|gloo|collective|all_?reduce|all_?gather|reduce_?scatter"
        r"|broadcast|barrier|process ?group|c10d)\b).*\b(?:timed? ?out|timeout|watchdog)\b")),
    # a data loader's own wait for a batch (`data loader timed out`, `next batch ... timeout`),
    # not a bare `batch` (`batch_isend_irecv` is a collective)
    ("dataloader_timeout", re.compile(
        r"(?i)^(?:.*(?=\b(?:nccl|gloo|collective|barrier|process ?group|c10d|socket|store)\b).)?+"
        r"(?=.*(?:\bdata ?loader|\bdata ?manager\b|\bbatch data\b|\b(?:next|a|the) batch\b"
        r"|\bprefetch\w*|\binput pipeline\b|\bdata queue\b))"
        r".*\b(?:timed? ?out|timeout)\b")),
    ("gpu_failure", re.compile(
        r"(?i)^(?>.*?\b(?:ecc|xid|nvlink)\b).*\b(?:error|fault|uncorrectable)|fallen off the bus"
        r"|\bgpu (?:is |was |has been )?lost\b|^(?>.*?\bgpu\b).*\b(?:not responding|reset required"
        r"|hardware (?:error|fault|failure))\b")),
    # a batch system's time limit in any wording (`exceeded wallclock time limit`, `walltime
    # limit reached`, SGE's `h_rt`)
    ("time_limit", re.compile(
        r"(?i)^(?>.*?\b(?:wall ?clock|wall ?time|run ?time|cpu ?time) ?limit\b)"
        r".*\b(?:exceeded|reached)\b"
        r"|^(?>.*?\bexceed\w*\b).*\b(?:wall ?clock|wall ?time|h_rt)\b"
        r"|^(?=.*\bjob\b)(?>.*?\bexceed\w*\b).*\btime ?limit\b")),
    # not a preemption named as one possibility among others (XLA's coordination service:
    # `... heartbeat timeout. This indicates that the remote task has failed, got preempted, or
    # crashed unexpectedly`, `scheduler events (e.g. preemption, eviction)`, submitit's
    # `Exiting gracefully after preemption/timeout.`)
    ("preempted", re.compile(
        r"(?i)^(?!.*(?:\bpre-?empt\w*,? or\b|\bor (?:got |was |been )?pre-?empt"
        r"|\be\.g\.,? pre-?empt|\bpre-?emption/time-?out\b))"
        r".*(?:\bpre-?empt(?:ed|ion)\b|\bspot (?:instance )?(?:interruption|reclaim\w*))")),
    ("node_failure", re.compile(
        r"(?i)^(?>.*?\bnodes?\b).*\b(?:fail(?:ed|ure)|down|lost|unreachable|not responding"
        r"|dead|died|crashed|rebooted|notready)\b")),
    # a full filesystem or quota in any tool's words, not a full /dev/shm (a DataLoader
    # worker's `</torch_...>`, NCCL's shared-memory segment)
    ("disk_full", re.compile(
        r"(?i)^(?!.*(?:/dev/shm|shared memory|\bshm\b|fallocate|</torch_))"
        r".*\b(?:no space left on device|disk quota exceeded)\b")),
    ("compiler_missing", re.compile(
        r"(?i)^(?=.*(?:\bcompiler\b|\bgcc\b|\bg\+\+|\bclang\b|\bcl(?:\.exe)?\b|\bnvcc\b))"
        r".*\b(?:not found|no such file|cannot find|could not find|unable to (?:find|execute)"
        r"|missing|not installed|is required)\b")),
)
_FRAME = re.compile(r"^\s*File \"[^\"]*\", line \d+")
# A run someone interrupted (Ctrl-C, KeyboardInterrupt) while it waited: the innermost frame of
# the main process's traceback is a blocking wait (a condition or lock, a pipe's receive, a
# poll or select, a thread's or process's join), so the run had stopped making progress. A
# traceback with a child's frames (a DataLoader worker's loop, multiprocessing's bootstrap) is
# that child's: idle workers wait whenever the main process is interrupted.
_INTERRUPTED = re.compile(r"^KeyboardInterrupt\b")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_WAITING_FRAME = re.compile(
    r"^\s*File \"[^\"]*\", line \d+, in _?(?:wait(?:_for\w*)?|acquire|join|poll|select"
    r"|recv(?:_bytes|_into)?|_wait_for_tstate_lock|_try_wait|accept)\s*$")
_CHILD_FRAME = re.compile(r", in (?:_bootstrap|_worker_loop|_bootstrap_inner)\s*$")
# apex's dynamic loss scaler dividing by a loss scale that overflows drove to zero: a
# ZeroDivisionError raised in its own unscale (`apex/amp/scaler.py", line 183, in
# unscale_with_stashed`).
_APEX_UNSCALE_FRAME = re.compile(
    r"^\s*File \"[^\"]*apex[/\\]amp[/\\]scaler\.py\", line \d+, in unscale\w*\s*$")
_ZERO_DIVISION = re.compile(r"^ZeroDivisionError\b")
# torch.load reading a checkpoint whose pickle ends early (an empty or truncated file: a save
# that was killed or ran out of space): the exception raised in torch's own load frames
# (`torch/serialization.py", line 1033, in _legacy_load`), not a DataLoader worker's or a
# multiprocessing pipe's `EOFError: Ran out of input`.
_TORCH_LOAD_FRAME = re.compile(
    r"^\s*File \"[^\"]*torch[/\\]serialization\.py\", line \d+, in _?(?:legacy_)?load\s*$")
_TRUNCATED_PICKLE = re.compile(
    r"^(?:EOFError: Ran out of input|(?:_pickle\.|pickle\.)?UnpicklingError: (?:pickle data was"
    r" truncated|invalid load key, '\\x00'))")
_EXCEPTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Interrupt|Exit)\b")
# A traceback cut before its exception line (an excerpt that ends in its frames, each frame's
# source line and Python 3.11's carets under it: at most `_FRAME_SOURCE_LINES` lines) still
# names its cause by its innermost frame in two cases. torch's DataLoader's SIGCHLD handler
# (torch/utils/data/_utils/signal_handling.py: `def handler(signum, frame):
# _error_if_any_worker_fails()`) raises only when one of its worker processes died (killed by a
# signal or exited unexpectedly). A blocking wait (`_WAITING_FRAME`) with a terminal's `^C` before
# the traceback is a run interrupted by hand while it waited: CPython's default SIGINT handler
# raises KeyboardInterrupt with no Python frame of its own, while a Python handler (torch's
# above, a framework's SIGTERM handler) shows its own frame innermost; without the `^C` the
# excerpt may have been cut just above such a handler's frame.
_SIGCHLD_HANDLER_FRAME = re.compile(
    r"^\s*File \"[^\"]*torch[/\\]utils[/\\]data[/\\]_utils[/\\]signal_handling\.py\", line \d+,"
    r" in handler\s*$")
_CTRL_C = re.compile(r"^\^C")
_FRAME_SOURCE_LINES = 3


class Ending(NamedTuple):
    """How a log ends in an error: its class and the lines whose words named it (none when a
    catalogue hint or a launcher's signal report did)."""

    class_id: str
    lines: tuple[tuple[int, str], ...] = ()


def named_by_vocabulary(block: Sequence[tuple[int, str]]) -> Ending | None:
    """The one class whose vocabulary the error block's lines (raw, as the log has them) use,
    with those lines; None when none does or several do."""
    found: dict[str, list[tuple[int, str]]] = {}
    in_frame = False
    for n, raw in block:
        text = normalize_line(raw)
        frame, in_frame = in_frame, bool(_FRAME.match(text))
        if frame or in_frame or _WARNING.search(text):
            continue  # a traceback frame, the source line under it, a warning
        for class_id, words in _VOCABULARY:
            if words.search(text):
                found.setdefault(class_id, []).append((n, raw))
    if len(found) != 1:
        return None
    ((class_id, lines),) = found.items()
    return Ending(class_id, tuple(lines))


def traceback_cause(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> Ending | None:
    """The cause the traceback of the log's error block (after its last progress line) names
    where no catalogue signature does (`_cause_in_traceback`), with its lines; None otherwise.
    With accounting this decides over the exit code or signal, which name no cause."""
    if not tail:
        return None
    hints, block = _error_block(matches, tail, series)
    if {m.class_id for m in hints} - {"unknown_failure"}:
        return None
    return _cause_in_traceback(block)


def _cause_in_traceback(block: Sequence[tuple[int, str]]) -> Ending | None:
    """A hang when the block is only a run interrupted by hand while it waited
    (`_waiting_when_interrupted`); for a block cut inside a traceback's frames, the cause its
    innermost frame names (`_cut_in_frames`: a DataLoader worker that died, a hang); a
    divergence (`nan_loss`) when its last exception is a
    ZeroDivisionError raised in apex's amp scaler unscaling the gradients
    (`_loss_scale_underflow`); a truncated checkpoint (`checkpoint_corrupt`) when it is a
    pickle that ended early in torch.load (`_truncated_checkpoint_load`); None otherwise."""
    if waited := _waiting_when_interrupted(block):
        return Ending("hang", waited)
    if cut := _cut_in_frames(block):
        return cut
    if underflow := _loss_scale_underflow(block):
        return Ending("nan_loss", underflow)
    if truncated := _truncated_checkpoint_load(block):
        return Ending("checkpoint_corrupt", truncated)
    return None


def _cut_in_frames(block: Sequence[tuple[int, str]]) -> Ending | None:
    """The cause the innermost frame names when the block ends in a traceback's frames, cut
    before its exception line: a DataLoader worker that died (torch's SIGCHLD handler), or a
    hang (a blocking wait, `^C` before the traceback, no exception in the block but a
    KeyboardInterrupt and not a child's frames); None otherwise, the cause being cut off."""
    texts = [normalize_line(t) for _, t in block]
    start = next((i for i in range(len(texts) - 1, -1, -1) if _TRACEBACK.search(texts[i])), None)
    if start is None:
        return None
    frames: list[tuple[int, str]] = []
    since = 0  # lines since the last frame: its source line, its carets
    for (n, raw), text in zip(block[start + 1:], texts[start + 1:], strict=True):
        if not text.strip():
            continue
        if _FRAME.match(text):
            frames.append((n, raw))
            since = 0
        elif not frames or _EXCEPTION.match(text) or (since := since + 1) > _FRAME_SOURCE_LINES:
            return None
    if not frames:
        return None
    inner = normalize_line(frames[-1][1])
    if _SIGCHLD_HANDLER_FRAME.match(inner):
        return Ending("dataloader_worker_killed", (frames[-1],))
    interrupted = any(_CTRL_C.match(t) for t in texts[:start + 1])
    child = any(_CHILD_FRAME.search(normalize_line(f)) for _, f in frames)
    others = [text for _, _, text in _exceptions(block[:start]) if not _INTERRUPTED.match(text)]
    if _WAITING_FRAME.match(inner) and interrupted and not child and not others:
        return Ending("hang", (block[start], frames[-1]))
    return None


def _truncated_checkpoint_load(block: Sequence[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """The innermost frame and the exception of a traceback whose last exception is a pickle
    that ended early (`EOFError: Ran out of input`, `UnpicklingError: pickle data was
    truncated`, a load key of zero bytes) raised in torch.load's own frames: the checkpoint
    file is empty or cut short; () otherwise (the same exception anywhere else)."""
    found: tuple[tuple[int, str], ...] = ()
    for frames, raised, text in _exceptions(block):
        loading = bool(frames) and bool(_TORCH_LOAD_FRAME.match(normalize_line(frames[-1][1])))
        found = (frames[-1], raised) if loading and _TRUNCATED_PICKLE.match(text) else ()
    return found


def _loss_scale_underflow(block: Sequence[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """The innermost frame and the exception of a traceback whose last exception is a
    ZeroDivisionError raised in apex's amp scaler (`unscale`, `unscale_with_stashed`): its
    dynamic loss scale, halved at every overflow, reached zero, so the gradients kept
    overflowing (a divergence); () otherwise (a division by zero in anything else)."""
    found: tuple[tuple[int, str], ...] = ()
    for frames, raised, text in _exceptions(block):
        apex = bool(frames) and bool(_APEX_UNSCALE_FRAME.match(normalize_line(frames[-1][1])))
        found = (frames[-1], raised) if apex and _ZERO_DIVISION.match(text) else ()
    return found


def _waiting_when_interrupted(block: Sequence[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """The innermost frame and the `KeyboardInterrupt` of the main process's traceback when it
    was interrupted in a blocking wait and no other exception ended the block; () otherwise."""
    exceptions: list[str] = []
    found: tuple[tuple[int, str], ...] = ()
    for frames, raised, text in _exceptions(block):
        exceptions.append(text)
        child = any(_CHILD_FRAME.search(normalize_line(f)) for _, f in frames)
        if _INTERRUPTED.match(text) and frames and not child:
            waiting = _WAITING_FRAME.match(normalize_line(frames[-1][1]))
            found = (frames[-1], raised) if waiting else ()
    if not exceptions or not all(_INTERRUPTED.match(e) for e in exceptions):
        return ()
    return found


def _exceptions(block: Sequence[tuple[int, str]]) -> Iterator[
        tuple[list[tuple[int, str]], tuple[int, str], str]]:
    """Each exception line of the block's tracebacks, in order: the frames of its traceback
    (innermost last; none for an exception printed without one), the line as the log has it
    and its normalized text."""
    frames: list[tuple[int, str]] = []
    for n, raw in block:
        text = normalize_line(raw)
        if _TRACEBACK.search(text):
            frames = []
        elif _FRAME.match(text):
            frames.append((n, raw))
        elif _EXCEPTION.match(text):
            yield frames, (n, raw), text
            frames = []


def ends_cut_off(catalogue: Any, tail: Sequence[tuple[int, str]]) -> Ending | None:
    """The class a log's last line names in a deciding text cut off before its end (a pasted
    excerpt truncated mid-sentence: `[Rank 6] Watchdog caught collective` and nothing after
    it), with that line; None when the last line is no such start of one class's text."""
    last = next(((n, raw) for n, raw in reversed(tail) if raw.strip()), None)
    class_id = last and catalogue.cut_off_class(normalize_line(last[1]))
    return Ending(class_id, (last,)) if last and class_id else None


def ends_in_error(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> Ending | None:
    """The class of the unhandled error a log ends in (with the lines that named it when its
    own words did), None when it does not end in one: a hint
    (traceback, native abort, launcher or wrapper exit line) or an error line among its last
    lines and no progress line after it. A log that ends in progress is running (`none`),
    whatever errors it printed and survived before. The error is `unknown_failure` unless the
    last hint is one that names its cause when nothing follows it (a bare `Killed`: host OOM;
    the framework requeueing the job on the scheduler's signal: time limit or preemption;
    TensorFlow's `ResourceExhaustedError` without its message: a device OOM), or
    the launcher reports ranks killed by a signal and nothing else (SIGBUS: /dev/shm exhausted,
    the DataLoader worker class; SIGKILL: host OOM; a kill after Slurm cancelled the step or
    revoked the allocation is Slurm's own, no host OOM), or the error's own words name one cause
    the catalogue has no line for (`named_by_vocabulary`: a weaker hint, shown as such). NCCL's
    remote error (`ncclRemoteError`) is a symptom: a node's network fault when NCCL's last
    error is an InfiniBand one and no other rank's own error is in the block (`_peer_errors`:
    a peer that died of it leaves the survivors' InfiniBand sends failing), else the cause
    another rank's error names, else unknown. A run whose training went on after a handler of
    Slurm's time-limit warning ran (`_time_limit_warning`) and whose log then ends in nothing
    but a stop (`_ends_by_signal_only`) hit its time limit."""
    if not tail:
        return None
    hints, block = _error_block(matches, tail, series)
    warned = _time_limit_warning(matches, series)
    if warned is not None and hints and _ends_by_signal_only(hints, block):
        return Ending("time_limit", (warned,))
    return _ending_of(hints, block)


def exits_after_removed_batch(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> Ending | None:
    """The OOM a log ends in when its last words are OpenNMT-py's removed batch (`Step N, cuda
    OOM - batch removed`, each rank's own, nothing after them) and `ends_in_error` reads it so,
    with those lines; None otherwise. In tensor-parallel mode its trainer then destroys the
    process group and calls `sys.exit()` (onmt/trainer.py 97111d97551c): exit status 0, so
    Slurm's COMPLETED 0:0 names no silent exit but the OOM the program exited on."""
    said = [(n, text) for n, text in tail if text.strip()]
    removed: list[tuple[int, str]] = []
    while said and _OPENNMT_BATCH_REMOVED.search(said[-1][1]):
        removed.insert(0, said.pop())
    ended = ends_in_error(matches, tail, series) if removed else None
    return Ending("cuda_oom", tuple(removed)) if ended and ended.class_id == "cuda_oom" else None


def _time_limit_warning(matches: Sequence[Any], series: MetricSeries) -> tuple[int, str] | None:
    """The line (its number and text) of a handler of Slurm's --signal=USR1 warning before the
    time limit that the run's training went on after (`_SIGUSR1_HANDLED`, `_SUMMONED`: a
    `Summoning checkpoint.` training followed was latent-diffusion's melk on the signal); None
    when the run shows none."""
    last = series.last_iteration_line or 0
    return next(((m.line_no, m.text) for m in matches if m.line_no < last and (
        _SIGUSR1_HANDLED.search(m.text) or _SUMMONED.search(normalize_line(m.text)))), None)


def _ends_by_signal_only(hints: Sequence[Any], block: Sequence[tuple[int, str]]) -> bool:
    """Whether an error block names no cause but a signal's stop: no hint of a class, no
    exception but torchrun's on SIGTERM, no KeyboardInterrupt (a Ctrl-C or SIGINT, not the
    time limit's SIGTERM): only what a stop prints (latent-diffusion's `Summoning checkpoint.`,
    Lightning's `Received SIGTERM: 15`)."""
    return (not {m.class_id for m in hints} - {"unknown_failure"}
            and all(_SIGTERM_EXCEPTION.match(text) for _, _, text in _exceptions(block))
            and not any("KeyboardInterrupt" in text for _, text in block))


def remote_error_cause(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> Ending | None:
    """The cause named in a log whose error block (after its last progress line) holds NCCL's
    remote error (`ncclRemoteError`: a peer exited or the network failed), as `ends_in_error`
    reads it: the node's InfiniBand fault when no other rank's own error is there, else
    another rank's error (`unknown_failure` with its lines when no class names it); None when
    the block holds no remote error or nothing in it names a cause. With accounting this
    decides before the exit code or signal, which are only the reporting rank's (its SIGABRT,
    its exit 1)."""
    if not tail:
        return None
    hints, block = _error_block(matches, tail, series)
    if not any(_REMOTE_ERROR.search(m.text) for m in hints):
        return _network_fault(block, [normalize_line(t) for _, t in block])
    ended = _ending_of(hints, block)
    if ended is not None and ended.class_id != "unknown_failure":
        return ended
    # another rank's own error that no class names is still the cause, not the reporting
    # rank's abort
    peer = _peer_errors(block)
    return Ending("unknown_failure", peer) if peer else None


def ends_in_sigterm(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> str | None:
    """The launcher (`torchrun`, `deepspeed`, `lightning`) whose stop on SIGTERM ends the log's
    error block with no other error and no class's hint in it: torchrun's SignalException for
    SIGTERM, DeepSpeed's launcher's `Main process received SIGTERM, exiting`, or Lightning's
    Trainer's `[rank: 0] Received SIGTERM: 15` (its launcher passes the signal to its ranks;
    older wordings too), with no exception but a signal's own; None otherwise. Slurm's time
    limit, a preemption, scancel and srun ending a step all send SIGTERM, so the log alone does
    not say who stopped the run."""
    if not tail:
        return None
    hints, block = _error_block(matches, tail, series)
    if {m.class_id for m in hints} - {"unknown_failure"}:
        return None
    raised = [text for _, _, text in _exceptions(block)]
    if any(not _SIGNALS_OWN.match(text) for text in raised):
        return None
    if any(_SIGTERM_EXCEPTION.match(text) for text in raised):
        return "torchrun"
    said = [normalize_line(t) for _, t in block]
    if any(_DEEPSPEED_SIGTERM.search(t) for t in said):
        return "deepspeed"
    if any(_LIGHTNING_SIGTERM.search(t) for t in said):
        return "lightning"
    return None


def _error_block(
    matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> tuple[list[Any], list[tuple[int, str]]]:
    """The catalogue hints and the last lines after the log's last progress or completion
    line or Megatron's notice that it trains on after a non-fatal check
    (`NOT_FATAL_VALIDATION`) or a framework's report that it goes on after an out-of-memory
    error it caught (`GOES_ON_AFTER_OOM`; OpenNMT-py's removed batch only with a line after it
    other than another rank's same: `OPENNMT_BATCH_REMOVED`): the block an unhandled error would be
    in; `tail` is not empty.
    A completion line a launcher labels as another rank's than rank 0 (`[rank1]:`, srun's
    `1: `) does not end the block: rank 1 finished, rank 0's error before or after it is
    still the run's end."""
    raw = dict(tail)
    done = [m.line_no for m in matches if m.class_id == "completed"
            and labelled_rank(raw.get(m.line_no, "")) in (None, 0)]
    # the last line that says something other than OpenNMT-py's removed batch: one after it is
    # the log's end, no recovery (tensor-parallel's exit)
    said = max((n for n, text in tail
                if text.strip() and not _OPENNMT_BATCH_REMOVED.search(text)), default=0)
    going_on = [n for n, text in tail if NOT_FATAL_VALIDATION.search(text)] + [
        m.line_no for m in matches
        if m.class_id == "cuda_oom" and not m.primary and GOES_ON_AFTER_OOM.search(m.text)
        and not (m.line_no > said and _OPENNMT_BATCH_REMOVED.search(m.text))]
    after = max(tail[0][0], series.samples[-1].line_no if series.samples else 0,
                done[-1] if done else 0, max(going_on) + 1 if going_on else 0)
    hints = [m for m in matches
             if not m.primary and m.line_no >= after and m.class_id != "completed"]
    return hints, [(n, t) for n, t in tail if n >= after]


def _ending_of(hints: list[Any], block: list[tuple[int, str]]) -> Ending | None:
    """`ends_in_error`'s reading of an error block's hints and lines."""
    errors = [normalize_line(t) for _, t in block]
    # NCCL's remote error is the symptom: the network fault it names is a node's, else the cause
    # is another rank's error, named in the block's own words or unknown. NCCL's other hints
    # there (the DistBackendError it raises, the launcher's SIGABRT after it) are the symptom's.
    # A peer that died of its own error leaves the survivors' InfiniBand sends to it failing
    # (`status=12`, retry counter exceeded): with another rank's error in the block, that
    # error is the cause and the fault its symptom.
    peer = _peer_errors(block)
    if (network := _network_fault(block, errors)) and not peer:
        return network
    if any(_REMOTE_ERROR.search(m.text) for m in hints):
        hints = [m for m in hints
                 if m.class_id != _REMOTE_ERROR_CLASS and not _REMOTE_ERROR.search(m.text)]
    # a kill after Slurm ended the step or the allocation is Slurm's, not the OOM killer's
    ended = next((n for n, t in block if _SLURM_ENDED.search(t)), None)
    if ended is not None:
        hints = [m for m in hints if not (m.class_id == "host_oom" and m.line_no > ended
                                          and not _MEMORY_USE.search(m.text))]
    # The error block names its cause when its only specific hint is one of these (a bare
    # `Killed`), or when nothing but a rank SIGKILLed and the launcher's traceback around it.
    specific = {m.class_id for m in hints} - {"unknown_failure"}
    if not specific and (cause := _cause_in_traceback(block)):
        return cause
    if not specific and any(_SIGBUSED.search(t) for t in errors):
        return Ending("dataloader_worker_killed")
    if not specific and ended is None and any(_SIGKILLED.search(t) for t in errors):
        return Ending("host_oom")
    if len(specific) == 1 and specific <= _DECIDED_BY_LAST_HINT and not (
            specific <= _SIGNAL_ANNOUNCED and _error_before(block, hints, specific)):
        return Ending(next(iter(specific)))
    if hints or any(not _WARNING.search(t) and _reports_error(t) for t in errors):
        # another rank's own error speaks for itself, not the NCCL lines around it
        return (named_by_vocabulary(peer or block) if not specific else None) or Ending(
            "unknown_failure", peer)
    return None


def says_error(text: str) -> bool:
    """A line (normalized) is part of an error, not a warning: a traceback's header or frame,
    or a line that reports an error (`_reports_error`) that no warning's words label
    (`_WARNING`: `UserWarning: failed to …` is a warning)."""
    return bool(_TRACEBACK.search(text) or _FRAME.match(text)
                or (not _WARNING.search(text) and _reports_error(text)))


def _reports_error(text: str) -> bool:
    """A line reports an error (`_ERROR_LINE`) or is a shell's notice of a fatal signal
    (`_SIGNAL_NOTICE`) once the metrics named an error on it are left out, wherever they are
    (`_METRIC_ERROR`: `Avg Error: 0.09`, `val_error=0.12`): `Finished training epoch: Avg
    Loss: 0.31, Avg Error: 0.09` reports none; `RuntimeError: ...` and `val_error=0.12, Failed
    to save checkpoint` report one. tensorpack's ScalarPrinter line (`_TENSORPACK_SCALAR`:
    `val-error-top1: 0.52`) reports none."""
    if "@monitor.py:" in text and _TENSORPACK_SCALAR.search(text):
        return False
    text = _METRIC_ERROR.sub(" ", text)
    return bool(_ERROR_LINE.match(text) or _SIGNAL_NOTICE.search(text))


def _error_before(block: Sequence[tuple[int, str]], hints: Sequence[Any],
                  classes: set[str]) -> bool:
    """Whether a traceback's exception other than a signal's own (KeyboardInterrupt,
    SystemExit, torchrun's SignalException) comes before the first hint of `classes`: that
    error ended the run, and the scheduler's signal the other ranks announce after it is srun
    or torchrun stopping them (a multi-node job's ValueError, then `Received SIGTERM`)."""
    first_hint = min(m.line_no for m in hints if m.class_id in classes)
    return any(frames and raised[0] < first_hint and not _SIGNALS_OWN.match(text)
               for frames, raised, text in _exceptions(block))


def _peer_errors(block: Sequence[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """The exception lines of an error block that holds NCCL's remote error (or its older system
    error) other than a signal's own and the collateral ones (`_COLLATERAL_EXCEPTION`): another
    rank's own failure, the remote error's cause; () when there is none or no such NCCL
    error."""
    texts = [normalize_line(t) for _, t in block]
    if not any(_REMOTE_ERROR.search(t) or _SYSTEM_ERROR.search(t) for t in texts):
        return ()
    return tuple(raised for _, raised, text in _exceptions(block)
                 if not _SIGNALS_OWN.match(text) and not _COLLATERAL_EXCEPTION.search(text))


def _network_fault(block: list[tuple[int, str]], errors: list[str]) -> Ending | None:
    """A node's network fault when NCCL names one (`_NETWORK_FAULT`) in an error block that NCCL's
    error ends (its remote error, or the system error older NCCL gave the same fault); None
    otherwise."""
    if not any(_REMOTE_ERROR.search(e) or _SYSTEM_ERROR.search(e) for e in errors):
        return None
    network = [(n, t) for (n, t), e in zip(block, errors, strict=True)
               if _NETWORK_FAULT.search(e)]
    return Ending("node_failure", tuple(network)) if network else None
