"""What training frameworks announce when the scheduler's signal reaches them, read against their
own source (bot.core.diagnose.announced): submitit's time-out verdict that was a preemption and
the lines it prints after either verdict, a framework's exit 0 after a SIGTERM, Lightning's
auto-requeue lines, DeepSpeed's launcher stopped by a SIGTERM anyone may have sent. Each log
line here is built from the format string in the framework's source file named in the test's
docstring."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import present
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Accounting, Action
from bot.slack.render import explain


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


# submitit's logger: `submitit INFO (2022-07-12 04:18:45,881) - <message>`
_INFO = "submitit INFO (2024-03-01 10:00:00,000) - "
_WARN = "submitit WARNING (2024-03-01 10:00:00,000) - "
_PROGRESS = ("submitit INFO (2024-03-01 09:00:00,000) - Starting with JobEnvironment(job_id=4242)"
             "\nepoch 3 step 1200 loss 0.53\n")


def _submitit_timed_out(ran: int, limit: int, before: str = "", after: str = "",
                        requeued: bool = True) -> str:
    """submitit/core/job_environment.py, SignalHandler.has_timed_out and
    checkpoint_and_try_requeue, then SlurmJobEnvironment._requeue (submitit/slurm/slurm.py) and
    SignalHandler._exit; not `requeued`: the checkpoint function returned None, so it logs why
    it does not requeue and raises UncompletedJobError."""
    end = (f"{_INFO}Requeued job 4242 (2 remaining timeouts)\n" + after
           + f"{_INFO}Exiting gracefully after preemption/timeout.\n" if requeued else
           f"{_INFO}Job not requeued because: checkpoint function returned None.\n" + after)
    return (_PROGRESS + before
            + f"{_INFO}Job has timed out. Ran {ran} minutes out of requested {limit} minutes.\n"
            + f"{_WARN}Caught signal SIGUSR2 on node07: this job is timed-out.\n"
            + f"{_INFO}Calling checkpoint method.\n" + end)


def _submitit_preempted(ran: int, limit: int) -> str:
    """The same handler on a preemption: submitit/core/job_environment.py, SignalHandler.bypass
    of the SIGTERM and SIGCONT Slurm sends first, has_timed_out's other verdict, then the same
    requeue and exit lines."""
    return (_PROGRESS
            + f"{_WARN}Bypassing signal SIGCONT\n"
            + f"{_INFO}Job has not timed out. Ran {ran} minutes out of requested {limit} "
              "minutes.\n"
            + f"{_WARN}Caught signal SIGUSR2 on node07: this job is preempted.\n"
            + f"{_INFO}Calling checkpoint method.\n"
            + f"{_INFO}Requeued job 4242 (3 remaining timeouts)\n"
            + f"{_INFO}Exiting gracefully after preemption/timeout.\n")


_AFTER_VERDICT = ("Requeued job 4242", "Exiting gracefully after preemption/timeout")


def _shows(d, *texts: str) -> bool:
    return all(any(t in e.text for e in d.evidence) for t in texts)


@pytest.mark.parametrize("text", [
    _submitit_timed_out(598, 600),
    # before 2021 (commit 8087c13): no `Job has timed out` line, the signal by number
    _submitit_timed_out(598, 600).replace(
        f"{_INFO}Job has timed out. Ran 598 minutes out of requested 600 minutes.\n", "").replace(
        "Caught signal SIGUSR2", "Caught signal 12"),
    # Hydra's submitit launcher logs through its own format
    _submitit_timed_out(598, 600).replace(_INFO, "[2024-03-01 10:00:00,000][submitit][INFO] - ")
    .replace(_WARN, "[2024-03-01 10:00:00,000][submitit][WARNING] - "),
])
def test_submitits_requeue_and_exit_lines_after_a_time_out_are_time_limit_evidence(catalogue,
                                                                                   text):
    """submitit/slurm/slurm.py, SlurmJobEnvironment._requeue (`Requeued job {jid} ({countdown}
    remaining timeouts)`) and job_environment.py, SignalHandler._exit (`Exiting gracefully after
    preemption/timeout.`) print the same after either verdict of checkpoint_and_try_requeue:
    after a time-out they are its evidence, not a preemption's."""
    d = read_log(catalogue, text)
    assert (d.class_id, d.secondary) == ("time_limit", ())
    assert _shows(d, *_AFTER_VERDICT)
    # sacct's PREEMPTED decides, but those lines follow submitit's time-out: no evidence of it
    preempted = read_log(catalogue, text, Accounting(state="PREEMPTED", exit_code=0, signal=0))
    assert preempted.class_id == "preempted"
    assert not any(line in e.text for e in preempted.evidence for line in _AFTER_VERDICT)


def test_submitits_requeue_and_exit_lines_after_a_preemption_are_its_evidence(catalogue):
    """has_timed_out's `Job has not timed out. Ran 61 minutes out of requested 120 minutes.`
    and `this job is preempted.`: the lines after them, and its figures, show the preemption."""
    d = read_log(catalogue, _submitit_preempted(61, 120))
    assert (d.class_id, d.decided_by) == ("preempted", "signature")
    assert _shows(d, "Job has not timed out. Ran 61 minutes", *_AFTER_VERDICT)


def test_submitits_requeue_and_exit_lines_without_its_verdict_name_no_cause(catalogue):
    """An excerpt with only the lines after the verdict: submitit prints them after a time-out
    as after a preemption (`preemption/timeout`), so the log alone names neither."""
    text = _BAR + f"{_INFO}Requeued job 4242 (2 remaining timeouts)\n" + (
        f"{_INFO}Exiting gracefully after preemption/timeout.\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by, d.retryable) == ("unknown_failure", "hint", False)
    timeout = read_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=15))
    assert timeout.class_id == "time_limit"


def test_submitits_time_out_verdict_far_from_the_limit_is_a_preemption(catalogue):
    """submitit/core/job_environment.py: has_timed_out calls a signal a time-out once the run
    used min(0.8 * limit, limit - 10 min); Slurm's time-limit warning is the --signal=USR2@90
    (submitit/slurm/slurm.py, signal_delay_s), so a verdict 100 minutes before a 600-minute
    limit was a preemption."""
    d = read_log(catalogue, _submitit_timed_out(500, 600, requeued=False))
    assert (d.class_id, d.decided_by) == ("preempted", "signature")
    assert d.detail == {"kind": "submitit_preempted", "minutes_left": 100, "limit_min": 600,
                        "bypassed_line": None}
    assert "time_limit" not in d.secondary
    assert any("Ran 500 minutes" in e.text for e in d.evidence)
    assert "100 minutes before the 600-minute limit" in explain(d)
    assert "선점했습니다" in explain(d, "ko")


