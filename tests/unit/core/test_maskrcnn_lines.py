"""maskrcnn-benchmark's trainer lines, built from its source's format strings
(facebookresearch/maskrcnn-benchmark maskrcnn_benchmark/engine/trainer.py, do_train): its
MetricLogger's `eta: {eta}  iter: {iter}  {meters}  lr: {lr:.6f}  max mem: {memory:.0f}` (meters
`name: {median:.4f} ({global_avg:.4f})`, `time` and `data` after the losses), every 20
iterations and at MAX_ITER, through its logger (`%(asctime)s %(name)s %(levelname)s:
%(message)s`), and its periodic validation's `[Validation]:   eta: …  iter: …` line, logged
once the pass is over with the validation set's meters. `iter` is the iteration (no target:
MAX_ITER is not printed), `time` the seconds per step, `max mem` GPU MiB, never host memory; a
validation's line is an evaluation's summary: activity, and its loss no training loss."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

from support.end_marker import read

from bot.cli import main
from bot.core.detectors import detect_stall
from bot.core.metrics import MetricSeries
from bot.core.training_lines import LineParser

_LOGGER = "2019-03-05 {h:02d}:{m:02d}:00,123 maskrcnn_benchmark.trainer INFO: "
_MEMORY = 3456 * 1024**2


def _train(iteration: int) -> str:
    losses = (f"loss: {1.5 - iteration / 100000:.4f} (1.3456)  loss_classifier: 0.5000 (0.6000)  "
              "loss_box_reg: 0.2000 (0.2100)  loss_mask: 0.3000 (0.3100)  "
              "loss_objectness: 0.0500 (0.0600)  loss_rpn_box_reg: 0.0200 (0.0300)")
    return (_LOGGER.format(h=10 + iteration // 6000, m=iteration // 100 % 60)
            + f"eta: 1 day, 2:03:04  iter: {iteration}  {losses}  time: 0.5123 (0.5234)  "
            "data: 0.0123 (0.0234)  lr: 0.002000  max mem: 3456\n")


def _validation(iteration: int) -> str:
    return (_LOGGER.format(h=10 + iteration // 6000, m=iteration // 100 % 60)
            + f"[Validation]:   eta: 1 day, 2:03:04  iter: {iteration}  loss: 1.1000 (1.1000)  "
            "loss_classifier: 0.4000 (0.4000)  lr: 0.002000  max mem: 3456\n")


def test_its_training_line_gives_its_iteration_pace_and_gpu_memory():
    sample, _ = LineParser().parse(_train(20), 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.loss, sample.sec_per_iter) == (
        20, None, 1.4998, 0.5123)
    assert (sample.host_rss_bytes, sample.gpu_mem_bytes) == (None, _MEMORY)


def test_a_log_of_them_has_no_host_memory_and_their_pace():
    """`max mem: 3456` was read as 3456 GiB of host memory (a bare number is GiB elsewhere)."""
    series = MetricSeries()
    series.feed_block("".join(_train(i) for i in range(20, 2001, 20)) + _validation(2000)
                      + "".join(_train(i) for i in range(2020, 2201, 20)))
    assert series.rss_points() == []
    assert {s.gpu_mem_bytes for s in series.samples} == {_MEMORY}
    assert (series.last_iteration, series.sec_per_iter()) == (2200, 0.5123)


def test_its_validation_line_is_no_iteration():
    sample, _ = LineParser().parse(_validation(2500), 1)
    assert sample is not None
    assert (sample.iteration, sample.sec_per_iter) == (None, None)
    assert (sample.host_rss_bytes, sample.gpu_mem_bytes) == (None, _MEMORY)


def test_its_validation_loss_is_no_training_loss(tmp_path, capsys):
    """The validation set's `loss: 1.1000` is neither the series' last loss nor a point of
    the loss chart; `trainbot diagnose` shows the training's last loss (1.48 at 2000)."""
    log = "".join(_train(i) for i in range(20, 2001, 20)) + _validation(2000)
    series = MetricSeries()
    series.feed_block(log)
    assert series.last_loss == 1.48
    assert all(s.loss is None for s in series.samples if "[Validation]" in s.text)
    path = tmp_path / "train.log"
    path.write_text(log)
    main(["diagnose", str(path)])
    out = capsys.readouterr().out
    assert "progress: iteration 2000, 0.51 s/iter, loss 1.48" in out


