"""bot.core.stacks: the node script's output read, ranks grouped by stack, the odd ones
named, and every failure to collect given its one cause."""

from __future__ import annotations

import json

import pytest

from bot.core.stacks import (
    JOB_ENDED,
    MARKER,
    NO_PROCESSES,
    PERMISSION_DENIED,
    PYSPY_ABSENT,
    TIMED_OUT,
    build_report,
    collection_problem,
    parse_node_output,
    summarize,
)


def frames(*names: str) -> list[dict]:
    return [{"name": n, "filename": f"/w/{n}.py", "short_filename": "train.py", "line": i + 1}
            for i, n in enumerate(names)]


def proc(pid: int, rank: int | None, *names: str, step: str = "0") -> dict:
    return {"pid": pid, "ppid": 1, "rank": rank, "step": step, "cmd": "python train.py",
            "ok": True, "threads": [
                {"os_thread_id": pid + 1000, "thread_name": "pt_watchdog", "active": True,
                 "frames": frames("watchdog_loop")},
                {"os_thread_id": pid, "thread_name": "MainThread", "active": False,
                 "frames": frames(*names)}]}


def node(host: str, *procs: dict, **extra: object) -> str:
    return MARKER + json.dumps({"host": host, "procs": list(procs), **extra})


GATHER = ("all_gather", "wrapper", "train_step", "main")
DATA = ("_get_data", "__next__", "train_step", "main")


def story_stdout() -> str:
    """Two nodes of four ranks; rank 3 (node b) waits for data while the others gather."""
    return "\n".join([
        "some env-setup noise",
        node("a", proc(11, 0, *GATHER), proc(12, 1, *GATHER)),
        node("b", proc(21, 2, *GATHER, step="1"), proc(22, 3, *DATA, step="1")),
        MARKER + '{"host": "c", "procs": [',  # a line cut short: ignored
    ])


def test_the_odd_rank_is_named_with_its_node_and_function() -> None:
    nodes = parse_node_output(story_stdout())
    assert [n.host for n in nodes] == ["a", "b"]
    summary = summarize(nodes)
    assert summary.ranks == 4
    assert summary.majority is not None
    assert summary.majority.ranks == ["rank 0", "rank 1", "rank 2"]
    assert summary.majority.where == ("all_gather", "wrapper")
    (odd,) = summary.odd
    assert (odd.ranks, odd.hosts, odd.where) == (["rank 3"], ["b"], ("_get_data", "__next__"))
    view = summary.to_view()
    assert view["odd"][0]["ranks"] == [{"rank": 3, "pid": 22, "host": "b", "step": "1"}]


def test_the_main_thread_is_compared_and_line_numbers_do_not_split_a_group() -> None:
    moved = proc(12, 1, *GATHER)
    moved["threads"][1]["frames"][0]["line"] = 99  # same function, another line of its loop
    summary = summarize(parse_node_output(node("a", proc(11, 0, *GATHER), moved)))
    assert len(summary.groups) == 1 and summary.odd == ()


def test_no_group_is_the_majority_when_two_are_as_large() -> None:
    summary = summarize(parse_node_output(node(
        "a", proc(1, 0, *GATHER), proc(2, 1, *GATHER), proc(3, 2, *DATA), proc(4, 3, *DATA))))
    assert len(summary.groups) == 2 and summary.odd == () and summary.majority is None


def test_a_process_py_spy_could_not_read_is_a_failure_beside_the_others() -> None:
    denied = {"pid": 13, "ppid": 1, "rank": 2, "step": "0", "ok": False,
              "error": "Error: Permission Denied: Try running again with elevated permissions"}
    gone = {"pid": 14, "ppid": 1, "rank": 3, "step": "0", "ok": False,
            "error": "Error: Failed to find python version", "gone": True}
    report = build_report("88154", 0, node("a", proc(11, 0, *GATHER), proc(12, 1, *GATHER),
                                           denied, gone), "", collected_at="now")
    assert report.problem is None and report.summary is not None
    causes = [(f.rank, f.cause) for f in report.summary.failures]
    assert causes == [(2, PERMISSION_DENIED), (3, JOB_ENDED)]
    assert "not read: rank 2 on a: permission_denied" in report.dump
    assert "=== rank 0 (pid 11) on a, step 0" in report.dump
    assert "    all_gather (train.py:1)" in report.dump


@pytest.mark.parametrize(("exit_code", "stdout", "stderr", "cause"), [
    (0, node("a", error="pyspy_absent", detail="/x/py-spy: not an executable file on a"), "",
     PYSPY_ABSENT),
    (0, node("a", {"pid": 5, "rank": 0, "ok": False,
                   "error": "Permission Denied: Try running again with elevated permissions"}),
     "", PERMISSION_DENIED),
    (1, "", "srun: error: Slurm job 1159 has expired", JOB_ENDED),
    (1, "", "srun: error: Unable to create step for job 7: Invalid job id specified", JOB_ENDED),
    (143, "", "slurmstepd-vm: error: *** STEP 1169.2 ON vm CANCELLED AT 2026-12-01T04:04:17 ***\n"
     "srun: error: vm: task 0: Terminated\n", JOB_ENDED),
    (1, "", "srun: error: Unable to create step for job 7: Access/permission denied",
     PERMISSION_DENIED),
    (0, node("a", error="no_processes", detail="no Python process of job 7 on a"), "",
     NO_PROCESSES),
    (None, "", "command timed out after 25 s", TIMED_OUT),
])
def test_each_way_of_getting_nothing_has_its_cause(exit_code: int | None, stdout: str,
                                                   stderr: str, cause: str) -> None:
    report = build_report("7", exit_code, stdout, stderr, collected_at="now")
    assert report.summary is None and report.dump == ""
    assert report.problem is not None and report.problem.cause == cause
    assert report.to_view()["problem"]["cause"] == cause


def test_nothing_is_a_problem_once_one_stack_was_read() -> None:
    nodes = parse_node_output(node("a", proc(1, 0, *GATHER)) + "\n"
                              + node("b", error="pyspy_absent", detail="absent on b"))
    assert collection_problem(0, "", nodes) is None
    assert [f.cause for f in summarize(nodes).failures] == [PYSPY_ABSENT]
