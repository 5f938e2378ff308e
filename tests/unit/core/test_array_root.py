"""A whole array's root: a row per task, within Slack's limits however many tasks there are."""

from __future__ import annotations

from types import SimpleNamespace

from bot.core.arrays import ArrayTask, array_state, build_array_root
from bot.core.models import CheckpointMark, ChunkBounds


def tasks(states: dict[int, str], cause: dict[int, str] | None = None) -> list[ArrayTask]:
    cause = cause or {}
    return [ArrayTask(f"100_{n}", str(200 + n), s, None, cause.get(n)) for n, s in states.items()]


def test_rows_in_task_order_with_counts_by_state() -> None:
    view = build_array_root(array_job_id=100, name="sweep", waiting=True,
                            tasks=tasks({10: "RUNNING", 2: "COMPLETED", 3: "FAILED"},
                                        {3: "host_oom"}))
    assert [t.display_id for t in view.rows] == ["100_2", "100_3", "100_10"]
    assert dict(view.counts) == {"RUNNING": 1, "COMPLETED": 1, "FAILED": 1}
    assert (view.state, view.started, view.waiting, view.hidden) == ("RUNNING", 3, True, ())


def test_beyond_the_cap_failures_and_running_tasks_keep_their_rows() -> None:
    states = {n: "COMPLETED" for n in range(100)}
    states.update({5: "FAILED", 77: "RUNNING", 99: "OUT_OF_MEMORY"})
    view = build_array_root(array_job_id=100, name="sweep", tasks=tasks(states),
                            waiting=False, max_rows=10)
    shown = [t.display_id for t in view.rows]
    assert len(shown) == 10 and {"100_5", "100_77", "100_99"} <= set(shown)
    assert shown == sorted(shown, key=lambda d: int(d.split("_")[1]))  # still in task order
    assert dict(view.hidden) == {"COMPLETED": 90}


def test_the_arrays_state() -> None:
    assert array_state(tasks({0: "COMPLETED", 1: "COMPLETED"}), waiting=False) == "COMPLETED"
    assert array_state(tasks({0: "COMPLETED"}), waiting=True) == "PENDING"
    assert array_state(tasks({0: "COMPLETED", 1: "FAILED"}), waiting=False) == "FAILED"
    assert array_state(tasks({0: "COMPLETED"}, {0: "silent_exit"}), waiting=False) == "FAILED"
    assert array_state([], waiting=True) == "PENDING"


def test_a_resubmitted_task_is_one_row_its_latest_attempt_numbered() -> None:
    attempts = [*tasks({0: "COMPLETED", 1: "NODE_FAIL", 2: "RUNNING"}, {1: "node_failure"}),
                ArrayTask("140_1", "140", "RUNNING"),
                ArrayTask("151_1", "151", "COMPLETED", 90, "completed")]
    view = build_array_root(array_job_id=100, name="sweep", tasks=attempts, waiting=False,
                            recipe="sweep")
    assert [(t.display_id, t.state, t.attempt) for t in view.rows] == [
        ("100_0", "COMPLETED", 1), ("151_1", "COMPLETED", 3), ("100_2", "RUNNING", 1)]
    assert view.started == 3 and dict(view.counts) == {"COMPLETED": 2, "RUNNING": 1}
    assert view.recipe == "sweep" and view.state == "RUNNING"


def test_a_tasks_retries_are_its_earlier_attempts_whose_cause_charges_the_budget() -> None:
    from bot.core.arrays import task_retries_used
    from bot.core.catalogue import Catalogue

    catalogue = Catalogue.load()

    def used(*causes: str | None) -> int:  # each attempt resumed from the same checkpoint
        return task_retries_used([(c, CheckpointMark("iter_2000", 2000)) for c in causes],
                                 catalogue)

    assert used() == 0 and used("nccl_timeout") == 0  # the latest: not resubmitted (yet)
    assert used("node_failure", "preempted", None) == 0  # not charged
    assert used("nccl_timeout", "time_limit", None, None) == 3
    assert used("no_such_class", None) == 1  # unknown charges


