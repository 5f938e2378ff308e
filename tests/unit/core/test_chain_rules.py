"""The rules over a chain's attempt rows (bot.core.policy.chain), on plain rows: which
attempts a finished job is judged against, when a chain of side-by-side jobs (an adopted
job, an array) has ended, and what a progress write changes in a row."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.arrays import retries_by_task
from bot.core.catalogue import Catalogue
from bot.core.models import CheckpointMark
from bot.core.policy import (
    AttemptFacts,
    PastWarning,
    attempt_progress,
    free_rewrite_slots,
    own_history,
    parallel_chain_end,
    root_rewrite_due,
    roots_due,
    roots_to_rewrite,
    run_history,
    run_latest,
    run_rows,
    task_history,
    task_rows,
)


@dataclass(frozen=True)
class Row:
    """An attempt row as the rules read it (bot.core.policy.AttemptRow)."""

    job_id: str
    attempt_no: int = 1
    last_iter: int | None = None
    start_iter: int | None = None
    ended_at: float | None = None
    result: str | None = None
    cause: str | None = None
    array_task: int | None = None
    checkpoint_path: str | None = None
    started_at: float | None = None


def ended(job: str, result: str, cause: str | None, *, task: int | None = None,
          no: int = 1) -> Row:
    return Row(job, no, started_at=900.0, ended_at=1000.0, result=result, cause=cause,
               array_task=task)


# --------------------------------------------------------------- a run chain's history

def test_a_run_chain_is_judged_on_every_attempt_the_current_one_at_its_logged_iteration() -> None:
    leak = PastWarning("memory_leak", 50.0, projected_oom_iter=9000, job_id="11")
    rows = [Row("10", 1, last_iter=400, cause="nccl_timeout", ended_at=100.0),
            Row("11", 2, last_iter=450, start_iter=400)]  # its row lags the log
    history = run_history(rows, current_job="11", current_last_iter=800, retries_used=1,
                          warnings=[leak])
    assert history.attempts == (
        AttemptFacts("10", 1, last_iter=400, class_id="nccl_timeout", ended_at=100.0),
        AttemptFacts("11", 2, last_iter=800, start_iter=400))
    assert (history.retries_used, history.resubmits_so_far, history.warnings) == (1, 1, (leak,))


def test_a_job_whose_log_named_no_iteration_keeps_the_one_its_row_holds() -> None:
    history = run_history([Row("10", 1, last_iter=300)], current_job="10",
                          current_last_iter=None, retries_used=0)
    assert history.attempts[-1].last_iter == 300


def test_a_job_trainbot_did_not_submit_is_its_own_history() -> None:
    history = own_history("77", 120)
    # which checkpoint it resumed from is unknown: no time limit of it is a free chunk
    assert history.attempts == (AttemptFacts("77", 1, last_iter=120, start_known=False),)
    assert history.attempts[0].start is None
    assert (history.retries_used, history.resubmits_so_far, history.warnings) == (0, 0, ())
    assert own_history(None, None).attempts == ()


# --------------------------------------------------------------- an array task's own rows

# task 3's first attempt, task 4's and its two one-task resubmits (`140_4`, `150_4`), task 5's
ARRAY = [Row("201", 1, array_task=3), Row("202", 1, array_task=4),
         Row("240", 2, array_task=4), Row("203", 1, array_task=5),
         Row("250", 3, array_task=4)]


def test_a_tasks_rows_are_its_attempts_and_resubmits_in_order() -> None:
    assert [a.job_id for a in task_rows(ARRAY, "240")] == ["202", "240", "250"]
    assert task_rows(ARRAY, "202") == task_rows(ARRAY, "250")  # whichever attempt asks


def test_the_other_tasks_rows_are_left_out() -> None:
    assert task_rows(ARRAY, "201") == [ARRAY[0]]
    assert task_rows(ARRAY, "203") == [ARRAY[3]]


def test_a_row_naming_no_task_is_only_itself() -> None:
    rows = [Row("300"), *ARRAY, Row("301")]
    assert task_rows(rows, "301") == [Row("301")]
    assert task_rows(rows, "300") == [Row("300")]


def test_a_job_with_no_row_has_none() -> None:
    assert task_rows(ARRAY, "999") == []
    assert task_rows([], "201") == []


def test_a_runs_rows_are_its_tasks_or_with_no_task_the_whole_chains() -> None:
    assert [a.job_id for a in run_rows(ARRAY, 4)] == ["202", "240", "250"]
    assert run_rows(ARRAY, 4) == task_rows(ARRAY, "240")  # the task a job's row names
    assert run_latest(ARRAY, 4) == Row("250", 3, array_task=4)
    assert run_latest(ARRAY, 3) == ARRAY[0]
    chain = [Row("10", 1), Row("11", 2)]  # attempts one after another: all are the run's
    assert run_rows(chain, None) == chain
    assert run_latest(chain, None) == Row("11", 2)


def test_a_run_with_no_row_has_no_latest() -> None:
    assert run_rows(ARRAY, 9) == []
    assert run_latest(ARRAY, 9) is None
    assert run_latest([], None) is None


# --------------------------------------------------------------- an array task's history

def test_an_array_task_is_judged_on_its_own_attempts_and_budget() -> None:
    catalogue = Catalogue.load()
    rows = [ended("201", "FAILED", "nccl_timeout", task=3),  # another task's failure
            ended("202", "NODE_FAIL", "node_failure", task=4),  # free: not charged
            Row("210", ended_at=1000.0, result="TIMEOUT", cause="time_limit", array_task=4,
                start_iter=500),  # charged: resumed from 500, it saved nothing newer
            Row("220", array_task=4, start_iter=500)]  # the task's second resubmit, ending now
    history = task_history(rows, current_job="220", current_last_iter=900,
                           catalogue=catalogue)
    assert [(a.job_id, a.attempt_no) for a in history.attempts] == \
        [("202", 1), ("210", 2), ("220", 3)]
    assert history.attempts[-1].last_iter == 900
    assert history.retries_used == 1  # task 3's failure and the node failure spend none of it


def test_an_array_tasks_time_limit_chunks_that_saved_newer_checkpoints_spend_no_retry() -> None:
    rows = [Row(job, no, ended_at=1000.0, result="TIMEOUT", cause="time_limit", array_task=4,
                start_iter=start)
            for no, (job, start) in enumerate((("210", None), ("211", 2000), ("212", 4000)),
                                              start=1)]
    rows.append(Row("213", 4, array_task=4, start_iter=6000))
    history = task_history(rows, current_job="213", current_last_iter=7000,
                           catalogue=Catalogue.load())
    # the first came from the whole array's submit, which names no checkpoint: what it
    # resumed from is unknown, so its time limit is charged; the task's resubmits each
    # resumed from the checkpoint they record, and the next one resumed past it: free
    assert history.retries_used == 1 and history.resubmits_so_far == 3
    assert history.attempts[0].start is None
    assert history.attempts[-1].start == CheckpointMark(None, 6000)


def test_an_array_tasks_attempt_that_never_started_spends_no_retry_nor_backoff() -> None:
    """Task 4's first attempt ended while it waited in the queue (its row as the watcher writes
    it: CANCELLED, no start, no iteration; class unknown_failure, which charges): it ran
    nothing, so its resubmit spends none of the task's budget and the backoff of the crash
    after it is a first one's; an attempt that ran (its start recorded) spends one."""
    catalogue = Catalogue.load()
    never = Row("201", 1, ended_at=1000.0, result="CANCELLED", cause="unknown_failure",
                array_task=4)
    crash = Row("220", 2, array_task=4, start_iter=500)
    history = task_history([never, crash], current_job="220", current_last_iter=900,
                           catalogue=catalogue)
    assert (history.retries_used, history.resubmits_so_far) == (0, 0)
    assert retries_by_task([never, crash], catalogue) == []
    ran = Row("201", 1, started_at=900.0, ended_at=1000.0, result="CANCELLED",
              cause="unknown_failure", array_task=4)
    history = task_history([ran, crash], current_job="220", current_last_iter=900,
                           catalogue=catalogue)
    assert (history.retries_used, history.resubmits_so_far) == (1, 1)
    assert retries_by_task([ran, crash], catalogue) == [(4, 1)]


