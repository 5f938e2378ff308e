"""The end of training of torchvision's reference scripts and DETR, read from their source
(pytorch/vision references/classification/train.py 017e9b99b5da, main(); facebookresearch/detr
main.py fb60557ee378, main()): after the epoch loop, and only then, `Training time 1 day,
2:03:04` (datetime.timedelta's str of the whole seconds). No finally prints it: an exception in
the loop ends main before it. The scripts built on them (DeiT, MAE, DINO; Swin Transformer
through its logger) end the same way."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
)

from bot.core.metrics import MetricSeries
from bot.core.training_lines import LineParser


def _epoch(e: int) -> str:
    """One epoch as the scripts' MetricLogger prints it, then its evaluation."""
    return ("".join(f"Epoch: [{e}]  [{i:4d}/1251]  eta: 0:0{9 - i // 200}:12  lr: 0.000100  "
                    f"loss: {6.9 - e / 100 - i / 10000:.4f} (6.8123)  time: 0.4312  "
                    "data: 0.0012  max mem: 10342\n" for i in range(0, 1251, 250))
            + f"Epoch: [{e}] Total time: 0:09:01 (0.4330 s / it)\n"
            "Averaged stats: lr: 0.000100  loss: 6.8123 (6.8123)\n"
            "Test:  Total time: 0:00:31 (0.3120 s / it)\n"
            f"* Acc@1 {40 + e / 10:.3f} Acc@5 71.234 loss 2.345\n")


LOOP = _epoch(298) + _epoch(299)
ENDS = {
    "past a day": "Training time 1 day, 2:03:04\n",
    "hours": "Training time 7:41:09\n",
    "days": "Training time 3 days, 0:00:41\n",
    # Swin Transformer's logger: `[time name] (file line): LEVEL message`
    "logger": ("[2021-05-01 10:00:00 swin_tiny_patch4_window7_224] (main.py 174): INFO "
               "Training time 1 day, 0:29:51\n"),
}


@each_end(ENDS)
def test_the_training_time_after_the_loop_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "Training time")


def test_a_training_time_logged_after_every_epoch_is_no_end():
    """A trainer class that logs the same line at the end of each epoch; the next epoch's
    progress follows it."""
    def epoch(e: int) -> str:
        return "".join(f"epoch {e}, iter {i}, loss {0.9 - i / 1000:.4f}\n"
                       for i in range(100, 501, 100))
    assert_still_running(epoch(3) + "Training time 0:09:33\n" + epoch(4))


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + ENDS["past a day"])


def test_the_next_runs_epochs_after_it_are_still_running():
    """The MetricLogger's training lines (`Epoch: [0]  [ 250/1251]  eta: …`) are progress: a
    next run's epochs after the marker (a job script that trains twice) are no end."""
    assert_still_running(LOOP + ENDS["hours"] + _epoch(0) + _epoch(1))
    assert_still_running(LOOP + ENDS["hours"] + _epoch(0).split("Epoch: [0] Total")[0])


def test_its_training_line_is_read():
    sample, _ = LineParser().parse(
        "Epoch: [3]  [ 100/1251]  eta: 0:05:12  lr: 0.000100  loss: 0.8123 (0.8450)  "
        "time: 0.2500  data: 0.0010  max mem: 10240", 7)
    assert sample is not None
    # epochs from 0, each of 1251 steps, as an epoch's bar is read
    assert (sample.iteration, sample.loss, sample.sec_per_iter) == (3 * 1251 + 100, 0.8123, 0.25)


def test_its_evaluation_line_is_no_iteration():
    sample, _ = LineParser().parse(
        "Test:  [ 100/391]  eta: 0:00:12  loss: 0.8123 (0.8450)  acc1: 50.0000 (50.0000)  "
        "time: 0.2500  data: 0.0010  max mem: 10240", 7)
    assert sample is not None and sample.iteration is None


def test_its_max_mem_is_gpu_memory_not_host_memory():
    """`max mem: 10342` is torch.cuda.max_memory_allocated in MiB, on the training's lines and
    an evaluation's: the GPU memory, and no point of the host RSS chart (a bare number is read
    as GiB elsewhere: 10 TiB of host memory)."""
    series = MetricSeries()
    series.feed_block(LOOP + "Test:  [ 100/391]  eta: 0:00:12  loss: 0.8123 (0.8450)  "
                      "time: 0.2500  data: 0.0010  max mem: 10342\n")
    assert series.rss_points() == []
    assert {s.gpu_mem_bytes for s in series.samples if "max mem" in s.text} == {10342 * 1024**2}


def test_its_evaluation_loss_is_no_training_loss():
    """evaluate()'s `Test:` lines count its batches (i from 0), as an evaluation's bar; their
    `loss:` is the validation set's, not the training's last loss."""
    sample, _ = LineParser().parse(
        "Test:  [ 390/391]  eta: 0:00:00  loss: 3.1000 (3.2000)  acc1: 50.0000 (50.0000)  "
        "time: 0.2500  data: 0.0010  max mem: 10240", 7)
    assert sample is not None
    assert (sample.evaluation_batches, sample.loss) == ((391, 391), None)
    series = MetricSeries()
    series.feed_block(LOOP + "Test:  [ 100/391]  eta: 0:00:12  loss: 3.1000 (3.2000)  "
                      "time: 0.2500  data: 0.0010  max mem: 10342\n")
    assert series.last_loss is not None and series.last_loss < 3