@pytest.mark.parametrize(("ran", "expected"), [(598, "time_limit"), (590, "time_limit"),
                                               (589, "preempted")])
def test_submitits_verdict_in_its_last_ten_minutes_stays_a_time_limit(catalogue, ran, expected):
    """submitit/core/job_environment.py: `limit - 10 min` is submitit's own bound for the
    time-limit warning; within it the verdict stands (signal_delay_s 90 s, Hydra's 120 s)."""
    assert read_log(catalogue, _submitit_timed_out(ran, 600)).class_id == expected


def test_a_short_jobs_verdict_stands_its_figures_cannot_tell(catalogue):
    """submitit/core/job_environment.py: under 10 minutes every signal is `timed out`, and the
    --signal warning of a 2-minute job comes within its first minute: the log cannot tell."""
    assert read_log(catalogue, _submitit_timed_out(0, 2)).class_id == "time_limit"


@pytest.mark.parametrize("bypass", ["Bypassing signal SIGTERM", "Bypassing signal SIGCONT",
                                    "Bypassing signal 15"])
def test_submitit_bypassing_sigterm_before_its_time_out_verdict_is_a_preemption(catalogue,
                                                                               bypass):
    """submitit/slurm/slurm.py, SlurmJob._interrupt: "in case of preemption, SIGTERM is sent
    first"; job_environment.py's bypass logs it (by number before 2021, when it decided
    preemption by that order). At the time limit the USR2 warning comes first."""
    text = _submitit_timed_out(598, 600, before=f"{_WARN}{bypass}\n", requeued=False)
    d = read_log(catalogue, text)
    assert (d.class_id, present(d.detail)["kind"]) == ("preempted", "submitit_preempted")
    assert present(d.detail)["bypassed_line"] == 3 and present(d.detail)["minutes_left"] is None
    assert "bypassed a SIGTERM or SIGCONT (line 3)" in explain(d)
    assert "SIGTERM 또는 SIGCONT" in explain(d, "ko")


@pytest.mark.parametrize(("text", "class_id", "line"), [
    (_submitit_timed_out(598, 600), "time_limit", 6),
    (_submitit_timed_out(500, 600), "preempted", 6),
    (_submitit_preempted(30, 600), "preempted", 7),
])
def test_a_job_submitit_requeued_read_from_its_log_alone_is_not_resubmitted(catalogue, text,
                                                                            class_id, line):
    """submitit/slurm/slurm.py, SlurmJobEnvironment._requeue: `scontrol requeue` returned 0,
    then `Requeued job 4242 (k remaining timeouts)`: Slurm starts the job again by itself, so a
    resubmit would run it twice. The time-out or preemption stays the class (it is the cause);
    nothing to do, and the explanation says why."""
    d = read_log(catalogue, text)
    assert (d.class_id, d.action, d.retryable) == (class_id, Action.NONE, False)
    assert d.detail is not None and (d.detail["kind"], d.detail["framework"]) == (
        "requeued", "submitit")
    assert d.detail["line"] == line and _shows(d, "Requeued job 4242")
    remaining = d.detail["remaining"]
    assert (f"submitit requeued the job itself (line {line}, {remaining} requeues left for "
            "time-outs)") in explain(d)
    assert "nothing needs resubmitting" in explain(d)
    assert "Resume from the last complete checkpoint" not in explain(d)
    assert "다시 제출할 필요가 없습니다" in explain(d, "ko")
    # sacct's word decides when there is one
    timeout = read_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=15))
    assert (timeout.class_id, timeout.action) == ("time_limit", Action.RESUBMIT)


@pytest.mark.parametrize(("text", "misread", "line"), [
    (_submitit_timed_out(500, 600), "came 100 minutes before the 600-minute limit", 6),
    (_submitit_timed_out(598, 600, before=f"{_WARN}Bypassing signal SIGTERM\n"),
     "bypassed a SIGTERM or SIGCONT (line 3)", 7),
])
def test_submitits_time_out_that_was_a_preemption_and_its_requeue_are_both_told(catalogue, text,
                                                                               misread, line):
    """submitit's time-out verdict that its figures or the SIGTERM it bypassed first show to be a
    preemption (submitit/core/job_environment.py, SignalHandler.has_timed_out), then its
    requeue (submitit/slurm/slurm.py, SlurmJobEnvironment._requeue): the requeued detail carries
    the preemption it followed, and the explanation says first why the time-out was a
    preemption, then that submitit requeued the job (en + ko), where it said the requeue
    alone."""
    d = read_log(catalogue, text)
    assert (d.class_id, d.action) == ("preempted", Action.NONE)
    assert d.detail is not None and d.detail["kind"] == "requeued"
    assert d.detail["cause"]["kind"] == "submitit_preempted"
    said = explain(d)
    assert said.index(misread) < said.index("The scheduler preempted the job.") < said.index(
        f"submitit requeued the job itself (line {line}, 2 requeues left for time-outs)")
    assert said.endswith("nothing needs resubmitting.")
    ko = explain(d, "ko")
    assert ko.index("스케줄러가 작업을 선점했습니다.") < ko.index(
        f"submitit이 작업을 스스로 다시 대기열에 넣었습니다({line}번째 줄")
    # a time-out verdict that stands: the requeue alone
    standing = read_log(catalogue, _submitit_timed_out(598, 600))
    assert standing.detail is not None and standing.detail["cause"] is None
    assert explain(standing).startswith("submitit requeued the job itself")


