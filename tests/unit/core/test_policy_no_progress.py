"""The no-progress rule over a run chain with an attempt that never started: the crash being
decided is compared with the latest earlier attempt that RAN. An attempt Slurm ended while it
waited in the queue (its row as the watcher writes it: a queued end state, no start, no
iteration; bot.core.slurm.states.ended_unstarted) ran nothing and measures no progress. The
histories are read from attempt rows by run_history, as the watcher reads the store's."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.catalogue import Catalogue
from bot.core.models import Action, Diagnosis, DiagnosisMetrics
from bot.core.policy import DecisionKind, PolicyParams, decide, run_history

NOW = 1_747_000_000.0
AUTO = PolicyParams(auto_resubmit=True, backoff_s=60)


@dataclass(frozen=True)
class Row:
    """An attempt row as the policy reads it (bot.core.policy.AttemptRow)."""

    job_id: str
    attempt_no: int
    last_iter: int | None = None
    start_iter: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    result: str | None = None
    cause: str | None = None
    array_task: int | None = None
    checkpoint_path: str | None = None


def crash(last_iter: int | None) -> Diagnosis:
    cls = Catalogue.load().classes["nccl_timeout"]
    assert cls.action == Action.RESUBMIT and cls.charges_budget
    return Diagnosis(class_id="nccl_timeout", action=cls.action, retryable=cls.retryable,
                     charges_budget=True, hint=cls.hint,
                     metrics=DiagnosisMetrics(last_iter=last_iter, target_iter=8000))


RAN_TO_500 = Row("100", 1, last_iter=500, started_at=NOW - 900, ended_at=NOW - 800,
                 result="FAILED", cause="nccl_timeout")
NEVER_STARTED = Row("101", 2, start_iter=500, ended_at=NOW - 700, result="CANCELLED",
                    cause="unknown_failure")


def test_a_crash_after_a_never_started_attempt_is_compared_with_the_attempt_that_ran() -> None:
    """[ran to iteration 500, never started, crash at iteration 500]: no progress over job
    100, the one that ran; the chain stops and asks a person."""
    rows = [RAN_TO_500, NEVER_STARTED, Row("102", 3, start_iter=500)]
    history = run_history(rows, current_job="102", current_last_iter=500, retries_used=1)
    assert [a.ran for a in history.attempts] == [True, False, True]
    dec = decide(crash(500), history, AUTO, NOW, checkpoint_iter=500)
    assert (dec.kind, dec.stop_chain, dec.resubmits) == (DecisionKind.ASK_HUMAN, True, False)
    assert dec.facts["why"] == "no_progress"
    assert (dec.facts["prev_job"], dec.facts["prev_iter"]) == ("100", 500)
    assert ("no progress over the last attempt that ran, job 100 (job 102 stopped at "
            "iteration 500, job 100 at 500)") in dec.reason


def test_a_crash_with_no_iteration_after_only_a_never_started_attempt_is_a_first_crash() -> None:
    """[never started, crash with no iteration]: no attempt before it ran, so it is judged as
    a first attempt: resubmitted at once (auto), charged 1 of 3, after the first backoff
    (60 s), not stopped for "no progress"."""
    never = Row("101", 1, ended_at=NOW - 700, result="CANCELLED", cause="unknown_failure")
    rows = [never, Row("102", 2)]
    history = run_history(rows, current_job="102", current_last_iter=None, retries_used=0)
    dec = decide(crash(None), history, AUTO, NOW)
    assert (dec.kind, dec.stop_chain) == (DecisionKind.RESUBMIT_NOW, False)
    assert dec.facts["why"] == "retryable" and dec.facts["charge_no"] == 1
    assert dec.charged and dec.not_before == NOW + 60
    assert "charged: 1 of 3 retries" in dec.reason
    # had that first attempt run (a start recorded), the crash logging no iteration is a
    # retry that made no progress: the chain stops
    ran = Row("101", 1, started_at=NOW - 800, ended_at=NOW - 700, result="CANCELLED",
              cause="unknown_failure")
    history = run_history([ran, Row("102", 2)], current_job="102", current_last_iter=None,
                          retries_used=0)
    stopped = decide(crash(None), history, AUTO, NOW)
    assert (stopped.kind, stopped.facts["why"]) == (DecisionKind.ASK_HUMAN, "no_progress")
    assert "this attempt logged no iteration" in stopped.reason