def test_an_array_task_with_no_row_yet_is_its_first_attempt() -> None:
    rows = [ended("201", "FAILED", "nccl_timeout", task=3)]
    history = task_history(rows, current_job="299", current_last_iter=40,
                           catalogue=Catalogue.load())
    assert history.attempts == (AttemptFacts("299", 1, last_iter=40, start_known=False),)
    assert history.retries_used == 0


def test_an_array_row_naming_no_task_is_only_itself() -> None:
    rows = [ended("201", "FAILED", "nccl_timeout"), Row("202", 2)]
    history = task_history(rows, current_job="202", current_last_iter=None,
                           catalogue=Catalogue.load())
    assert [a.job_id for a in history.attempts] == ["202"]
    assert history.retries_used == 0


# --------------------------------------------------------------- a side-by-side chain's end

def chain_end(rows: list[Row], *, watched: bool = False, pending: bool = False) -> str | None:
    return parallel_chain_end(lambda: rows, jobs_watched=watched, resubmit_pending=pending)


def test_an_adopted_job_that_vanished_stops_its_chain() -> None:
    # known to neither squeue nor sacct: its row ends UNKNOWN, undiagnosed
    rows = [Row("77", result="UNKNOWN")]
    assert chain_end(rows) == "stopped"


def test_an_adopted_job_that_completed_completes_its_chain() -> None:
    for cause in (None, "completed"):
        rows = [ended("77", "COMPLETED", cause)]
        assert chain_end(rows) == "completed"
    # Slurm said COMPLETED, but the log showed the run did not finish
    rows = [ended("77", "COMPLETED", "silent_exit")]
    assert chain_end(rows) == "stopped"


