"""OpenMMLab's runners' log lines, read from their source: mmcv 1.x's TextLoggerHook._log_info
(open-mmlab/mmcv mmcv/runner/hooks/logger/text.py: `Epoch [12][7300/7330]\\tlr: …, memory:
3512, …` / `Iter [80000/80000]\\t…`, an evaluation's `Epoch(val) [12][500]\\t…`) behind mmdet 2.x,
mmseg 0.x and mmpose, and mmengine's LogProcessor (mmengine/runner/log_processor.py:
`Epoch(train)  [12][7330/7330]  lr: …`, `Iter(train) [80000/80000]  …`, `Epoch(val)
[12][500/500]  …`). The training's header is progress; `memory:` is GPU MiB, no host memory."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

import pytest
from support.end_marker import read

from bot.core.detectors import detect_stall
from bot.core.metrics import MetricSeries
from bot.core.training_lines import LineParser

_MMCV_EPOCH = ("2021-03-01 10:00:00,123 - mmdet - INFO - Epoch [12][7300/7330]\tlr: 2.000e-04, "
               "eta: 0:00:15, time: 0.512, data_time: 0.010, memory: 3512, loss_rpn_cls: 0.0100, "
               "loss_cls: 0.1500, loss: 0.4123")


def _mmseg_iter(i: int) -> str:
    return (f"2021-03-01 10:{i // 1000 % 60:02d}:00,123 - mmseg - INFO - Iter [{i}/80000]\t"
            "lr: 1.000e-04, eta: 0:10:00, time: 0.400, data_time: 0.010, memory: 5000, "
            "decode.loss_seg: 0.1200, decode.acc_seg: 95.0000, loss: 0.2000\n")


def _mmseg_log(last: int) -> str:
    """An iteration-based mmseg run's log up to `Iter [last/80000]`."""
    return ("2021-03-01 09:00:00,000 - mmseg - INFO - Distributed training: False\n"
            + "".join(_mmseg_iter(i) for i in range(last - 400, last + 1, 50)))


def _read(line: str) -> tuple[int | None, int | None, float | None, float | None]:
    sample, _ = LineParser().parse(line, 1)
    assert sample is not None
    return sample.iteration, sample.target_iter, sample.loss, sample.sec_per_iter


@pytest.mark.parametrize("line", [
    _mmseg_iter(80000).rstrip("\n"),
    "12/05 10:00:00 - mmengine - INFO - Iter(train) [80000/80000]  lr: 1.0000e-04  eta: 0:00:00  "
    "time: 0.4000  data_time: 0.0100  memory: 5000  loss: 0.2000",
], ids=["mmcv", "mmengine"])
def test_an_iteration_based_line_gives_its_iteration_and_target(line: str):
    assert _read(line) == (80000, 80000, 0.2, 0.4)


def test_mmengine_pads_its_iteration():
    assert _read("12/05 10:00:00 - mmengine - INFO - Iter(train) [  100/80000]  lr: 1.0000e-04  "
                 "eta: 8:53:20  time: 0.4000  data_time: 0.0100  memory: 5000  loss: 0.2000"
                 )[:2] == (100, 80000)


@pytest.mark.parametrize("line", [
    _MMCV_EPOCH,
    _MMCV_EPOCH.replace("Epoch [12]", "Epoch(train) [12]"),
    "12/05 10:00:00 - mmengine - INFO - Epoch(train)  [12][7300/7330]  lr: 2.0000e-04  "
    "eta: 0:00:15  time: 0.5120  data_time: 0.0100  memory: 3512  loss: 0.4123",
], ids=["mmcv", "mmcv-train-mode", "mmengine"])
def test_an_epoch_based_line_reads_as_an_epochs_bar(line: str):
    """Epochs and their steps from 1: the 11 epochs before it, of 7330 steps each, and 7300 of
    the 12th; no target (the number of epochs is not on the line), as an `Epoch 3:` bar."""
    assert _read(line) == (11 * 7330 + 7300, None, 0.4123, 0.512)