def _at(t: float, line: str) -> str:
    """`line` (`_train`'s, `_validation`'s) logged at time `t`."""
    return (datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S,000")
            + " maskrcnn_benchmark.trainer INFO: " + line.split(" INFO: ", 1)[1])


def test_each_validation_is_activity():
    """A validation (TEST_PERIOD 2000, after 1000 s of training) runs 20 minutes with no line
    and logs its line once over: the run is idle from that line, not from the training's line
    before it, and the next validation's line, alike but for its figures, is new activity
    again."""
    t0 = float(calendar.timegm((2019, 3, 5, 10, 0, 0)))
    log, t = "", t0
    for start in (0, 2000):
        log += "".join(_at(t + (i - start) * 0.5, _train(i))
                       for i in range(start + 20, start + 2001, 20))
        t += 1000 + 1200
        log += _at(t, _validation(start + 2000))
    series = MetricSeries()
    series.feed_block(log)
    assert series.last_evaluation is not None
    assert "iter: 4000" in series.last_evaluation.text
    assert detect_stall(series, t + 250) is None  # 1450 s after the last training line
    finding = detect_stall(series, t + 900)
    assert finding is not None
    assert (finding.last_iter, finding.started_at) == (4000, t)


def _periodic_validation(iteration: int) -> str:
    """do_train's periodic validation after `iteration` (TEST_PERIOD): inference's `Start
    evaluation on [Validation] dataset(500 images).`, compute_on_dataset's unlabelled tqdm bar
    over the 250 batches (tqdm redraws it after carriage returns: one line), its times, the
    validation losses' second bar, then the `[Validation]:` line."""
    at = _LOGGER.format(h=10 + iteration // 6000, m=iteration // 100 % 60)
    bar = "".join(f"\r{n * 100 // 250:3d}%|{'#' * (n // 25):<10}| {n}/250 [00:{n // 5:02d}<00:"
                  f"{(250 - n) // 5:02d},  5.00it/s]" for n in range(0, 251, 50))
    return (at.replace("trainer", "inference") + "Start evaluation on [Validation] "
            "dataset(500 images).\n" + bar + "\n"
            + at.replace("trainer", "inference") + "Total run time: 0:00:50.123456 "
            "(0.1002 s / img per device, on 1 devices)\n"
            + at.replace("trainer", "inference") + "Model inference time: 0:00:45.012345 "
            "(0.0900 s / img per device, on 1 devices)\n" + bar + "\n" + _validation(iteration))


def test_its_validations_bars_are_no_training_progress(tmp_path, capsys):
    """The periodic validation's unlabelled bars count its 250 batches, not the training's
    iterations: the run has no target (MAX_ITER is not printed) and is at iteration 2200, not
    done at 250 of 250; `trainbot diagnose` reads it still running with the training's
    figures."""
    log = ("".join(_train(i) for i in range(20, 2001, 20)) + _periodic_validation(2000)
           + "".join(_train(i) for i in range(2020, 2201, 20)))
    series = MetricSeries()
    series.feed_block(log)
    assert (series.target_iter, series.last_iteration, series.last_loss) == (None, 2200, 1.478)
    assert series.last_evaluation is not None
    assert "[Validation]" in series.last_evaluation.text
    assert read(log).class_id == "none"
    path = tmp_path / "train.log"
    path.write_text(log)
    main(["diagnose", str(path)])
    out = capsys.readouterr().out
    assert "progress: iteration 2200, 0.51 s/iter, loss 1.478" in out
    assert "of 250" not in out and "/250" not in out


def test_a_log_cut_in_its_validation_is_at_the_training_iteration():
    """Cut while the validation's bar counts its batches: the run is at iteration 2000 with no
    target, the bar is the evaluation's (its batches), no progress of training."""
    log = ("".join(_train(i) for i in range(20, 2001, 20))
           + _periodic_validation(2000).split("Total run time")[0].rsplit("\n", 1)[0] + "\n")
    series = MetricSeries()
    series.feed_block(log)
    assert (series.target_iter, series.last_iteration) == (None, 2000)
    assert series.last_evaluation is not None
    assert series.last_evaluation.evaluation_batches == (250, 250)


def _validated_every_500(last: int) -> str:
    """A run's log up to iteration `last`: its training lines every 20 iterations, a periodic
    validation (`_periodic_validation`) every 500 (TEST_PERIOD)."""
    return "".join("".join(_train(i) for i in range(v - 480, v + 1, 20)) + _periodic_validation(v)
                   for v in range(500, last + 1, 500))

def test_a_log_read_sparsely_keeps_its_validations_bars_out_of_training():
    """A long run's log is read sparsely (one line in so many, once the series is full): each
    periodic validation's `Start evaluation on` line is read all the same, so the bars after
    it stay its batches wherever the sampled lines fall, never the training's progress (no
    target of 250, no bar's count as an iteration), and its `[Validation]:` line is the run's
    activity."""
    log = _validated_every_500(60000)
    for max_samples in (32, 64, 100):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(log)
        assert series.stride > 1
        assert series.target_iter is None, max_samples
        assert not any(s.iteration is not None and "%|" in s.text for s in series.samples)
        assert not any(s.target_iter == 250 for s in series.samples), max_samples
        assert series.last_evaluation is not None
        assert "[Validation]" in series.last_evaluation.text


def test_a_log_read_sparsely_ends_at_its_last_training_iteration():
    """The log ends in its 120th validation's `[Validation]:` line, after the training's line
    at 60000: read sparsely with whatever number of samples, the run is at iteration 60000
    (the validation line's GPU memory took the place of the block's last training line: 58980
    read with 64 samples at most) and its validation the last activity."""
    log = _validated_every_500(60000)
    for max_samples in range(16, 129, 16):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(log)
        assert series.stride > 1
        assert series.last_iteration == 60000, max_samples
        assert series.last_progress is not None
        assert "iter: 60000 " in series.last_progress.text
        assert series.last_evaluation is not None
        assert "[Validation]:   eta: 1 day, 2:03:04  iter: 60000" in series.last_evaluation.text


def test_a_validation_across_two_blocks_of_a_log_read_sparsely_is_no_training():
    """A long run's log read sparsely in two blocks (a watched log that grew), the first ending
    inside a validation (its `Start evaluation on` line, its first bar) and the second holding
    the rest (its second bar, its `[Validation]:` line): the second block's bar counts the
    validation's 250 batches, not the training's iterations (no target of 250: the first
    block's end was read backwards, the training line last, as if no evaluation were open)."""
    log = _validated_every_500(30000) + "".join(_train(i) for i in range(30020, 30501, 20))
    validation = _periodic_validation(30500)
    cut = validation.rindex("\n", 0, validation.index("Total run time")) + 1
    first, second = log + validation[:cut], validation[cut:]
    for max_samples in (16, 32, 64):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(first)
        assert series.stride > 1
        series.feed_block(second, first.count("\n") + 1)
        assert (series.target_iter, series.last_iteration) == (None, 30500), max_samples
        assert not any(s.target_iter == 250 for s in series.samples), max_samples
        assert series.last_evaluation is not None
        assert "[Validation]:   eta: 1 day, 2:03:04  iter: 30500" in series.last_evaluation.text


def test_its_validation_line_reads_alike_densely_and_sparsely():
    """The same log read densely (every line) and sparsely (one line in so many, once the
    series is full): its `[Validation]:` lines, which show a GPU memory, are the run's activity
    and no training sample either way (before, the dense reading kept each among the samples,
    a point of the charts, and the sparse one only the block's last)."""
    log = _validated_every_500(6000)
    dense, sparse = MetricSeries(), MetricSeries(max_samples=16)
    dense.feed_block(log)
    sparse.feed_block(log)
    assert (dense.stride, sparse.stride > 1) == (1, True)
    for series in (dense, sparse):
        assert series.last_iteration == 6000
        assert series.last_evaluation is not None
        assert "[Validation]:   eta: 1 day, 2:03:04  iter: 6000" in series.last_evaluation.text
        assert not any("[Validation]" in s.text for s in series.samples)


def _bar(done: int, total: int) -> str:
    """An unlabelled tqdm bar's draw on a line of its own, no loss."""
    return (f"{done * 100 // total:3d}%|{'#' * (done * 10 // total):<10}| {done}/{total} "
            "[00:10<00:12,  7.20it/s]\n")


def test_an_evaluation_read_sparsely_closes_at_the_training_line_after_it():
    """A script training with unlabelled tqdm bars (one draw a line, no loss) in two stages (a
    1000-step one, then a 3000-step one) that validates through maskrcnn-benchmark's inference
    near the first stage's end (pycocotools loading the validation set, `Start evaluation on
    …`, its bar over 250 batches): the training's bar after the validation closes it, so the
    second stage's bars are training progress, read sparsely as densely. Before, the sparse
    reader read the opening line again after the window that had read it and the training
    line after it, which opened the evaluation again: the second stage's bars read as the
    evaluation's, the run at 990 of 1000."""
    at = _LOGGER.format(h=10, m=0).replace("trainer", "inference")
    log = ("".join(_bar(n, 1000) for n in range(10, 981, 10))
           + "loading annotations into memory...\nDone (t=0.52s)\ncreating index...\n"
           "index created!\n" + at + "Start evaluation on [Validation] dataset(500 images).\n"
           + _bar(250, 250) + _bar(990, 1000) + _bar(1000, 1000)
           + "".join(_bar(n, 3000) for n in range(10, 2001, 10)))
    dense = MetricSeries()
    dense.feed_block(log)
    assert (dense.last_iteration, dense.target_iter) == (2000, 3000)
    for max_samples in range(16, 129, 4):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(log)
        assert series.stride > 1
        assert (series.last_iteration, series.target_iter) == (2000, 3000), max_samples


def test_an_evaluation_read_sparsely_closes_at_a_training_line_between_sampled_windows():
    """As above, the first stage's last bar (1000 of 1000) right after the validation's one bar:
    read sparsely, that bar falls between two sampled windows for some numbers of samples, yet
    it closes the validation (every line from the validation's `Start evaluation on` line to
    the training line after it is read), so the second stage's bars are training progress: the
    run at 2000 of 3000. Before, the window after it read the second stage's bars as the
    still open validation's: the run at 960 of 1000 with 16, 20 or 24 samples."""
    for series in _read_sparsely(_validation_between_stages()):
        assert series.last_evaluation is not None
        assert series.last_evaluation.evaluation_batches == (250, 250)


def _validation_between_stages(after_its_bar: str = "") -> str:
    """The first stage's bars to 990 of 1000, a validation's `Start evaluation on` line and its
    one bar, `after_its_bar`, the first stage's last bar (1000 of 1000), then the second
    stage's bars to 2000 of 3000."""
    at = _LOGGER.format(h=10, m=0).replace("trainer", "inference")
    return ("".join(_bar(n, 1000) for n in range(10, 991, 10))
            + at + "Start evaluation on [Validation] dataset(500 images).\n"
            + _bar(250, 250) + after_its_bar + _bar(1000, 1000)
            + "".join(_bar(n, 3000) for n in range(10, 2001, 10)))


def _read_sparsely(log: str) -> list[MetricSeries]:
    """`log` read with 16 to 128 samples, each reading sparse and at 2000 of 3000."""
    read = []
    for max_samples in range(16, 129, 4):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(log)
        assert series.stride > 1
        assert (series.last_iteration, series.target_iter) == (2000, 3000), max_samples
        read.append(series)
    return read


def test_an_evaluation_open_at_a_blocks_end_is_read_on_in_the_next_block():
    """A log read sparsely in two blocks (a watched log that grew), the first ending right
    after the validation's `Start evaluation on` line and its bar, the second starting with
    the first stage's last bar (1000 of 1000): that bar, the next block's first line, closes the
    validation, so the second stage's bars are training progress. Before, the next block was
    read from a stride past its start, that bar unread: the run at 990 of 1000."""
    at = _LOGGER.format(h=10, m=0).replace("trainer", "inference")
    first = ("".join(_bar(n, 1000) for n in range(10, 991, 10))
             + at + "Start evaluation on [Validation] dataset(500 images).\n" + _bar(250, 250))
    second = _bar(1000, 1000) + "".join(_bar(n, 3000) for n in range(10, 2001, 10))
    for max_samples in range(16, 97, 4):
        series = MetricSeries(max_samples=max_samples)
        series.feed_block(first)
        assert series.stride > 1
        series.feed_block(second, first.count("\n") + 1)
        assert (series.last_iteration, series.target_iter) == (2000, 3000), max_samples


def test_a_loss_alone_inside_an_evaluation_read_sparsely_does_not_end_its_reading():
    """As above, with a line that shows a loss and no iteration (a script's own `loss: 0.4321`)
    between the validation's bar and the first stage's last bar: it closes no evaluation, so the
    reading goes on to that bar, which does; the run at 2000 of 3000. Before, the window ended
    at the loss line, that bar unread: the run at 960 or 980 of 1000 with 16 to 96 samples."""
    _read_sparsely(_validation_between_stages("loss: 0.4321\n"))