def test_an_array_goes_on_while_a_task_still_runs() -> None:
    rows = [ended("201", "COMPLETED", "completed", task=0), Row("202", array_task=1)]
    assert chain_end(rows, watched=True) is None


def test_an_array_goes_on_while_a_resubmit_left_submitting_may_have_gone_through() -> None:
    # task 1 failed and its resubmit's intent was left `submitting` by a crash after sbatch:
    # nothing is watched, but the task's job may be on its way
    rows = [ended("201", "COMPLETED", "completed", task=0),
            ended("202", "FAILED", "nccl_timeout", task=1)]
    assert chain_end(rows, pending=True) is None
    assert chain_end(rows) == "stopped"


def test_an_array_completes_when_each_tasks_latest_attempt_completed() -> None:
    rows = [ended("201", "COMPLETED", "completed", task=0),
            ended("202", "FAILED", "nccl_timeout", task=1),
            ended("230", "COMPLETED", "completed", task=1, no=3)]  # task 1's resubmit
    assert chain_end(rows) == "completed"
    failed_last = [*rows, ended("240", "OUT_OF_MEMORY", "host_oom", task=0, no=4)]
    assert chain_end(failed_last) == "stopped"


def test_a_chain_still_open_is_judged_without_reading_its_attempts() -> None:
    # a large array asks at each task's end: its rows are read only once it may have ended
    def unread() -> list[Row]:
        raise AssertionError("the attempt rows were read while the chain was still open")
    assert parallel_chain_end(unread, jobs_watched=True, resubmit_pending=False) is None
    assert parallel_chain_end(unread, jobs_watched=False, resubmit_pending=True) is None


def test_a_chain_with_no_attempt_stops() -> None:
    # an array cancelled before any task started
    assert chain_end([]) == "stopped"


# --------------------------------------------------------------- progress into an attempt row

@dataclass(frozen=True)
class Progress(Row):
    """A row with the state a progress write also sets."""

    state: str = "RUNNING"


def progress(row: Progress, now: float, written_at: float | None = 100.0,
             force: bool = False, **fields: object) -> dict[str, object]:
    return attempt_progress(row, fields, now=now, written_at=written_at, persist_every_s=60.0,
                            force=force)


def test_the_last_iteration_is_written_at_most_every_persist_interval() -> None:
    row = Progress("10", last_iter=100)
    assert progress(row, 130.0, last_iter=200) == {}  # 30 s after the last write
    assert progress(row, 170.0, last_iter=200) == {"last_iter": 200}
    assert progress(row, 105.0, written_at=None, last_iter=200) == {"last_iter": 200}


def test_a_change_of_state_or_the_jobs_end_is_written_at_once() -> None:
    row = Progress("10", last_iter=100)
    assert progress(row, 101.0, state="COMPLETING", last_iter=200) == \
        {"state": "COMPLETING", "last_iter": 200}
    assert progress(row, 101.0, force=True, last_iter=200, result="COMPLETED") == \
        {"last_iter": 200, "result": "COMPLETED"}