@pytest.mark.parametrize(("line", "batches", "summary"), [
    ("2021-03-01 10:00:00,123 - mmdet - INFO - Epoch(val) [12][500]\tbbox_mAP: 0.3740, "
     "bbox_mAP_50: 0.5810", (500, 500), True),
    ("2021-03-01 10:00:00,123 - mmseg - INFO - Iter(val) [500]\taAcc: 0.9500, mIoU: 0.7700",
     (500, 500), True),
    ("2021-03-01 10:00:00,123 - mmcls - INFO - Epoch(val) [100][313]\taccuracy_top-1: 76.5600, "
     "accuracy_top-5: 93.0100", (313, 313), True),
    ("12/05 10:00:00 - mmengine - INFO - Epoch(val) [12][100/500]  eta: 0:00:40  time: 0.1000  "
     "data_time: 0.0100  memory: 500", (100, 500), False),
    ("12/05 10:00:00 - mmengine - INFO - Iter(val) [ 50/500]  eta: 0:00:45  time: 0.1000  "
     "data_time: 0.0100  memory: 500", (50, 500), False),
    ("12/05 10:00:00 - mmengine - INFO - Epoch(test) [500/500]  eta: 0:00:00  time: 0.1000  "
     "data_time: 0.0100  memory: 500", (500, 500), False),
    ("12/05 10:20:00 - mmengine - INFO - Epoch(val) [12][500/500]    coco/bbox_mAP: 0.3740  "
     "coco/bbox_mAP_50: 0.5810  coco/bbox_mAP_75: 0.4040  coco/bbox_mAP_s: 0.2120  "
     "data_time: 0.0100  time: 0.1000", (500, 500), True),
    ("12/05 10:20:00 - mmengine - INFO - Iter(val) [500/500]    aAcc: 95.0000  mIoU: 77.0000  "
     "mAcc: 85.0000  data_time: 0.0100  time: 0.1000", (500, 500), True),
    ("12/05 10:20:00 - mmengine - INFO - Epoch(test) [500/500]    coco/AP: 0.7210  "
     "coco/AP .5: 0.8920  data_time: 0.0100  time: 0.1000", (500, 500), True),
], ids=["mmcv-epoch-val", "mmcv-iter-val", "mmcv-accuracy_top-1", "mmengine-epoch-val",
        "mmengine-iter-val", "mmengine-test-last-batch", "mmengine-epoch-val-summary",
        "mmengine-iter-val-summary", "mmengine-test-summary"])
def test_an_evaluation_line_is_its_batches_no_training_progress(line: str, batches, summary):
    """Its batches done and their total, as an evaluation's bar is read (activity of the run),
    and no training figure (no loss, pace or iteration: `coco/bbox_mAP` and `time:` are the
    evaluation's). A line once the pass is over sums it up (`evaluation_done`): mmcv's
    (EvalHook's `eval_iter_num`, all of them; mmcls's hyphenated metric names too) and
    mmengine's (LogProcessor.get_log_after_epoch: n of n, the evaluator's metrics, no eta),
    not the pass's last batch line (get_log_after_iter at 500/500, its eta 0:00:00)."""
    sample, _ = LineParser().parse(line, 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.loss, sample.sec_per_iter) == (
        None, None, None, None)
    assert (sample.evaluation_batches, sample.evaluation_done) == (batches, summary)