@pytest.mark.parametrize("state", ["REQUEUED", "PENDING", "RUNNING"])
@pytest.mark.parametrize(("text", "was", "line", "remaining", "cause"), [
    (_submitit_timed_out(598, 600), "time_limit", 6, 2, None),
    (_submitit_timed_out(500, 600), "preempted", 6, 2, "submitit_preempted"),
    (_submitit_preempted(30, 600), "preempted", 7, 3, None),
])
def test_a_job_submitit_requeued_that_slurm_shows_requeued_says_submitit_requeued_it(
        catalogue, text, was, line, remaining, cause, state):
    """sacct's REQUEUED or PENDING after submitit's `Requeued job 4242 (k remaining timeouts)`
    (submitit/slurm/slurm.py, SlurmJobEnvironment._requeue, once `scontrol requeue` returned 0):
    the requeued detail with submitit's line, the time-outs left, sacct's state and the
    preemption its time-out verdict was, as the log reads without accounting, where it said
    only that Slurm requeued the job (a preemption, a node's failure or scontrol requeue).
    RUNNING with nothing of the next run in the log yet (it started again, or scontrol requeue
    has not stopped it yet) alike, where it read the time-out or preemption with action
    resubmit: a second copy of a job Slurm already requeued."""
    d = read_log(catalogue, text, Accounting(state=state))
    assert (d.class_id, d.action, d.retryable) == ("none", Action.NONE, False)
    assert d.detail is not None
    assert (d.detail["kind"], d.detail["state"], d.detail["framework"], d.detail["line"],
            d.detail["remaining"]) == ("requeued", state, "submitit", line, remaining)
    assert (d.detail["cause"] or {}).get("kind") == cause
    assert d.secondary == (was,) and _shows(d, "Requeued job 4242")
    said = explain(d)
    assert (f"submitit requeued the job itself (line {line}, {remaining} requeues left for "
            "time-outs)") in said and said.endswith("nothing needs resubmitting.")
    assert "Slurm requeued it after the run this log shows ended" not in said
    assert (cause is not None) == ("The scheduler preempted the job." in said)
    ko = explain(d, "ko")
    assert f"submitit이 작업을 스스로 다시 대기열에 넣었습니다({line}번째 줄" in ko
    assert (cause is not None) == ("스케줄러가 작업을 선점했습니다." in ko)


def test_a_job_submitit_requeued_that_runs_its_next_run_is_running(catalogue):
    """The next run's own lines after submitit's requeue (`Starting with JobEnvironment`, then
    progress): the log is read by that run, which trains; the requeue is history."""
    next_run = _PROGRESS.replace("step 1200", "step 1300")
    d = read_log(catalogue, _submitit_timed_out(598, 600) + next_run, Accounting(state="RUNNING"))
    assert (d.class_id, d.action) == ("none", Action.NONE)
    assert (d.detail or {}).get("kind") == "running" and d.secondary == ()


@pytest.mark.parametrize(("text", "was", "line", "en", "ko"), [
    # the verdict, then its checkpoint method (`Calling checkpoint method.`, _checkpoint): the
    # handler is saving, `scontrol requeue` still to come
    (_submitit_timed_out(598, 600, requeued=False).replace(
        f"{_INFO}Job not requeued because: checkpoint function returned None.\n", ""),
     "time_limit", 4, "submitit caught the scheduler's signal and called the job timed out "
     "(line 4), and Slurm still shows it running: submitit saves a checkpoint and requeues the "
     "job itself (scontrol requeue), or the job ends.",
     "submitit이 스케줄러의 신호를 받고 작업 시간이 초과되었다고 판단했으며(4번째 줄)"),
    # a rank other than 0 (checkpoint_and_try_requeue: it returns, rank 0 requeues)
    (_PROGRESS + f"{_INFO}Job has not timed out. Ran 30 minutes out of requested 600 minutes.\n"
     f"{_WARN}Caught signal SIGUSR2 on node07: this job is preempted.\n"
     f"{_INFO}Not checkpointing nor requeuing since I am a slave (procid=1).\n",
     "preempted", 4, "submitit caught the scheduler's signal and called the job preempted "
     "(line 4), and Slurm still shows it running",
     "submitit이 스케줄러의 신호를 받고 작업이 선점되었다고 판단했으며(4번째 줄)"),
    # submitit said it will not requeue it (UncompletedJobError): the job is ending
    (_submitit_timed_out(598, 600, requeued=False), "time_limit", 4,
     "submitit caught the scheduler's signal (line 4) and did not requeue the job (line 6 says "
     "why), and Slurm still shows it running: it is ending.",
     "작업을 다시 대기열에 넣지 않았고(이유는 6번째 줄)"),
    (_PROGRESS + f"{_INFO}Job has timed out. Ran 598 minutes out of requested 600 minutes.\n"
     f"{_WARN}Caught signal SIGUSR2 on node07: this job is timed-out.\n"
     f"{_INFO}Job not requeued because: timed-out too many times.\n", "time_limit", 4,
     "did not requeue the job (line 5 says why)", "(이유는 5번째 줄)"),
])
def test_a_running_job_after_submitits_verdict_is_not_resubmitted(catalogue, text, was, line,
                                                                  en, ko):
    """submitit/core/job_environment.py (facebookincubator/submitit 1.5.4, e49d5e7),
    SignalHandler.checkpoint_and_try_requeue (l. 200-230): the verdict `Caught signal SIGUSR2
    on <host>: this job is timed-out.` (l. 203), then the checkpoint method (`Calling checkpoint
    method.`, _checkpoint l. 262), then `scontrol requeue` and `Requeued job ...`, or `Job not
    requeued because: {reason}.` (l. 225) and UncompletedJobError, which ends the job; a rank
    other than 0 returns at once (l. 209). With sacct RUNNING and no `Requeued job` line yet,
    Slurm requeues or ends the job by itself: nothing to resubmit while it runs (the watcher
    judges it once it ends), the verdict's class a secondary one; the explanation says so (en,
    ko). Before, it read the time-out with action resubmit: a second copy beside a job still
    running."""
    d = read_log(catalogue, text, Accounting(state="RUNNING"))
    assert (d.class_id, d.action, d.retryable) == ("none", Action.NONE, False)
    assert d.detail is not None and (d.detail["kind"], d.detail["verdict"], d.detail["line"]) == (
        "signalled", was, line)
    assert d.secondary == (was,) and _shows(d, "Caught signal SIGUSR2 on node07")
    said = explain(d)
    assert en in said and "Nothing to resubmit while it runs" in said
    assert "Resume from the last complete checkpoint" not in said
    assert ko in explain(d, "ko") and "실행 중에는 다시 제출할 것이 없습니다" in explain(d, "ko")
    # once it ended, sacct's word decides: a time-out to resume
    ended = read_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=15))
    assert (ended.class_id, ended.action) == ("time_limit", Action.RESUBMIT)


