"""A whole array's root: a row per task, within Slack's limits however many tasks there are."""

from __future__ import annotations

from bot.core.arrays import ArrayTask, array_state, build_array_root


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
    assert task_retries_used([], catalogue) == 0
    assert task_retries_used(["node_failure", "preempted"], catalogue) == 0  # not charged
    assert task_retries_used(["nccl_timeout", "time_limit", None], catalogue) == 3
    assert task_retries_used(["no_such_class"], catalogue) == 1  # unknown charges


def test_the_tasks_that_used_retries_are_named_the_most_spent_first() -> None:
    from bot.core.arrays import retries_by_task
    from bot.core.catalogue import Catalogue

    catalogue = Catalogue.load()
    attempts = [(0, "completed"), (1, "nccl_timeout"), (2, "node_failure"), (3, "time_limit"),
                (None, None),  # the array's not-yet-started remainder: no task
                (1, "nccl_timeout"), (2, "completed"), (3, "nccl_timeout"), (1, None)]
    # task 1: two charged resubmits, its third attempt runs; task 3: one, its second failed
    # (not resubmitted: not a retry); task 2: a free resubmit after a node failure
    assert retries_by_task(attempts, catalogue) == [(1, 2), (3, 1)]
    assert retries_by_task([(0, "nccl_timeout")], catalogue) == []  # failed, never retried
