"""The decision: ONE diagnosis of a job from what the scan kept and what Slurm says.

`diagnose` turns catalogue matches, the metric series, the log's last lines and `Accounting`
into one `Diagnosis`: a class id of docs/failures.md, with evidence lines, secondary classes,
the causal chain (a stall upstream of an NCCL abort), the node to exclude and `decided_by` (how
far a person may trust it). Decisive evidence first (a primary signature; sacct's State, which
explains the end even when the log shows collateral errors; the class they name is
bot.core.diagnose.decisive's), then the detectors for a running job (stall, leak), then how the
log ends when there is no accounting (bot.core.diagnose.ending, then its
quiet endings: bot.core.diagnose.framework_end, last_epoch, finish_said, shell_prompt)
or when the job FAILED with an exit status that names no cause
(exit 1, an abort: the log's ending read alike, by hint), and for a finished job with no
signature `settle_finished` (completed, silent_exit or unknown_failure); the cause its
explanation states is bot.core.diagnose.stated_cause's. A log whose error block holds NCCL's
remote error (`ncclRemoteError`) is read alike with and without accounting: the remote error is
a peer's failure, so the cause another rank's error or the fabric names decides (by hint) over
what the reporting rank's exit code or signal says (SIGABRT reads as nccl_timeout, exit 1 as
unknown_failure), which decides only when nothing names a cause. Likewise a log that ends in a
run interrupted by hand (KeyboardInterrupt) inside a blocking wait is a hang by hint with and
without accounting, as the interrupt's SIGINT or exit code names no cause, and a
ZeroDivisionError raised in apex's amp scaler (its loss scale underflowed) is a divergence by
hint, and a pickle that ends early in torch.load a truncated checkpoint, which exit 1 cannot
name. A training framework's own announcement of the scheduler's signal is read against its
source (bot.core.diagnose.announced): submitit's time-out verdict far from the limit, or after
it bypassed a SIGTERM, is a preemption, and the requeue and exit lines submitit prints after its
verdict take the verdict's class; Megatron's or Lightning's exit 0 after a SIGTERM with Slurm's
COMPLETED 0:0 is a time limit by hint, and OpenNMT-py's exit 0 right after the OOM it caught
(tensor-parallel's `sys.exit()`) that OOM by hint. Slurm's TIMEOUT, PREEMPTED or NODE_FAIL
after the run stopped on a non-finite loss or metric (no training progress after it) is the
divergence, the scheduler's class secondary: the run had stopped training, and a resume
diverges again. A job that starts again by itself after the run its log shows (Slurm's requeue,
Lightning's or submitit's own) has nothing to act on (bot.core.diagnose.requeue); the matches
weighed are those bot.core.diagnose.set_aside keeps. A job that ended while it waited in the
queue (accounting's `never_started`) is judged from its accounting alone, whatever a log says:
it ran nothing, and a person decides whether to submit it again. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from bot.core.detectors import (
    LeakFinding,
    SilentExitFinding,
    StallFinding,
    completion_ending,
    detect_broken_save,
    detect_leak,
    detect_stall,
    leak_trend,
    overridden_markers,
)
from bot.core.diagnose.after_target import next_phase_after
from bot.core.diagnose.announced import (
    as_submitit_decided,
    stopped_on_sigterm,
    submitit_preemption,
    submitit_verdict,
    submitit_verdicts_only,
)
from bot.core.diagnose.cause import (
    NONE_CLASS,
    Cause,
    EpilogueMemory,
    Evaluating,
    FinishedInOwnWords,
    Requeued,
    ShellReturned,
    Signalled,
    SignalStop,
    SilentExit,
    StillAlive,
    SubmititPreempted,
    TargetReached,
    case_detail,
)
from bot.core.diagnose.closing_summary import ClosingShapes, ends_in_closing_summary
from bot.core.diagnose.decisive import (
    ACCOUNTING_FIRST,
    choose_class,
    class_priority,
    deciding_accounting,
    exit_names_no_cause,
    never_started,
)
from bot.core.diagnose.ending import (
    ends_cut_off,
    ends_in_error,
    exits_after_removed_batch,
    remote_error_cause,
    traceback_cause,
)
from bot.core.diagnose.epilogue import epilogue_memory_kill
from bot.core.diagnose.final_validation import in_final_validation
from bot.core.diagnose.finish_said import ends_in_finish_said, ends_open_pass
from bot.core.diagnose.finished_job import marker_decides, settle_finished, target_reached
from bot.core.diagnose.framework_end import (
    ends_in_closed_progress_table,
    ends_in_final_save,
    ends_in_keras_last_epoch,
)
from bot.core.diagnose.last_epoch import ends_after_target, ends_at_last_epoch
from bot.core.diagnose.progress_shown import ends_in_open_progress_bar, epochs_left
from bot.core.diagnose.requeue import (
    NOT_STARTED,
    SUBMITIT_VERDICTS,
    lightning_requeue,
    requeue_after,
    submitit_requeue,
)
from bot.core.diagnose.root_failure import (
    rank_killed_first,
    remote_error_symptom,
    stopped_on_non_finite,
)
from bot.core.diagnose.set_aside import deciding_matches
from bot.core.diagnose.shell_prompt import ends_at_shell_prompt
from bot.core.diagnose.stated_cause import stated_cause, stopped_at_target
from bot.core.metrics import MetricSeries
from bot.core.models import (  # the decided_by vocabulary is Diagnosis's, re-exported here
    ACCOUNTING,
    DETECTOR,
    HINT,
    MEMORY_CLASSES,
    PROGRESS,
    SIGNATURE,
    Accounting,
    Action,
    Diagnosis,
    DiagnosisMetrics,
    Evidence,
    UpstreamCause,
    run_target,
)
from bot.core.nodes import node_in
from bot.core.policy import DEFAULT_POLICY

_EVIDENCE_MAX = 6


#: Failures that leave the checkpoint being saved when they happen partial: the diagnosis marks
#: that save (`during_checkpoint_save`, its start line as evidence).
_SAVE_BREAKING_CLASSES = frozenset({"host_oom", "disk_full"})

#: Faults of a node (its GPU, the node itself, a collective timed out on it): resubmitted
#: elsewhere, with --exclude=<node> when the log names it.
NODE_CLASSES = frozenset({"gpu_failure", "node_failure", "nccl_timeout"})

#: What accounting alone reads in a failed job whose ranks saw NCCL's remote error: the
#: reporting rank's SIGABRT (nccl_timeout) or exit code (unknown_failure), not the peer's cause.
_REPORTING_RANKS_CLASSES = frozenset({"nccl_timeout", "unknown_failure"})
# Megatron's persistent-error verdict, printed on the GPU that reran the step correctly: the
# faulty GPU was the previous run's, which this log does not name.
_PERSISTENT_VERDICT = re.compile(r"iteration #[0-9]+: Possible persistent error!")


# Used when a class id is missing from the catalogue (e.g. `none`: its `detail` says how it
# runs, with no hint after it).
_DEFAULTS: dict[str, tuple[Action, bool, bool, str]] = {
    NONE_CLASS: (Action.NONE, False, False, ""),
}
#: The actions whose proposals submit a job (incident._propose: resubmit, or ask's resubmit and
#: resubmit with more memory), never offered for a job Slurm shows alive.
_SUBMITTING_ACTIONS = frozenset({Action.RESUBMIT, Action.ASK})
#: A class whose proposal cancels the running job before it resumes it (a hang's cancel and
#: resume): no second copy, so it stays offered while the job runs.
_CANCELLING_CLASSES = frozenset({"hang"})


def diagnose(
    catalogue: Any,
    *,
    matches: Iterable[Any],
    series: MetricSeries,
    tail: Sequence[tuple[int, str]] = (),
    epilogue: Sequence[tuple[int, str]] = (),
    accounting: Accounting | None = None,
    now: float | None = None,
    target_iter: int | None = None,
    stall_min_s: float = DEFAULT_POLICY.stall_min_s,
    stall_factor: float = DEFAULT_POLICY.stall_factor,
    save_time_s: float = DEFAULT_POLICY.save_time_s,
    leak_min_samples: int = DEFAULT_POLICY.leak_min_samples,
    leak_warn_margin: float = DEFAULT_POLICY.leak_warn_margin,
    min_elapsed_s: float = 60.0,
    evaluation_start: int | None = None,
    goes_on_at: int | None = None,
    goes_on_text: str | None = None,
    closing_shapes: ClosingShapes | None = None,
    outer_headers: Sequence[tuple[int, str]] = (),
) -> Diagnosis:
    """ONE diagnosis from catalogue matches, the metric series and accounting.

    `now` is the time on the log's clock at which a running job is judged (default: the
    last timestamp in the log). `target_iter` is the run's target as its submit or recipe set
    it, or (the watcher's) an earlier attempt's log printed; without one, what this log printed
    (`/8000`: bot.core.models.run_target).
    The thresholds are a policy's (bot.core.policy.PolicyParams, same names; its defaults).
    `evaluation_start` is the line of the last evaluation the framework opened after the last
    run's first completion marker (Hugging Face Trainer's `***** Running Evaluation *****`:
    bot.core.diagnose.scan finds it), None when there is none; `goes_on_at` the last line
    from there on that says training goes on (bot.core.detectors.TRAINING_GOES_ON:
    Lightning's `Training will continue...`, a next fit's or train()'s start), `goes_on_text`
    that line's text (the minimums a later Lightning stop is read against). `epilogue` is the
    lines before `tail` that may be a PBS or Torque epilogue's (bot.core.diagnose.epilogue:
    the scan keeps them from the log's last EPILOGUE_REACH lines), read with the tail for its
    memory kill. `closing_shapes` is the scan's record of the lines with a closing word
    (bot.core.diagnose.closing_summary): with no accounting, a log that ends in a summary new
    to it after its last progress ends a finished run; None reads no summary.
    `outer_headers` the scan's latest lines with an outer loop's counter (`Fold 1/5`), the
    tail's or earlier: a program's closing words inside a pass short of the last are that
    pass's.
    A log that holds several runs (a requeued job's, each run appended) is read by its last:
    the series is that run's (bot.core.metrics, from `series.run_start`), and only the matches
    and lines from there decide; a run with no progress yet is judged as a fresh job (no stall
    counted from an earlier run's progress, no pace or leak fit across the requeue).
    """
    # an exit status alone (no State) is a job that ended, read as Slurm's State for it
    acct = (accounting or Accounting()).as_ended()
    if (never := acct.never_started) is not None and acct.state is not None \
            and not acct.is_running and acct.state not in NOT_STARTED:
        return never_started(catalogue, acct, never, target_iter)
    if series.run_start is not None:
        matches = [m for m in matches if m.line_no >= series.run_start]
        tail = [(n, text) for n, text in tail if n >= series.run_start]
        epilogue = [(n, text) for n, text in epilogue if n >= series.run_start]
    matches = as_submitit_decided(deciding_matches(matches, series, tail))
    target = run_target(submitted=None, configured=target_iter, logged=series.target_iter)
    judge_at = now if now is not None else series.last_time
    primary = [m for m in matches if m.primary and m.class_id in catalogue.classes]
    failed_classes = {m.class_id for m in primary} - {"completed"}
    state_classes = deciding_accounting(catalogue, acct, matches)

    trend = leak_trend(series, acct.mem_limit_bytes)
    leak = detect_leak(series, acct.mem_limit_bytes, target_iter=target, trend=trend,
                       min_samples=leak_min_samples, warn_margin=leak_warn_margin)
    secondary: list[str] = []
    upstream: UpstreamCause | None = None
    stall: StallFinding | None = None
    during_save = False
    evidence: list[Evidence] = []
    silent: SilentExitFinding | None = None
    # what decided the class in the branches below and the explanation states (a silent exit's
    # reasons, the shell's prompt, Megatron's stop on a SIGTERM); else `stated_cause`'s
    case_cause: Cause | None = None

    # how the log ends around its completion marker (no training progress after it; an
    # evaluation after it, whose bar is no training progress), read once for the branches
    # below and the silent exit detector
    completion = completion_ending(matches, series, evaluation_start, goes_on_at, goes_on_text)

    chosen = choose_class(catalogue, failed_classes, state_classes, acct)
    decided_by = (SIGNATURE if chosen in failed_classes else ACCOUNTING) if chosen else PROGRESS
    if chosen == "time_limit" and acct.state in (None, "COMPLETED") and stopped_at_target(
            primary, target):
        # Megatron's --exit-interval divides the run's length: its last stop is the end
        chosen, decided_by = "completed", PROGRESS
    if chosen in ACCOUNTING_FIRST and chosen in state_classes and stopped_on_non_finite(
            primary, series, chosen):
        # Slurm's TIMEOUT, PREEMPTED or NODE_FAIL came after the run stopped on a non-finite
        # loss or metric (Lightning's check_finite, its own NaN abort) and idled (a teardown,
        # peers waiting in a collective): the divergence is why it made no progress, and a
        # resume diverges again; the scheduler's class stays a secondary one
        chosen, decided_by = "nan_loss", SIGNATURE
    if chosen == "time_limit" and "time_limit" not in state_classes and (
            misread := submitit_preemption(
                [m for m in primary if m.class_id == "time_limit"], matches)) is not None:
        # submitit's time-out verdict covers the run's last 20 % (10 minutes): the figures or
        # the SIGTERM it bypassed before it say the scheduler preempted the job
        chosen, case_cause = "preempted", SubmititPreempted(misread)
        failed_classes.discard("time_limit")
        evidence = [Evidence(n, t) for n, t in misread.lines]
    elif chosen == "preempted" and "preempted" in state_classes and submitit_verdicts_only(
            [m for m in primary if m.class_id == "time_limit"]):
        # sacct's PREEMPTED: submitit's time-out verdict was its clock's guess, no second class
        failed_classes.discard("time_limit")
    if chosen is not None and chosen not in state_classes and (
            requeue := requeue_after(chosen, acct, matches, series, case_cause)) is not None:
        # waiting to start again (requeued: preempted, its node failed, scontrol requeue, or
        # submitit's own requeue after its verdict), or running again after submitit's requeue
        # with nothing of its next run in the log yet: the run this log shows ended is history,
        # the job starts again by itself (a resubmit would run it twice); its class stays a
        # secondary one (a time-out verdict read as a preemption is no failed class: added
        # here), and so does what the requeue shows the run ended in (Lightning's: its time
        # limit, whatever failure followed)
        secondary.extend(c for c in (chosen, *requeue.secondary) if c not in secondary)
        case_cause = requeue.cause
        evidence.extend(requeue.evidence)
        # sacct's REQUEUED or PENDING says it; RUNNING only with the framework's line
        chosen, decided_by = NONE_CLASS, ACCOUNTING if acct.state in NOT_STARTED else HINT
    elif chosen in SUBMITIT_VERDICTS and acct.is_running and chosen not in state_classes and (
            submitit_verdicts_only([m for m in primary if m.class_id in SUBMITIT_VERDICTS])) and (
            verdict := submitit_verdict(matches, tail)) is not None:
        # still running after submitit's verdict, with no requeue line yet: its handler is
        # saving a checkpoint to requeue the job, or said it will not and the job is ending;
        # Slurm requeues or ends it by itself and the watcher judges it then, while a resubmit
        # now would run a second copy beside it. The verdict's class stays a secondary one
        if chosen not in failed_classes:  # submitit's time-out verdict read as a preemption
            secondary.append(chosen)
        gave_up = verdict.not_requeued
        case_cause = Signalled("time_limit" if verdict.timed_out else "preempted", verdict.line,
                               gave_up[0] if gave_up else None, cause=case_cause)
        evidence += [Evidence(verdict.line, verdict.text)] + (
            [Evidence(*gave_up)] if gave_up else [])
        chosen, decided_by = NONE_CLASS, HINT
    if chosen == "nccl_timeout" and decided_by == SIGNATURE and (
            killed := rank_killed_first(matches, primary, series)) is not None:
        # a rank SIGKILLed before its peers' collectives timed out: their timeout waited for
        # the rank the kernel's OOM killer took, the cause (by hint: a SIGKILL alone)
        chosen, decided_by = "host_oom", HINT
        evidence = [Evidence(killed.line_no, killed.text)]
    last_lines = sorted({**dict(epilogue), **dict(tail)}.items())  # the tail and the epilogue's
    if (killed_over := epilogue_memory_kill(last_lines)) is not None and (
            chosen is None
            or class_priority(catalogue, chosen) < class_priority(catalogue, "host_oom")):
        # PBS's or Torque's epilogue: killed by a signal with more memory used than requested
        chosen, decided_by, case_cause = "host_oom", SIGNATURE, EpilogueMemory(killed_over)
        failed_classes.add("host_oom")
        evidence = [Evidence(n, t) for n, t in killed_over.lines]
    summary: tuple[int, str] | None = None  # a closing summary that ends a finished run
    running = acct.is_running or acct.state in NOT_STARTED or (
        acct.state is None and chosen is None
    )

    if chosen is None and running:
        stall = detect_stall(
            series, judge_at, min_s=stall_min_s, factor=stall_factor, save_time_s=save_time_s
        )
        if stall is not None:
            chosen, decided_by = "hang", DETECTOR
            evidence = [Evidence(stall.last_line, stall.last_text)]
        elif leak is not None:
            chosen, decided_by = "memory_leak", DETECTOR
            evidence = _leak_evidence(leak)
        elif acct.state is not None and (
                lightning := lightning_requeue(acct.state, matches, series)) is not None:
            # Slurm shows the job waiting to start again (REQUEUED, PENDING) or started again
            # with nothing of its next run in the log yet: the run this log shows ended in
            # Lightning's own requeue, as it reads without accounting (below), not in progress
            secondary.extend(lightning.secondary)
            chosen, decided_by = NONE_CLASS, HINT
            case_cause, evidence = lightning.cause, list(lightning.evidence)
        elif acct.state is None and (
                ended := ends_cut_off(catalogue, tail) or ends_in_error(matches, tail, series)):
            # no accounting; the log ends in a deciding line cut off or in an error
            chosen, decided_by = ended.class_id, HINT
            evidence = [Evidence(n, t) for n, t in ended.lines]
        elif completion.evaluates_after_marker and (
                acct.state is not None or ends_in_open_progress_bar(tail)):
            # running its evaluation after training completed: not training
            assert completion.marker_line is not None  # an evaluation after the marker
            chosen = NONE_CLASS
            case_cause = Evaluating(completion.marker_line)
        elif acct.state is None and in_final_validation(
                matches, completion.marker_line, tail) is not None:
            # no accounting: YOLO's trainer validates best.pt after its `N epochs completed`
            # marker, and the log ends inside that validation (no `Speed:` or `Results saved
            # to` after it yet; its bar is no training progress): still running
            assert completion.marker_line is not None  # the marker the validation follows
            chosen = NONE_CLASS
            case_cause = Evaluating(completion.marker_line)
        elif acct.state is None and (
            (marker_ends := completion.ends_in_marker and not next_phase_after(
                tail, completion.marker_line or 0)
             and not ends_open_pass(tail, series, outer_headers, completion.marker_line or 0))
            or not series.ends_inside_evaluation and (
                (target_reached(series, target) and not ends_in_open_progress_bar(tail)
                 and (target_iter is not None or not epochs_left(tail)))
                or ends_in_final_save(series, tail)
                or ends_in_closed_progress_table(tail)
                or ends_in_keras_last_epoch(tail)
                or ends_at_last_epoch(tail, series, outer_headers)
                or (summary := ends_in_closing_summary(tail, series, closing_shapes)) is not None)
        ):
            # no accounting: a completion marker with no training progress nor a next phase
            # (a loading bar, a stage's header: after_target.starts_next_phase) after it and
            # no early stop nor a marker naming a pass inside an outer loop's pass short of its
            # last (Keras's in `Fold 1/5`, `Training complete for fold 2`, the fold's header
            # however far back: ends_open_pass), the
            # target reached (no evaluation it started after it still open: mmcv's, until its
            # `Epoch(val)` line), a final save, a closed progress table, Keras's last epoch
            # finished, the last epoch's report as the last progress or a closing summary new to
            # the log after its last progress ends a finished run
            chosen = "completed"
            if marker_ends:
                decided_by = SIGNATURE
            elif summary is not None:
                evidence = [Evidence(*summary)]
        elif not acct.says_how_it_ended and (
                reached := ends_after_target(tail, series, outer_headers)) is not None:
            # no accounting: the training reached the run's own target (its last epoch's
            # report) and the log ends after it with only reports (an evaluation's results, a
            # save, a summary, a banner) and no training, outer loop's next pass, error or
            # signal: a loop that ended, inferred from where it stopped, not said by a line
            chosen, decided_by, case_cause = "completed", HINT, TargetReached(reached)
            evidence = [Evidence(reached.line, reached.text)]
        elif not acct.says_how_it_ended and (
                said := ends_in_finish_said(tail, series, outer_headers)) is not None:
            # no accounting: after training, the program said it finished in its own words
            # (`Done training.`, `All done!`) and only reports, saves or nothing follow
            chosen, decided_by, case_cause = "completed", HINT, FinishedInOwnWords(said)
            evidence = [Evidence(said.line, said.text)]
        elif acct.state is None and (prompt := ends_at_shell_prompt(tail, series)):
            # the shell's prompt came back after progress or start-up output, with no error and
            # no end of training
            chosen, decided_by = prompt.class_id, HINT
            evidence = [Evidence(n, t) for n, t in prompt.lines]
            case_cause = ShellReturned(prompt, series.last_iteration)
        else:
            chosen = NONE_CLASS
    elif chosen is None:
        chosen, silent = settle_finished(
            catalogue, acct, series, matches, target, min_elapsed_s, completion
        )
        decided_by = DETECTOR if silent is not None else (
            SIGNATURE if chosen == "completed" and marker_decides(completion)
            # COMPLETED 0:0 with the training progress at its target: the progress that got
            # there decided it with sacct, no doubt left ("look closer" is for sacct alone)
            else PROGRESS if chosen == "completed" and target_reached(series, target)
            else ACCOUNTING)
        case_cause = SilentExit(silent) if silent is not None else None
        if chosen == "silent_exit" and (stopper := stopped_on_sigterm(matches, series)):
            # the framework caught a SIGTERM and exited 0 (Megatron after its save, Lightning's
            # SIGTERMException): Slurm's --signal warning before the limit, or scancel --signal;
            # read as the log alone reads it
            chosen, decided_by, silent, case_cause = "time_limit", HINT, None, SignalStop(stopper)
        elif chosen == "silent_exit" and (
                exited := exits_after_removed_batch(matches, tail, series)) is not None:
            # OpenNMT-py's tensor-parallel trainer exits 0 (`sys.exit()`) right after the OOM it
            # caught: the OOM ended the run, as the log alone reads it
            chosen, decided_by, silent, case_cause = exited.class_id, HINT, None, None
            evidence = [Evidence(n, t) for n, t in exited.lines]
    if decided_by == ACCOUNTING and chosen in _REPORTING_RANKS_CLASSES and acct.state in (
            None, "FAILED") and (cause := remote_error_cause(matches, tail, series)):
        # NCCL's remote error: the exit code or signal is the rank's that reported a peer's
        # failure; the cause the log names (the fabric, another rank's error) decides
        chosen, decided_by = cause.class_id, HINT
        evidence = [Evidence(n, t) for n, t in cause.lines]
    elif decided_by == ACCOUNTING and chosen == "unknown_failure" and (
            named := traceback_cause(matches, tail, series)):
        # the traceback names a cause the exit code or signal cannot: a run interrupted by hand
        # while it waited (a hang), apex's loss scale underflowing (a divergence)
        chosen, decided_by = named.class_id, HINT
        evidence = [Evidence(n, t) for n, t in named.lines]
    elif decided_by == ACCOUNTING and chosen == "unknown_failure" and exit_names_no_cause(
            catalogue, acct) and (
            ended := ends_cut_off(catalogue, tail) or ends_in_error(matches, tail, series)) and (
            ended.class_id != "unknown_failure"):
        # an exit status that names no cause (exit 1, an abort): how the log ends names it, as
        # it does without accounting (a bare `Killed`, ranks SIGKILLed, the error's own words)
        chosen, decided_by = ended.class_id, HINT
        evidence = [Evidence(n, t) for n, t in ended.lines]
    if acct.state is None and chosen in SUBMITIT_VERDICTS and (
            own := submitit_requeue(None, matches, series, case_cause)) is not None:
        # submitit requeued the job itself (scontrol requeue) after its verdict: Slurm starts it
        # again. The time-out or preemption stays the class (it is the cause), and a time-out
        # verdict read as a preemption (SubmititPreempted) stays the requeue's cause; nothing to
        # do (below), as a resubmit would run it twice
        case_cause = own.cause
        evidence.extend(own.evidence)
    elif acct.state is None and chosen not in (NONE_CLASS, "completed") and decided_by in (
            SIGNATURE, HINT) and (
            lightning := lightning_requeue(None, matches, series)) is not None:
        # Lightning requeued the job itself (`Requeued SLURM job: N`: its scontrol requeue
        # returned 0) on Slurm's warning before the limit: Slurm ends the run and starts the
        # job again, as when sacct shows it requeued (requeue_after); a resubmit would run it
        # twice. A failure the log shows after that line (a peer's NCCL watchdog, a rank
        # killed) is the run dying as Slurm requeues it: it and the run's time limit stay
        # secondary classes, a failure its signature decided first, as with sacct REQUEUED,
        # PENDING or RUNNING (where how the log ends is not read)
        shown = (chosen,) if chosen in failed_classes else ()
        secondary.extend(c for c in (*shown, *lightning.secondary) if c not in secondary)
        chosen, decided_by = NONE_CLASS, HINT
        case_cause, evidence = lightning.cause, list(lightning.evidence)

    abort = next((m for m in primary if m.class_id == "nccl_timeout"), None)
    if chosen == "nccl_timeout" and abort is not None:
        abort_time = _line_time(series, abort.text) or judge_at
        stall = detect_stall(
            series, abort_time, min_s=stall_min_s, factor=stall_factor, save_time_s=save_time_s
        )
        if stall is not None and stall.last_line < abort.line_no:
            upstream = UpstreamCause(
                class_id="hang",
                started_at=stall.started_at,
                last_iter=stall.last_iter,
                seconds_before_failure=stall.stalled_s,
            )
            secondary.append("hang")
            evidence.append(Evidence(stall.last_line, stall.last_text))
    if chosen in _SAVE_BREAKING_CLASSES:
        # a host OOM or a full disk inside a save: the checkpoint it was writing is partial
        failed_at = [m.line_no for m in primary if m.class_id == chosen]
        finding = detect_broken_save(series, failed_at[0] if failed_at else None)
        if finding is not None:
            during_save = True
            evidence.append(Evidence(finding.save.start_line, finding.save.start_text))

    # A fault of the node itself: which node its lines, its class's lines or the log's last
    # lines name, so a resubmit can avoid it (--exclude). An NCCL timeout only when its own lines
    # trace it to one node; none when Megatron's persistent-error verdict says the faulty GPU was
    # the previous run's.
    node = None
    if chosen in NODE_CLASSES:
        lines = [e.text for e in evidence]
        if chosen != "nccl_timeout":
            lines += [m.text for m in matches if m.class_id == chosen] + [t for _, t in tail]
        node = node_in(lines)
        if any(_PERSISTENT_VERDICT.search(t) for t in lines):
            node = None
    leak_fit = None
    if chosen in MEMORY_CLASSES and trend is not None and detect_leak(
            series, None, trend=trend, min_samples=leak_min_samples) is not None:
        start_iter = trend.finding.first.iteration or 0
        leak_fit = {"slope_gib_per_100_iter": round(trend.slope_gib_per_100_iter, 3),
                    "start_iter": start_iter,
                    "start_gib": round(trend.intercept_gib
                                       + trend.slope_gib_per_iter * start_iter, 2)}

    if chosen == "silent_exit":
        evidence += [Evidence(m.line_no, m.text) for m in matches
                     if m.class_id not in ("completed",)][:_EVIDENCE_MAX]
    # a completed run's markers that decided it, not the stops Lightning overrode (training
    # went on after them: below min_epochs or min_steps)
    overridden = overridden_markers(matches, series, goes_on_at, goes_on_text) if (
        chosen == "completed") else frozenset()
    evidence += [Evidence(m.line_no, m.text) for m in primary
                 if m.class_id == chosen and m.line_no not in overridden]
    evidence += [Evidence(m.line_no, m.text) for m in matches
                 if not m.primary and m.class_id == chosen and m.line_no not in overridden]
    if chosen in ("unknown_failure", "silent_exit") and len(evidence) < _EVIDENCE_MAX:
        evidence += [Evidence(n, t) for n, t in tail[-10:] if t.strip()]

    for cid in sorted(failed_classes, key=lambda c: -class_priority(catalogue, c)):
        if cid != chosen and cid not in secondary:
            secondary.append(cid)
    if leak is not None and chosen != "memory_leak" and "memory_leak" not in secondary:
        secondary.append("memory_leak")
    for cid in state_classes:
        if cid not in (chosen, "completed", "unknown_failure") and cid not in secondary and not (
                cid == "nccl_timeout" and remote_error_symptom(chosen, matches, tail, series)):
            secondary.append(cid)
    completed_ok = acct.state == "COMPLETED" and not acct.exit_code and not acct.signal
    # Slurm said COMPLETED 0:0 although this failed; not a time limit, which with 0:0 is the
    # training framework's own planned stop (Megatron's, Lightning's Timer), exit 0 by design
    if completed_ok and chosen not in ("completed", "silent_exit", "time_limit", NONE_CLASS):
        secondary.append("silent_exit")

    stall_seconds = None
    if upstream is not None:
        stall_seconds = upstream.seconds_before_failure
    elif stall is not None:
        stall_seconds = stall.stalled_s
    metrics = DiagnosisMetrics(
        last_iter=series.last_iteration,
        target_iter=target,
        sec_per_iter=_round(series.sec_per_iter(), 3),
        last_loss=series.last_loss,
        rss_gib_per_100_iter=_round(trend.slope_gib_per_100_iter, 2) if trend else None,
        projected_oom_iter=leak.projected_oom_iter if leak else None,
        stall_seconds=_round(stall_seconds, 1),
    )
    action, retryable, charges, hint = _class_info(catalogue, chosen)
    if isinstance(case_cause, Requeued | Signalled):
        # the job starts again or ends by itself: whatever its run's end was, nothing to
        # resubmit
        action, retryable = Action.NONE, False
    elif _alive(acct) and action in _SUBMITTING_ACTIONS and chosen not in _CANCELLING_CLASSES:
        # Slurm shows the job alive: whatever its log shows (an NCCL timeout, one rank's OOM),
        # a resubmit now would run a second copy beside it. The class stays; nothing is done
        # until it ends, when the watcher judges it from how Slurm says it ended
        case_cause = StillAlive(acct.state or "", case_cause if case_cause is not None else (
            stated_cause(chosen, series=series, leak=leak, stall=stall, upstream=upstream,
                         during_save=during_save, acct=acct, matches=matches, tail=tail,
                         target=None if completion.evaluates_after_marker else target)))
        action, retryable = Action.NONE, False
    cls = catalogue.classes.get(chosen)
    return Diagnosis(
        class_id=chosen,
        action=action,
        retryable=retryable,
        charges_budget=charges,
        hint=hint,
        title=cls.title if cls is not None else "",
        detail=case_detail(case_cause if case_cause is not None else stated_cause(
            chosen, series=series, leak=leak, stall=stall, upstream=upstream,
            during_save=during_save, acct=acct, matches=matches, tail=tail,
            # after an evaluation the series' last figures are its bar's, not training's
            target=None if completion.evaluates_after_marker else target)),
        translations=dict(getattr(cls, "translations", None) or {}),
        site_title=bool(getattr(cls, "site_title", False)),
        site_hint=bool(getattr(cls, "site_hint", False)),
        evidence=_dedupe(evidence),
        secondary=tuple(secondary),
        metrics=metrics,
        upstream=upstream,
        during_checkpoint_save=during_save,
        decided_by=decided_by,
        leak_fit=leak_fit,
        node=node,
    )



def _line_time(series: MetricSeries, text: str) -> float | None:
    return series.parser.clock.parse_line(text)


def _leak_evidence(leak: LeakFinding) -> list[Evidence]:
    return [Evidence(leak.first.line_no, leak.first.text), Evidence(leak.last.line_no,
                                                                    leak.last.text)]


def _alive(acct: Accounting) -> bool:
    """Slurm shows the job alive: running (RUNNING, COMPLETING, SUSPENDED, STOPPED) or
    waiting to start (again) (PENDING, REQUEUED, ...)."""
    return acct.is_running or acct.state in NOT_STARTED


def _class_info(catalogue: Any, class_id: str) -> tuple[Action, bool, bool, str]:
    cls = catalogue.classes.get(class_id)
    if cls is None:
        return _DEFAULTS.get(class_id, (Action.ASK, False, True, ""))
    return Action(cls.action), bool(cls.retryable), bool(cls.charges_budget), cls.hint.strip()


def _dedupe(evidence: list[Evidence]) -> tuple[Evidence, ...]:
    seen: set[int] = set()
    out = []
    for e in evidence:
        if e.line in seen:
            continue
        seen.add(e.line)
        out.append(Evidence(e.line, e.text.rstrip()))
        if len(out) >= _EVIDENCE_MAX * 2:
            break
    return tuple(sorted(out, key=lambda e: e.line))


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
