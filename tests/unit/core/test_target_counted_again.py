"""The training progress reaches its target only when its last progress line does: a run that
counted to its target and then a next run counting toward the same target again from half of
it or less, with no banner between (a script run twice into one log), has not reached it
(bot.core.diagnose.finished_job.target_reached reads the last progress line, not only the highest
count); a rank's last steps printed after another rank's end are no new run."""

from __future__ import annotations

from support.end_marker import read

FIRST_RUN = "step 900/1000 loss 0.4\nstep 1000/1000 loss 0.3\nTest acc: 0.9\n"


def test_a_run_at_its_target_reads_completed():
    d = read(FIRST_RUN)
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_next_run_counting_toward_the_same_target_is_still_running():
    d = read(FIRST_RUN + "step 100/1000 loss 2.1\nstep 200/1000 loss 1.9\n")
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_a_rank_printing_its_last_steps_after_another_ranks_end_is_no_new_run():
    d = read("step 900/1000 loss 0.4\nstep 1000/1000 loss 0.3\nstep 990/1000 loss 0.3\n")
    assert d.class_id == "completed"