def test_a_running_jobs_time_out_verdict_that_was_a_preemption_is_told_first(catalogue):
    """submitit's time-out verdict 100 minutes before the limit (SignalHandler.has_timed_out,
    submitit/core/job_environment.py l. 177-193: a preemption), sacct RUNNING, no requeue
    line: the preemption is told first, then that the job still runs after submitit's own
    verdict, a time-out (en + ko)."""
    d = read_log(catalogue, _submitit_timed_out(500, 600, requeued=False).replace(
        f"{_INFO}Job not requeued because: checkpoint function returned None.\n", ""),
        Accounting(state="RUNNING"))
    assert (d.class_id, d.action) == ("none", Action.NONE) and d.secondary == ("preempted",)
    assert d.detail is not None and d.detail["cause"]["kind"] == "submitit_preempted"
    said = explain(d)
    assert d.detail["verdict"] == "time_limit"
    assert said.index("The scheduler preempted the job.") < said.index(
        "submitit caught the scheduler's signal and called the job timed out (line 4)")
    ko = explain(d, "ko")
    assert ko.index("스케줄러가 작업을 선점했습니다.") < ko.index(
        "작업 시간이 초과되었다고 판단했으며")


def test_a_time_out_submitit_did_not_requeue_that_slurm_requeued_says_slurm_requeued_it(
        catalogue):
    """No `Requeued job` line (the checkpoint function returned None): sacct's REQUEUED is
    Slurm's own requeue, told as such."""
    d = read_log(catalogue, _submitit_timed_out(598, 600, requeued=False),
                 Accounting(state="REQUEUED"))
    assert (d.class_id, d.action) == ("none", Action.NONE)
    assert d.detail is not None and (d.detail["kind"], d.detail["framework"]) == (
        "requeued", None)
    assert "Slurm requeued it after the run this log shows ended" in explain(d)


def test_a_time_out_read_as_a_preemption_that_slurm_requeued_keeps_the_preemption(catalogue):
    """submitit's time-out verdict 100 minutes before the limit (a preemption), no `Requeued
    job` line, sacct's REQUEUED: Slurm's requeue, told after why the time-out was a preemption
    (en + ko), where the explanation dropped the preemption and said only that Slurm requeued
    the job."""
    d = read_log(catalogue, _submitit_timed_out(500, 600, requeued=False),
                 Accounting(state="REQUEUED"))
    assert (d.class_id, d.action) == ("none", Action.NONE) and d.secondary == ("preempted",)
    assert d.detail is not None and (d.detail["kind"], d.detail["framework"]) == (
        "requeued", None)
    assert d.detail["cause"]["kind"] == "submitit_preempted"
    said = explain(d)
    assert said.index("came 100 minutes before the 600-minute limit") < said.index(
        "The scheduler preempted the job.") < said.index(
        "The job is waiting to start again (REQUEUED): Slurm requeued it")
    ko = explain(d, "ko")
    assert ko.index("스케줄러가 작업을 선점했습니다.") < ko.index("(REQUEUED)")


@pytest.mark.parametrize("text", [
    # the checkpoint function returned None: submitit did not requeue (UncompletedJobError)
    _submitit_timed_out(598, 600, requeued=False),
    # the countdown below 0 (checkpoint_and_try_requeue): no requeue left
    _PROGRESS + f"{_INFO}Job has timed out. Ran 598 minutes out of requested 600 minutes.\n"
    f"{_WARN}Caught signal SIGUSR2 on node07: this job is timed-out.\n"
    f"{_INFO}Job not requeued because: timed-out too many times.\n",
    # the verdict alone: the log ends before submitit says what it did
    _PROGRESS + f"{_INFO}Job has timed out. Ran 598 minutes out of requested 600 minutes.\n"
    f"{_WARN}Caught signal SIGUSR2 on node07: this job is timed-out.\n",
])
def test_a_time_out_submitit_did_not_requeue_is_resubmitted(catalogue, text):
    d = read_log(catalogue, text)
    assert (d.class_id, d.action, d.retryable) == ("time_limit", Action.RESUBMIT, True)
    assert (d.detail or {}).get("kind") != "requeued"


def test_a_sigterm_after_the_verdict_or_an_earlier_runs_is_no_preemption(catalogue):
    """submitit/slurm/slurm.py, _requeue: `scontrol requeue` stops the job, whose SIGTERM
    submitit bypasses after its verdict; a bypass before an earlier verdict is that run's."""
    after = _submitit_timed_out(598, 600, after=f"{_WARN}Bypassing signal SIGTERM\n")
    assert read_log(catalogue, after).class_id == "time_limit"
    earlier_run = _submitit_timed_out(598, 600, before=f"{_WARN}Bypassing signal SIGTERM\n")
    assert read_log(catalogue, earlier_run + _submitit_timed_out(598, 600)).class_id == (
        "time_limit")


def test_accounting_decides_over_submitits_figures(catalogue):
    """sacct's State is the scheduler's: TIMEOUT stays a time limit whatever submitit's clock
    said; PREEMPTED is a preemption with no time limit as a second class."""
    text = _submitit_timed_out(500, 600)
    timeout = read_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=0))
    assert timeout.class_id == "time_limit"
    preempted = read_log(catalogue, _submitit_timed_out(598, 600),
                         Accounting(state="PREEMPTED", exit_code=0, signal=0))
    assert preempted.class_id == "preempted" and "time_limit" not in preempted.secondary


def test_another_time_limit_line_keeps_the_time_limit(catalogue):
    """slurmstepd's own `DUE TO TIME LIMIT` is the scheduler's word, not submitit's clock."""
    text = _submitit_timed_out(500, 600) + (
        "slurmstepd: error: *** JOB 4242 ON node07 CANCELLED AT 2024-03-01T10:01:00 DUE TO "
        "TIME LIMIT ***\n")
    assert read_log(catalogue, text).class_id == "time_limit"


_BAR = "Epoch 3:  45%|████▌     | 670/1490 [14:58<18:20,  1.34s/it, loss=0.541, v_num=0]\n"
_COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0)


