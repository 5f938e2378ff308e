"""Swin Transformer's log lines, built from its source's format strings (microsoft/Swin-Transformer
main.py f82860b): train_one_epoch's `Train: [{epoch}/{EPOCHS}][{idx}/{num_steps}]\\teta … lr …\\t
wd …\\ttime {val:.4f} ({avg:.4f})\\tloss …\\tgrad_norm …\\tloss_scale …\\tmem {MB:.0f}MB` (epochs
and steps from 0, logged after the step) and validate's `Test: [{idx}/{len}]\\tTime …\\tLoss …\\t
Acc@1 …\\tAcc@5 …\\tMem {MB:.0f}MB`, through its logger (`[%(asctime)s %(name)s] (%(filename)s
%(lineno)d): %(levelname)s %(message)s`). The training's line is progress with its target, the
validation's an evaluation's batches; `mem` is GPU MiB, never host memory."""

from __future__ import annotations

from support.end_marker import read

from bot.core.metrics import MetricSeries
from bot.core.training_lines import LineParser

_LOGGER = "[2021-05-01 {h:02d}:{m:02d}:00 swin_tiny_patch4_window7_224] (main.py {n}): INFO "


def _train(epoch: int, idx: int, h: int = 10) -> str:
    return (_LOGGER.format(h=h, m=idx // 25, n=237)
            + f"Train: [{epoch}/300][{idx}/1251]\teta 0:{(1251 - idx) // 100:02d}:12 lr 0.000123\t"
            f" wd 0.0500\ttime 0.4567 (0.4789)\tloss {3.5 - epoch / 100:.4f} (3.5678)\t"
            "grad_norm 2.3456 (2.4567)\tloss_scale 65536.0000 (65536.0000)\tmem 8123MB\n")


def _test(idx: int, h: int = 10) -> str:
    return (_LOGGER.format(h=h, m=52, n=272)
            + f"Test: [{idx}/49]\tTime 0.312 (0.401)\tLoss 0.8123 (0.8450)\t"
            "Acc@1 81.250 (80.964)\tAcc@5 95.312 (95.170)\tMem 8123MB\n")


def _epoch(epoch: int) -> str:
    """One epoch (PRINT_FREQ 10: every tenth step, the last one, 1250, among them), then
    its validation."""
    return ("".join(_train(epoch, idx, h=epoch % 24) for idx in range(0, 1251, 250))
            + _LOGGER.format(h=epoch % 24, m=53, n=245) + f"EPOCH {epoch} training takes 0:10:01\n"
            + "".join(_test(idx, h=epoch % 24) for idx in range(0, 49, 10)))


def test_its_training_line_is_progress_with_its_target():
    sample, _ = LineParser().parse(_train(3, 100), 1)
    assert sample is not None
    # the steps done: 3 epochs of 1251 before it, then steps 0 to 100 of this one; of 300 epochs
    assert (sample.iteration, sample.target_iter, sample.loss, sample.sec_per_iter) == (
        3 * 1251 + 101, 300 * 1251, 3.47, 0.4567)


def test_its_memory_is_gpu_mib_not_host_memory():
    series = MetricSeries()
    series.feed_block(_epoch(3))
    assert series.rss_points() == []
    assert {s.gpu_mem_bytes for s in series.samples} == {8123 * 1024**2}


def test_its_validation_line_is_an_evaluations_batches():
    sample, _ = LineParser().parse(_test(10), 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.sec_per_iter) == (None, None, None)
    assert sample.evaluation_batches == (11, 49)
    assert (sample.host_rss_bytes, sample.gpu_mem_bytes) == (None, 8123 * 1024**2)


def test_a_log_at_its_last_epochs_last_step_reads_completed():
    d = read(_epoch(298) + "".join(_train(299, idx, h=11) for idx in range(0, 1251, 250)))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_log_mid_run_reads_still_running():
    d = read(_epoch(150) + _epoch(151) + _train(152, 0))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_its_validation_loss_is_no_training_loss():
    series = MetricSeries()
    series.feed_block(_epoch(3))
    assert series.last_loss == 3.47
    assert all(s.loss is None for s in series.samples if s.evaluation_batches is not None)
