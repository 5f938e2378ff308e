"""Which records of a tick are tasks of a watched array that started and are no attempt of its
chain yet (bot.core.arrays.new_array_tasks), over plain records."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.arrays import new_array_tasks
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