def _kubectl(t: float) -> str:
    """A line's time as `kubectl logs --timestamps` prefixes it."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")


def _mmengine_validation(t0: float, batches: int) -> str:
    """mmengine's epoch-based training, 100 steps 0.6 s apart (logged every 10), then its
    validation of 500 batches, logged every 50 of them 30 s apart, up to `batches`."""
    train = "".join(
        f"{_kubectl(t0 + 0.6 * i)} Epoch(train)  [1][{i:3d}/100]  lr: 2.0000e-04  eta: 0:01:00  "
        "time: 0.6000  data_time: 0.0100  memory: 3512  loss: 0.4123\n" for i in range(10, 101, 10))
    return train + "".join(
        f"{_kubectl(t0 + 60 + 3 * b / 5)} Epoch(val)  [1][{b:3d}/500]    eta: 0:04:30  "
        "time: 0.6000  data_time: 0.0100  memory: 900\n" for b in range(50, batches + 1, 50))


def test_a_long_validation_is_no_stall_until_it_stops():
    """A validation logging its batches after the last training step is activity: no stall
    while it advances, though no training step came for longer than the threshold (300 s);
    one that stops advancing is a stall from its last line, at the training's last
    iteration."""
    t0 = float(calendar.timegm((2025, 5, 14, 16, 0, 0)))
    series = MetricSeries()
    series.feed_block(_mmengine_validation(t0, 500))
    assert (series.last_iteration, series.sec_per_iter()) == (100, 0.6)
    assert detect_stall(series, t0 + 60 + 300 + 290) is None
    series = MetricSeries()
    series.feed_block(_mmengine_validation(t0, 250))
    finding = detect_stall(series, t0 + 60 + 150 + 1200)
    assert finding is not None
    assert (finding.last_iter, finding.started_at) == (100, t0 + 60 + 150)
    assert "[1][250/500]" in finding.last_text


def test_memory_is_gpu_mib_not_host_memory():
    """`memory: 5000` is torch.cuda.max_memory_allocated in MiB: the GPU memory, no point of
    the host RSS chart (a bare number is read as GiB elsewhere)."""
    series = MetricSeries()
    series.feed_block(_mmseg_log(40000) + _MMCV_EPOCH + "\n")
    assert series.rss_points() == []
    assert {s.gpu_mem_bytes for s in series.samples if "memory" in s.text} == {
        5000 * 1024**2, 3512 * 1024**2}


def test_a_log_at_its_last_iteration_reads_completed():
    d = read(_mmseg_log(80000))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_log_half_way_reads_still_running():
    d = read(_mmseg_log(40000))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def _mmdet_epoch(epoch: int, t: float) -> str:
    """mmdet 2.x's epoch `epoch` of 100 steps (logged every 50: TextLoggerHook's `Epoch
    [E][i/n]`), 60 s of training from `t`, then EvalHook's validation, 20 minutes, whose
    results TextLoggerHook logs once it is over (`Epoch(val) [E][500]`, the val loader's 500
    batches: `eval_iter_num`); mmcv's ProgressBar draws on stdout meanwhile (`[>>>>] 500/500,
    …`, one line of carriage returns)."""
    at = "{} - mmdet - INFO - "
    train = "".join(
        at.format(_dated(t + 0.6 * i)) + f"Epoch [{epoch}][{i}/100]\tlr: 2.000e-04, eta: 0:10:00, "
        "time: 0.600, data_time: 0.010, memory: 3512, loss_cls: 0.1500, loss: 0.4123\n"
        for i in (50, 100))
    bar = "".join(f"\r[{'>' * (n // 10)}{' ' * (50 - n // 10)}] {n}/500, 0.4 task/s, elapsed: "
                  f"{n * 12 // 5}s, ETA: {(500 - n) * 12 // 5:5d}s" for n in range(100, 501, 100))
    return (train + "[" + " " * 50 + "] 0/500, elapsed: 0s, ETA:" + bar + "\n"
            + at.format(_dated(t + 60 + 1200)) + f"Epoch(val) [{epoch}][500]\tbbox_mAP: 0.3740, "
            "bbox_mAP_50: 0.5810, bbox_mAP_copypaste: 0.374 0.581 0.404 0.212 0.410 0.481\n")


def _dated(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S,000")


def _progress_bar(drawn: int, total: int = 500) -> str:
    """mmcv's ProgressBar (mmcv/utils/progressbar.py) over `total` images up to `drawn`, as
    single_gpu_test draws it on stdout: its start, then each update after a carriage return
    (the first one `inf task/s`, at 0 s), 50 marks wide, 2.4 s an image; no newline."""
    draws = [f"[{' ' * 50}] 0/{total}, elapsed: 0s, ETA:"]
    for n in range(1, drawn + 1):
        marks = 50 * n // total
        fps = "inf" if n == 1 else f"{n / (2.4 * n):.1f}"
        elapsed = 0 if n == 1 else round(2.4 * n)
        draws.append(f"\r[{'>' * marks}{' ' * (50 - marks)}] {n}/{total}, {fps} task/s, "
                     f"elapsed: {elapsed}s, ETA: {round(2.4 * (total - n)):5d}s")
    return "".join(draws)


@pytest.mark.parametrize(("bar", "batches"), [
    (_progress_bar(0), (0, 500)),
    (_progress_bar(1), (1, 500)),
    (_progress_bar(120), (120, 500)),
    (_progress_bar(500) + "2021-03-01 10:21:00,123 - mmdet - INFO - Evaluating bbox...",
     (500, 500)),
], ids=["started", "first-update", "mid-pass", "logger-line-after"])
def test_mmcvs_progress_bar_is_an_evaluations_batches(bar: str, batches):
    """The test loop's bar counts the evaluation's images: no iteration, target or pace of
    training; the logger's next line, written after its last draw with no newline between,
    is not read for one."""
    sample, _ = LineParser().parse(bar, 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.sec_per_iter) == (None, None, None)
    assert sample.evaluation_batches == batches


def test_a_validation_drawing_mmcvs_progress_bar_is_activity():
    """mmdet 2.x's epoch of 100 steps, then EvalHook's single_gpu_test drawing its bar over
    500 images, read through `kubectl logs --timestamps` (its line stamped as it was written
    out, 480 s into the pass, at 200 of 500): the run is active from the bar's line, not idle
    since the epoch's last training line 480 s before (a stall threshold of 300 s); a bar that
    stops advancing is a stall from its line, at the training's last iteration."""
    t0 = float(calendar.timegm((2021, 3, 1, 10, 0, 0)))
    train = "".join(
        f"{_kubectl(t0 + 0.6 * i)} {_dated(t0 + 0.6 * i)} - mmdet - INFO - Epoch [1][{i}/100]\t"
        "lr: 2.000e-04, eta: 0:10:00, time: 0.600, data_time: 0.010, memory: 3512, "
        "loss_cls: 0.1500, loss: 0.4123\n" for i in (50, 100))
    drawn_at = t0 + 60 + 480
    series = MetricSeries()
    series.feed_block(train + f"{_kubectl(drawn_at)} {_progress_bar(200)}")
    assert series.last_evaluation is not None
    assert series.last_evaluation.evaluation_batches == (200, 500)
    assert (series.last_iteration, series.target_iter, series.sec_per_iter()) == (100, None, 0.6)
    assert detect_stall(series, drawn_at + 250) is None
    finding = detect_stall(series, drawn_at + 900)
    assert finding is not None
    assert (finding.last_iter, finding.started_at) == (100, drawn_at)


def _mmengine_epoch(epoch: int, t: float) -> str:
    """mmdet 3.x's epoch `epoch` from `t`: 100 training steps 0.6 s apart (logged every 50),
    its validation's 500 batches 0.12 s apart (logged every 250: get_log_after_iter), then
    CocoMetric's evaluation, 10 minutes, and the pass's summary (get_log_after_epoch)."""
    at = " - mmengine - INFO - "
    train = "".join(
        f"{_kubectl(t + 0.6 * i)}{at}Epoch(train) [{epoch}][{i:3d}/100]  lr: 2.0000e-04  "
        "eta: 0:10:00  time: 0.6000  data_time: 0.0100  memory: 3512  loss: 0.4123\n"
        for i in (50, 100))
    val = "".join(
        f"{_kubectl(t + 60 + 0.12 * b)}{at}Epoch(val) [{epoch}][{b:3d}/500]    eta: 0:00:30  "
        "time: 0.1200  data_time: 0.0100  memory: 900\n" for b in (250, 500))
    done = t + 60 + 60 + 600
    return (train + val + f"{_kubectl(done)}{at}Epoch(val) [{epoch}][500/500]    "
            "coco/bbox_mAP: 0.3740  coco/bbox_mAP_50: 0.5810  data_time: 0.0100  time: 0.1200\n")


@pytest.mark.parametrize(("epoch_log", "epoch_s", "t0", "summary"), [
    (_mmdet_epoch, 1260, (2021, 3, 1, 10, 0, 0), "Epoch(val) [2][500]\tbbox_mAP"),
    (_mmengine_epoch, 720, (2025, 5, 14, 16, 0, 0), "Epoch(val) [2][500/500]    coco/bbox_mAP"),
], ids=["mmcv", "mmengine"])
def test_each_epochs_evaluation_summary_is_new_activity(epoch_log, epoch_s: int, t0, summary):
    """The summary counts the same 500 batches every epoch (mmcv's `[500]`; mmengine's
    `[500/500]`, as the pass's last batch line did, 10 minutes before it: the COCO evaluation
    between them logs no line of its own); the second epoch's is a pass of its own all the
    same: the run is idle from it, not from the training's or the batches' last line (a stall
    threshold of 300 s); its metrics are no loss and its `time:` no pace of training."""
    start = float(calendar.timegm(t0))
    series = MetricSeries()
    series.feed_block(epoch_log(1, start) + epoch_log(2, start + epoch_s))
    second = start + 2 * epoch_s
    assert series.last_evaluation is not None
    assert summary in series.last_evaluation.text
    assert (series.last_iteration, series.last_loss, series.sec_per_iter()) == (200, 0.4123, 0.6)
    assert detect_stall(series, second + 250) is None
    finding = detect_stall(series, second + 900)
    assert finding is not None
    assert (finding.last_iter, finding.started_at) == (200, second)
    assert summary in finding.last_text


_MMSEG_EVALUATES = "2021-03-01 10:20:30,123 - mmseg - INFO - per class results:\n"
_MMSEG_EVALUATED = ("2021-03-01 10:21:00,123 - mmseg - INFO - Iter(val) [500]\taAcc: 0.9500, "
                    "mIoU: 0.7700, mAcc: 0.8500\n")


@pytest.mark.parametrize("end", [
    _progress_bar(120),
    _progress_bar(500),
    _progress_bar(500) + "\n" + _MMSEG_EVALUATES,
], ids=["mid-pass", "bar-at-its-total", "evaluating"])
def test_a_log_cut_in_its_final_evaluation_is_not_proven_finished(end: str):
    """mmseg's last iteration, then EvalHook's evaluation (its ProgressBar over the images,
    then the dataset's evaluate): with no accounting a log cut before TextLoggerHook's
    `Iter(val) [500]` is still running (`none`), whatever the training reached; that line
    ends the pass and the run reads completed."""
    d = read(_mmseg_log(80000) + end)
    assert (d.class_id, d.decided_by) == ("none", "progress"), d
    d = read(_mmseg_log(80000) + end + ("\n" if not end.endswith("\n") else "")
             + _MMSEG_EVALUATED)
    assert (d.class_id, d.decided_by) == ("completed", "progress"), d


def test_an_evaluation_cut_short_before_more_training_is_no_open_pass():
    """A periodic evaluation cut off (its bar short of its total) and training going on
    after it: the run reaching its target later reads completed."""
    d = read(_mmseg_log(79950) + _progress_bar(120) + "\n" + _mmseg_iter(80000))
    assert (d.class_id, d.decided_by) == ("completed", "progress"), d