def test_lightning_exiting_0_after_sigterm_is_a_time_limit_a_person_confirms(catalogue):
    """lightning/pytorch/trainer/connectors/signal_connector.py, _sigterm_notifier_fn
    (`rank_prefixed_message(f"Received SIGTERM: {signum}")`); the loops then raise
    SIGTERMException, a SystemExit with no code (utilities/exceptions.py): exit 0, COMPLETED."""
    d = read_log(catalogue, _BAR + "[rank: 0] Received SIGTERM: 15\n", _COMPLETED)
    assert (d.class_id, d.decided_by) == ("time_limit", "hint")
    assert d.detail == {"kind": "signal_stop", "framework": "lightning"}
    assert "Lightning caught SIGTERM" in explain(d) and "scancel" in explain(d)
    assert "Lightning이 SIGTERM을" in explain(d, "ko")
    # progress after it: not what ended the run
    later = _BAR + "[rank: 0] Received SIGTERM: 15\n" + _BAR.replace("670/", "700/")
    assert read_log(catalogue, later, _COMPLETED).class_id == "silent_exit"


@pytest.mark.parametrize("lines", [
    ["handling SIGUSR1", "requeing job 4242...", "requeued exp 4242"],
    ["requeued exp 4242"],
    ["Handling auto-requeue signal: 10", "requeing job 4242...", "Requeued SLURM job: 4242"],
    ["Handling auto-requeue signal: 10", "requeing job 4242...",
     "Requeuing SLURM job 4242 failed with error code 1"],
    ["handling SIGUSR1", "requeing job 4242...", "requeue failed..."],
    ["Handling auto-requeue signal: 10"],
])
def test_lightnings_requeue_lines_of_every_version_read_as_a_time_limit(catalogue, lines):
    """lightning/pytorch/trainer/connectors/signal_connector.py (2.0 on) and
    pytorch_lightning/trainer/connectors/signal_connector.py (1.6 to 1.9): the handler of the
    --signal=SIGUSR1@90 warning before the time limit. With sacct's FAILED the run's end
    decides; without accounting only a requeue that failed or whose end is cut off does (one
    that Slurm took is a job that starts again: below)."""
    text = _BAR + "".join(f"{line}\n" for line in lines)
    failed = read_log(catalogue, text, Accounting(state="FAILED", exit_code=1, signal=0))
    assert failed.class_id == "time_limit"
    alone = read_log(catalogue, text)
    if any(line.startswith(("requeued exp", "Requeued SLURM job:")) for line in lines):
        assert (alone.class_id, alone.secondary) == ("none", ("time_limit",))
    else:
        assert (alone.class_id, alone.action) == ("time_limit", Action.RESUBMIT)


# lightning/pytorch/trainer/connectors/signal_connector.py (Lightning-AI/pytorch-lightning,
# 7f0c343), _slurm_sigusr_handler_fn: `rank_zero_info(f"Handling auto-requeue signal:
# {signum}")`, saves the HPC checkpoint, `log.info(f"requeing job {job_id}...")`, runs
# `["scontrol", "requeue", job_id]` and, when it returns 0, `log.info(f"Requeued SLURM job:
# {job_id}")` (else `Requeuing SLURM job {job_id} failed with error code {result}`). Its
# `_sigterm_handler_fn` then logs `Bypassing SIGTERM: {signum}` for the SIGTERM that ends the run.
_LIGHTNING_REQUEUED = (_BAR + "Handling auto-requeue signal: 10\n"
                       "requeing job 4242...\n"
                       "Requeued SLURM job: 4242\n"
                       "Bypassing SIGTERM: 15\n")


@pytest.mark.parametrize("text", [
    _LIGHTNING_REQUEUED,
    # its 1.6 to 1.9 wording (pytorch_lightning/trainer/connectors/signal_connector.py)
    _BAR + "handling SIGUSR1\nrequeing job 4242...\nrequeued exp 4242\n",
])
def test_a_job_lightning_requeued_read_from_its_log_alone_is_not_resubmitted(catalogue, text):
    """Lightning ran scontrol requeue itself: Slurm starts the job again, so a resubmit would
    run it twice. Read without accounting it is what sacct's REQUEUED says (the requeued
    outcome): nothing to do, the time limit a secondary class, the requeue line the evidence."""
    d = read_log(catalogue, text)
    assert (d.class_id, d.action, d.retryable, d.decided_by) == ("none", Action.NONE, False,
                                                                 "hint")
    assert d.detail == {"kind": "requeued", "state": None, "framework": "lightning", "line": 4,
                        "remaining": None, "cause": None}
    assert d.secondary == ("time_limit",)
    assert [e.line for e in d.evidence] == [4]
    assert "Lightning requeued the job itself (line 4)" in explain(d)
    assert "nothing needs resubmitting" in explain(d)
    assert "다시 제출할 필요가 없습니다" in explain(d, "ko")
    # sacct's word decides when there is one
    timeout = read_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=15))
    assert (timeout.class_id, timeout.action) == ("time_limit", Action.RESUBMIT)
    requeued = read_log(catalogue, text, Accounting(state="REQUEUED", exit_code=0, signal=0))
    assert (requeued.class_id, requeued.action) == ("none", Action.NONE)


@pytest.mark.parametrize("state", ["REQUEUED", "PENDING", "RUNNING"])
def test_a_job_lightning_requeued_that_slurm_shows_requeued_says_lightning_requeued_it(catalogue,
                                                                                     state):
    """sacct's REQUEUED, or the job pending or running again with nothing of its next run in
    the log: the run the log shows ended in Lightning's requeue (`Requeued SLURM job: 4242`,
    once `scontrol requeue` returned 0), not in training that goes on: the requeued detail with
    Lightning's line, where it read as running normally at the requeued run's last
    iteration."""
    d = read_log(catalogue, _LIGHTNING_REQUEUED, Accounting(state=state))
    assert (d.class_id, d.action, d.retryable) == ("none", Action.NONE, False)
    assert d.detail == {"kind": "requeued", "state": state, "framework": "lightning", "line": 4,
                        "remaining": None, "cause": None}
    assert d.secondary == ("time_limit",) and [e.line for e in d.evidence] == [4]
    assert "Lightning requeued the job itself (line 4)" in explain(d)
    assert "Running normally" not in explain(d)
    assert "Lightning이 작업을 스스로 다시 대기열에 넣었습니다(4번째 줄)" in explain(d, "ko")
    # the next run's progress: it runs
    later = read_log(catalogue, _LIGHTNING_REQUEUED + _BAR.replace("670/", "700/"),
                     Accounting(state="RUNNING"))
    assert (later.detail or {}).get("kind") == "running"


