"""PaddleSeg's end of training, read from its source (PaddlePaddle/PaddleSeg
paddleseg/core/train.py d7975e7c, train()): its iteration loop runs to `iters` and prints nothing
of its own after it (paddle.flops' summary only), so its last `[TRAIN] epoch: 3, iter: 1000/1000,
...` at the total ends the run by progress; with early_stop_intervals set (since b8b2fccb,
2023-11), rank 0, after an evaluation that found no better mIoU that many times, logs `Early
stopping at iter 3000. The best mean IoU is 0.7012.` and breaks out of the loop."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    read,
)


def _iteration(it: int, total: int = 10000) -> str:
    return (f"2024-10-18 17:{it // 600 % 60:02d}:{it // 10 % 60:02d} [INFO]\t[TRAIN] epoch: "
            f"{(it - 1) // 1000 + 1}, iter: {it}/{total}, loss: 0.4120, lr: 0.000200, "
            "batch_cost: 0.2650, reader_cost: 0.00040, ips: 30.1887 samples/sec | ETA 00:30:55\n")


def _loop(upto: int, total: int = 10000) -> str:
    return "".join(_iteration(it, total) for it in range(upto - 40, upto + 1, 10))


EVAL = ("2024-10-18 17:05:17 [INFO]\tStart evaluating (total_samples: 500, total_iters: 500)...\n"
        "500/500 [==============================] - 12s 24ms/step - batch_cost: 0.0240 - "
        "reader cost: 0.0010\n"
        "2024-10-18 17:05:30 [INFO]\t[EVAL] #Images: 500 mIoU: 0.6911 Acc: 0.9312 Kappa: 0.8811 "
        "Dice: 0.8101\n")
STOP = "2024-10-18 17:05:31 [INFO]\tEarly stopping at iter 3000. The best mean IoU is 0.7012.\n"
FLOPS = ("<class 'paddle.nn.layer.conv.Conv2D'>'s flops has been counted\n"
         "Total Flops: 1239418880     Total Params: 2331088\n")


def test_the_early_stop_ends_a_finished_run():
    assert_ends_the_run(_loop(3000) + EVAL + STOP + FLOPS, "Early stopping at iter 3000")


def test_the_early_stop_as_the_last_line_ends_it():
    assert_ends_the_run(_loop(3000) + EVAL + STOP, "Early stopping at iter 3000")


def test_the_evaluations_best_model_line_is_no_end():
    """Every other evaluation's verdict: the loop goes on."""
    assert_still_running(_loop(3000) + EVAL + "2024-10-18 17:05:31 [INFO]\t[EVAL] The model with "
                         "the best validation mIoU (0.7012) was saved at iter 2000.\n")


def test_progress_after_it_is_still_running():
    """Another stage of the job script trains after it."""
    assert_still_running(_loop(3000) + EVAL + STOP + _loop(200, 20000))


def test_an_error_after_it_decides():
    assert_the_error_decides(_loop(3000) + EVAL + STOP)


def test_the_last_iteration_at_its_total_reads_completed():
    """The normal end: no line of its own; the progress at its total decides."""
    d = read(_loop(1000, 1000) + EVAL + FLOPS)
    assert (d.class_id, d.decided_by) == ("completed", "progress")
