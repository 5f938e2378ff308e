"""Finding a lost submit's job (bot.services.lost_submit.find_unrecorded_submit): by its job
name in squeue, then sacct, the first job above the run's last one that no attempt records;
a task's resubmit only as the one-task array it was. How a found job is recorded, through the
submits that lose their answer: test_manual_submit_unknown, test_crash_recovery and
test_submits_in_flight."""

from __future__ import annotations

from fakes import FakeRunner, FakeSlurm

from bot.services.lost_submit import find_unrecorded_submit


def _slurm(squeue: str, sacct: str) -> FakeSlurm:
    """A Slurm whose runner answers squeue and sacct with these job-id lists."""
    return FakeSlurm(runner=FakeRunner({"squeue": (0, squeue, ""), "sacct": (0, sacct, "")}))


def test_unrecorded_job_is_the_first_newer_unknown_one_by_name():
    slurm = _slurm(squeue="88290\n88300\n88310\n88305\n", sacct="")
    found = find_unrecorded_submit(slurm, job_name="mix; rm -rf ~", user="alice",
                                   after_job="88300", known={"88310"})
    assert found == "88305"
    assert slurm.runner.argvs() == [["squeue", "-h", "--name=mix; rm -rf ~", "--user=alice",
                                     "-o", "%A"]]  # one argv word: never a shell string


def test_finished_unrecorded_job_is_found_in_sacct():
    slurm = _slurm(squeue="", sacct="88301\n")
    found = find_unrecorded_submit(slurm, job_name="mix", user=None, after_job="88300",
                                   known=set())
    assert found == "88301" and [a[0] for a in slurm.runner.argvs()] == ["squeue", "sacct"]
    none = find_unrecorded_submit(_slurm("", ""), job_name="mix", user=None,
                                  after_job="88300", known=set())
    assert none is None


def test_a_tasks_lost_resubmit_is_its_one_task_array_never_a_sibling_task():
    """Task 1 of array 88280 (raw 88300) was resubmitted as `--array=1`: a sibling task of
    the original array that started since (raw 88305, same name) is not that resubmit."""
    slurm = _slurm(squeue="88305\n88306\n", sacct="")
    slurm.add(88305, name="sweep", state="RUNNING", array_job_id=88280, array_task_id=2)
    slurm.add(88306, name="sweep", state="PENDING", array_job_id=88306, array_task_id=1)
    found = find_unrecorded_submit(slurm, job_name="sweep", user=None, after_job="88300",
                                   known=set(), array_task=1)
    assert found == "88306"
    assert find_unrecorded_submit(slurm, job_name="sweep", user=None, after_job="88300",
                                  known=set(), array_task=0) is None
