"""Which records of a tick are tasks of a watched array that started and are no attempt of its
chain yet (bot.core.arrays.new_array_tasks), over plain records."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.arrays import new_array_tasks, recorded_plain
from bot.core.slurm.records import JobRecord


@dataclass(frozen=True)
class Chain:
    id: int
    is_array: bool = True
    array_job_id: int | None = 100


def task(job_id: int, task_id: int | None, array: int = 100) -> JobRecord:
    return JobRecord(job_id=job_id, state="RUNNING", array_job_id=array, array_task_id=task_id)


def jobs(started: list[tuple[Chain, JobRecord]]) -> list[tuple[int, int]]:
    return [(chain.id, rec.job_id) for chain, rec in started]


def no_attempts(chain_id: int) -> set[str]:
    return set()


def test_the_started_tasks_of_a_watched_array_in_task_order() -> None:
    records = [task(103, 10), task(101, 2), task(100, None), task(102, 3)]  # 100: pending rest
    started = new_array_tasks([("100", Chain(1))], records, no_attempts)
    assert jobs(started) == [(1, 101), (1, 102), (1, 103)]


def test_tasks_already_attempts_of_the_chain_are_left_out() -> None:
    asked: list[int] = []

    def attempt_jobs(chain_id: int) -> set[str]:
        asked.append(chain_id)
        return {"101"}

    started = new_array_tasks([("100", Chain(1)), ("101", Chain(1))],
                              [task(101, 0), task(102, 1)], attempt_jobs)
    assert jobs(started) == [(1, 102)]
    assert asked == [1]  # once per array


def test_a_tasks_one_task_resubmit_is_known_by_its_watched_job() -> None:
    """Task 4 of array 100 resubmitted as array 140: its task is 140_0, job 141."""
    records = [task(141, 0, array=140), task(151, 0, array=150)]
    started = new_array_tasks([("100", Chain(1)), ("140", Chain(1))], records, no_attempts)
    assert jobs(started) == [(1, 141)]  # 150 is nobody's


def test_each_array_its_own_tasks_in_the_order_watched() -> None:
    a, b = Chain(1, array_job_id=100), Chain(2, array_job_id=200)
    records = [task(201, 0, array=200), task(101, 0), task(102, 1)]
    started = new_array_tasks([("200", b), ("100", a)], records, no_attempts)
    assert jobs(started) == [(2, 201), (1, 101), (1, 102)]


def test_only_array_chains_with_tasks_in_the_records_are_asked_about() -> None:
    def attempt_jobs(chain_id: int) -> set[str]:
        raise AssertionError(f"chain {chain_id} asked")

    records = [task(101, 0), JobRecord(job_id=300)]
    watched = [("100", Chain(1, is_array=False)), ("100", None),
               ("300", Chain(3, array_job_id=300)), ("101", Chain(4, array_job_id=None))]
    assert new_array_tasks(watched, records, attempt_jobs) == []


# ------------------------------------------------------------------ cancelling a whole array


def test_task_ranges_are_written_as_slurms_listings_write_them() -> None:
    from bot.core.arrays import MAX_TASK_RUNS, task_range

    assert task_range(6101, [2]) == "6101_2"
    assert task_range(6101, [3, 0, 1, 2]) == "6101_[0-3]"
    assert task_range(6101, [0, 1, 5, 7, 8, 9]) == "6101_[0-1,5,7-9]"
    scattered = task_range(6101, range(0, 4 * MAX_TASK_RUNS, 2))  # 40 runs of one task
    assert scattered.startswith("6101_[0,2,4,") and scattered.endswith(",38,…]")
    assert len(scattered) < 200


def test_what_cancelling_a_whole_array_does_to_each_task() -> None:
    """From the tasks' records before `scancel 6101`: running ones stopped, waiting ones
    (a requeued task's own row, the pending remainder) cancelled, ended ones left alone, a
    suspended one apart from the running (a hold or release leaves it suspended); a record
    of another array is not this one's."""
    from bot.core.arrays import ArrayControl, array_control

    def rec(raw: int, task: int | None, state: str, array: int = 6101) -> JobRecord:
        return JobRecord(raw, state=state, array_job_id=array, array_task_id=task)

    records = [rec(6101, None, "PENDING"), rec(6102, 0, "COMPLETED"), rec(6103, 1, "RUNNING"),
               rec(6104, 2, "SUSPENDED"), rec(6105, 4, "FAILED"), rec(6106, 5, "REQUEUED"),
               rec(7001, 0, "RUNNING", array=7000)]
    assert array_control(6101, records) == ArrayControl(
        running="6101_1", waiting="6101_5", not_started=True, ended="6101_[0,4]",
        suspended="6101_2")
    assert array_control(6101, [rec(6102, 0, "COMPLETED"), rec(6101, None, "CANCELLED")]) == \
        ArrayControl(None, None, False, "6101_0")


def test_a_stopped_task_is_neither_running_nor_suspended() -> None:
    """A task Slurm lists as STOPPED (its processes sent SIGSTOP, `scancel --signal=STOP`:
    it keeps its allocation and runs nothing) goes apart from the running tasks, which a
    cancel stops and a hold or release leaves running, and from the suspended ones: a
    cancel ends it, a hold or release leaves it stopped (only SIGCONT continues it)."""
    from bot.core.arrays import ArrayControl, array_control

    def rec(raw: int, task: int | None, state: str) -> JobRecord:
        return JobRecord(raw, state=state, array_job_id=6101, array_task_id=task)

    records = [rec(6101, None, "PENDING"), rec(6102, 0, "COMPLETED"), rec(6103, 1, "RUNNING"),
               rec(6104, 2, "STOPPED"), rec(6105, 3, "SUSPENDED"), rec(6106, 4, "STOPPED"),
               rec(6107, 5, "STOPPED")]
    assert array_control(6101, records) == ArrayControl(
        running="6101_1", waiting=None, not_started=True, ended="6101_0",
        suspended="6101_3", stopped="6101_[2,4-5]")
    # no stopped task: the field stays None, as before
    assert array_control(6101, records[:2]).stopped is None


def test_only_an_adopted_jobs_record_settles_that_it_is_no_arrays() -> None:
    """`/train watch` asked Slurm of an adopted job; a recipe's run may be an array its batch
    script asked for (`#SBATCH --array`), which trainbot's record of the submit does not show;
    an array's chain or task, or no chain, is not a plain job's record."""
    assert recorded_plain("adopted", None)
    assert not recorded_plain("run", None)
    assert not recorded_plain("array", None)
    assert not recorded_plain(None, None)
    assert not recorded_plain("adopted", 2)
    assert not recorded_plain("run", 3)