def test_the_last_iteration_never_goes_back_and_unknown_fields_stay() -> None:
    row = Progress("10", last_iter=500, cause="nccl_timeout")
    # a log read again from an earlier offset; no diagnosis yet
    assert progress(row, 1000.0, last_iter=300, cause=None) == {}
    assert progress(row, 1000.0, force=True, last_iter=300, state="FAILED") == \
        {"state": "FAILED"}


# --------------------------------------------------------------- a thread root's rewrites

def test_progress_alone_rewrites_a_root_at_most_once_per_interval() -> None:
    def due(now: float, rewritten_at: float | None = 1000.0) -> bool:
        return root_rewrite_due(state_changed=False, rewritten_at=rewritten_at, now=now,
                                min_interval_s=300.0)

    assert not due(1060.0) and not due(1299.0)  # rewritten less than 300 s ago: it waits
    assert due(1300.0) and due(5000.0)
    assert due(1001.0, rewritten_at=None)  # never rewritten here: at once


def test_after_a_long_downtime_progress_rewrites_are_spread_over_ticks() -> None:
    # 25 roots last rewritten hours before a restart, all with progress: at most 10 a tick,
    # the most overdue first, so every root is shown within three ticks, none twice
    last: dict[int, float | None] = {c: 1000.0 + c for c in range(1, 26)}

    def tick(now: float, restated: set[int] = set()) -> list[int]:  # noqa: B006
        due = roots_to_rewrite(
            restated=restated, progress_budget=10,
            due=roots_due(progressed=set(last) - restated, rewritten_at=last, now=now,
                          min_interval_s=300.0))
        for c in due:
            last[c] = now
        return due

    assert tick(20000.0) == list(range(1, 11))  # the oldest rewrites first
    # a run that changed state is rewritten at once, beyond the budget, before any progress
    assert tick(20060.0, restated={3, 24}) == [3, 24, *range(11, 21)]
    assert tick(20120.0) == [21, 22, 23, 25]
    assert tick(20180.0) == []  # all shown: each waits out its interval
    # they fall due again apart, each 300 s after its own rewrite (3 was at 20,060)
    assert tick(20300.0) == [1, 2, *range(4, 11)]
    assert tick(20360.0) == [3, *range(11, 20)]  # 20 waits: ten a tick


def test_a_root_never_rewritten_comes_before_overdue_ones() -> None:
    def due(progressed: set[int], rewritten_at: dict[int, float | None]) -> list[int]:
        return roots_to_rewrite(
            restated=(), progress_budget=2,
            due=roots_due(progressed=progressed, rewritten_at=rewritten_at, now=1000.0,
                          min_interval_s=300.0))

    assert due({5, 6, 7}, {5: 100.0, 6: None}) == [6, 7]
    assert due({5}, {5: 900.0}) == []


def test_roots_waiting_longer_on_another_cluster_take_the_budget_first() -> None:
    # the budget left is 3: this cluster's roots 1 and 2 wait less than the other cluster's
    # 8 (never rewritten) and 9, so only 1 is rewritten now; 2 waits with 8 and 9
    due = roots_due(progressed={1, 2}, rewritten_at={1: 100.0, 2: 400.0}, now=1000.0,
                    min_interval_s=300.0)
    assert roots_to_rewrite(restated={4}, due=due, progress_budget=3,
                            waiting_elsewhere=[(float("-inf"), 8), (50.0, 9)]) == [4, 1]
    assert roots_to_rewrite(restated=(), due=due, progress_budget=3) == [1, 2]
    assert roots_to_rewrite(restated=(), due=due, progress_budget=0) == []


def test_a_slot_of_the_progress_rewrite_budget_rests_a_minute_after_each_rewrite() -> None:
    granted = {0: 1000.0, 1: 1030.0, 3: 1059.0}
    assert free_rewrite_slots(granted, budget=5, now=1059.0) == [2, 4]
    assert free_rewrite_slots(granted, budget=5, now=1060.0) == [0, 2, 4]
    assert free_rewrite_slots(granted, budget=5, now=1119.0) == [0, 1, 2, 3, 4]
    assert free_rewrite_slots(granted, budget=2, now=1060.0) == [0]  # a smaller budget
    # a slot another replica's clock (ahead) used "later" rests a minute from then
    assert free_rewrite_slots({0: 1100.0}, budget=1, now=1150.0) == []


def test_a_change_of_state_rewrites_a_root_at_once() -> None:
    assert root_rewrite_due(state_changed=True, rewritten_at=1000.0, now=1001.0,
                            min_interval_s=300.0)
