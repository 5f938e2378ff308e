"""darknet's end of training, read from its source (AlexeyAB/darknet src/detector.c
10ff51967d40, train_detector; pjreddie/darknet examples/detector.c, the same function): the loop
runs `while (get_current_batch(net) < net.max_batches)` with no break, and only after it saves
`<backup>/<cfg>_final.weights`, which save_weights announces (`Saving weights to
backup//yolov4_final.weights`). Its errors exit() where they happen. Inside the loop it saves
`_last` every 100 iterations, `_<iteration>` every 1000 and `_best` on a better mAP (pjreddie's:
`.backup` and `_<iteration>`)."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
)


def _iteration(i: int) -> str:
    line = (f"Loaded: 0.000034 seconds\n\n {i}: {0.9 - i / 100000:.6f}, "
            f"{0.95 - i / 100000:.6f} avg loss, 0.000010 rate, 2.345678 seconds, {i * 64} "
            f"images, {(6000 - i) / 1500:.6f} hours left\n")
    return line + ("Saving weights to backup//yolov4-custom_last.weights\n" if i % 100 == 0
                   else "")


LOOP = "".join(_iteration(i) for i in range(5980, 6001))
FINAL = "Saving weights to backup//yolov4-custom_final.weights\n"
ENDS = {
    # the .data file's `backup = backup/` and the cfg's base name, joined with a `/`
    "relative backup": FINAL,
    "absolute backup": ("Saving weights to /scratch/u123/darknet/backup//"
                        "yolov3-tiny_final.weights\n"),
}


@each_end(ENDS)
def test_the_final_weights_save_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "_final.weights")


def test_the_loops_own_saves_are_no_end():
    assert_still_running(LOOP + "Saving weights to backup//yolov4-custom_6000.weights\n"
                         "Saving weights to backup//yolov4-custom_best.weights\n")


def test_a_later_stage_training_after_it_is_still_running():
    """A job script that trains again after darknet: that stage's progress follows."""
    assert_still_running(LOOP + FINAL + "".join(f"epoch 1, iter {i}, loss {0.5 - i / 10000:.4f}\n"
                                                for i in range(100, 501, 100)))


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + FINAL)