@pytest.mark.parametrize("state", ["REQUEUED", "PENDING", "RUNNING"])
def test_a_lightning_requeue_behind_another_failure_says_lightning_requeued_it(catalogue, state):
    """Lightning's `Requeued SLURM job: 4242`, then a peer's NCCL watchdog timing out as
    `scontrol requeue` stopped the job, with sacct showing it waiting or running again: the
    requeued detail with Lightning's line, the timeout a secondary class, where it said only
    that Slurm requeued the job (waiting) or read the timeout with its action (running). The
    run's time limit, which Lightning requeues on (its `--signal=SIGUSR1@90` warning:
    lightning/pytorch/trainer/connectors/signal_connector.py, _slurm_sigusr_handler_fn), is a
    secondary class after the timeout, as with Lightning's requeue alone (waiting, running,
    no accounting), where it was missing."""
    text = _LIGHTNING_REQUEUED + (
        "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE) ran for 600000 milliseconds before "
        "timing out.\n")
    d = read_log(catalogue, text, Accounting(state=state))
    assert (d.class_id, d.action, d.retryable) == ("none", Action.NONE, False)
    assert d.detail is not None and (d.detail["kind"], d.detail["state"], d.detail["framework"],
                                     d.detail["line"]) == ("requeued", state, "lightning", 4)
    assert d.secondary == ("nccl_timeout", "time_limit")
    assert _shows(d, "Requeued SLURM job: 4242")
    assert "Lightning requeued the job itself (line 4)" in explain(d)
    assert "Slurm requeued it after the run this log shows ended" not in explain(d)
    assert "Lightning이 작업을 스스로 다시 대기열에 넣었습니다(4번째 줄)" in explain(d, "ko")


# what a run Lightning requeued prints as Slurm ends it (`scontrol requeue` of a running job:
# Slurm signals its steps, then kills them, and queues the job again)
_DYING_AFTER_REQUEUE = {
    "nccl_timeout": "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
                    "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE) ran for 600000 "
                    "milliseconds before timing out.\n",
    "rank_killed": "srun: error: gpu-a07: task 1: Killed\n",
    "step_cancelled": "slurmstepd: error: *** STEP 4242.0 ON gpu-a07 CANCELLED AT "
                      "2025-01-01T00:10:00 DUE TO JOB REQUEUE ***\n",
}


@pytest.mark.parametrize("dying", sorted(_DYING_AFTER_REQUEUE))
def test_a_lightning_requeue_behind_another_failure_read_from_its_log_alone(catalogue, dying):
    """No accounting: Lightning's `Requeued SLURM job: 4242` (its `scontrol requeue` returned 0;
    lightning/pytorch/trainer/connectors/signal_connector.py, _slurm_sigusr_handler_fn), then a
    failure as the run dies while Slurm requeues it (a peer's NCCL watchdog, a rank killed, the
    step cancelled for the requeue). Slurm starts the job again whatever that run printed last,
    so the log alone reads as sacct's REQUEUED does: Lightning's requeue, nothing to resubmit,
    a failure its signature decides and the run's time limit secondary classes. Before, it read
    as that failure (nccl_timeout with action resubmit, a rank killed or the step cancelled as
    unknown_failure with its resubmit buttons): a second copy of a job Slurm had requeued."""
    text = _LIGHTNING_REQUEUED + _DYING_AFTER_REQUEUE[dying]
    d = read_log(catalogue, text)
    assert (d.class_id, d.action, d.retryable, d.decided_by) == ("none", Action.NONE, False,
                                                                 "hint")
    assert d.detail == {"kind": "requeued", "state": None, "framework": "lightning", "line": 4,
                        "remaining": None, "cause": None}
    assert _shows(d, "Requeued SLURM job: 4242")
    requeued = read_log(catalogue, text, Accounting(state="REQUEUED"))
    assert (d.class_id, d.action, d.secondary) == (requeued.class_id, requeued.action,
                                                   requeued.secondary)
    assert d.secondary == (("nccl_timeout", "time_limit") if dying == "nccl_timeout"
                           else ("time_limit",))
    assert "Lightning requeued the job itself (line 4)" in explain(d)
    assert "nothing needs resubmitting" in explain(d)
    assert "Lightning이 작업을 스스로 다시 대기열에 넣었습니다(4번째 줄)" in explain(d, "ko")
    # a requeue scontrol refused (`Requeuing SLURM job 4242 failed with error code 1`): the run
    # ends in that failure, as before
    refused = read_log(catalogue, text.replace(
        "Requeued SLURM job: 4242", "Requeuing SLURM job 4242 failed with error code 1"))
    ended_in = "nccl_timeout" if dying == "nccl_timeout" else "unknown_failure"
    assert refused.class_id == ended_in and refused.action is not Action.NONE
    # sacct's word decides when there is one: FAILED is the job's end, not a requeue
    failed = read_log(catalogue, text, Accounting(state="FAILED", exit_code=1, signal=0))
    assert failed.class_id == ended_in


def test_a_lightning_requeue_followed_by_training_is_no_requeue(catalogue):
    """Progress after the requeue line: that run went on (the requeue line is history)."""
    d = read_log(catalogue, _LIGHTNING_REQUEUED + _BAR.replace("670/", "700/"))
    assert (d.detail or {}).get("kind") != "requeued"


# DeepSpeed's logger: `[2025-03-02 10:02:00,000] [INFO] [launch.py:344:sigkill_handler] ...`
#: A SIGTERM line that names no sender, told by sacct's State: none (a person checks), a time
#: limit, a preemption, a failure, a cancel.
_SENDER_BY_SACCT = [
    (None, "unknown_failure"),
    (Accounting(state="TIMEOUT", exit_code=0, signal=15), "time_limit"),
    (Accounting(state="PREEMPTED", exit_code=0, signal=0), "preempted"),
    (Accounting(state="FAILED", exit_code=1, signal=0), "unknown_failure"),
    (Accounting(state="CANCELLED", exit_code=0, signal=15), "unknown_failure"),
]