def test_a_tasks_time_limit_chunk_that_saved_a_newer_checkpoint_spent_no_retry() -> None:
    from bot.core.arrays import task_retries_used
    from bot.core.catalogue import Catalogue

    catalogue = Catalogue.load()
    def at(it: int | None) -> CheckpointMark:
        return CheckpointMark(f"iter_{it}" if it is not None else None, it)

    # chunks from scratch to 2000, 4000, 6000: the run going on, not retrying
    chunks = [("time_limit", at(None)), ("time_limit", at(2000)), ("time_limit", at(4000)),
              (None, at(6000))]
    assert task_retries_used(chunks, catalogue) == 0
    # ... at most max_free_chunks in a row: the next one is charged, and the count starts over
    assert task_retries_used(chunks, catalogue, bounds=ChunkBounds(max_free_chunks=2)) == 1
    assert task_retries_used(chunks, catalogue, bounds=ChunkBounds(max_free_chunks=1)) == 1
    assert task_retries_used(chunks, catalogue, bounds=ChunkBounds(max_free_chunks=0)) == 3
    # ... each past its start and within the run's target: a checkpoint past it is another
    # run's, saved into the same dir
    assert task_retries_used(chunks, catalogue, bounds=ChunkBounds(target_iter=4000)) == 1
    # an unknown start (a whole-array submit's task) shows no progress: charged
    assert task_retries_used([("time_limit", None), (None, at(2000))], catalogue) == 1
    # a chunk resumed from where it started (it saved nothing newer) is a retry
    assert task_retries_used([("time_limit", at(2000)), ("time_limit", at(2000)),
                              (None, at(4000))], catalogue) == 1
    # only a time limit is a chunk: an NCCL abort after a save is still a retry
    assert task_retries_used([("nccl_timeout", at(2000)), (None, at(4000))], catalogue) == 1


def test_the_tasks_that_used_retries_are_named_the_most_spent_first() -> None:
    from bot.core.arrays import retries_by_task
    from bot.core.catalogue import Catalogue

    catalogue = Catalogue.load()
    def row(task: int | None, cause: str | None, start: int | None) -> SimpleNamespace:
        return SimpleNamespace(array_task=task, cause=cause, start_iter=start,
                               checkpoint_path=f"/ck/iter_{start}" if start else None)

    attempts = [row(0, "completed", None), row(1, "nccl_timeout", None),
                row(2, "node_failure", None), row(3, "time_limit", None),
                row(4, "time_limit", 1000),
                row(None, None, None),  # the array's not-yet-started remainder: no task
                row(1, "nccl_timeout", None), row(2, "completed", None),
                row(3, "nccl_timeout", None), row(4, "time_limit", 2000),
                row(1, None, None), row(4, "completed", 4000)]
    # task 1: two charged resubmits, its third attempt runs; task 3: one, its second failed
    # (not resubmitted: not a retry); task 2: a free resubmit after a node failure; task 4:
    # its first time limit (of the whole array's submit: what it resumed from is unknown) is
    # charged, its resubmit's a chunk that saved a checkpoint its own resubmit resumed from
    assert retries_by_task(attempts, catalogue) == [(1, 2), (3, 1), (4, 1)]
    assert retries_by_task([row(0, "nccl_timeout", None)], catalogue) == []  # never retried


def test_an_array_whose_live_tasks_are_stopped_is_not_running() -> None:
    """A task sent SIGSTOP (squeue: STOPPED) or suspended does not run: with no task running,
    the array's root says STOPPED (SUSPENDED when none is stopped), with the ⏸️ of a paused
    job, where it said RUNNING; one running task still makes it RUNNING."""
    assert array_state(tasks({0: "STOPPED", 1: "COMPLETED"}), waiting=True) == "STOPPED"
    assert array_state(tasks({0: "STOPPED", 1: "SUSPENDED"}), waiting=False) == "STOPPED"
    assert array_state(tasks({0: "SUSPENDED"}), waiting=False) == "SUSPENDED"
    assert array_state(tasks({0: "STOPPED", 1: "RUNNING"}), waiting=False) == "RUNNING"
    view = build_array_root(array_job_id=100, name="sweep", waiting=False,
                            tasks=tasks({0: "STOPPED", 1: "COMPLETED"}))
    assert view.state == "STOPPED"