_DEEPSPEED_SIGTERM = (
    "[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n"
    "[2025-03-02 10:02:00,000] [INFO] [launch.py:335:sigkill_handler] Killing subprocess 2248\n"
    "[2025-03-02 10:02:00,000] [INFO] [launch.py:344:sigkill_handler] Main process received "
    "SIGTERM, exiting\n")


@pytest.mark.parametrize(("acct", "class_id"), _SENDER_BY_SACCT)
def test_deepspeeds_launcher_stopped_by_sigterm_follows_sacct(catalogue, acct, class_id):
    """deepspeed/launcher/launch.py, sigkill_handler: on SIGTERM from anyone (Slurm's time
    limit, a preemption, scancel, srun ending the step) it kills its ranks (`Killing subprocess
    N`), logs `Main process received SIGTERM, exiting` and exits 1; a rank that failed makes it
    log `exits with return code = N` instead. Only sacct's State says who sent it."""
    d = read_log(catalogue, _DEEPSPEED_SIGTERM, acct)
    assert d.class_id == class_id
    if acct is None:
        assert (d.decided_by, d.retryable) == ("hint", False)
        assert d.detail == {"kind": "sigterm", "launcher": "deepspeed"}
        assert "DeepSpeed's launcher got SIGTERM" in explain(d)
        assert "does not say which" in explain(d)
        assert "DeepSpeed 런처가" in explain(d, "ko")


@pytest.mark.parametrize(("slurm_says", "class_id"), [("TIME LIMIT", "time_limit"),
                                                      ("PREEMPTION", "preempted")])
def test_deepspeeds_sigterm_with_slurms_own_line_is_what_slurm_says(catalogue, slurm_says,
                                                                   class_id):
    """slurmstepd's `*** JOB N ON node CANCELLED AT ... DUE TO TIME LIMIT ***` (or PREEMPTION)
    names the sender of the SIGTERM DeepSpeed's launcher caught."""
    text = _DEEPSPEED_SIGTERM + (
        "slurmstepd: error: *** JOB 4242 ON node07 CANCELLED AT 2025-03-02T10:02:00 DUE TO "
        f"{slurm_says} ***\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == (class_id, "signature")


# Lightning's SIGTERM lines: 2.0 on, lightning/pytorch/trainer/connectors/signal_connector.py
# _sigterm_notifier_fn (line 109 at 7f0c3436cd: `rank_prefixed_message(f"Received SIGTERM:
# {signum}", ...)`) and, with SLURM auto-requeue, _sigterm_handler_fn (line 123: `Bypassing
# SIGTERM: {signum}`); 1.6 to 1.9, pytorch_lightning/.../signal_connector.py
# fault_tolerant_sigterm_handler_fn (`Received signal {signum}. Saving a fault-tolerant
# checkpoint and terminating.`).
_LIGHTNING_SIGTERMS = ["[rank: 0] Received SIGTERM: 15\n",
                       "[rank: 0] Received SIGTERM: 15\nBypassing SIGTERM: 15\n",
                       "Received signal 15. Saving a fault-tolerant checkpoint and terminating.\n"]


@pytest.mark.parametrize("ending", _LIGHTNING_SIGTERMS)
@pytest.mark.parametrize(("acct", "class_id"), _SENDER_BY_SACCT)
def test_lightnings_sigterm_follows_sacct(catalogue, ending, acct, class_id):
    """Lightning prints its SIGTERM line whoever sent the signal (Slurm's time limit, a
    preemption, scancel, a node shutting down) and stops: only sacct's State says who; a log
    alone is told as torchrun's SIGTERM is, for a person to check."""
    d = read_log(catalogue, _BAR + ending, acct)
    assert d.class_id == class_id
    if acct is None:
        assert (d.decided_by, d.retryable) == ("hint", False)
        assert d.detail == {"kind": "sigterm", "launcher": "lightning"}
        assert "Lightning caught SIGTERM" in explain(d) and "does not say which" in explain(d)
        assert "Lightning이 다른 오류 없이 SIGTERM을" in explain(d, "ko")


@pytest.mark.parametrize("ending", _LIGHTNING_SIGTERMS)
@pytest.mark.parametrize(("slurm_says", "class_id"), [("TIME LIMIT", "time_limit"),
                                                      ("PREEMPTION", "preempted")])
def test_lightnings_sigterm_with_slurms_own_line_is_what_slurm_says(catalogue, ending,
                                                                   slurm_says, class_id):
    """slurmstepd's `*** STEP N.0 ON node CANCELLED AT ... DUE TO TIME LIMIT ***` (as in
    Lightning issue 20542's log) names the sender of the SIGTERM Lightning caught."""
    text = _BAR + ("slurmstepd: error: *** STEP 4242.0 ON node07 CANCELLED AT 2025-01-10T15:27:25 "
                   f"DUE TO {slurm_says} ***\n") + ending
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == (class_id, "signature")


def test_lightnings_auto_requeue_bypass_alone_is_no_stop(catalogue):
    """signal_connector.py's _sigterm_handler_fn (`Bypassing SIGTERM: 15`; `bypassing sigterm`
    before 2.0) only logs the signal: the run goes on, so it ends nothing by itself."""
    for line in ("Bypassing SIGTERM: 15", "bypassing sigterm"):
        assert read_log(catalogue, _BAR + line + "\n").class_id == "none"


# The rank's log of submitit's time-out verdict whose rank is not 0 (submitit/core/
# job_environment.py, checkpoint_and_try_requeue, line 209 at e49d5e7: `Not checkpointing nor
# requeuing since I am a slave (procid=1).`, and it returns): the process lives on and bypasses
# (SignalHandler.bypass, line 197: `Bypassing signal {name}`) the SIGCONT and SIGTERM with which
# `scontrol requeue` or the time limit stops the job.
_RANK_1_TIMED_OUT = (_PROGRESS
                     + f"{_INFO}Job has timed out. Ran 598 minutes out of requested 600 minutes.\n"
                     + f"{_WARN}Caught signal SIGUSR2 on node07: this job is timed-out.\n"
                     + f"{_INFO}Not checkpointing nor requeuing since I am a slave (procid=1).\n"
                     + f"{_WARN}Bypassing signal SIGCONT\n"
                     + f"{_WARN}Bypassing signal SIGTERM\n")


@pytest.mark.parametrize("text", [
    _RANK_1_TIMED_OUT,
    _submitit_timed_out(598, 600, after=f"{_WARN}Bypassing signal SIGCONT\n"
                                        f"{_WARN}Bypassing signal SIGTERM\n"),
])
def test_submitits_bypass_after_a_time_out_verdict_is_time_limit_evidence(catalogue, text):
    """The SIGTERM and SIGCONT submitit bypasses after its time-out verdict stop the job it
    timed out: evidence of the time limit, not of a preemption."""
    d = read_log(catalogue, text)
    assert (d.class_id, d.secondary) == ("time_limit", ())
    assert _shows(d, "Bypassing signal SIGCONT", "Bypassing signal SIGTERM")
    preempted = read_log(catalogue, text, Accounting(state="PREEMPTED", exit_code=0, signal=0))
    assert preempted.class_id == "preempted"
    assert not any("Bypassing" in e.text for e in preempted.evidence)


def test_submitits_bypass_after_a_preemption_verdict_is_its_evidence(catalogue):
    """After `this job is preempted` and the requeue, `scontrol requeue`'s SIGCONT (as in
    submitit issue 1701's log) shows the preemption."""
    d = read_log(catalogue, _submitit_preempted(61, 120) + f"{_WARN}Bypassing signal SIGTERM\n")
    assert (d.class_id, d.decided_by) == ("preempted", "signature")
    assert any(e.text.endswith("Bypassing signal SIGTERM") for e in d.evidence)


@pytest.mark.parametrize("bypass", ["Bypassing signal SIGTERM", "Bypassing signal SIGCONT",
                                    "Bypassing signal 15"])
def test_submitits_bypass_without_a_verdict_names_no_cause(catalogue, bypass):
    """Before any verdict the SIGTERM submitit bypasses may be scancel's as well as a
    preemption's or the time limit's: the log alone names none; sacct does."""
    text = _PROGRESS + f"{_WARN}{bypass}\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by, d.retryable) == ("unknown_failure", "hint", False)
    preempted = read_log(catalogue, text, Accounting(state="PREEMPTED", exit_code=0, signal=0))
    assert preempted.class_id == "preempted"


# A job submitit requeued: each run appends to the same log (submitit/slurm/slurm.py line 503 at
# e49d5e7: `parameters["open-mode"] = "append"`) from its own start line (submitit/core/
# submission.py line 40, process_job: `Starting with {env}`, the JobEnvironment's repr).
def _run(start: str, *lines: str) -> str:
    return (f"submitit INFO (2024-03-01 {start},000) - Starting with JobEnvironment(job_id=4242, "
            "hostname=node07, local_rank=0(1), node=0(1), global_rank=0(1))\n"
            + "".join(f"{line}\n" for line in lines))


def _iter(time: str, iteration: int) -> str:
    return f"[2024-03-01 {time}] iter {iteration}/8000 loss 0.53"


_TIMED_OUT_RUN = _run("00:00:00", _iter("09:50:00", 4000)) + _submitit_timed_out(598, 600).split(
    "loss 0.53\n", 1)[1]
_PREEMPTED_RUN = _run("00:00:00", _iter("01:00:00", 700)) + _submitit_preempted(61, 600).split(
    "loss 0.53\n", 1)[1]


@pytest.mark.parametrize(("earlier", "last", "acct", "class_id"), [
    # the next run trains: the job runs, whatever ended the run before
    (_TIMED_OUT_RUN, _run("10:30:00", _iter("10:40:00", 4100), _iter("10:41:00", 4110)), None,
     "none"),
    (_TIMED_OUT_RUN, _run("10:30:00", _iter("10:40:00", 4100)), Accounting(state="RUNNING"),
     "none"),
    # ... its own verdict decides, not the earlier run's preemption
    (_PREEMPTED_RUN, _run("02:00:00", _iter("09:00:00", 4000))
     + _submitit_timed_out(598, 600).split("loss 0.53\n", 1)[1], None, "time_limit"),
    # ... its completion too
    (_PREEMPTED_RUN, _run("02:00:00", _iter("09:00:00", 8000),
                          "submitit INFO (2024-03-01 09:00:01,000) - Job completed successfully"),
     None, "completed"),
    # the SIGTERM the earlier run's rank bypassed after its verdict is not the next run's
    (_RANK_1_TIMED_OUT, _run("10:30:00", _iter("19:50:00", 8000))
     + _submitit_timed_out(598, 600).split("loss 0.53\n", 1)[1], None, "time_limit"),
])
def test_a_requeued_jobs_log_is_read_by_its_last_run(catalogue, earlier, last, acct, class_id):
    """A requeued job's log holds its runs one after the other: the last one decides."""
    d = read_log(catalogue, earlier + last, acct)
    assert (d.class_id, d.secondary) == (class_id, ())
    assert all(e.line > earlier.count("\n") for e in d.evidence)


def test_a_new_run_not_yet_training_is_no_stall_of_the_earlier_runs(catalogue):
    """The requeued run waited in the queue, then started: the hours since the earlier run's
    last iteration are no stall of this one, which has not reached its first iteration yet."""
    text = _TIMED_OUT_RUN + _run("14:00:00", "submitit INFO (2024-03-01 14:00:01,000) - Loading "
                                 "pickle: /checkpoint/4242/4242_submitted.pkl")
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    analysis.finish()
    now = datetime(2024, 3, 1, 14, 5, tzinfo=UTC).timestamp()  # a watcher's tick, log's clock
    d = analysis.diagnose(Accounting(state="RUNNING"), now=now)
    assert (d.class_id, d.metrics.stall_seconds) == ("none", None)


def test_runs_are_counted_across_the_blocks_a_log_arrives_in(catalogue):
    """A watcher feeds each tick's new bytes: the runs and the last one's start line add up."""
    analysis = LogAnalysis(catalogue)
    analysis.feed((_TIMED_OUT_RUN).encode())
    assert (analysis.series.runs, analysis.series.run_start) == (1, None)
    analysis.feed(_run("10:30:00", _iter("10:40:00", 4100)).encode())
    analysis.finish()
    assert (analysis.series.runs, analysis.series.run_start) == (
        2, _TIMED_OUT_RUN.count("\n") + 1)
