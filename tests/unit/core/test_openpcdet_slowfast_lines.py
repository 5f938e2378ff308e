"""OpenPCDet's and SlowFast's training lines, built from their sources' format strings:
OpenPCDet's train_one_epoch (open-mmlab/OpenPCDet tools/train_utils/train_utils.py
8cacccec11db) logs `Train: {:>4d}/{} ({:>3.0f}%) [{:>4d}/{} ({:>3.0f}%)]  Loss: {:#.4g}
({:#.3g})  LR: {:.3e}  Time cost: …  Acc_iter {:<10d}  Data time: …  Forward time: …  Batch time:
{:.2f}({:.2f})`, its step counted from 0; SlowFast's meters (facebookresearch/SlowFast
slowfast/utils/meters.py 287ec0076846) log `json_stats: {…}` (slowfast/utils/logging.py,
log_json_stats: simplejson, keys sorted), the training's `train_iter_` with `"epoch": "E/MAX"`
and `"iter": "i/n"`, the validation's `val_iter` and `val_epoch`."""

from __future__ import annotations

import json

import pytest
from support.end_marker import read
from support.line_sample import last_sample

EPOCHS, STEPS = 80, 3712
# train_one_epoch's format string, its Time cost's tqdm intervals filled in
TRAIN_LINE = ("Train: {:>4d}/{} ({:>3.0f}%) [{:>4d}/{} ({:>3.0f}%)]  Loss: {:#.4g} ({:#.3g})  LR: "
              "{:.3e}  Time cost: 28:36/00:00 [1 day, 14:01:07/00:00]  Acc_iter {:<10d}  Data "
              "time: {:.2f}({:.2f})  Forward time: {:.2f}({:.2f})  Batch time: {:.2f}({:.2f})")


def _pcdet(epoch: int, cur_it: int, loss: float = 0.4101, batch_s: float = 0.41) -> str:
    """train_one_epoch's line for `epoch` (from 1) and `cur_it` (from 0), after its logger's
    `%(asctime)s  %(levelname)5s  `."""
    return "2024-05-01 19:28:05,123   INFO  " + TRAIN_LINE.format(
        epoch, EPOCHS, 100 * epoch / EPOCHS, cur_it, STEPS, 100 * cur_it / STEPS, loss, 0.421,
        1e-6, (epoch - 1) * STEPS + cur_it + 1, 0.01, 0.01, 0.40, 0.41, batch_s, 0.42)


MAX_EPOCH, EPOCH_ITERS = 196, 1250


def _slowfast(stats: dict[str, object]) -> str:
    """log_json_stats' line of `stats` (keys sorted), after its logger's `[%m/%d %H:%M:%S]
    [%(levelname)s] %(filename)s: %(lineno)3d: `."""
    return "[05/01 19:28:00][INFO] logging.py:   97: json_stats: " + json.dumps(
        stats, sort_keys=True)


def _train_iter(epoch: int, it: int, loss: float = 1.21, dt: float = 0.41) -> str:
    """TrainMeter.log_iter_stats' line, `epoch` and `it` from 1 as it prints them."""
    return _slowfast({"_type": "train_iter_", "epoch": f"{epoch}/{MAX_EPOCH}",
                      "iter": f"{it}/{EPOCH_ITERS}", "dt": dt, "dt_data": 0.001, "dt_net": 0.4,
                      "eta": "0:00:04", "loss": loss, "lr": 1e-05, "grad_norm": 3.12,
                      "gpu_mem": "9.12G", "top1_err": 25.0, "top5_err": 6.25})


TRAIN_EPOCH = _slowfast({"_type": "train_epoch", "epoch": f"{MAX_EPOCH}/{MAX_EPOCH}", "dt": 0.41,
                         "dt_data": 0.001, "dt_net": 0.4, "eta": "0:00:00", "lr": 1e-05,
                         "grad_norm": 3.12, "gpu_mem": "9.12G", "RAM": "41.21/503.81G",
                         "top1_err": 24.1, "top5_err": 6.1, "loss": 1.19})
VAL_ITER = _slowfast({"_type": "val_iter", "epoch": f"{MAX_EPOCH}/{MAX_EPOCH}", "iter": "10/50",
                      "time_diff": 0.12, "eta": "0:00:04", "gpu_mem": "9.12G", "top1_err": 22.1,
                      "top5_err": 5.9})
VAL_EPOCH = _slowfast({"_type": "val_epoch", "epoch": f"{MAX_EPOCH}/{MAX_EPOCH}",
                       "time_diff": 0.12, "gpu_mem": "9.12G", "RAM": "41.21/503.81G",
                       "top1_err": 22.1, "top5_err": 5.9, "min_top1_err": 22.1,
                       "min_top5_err": 5.9})


def test_an_openpcdet_line_gives_its_steps_done_of_every_epochs_its_loss_and_pace():
    s = last_sample(_pcdet(3, 99, loss=0.5123, batch_s=0.45))
    # two epochs' steps and this one's up to cur_it 99, the 100th
    assert (s.iteration, s.target_iter) == (2 * STEPS + 100, EPOCHS * STEPS)
    assert s.loss == pytest.approx(0.5123)
    assert s.sec_per_iter == pytest.approx(0.45)


def test_openpcdets_last_steps_line_ends_a_finished_run_by_progress():
    # its last epoch's last step (cur_it 3711 of 3712) is done: only the checkpoint's save
    # and `End training …` follow
    d = read(_pcdet(EPOCHS, 3700) + "\n" + _pcdet(EPOCHS, STEPS - 1) + "\n")
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_slowfast_training_line_gives_its_steps_done_of_every_epochs_its_loss_and_pace():
    s = last_sample(_train_iter(3, 640, loss=2.345, dt=0.52))
    assert (s.iteration, s.target_iter) == (2 * EPOCH_ITERS + 640, MAX_EPOCH * EPOCH_ITERS)
    assert s.loss == pytest.approx(2.345)
    assert s.sec_per_iter == pytest.approx(0.52)
    assert not s.is_evaluation


@pytest.mark.parametrize(("line", "batches", "done"), [
    (VAL_ITER, (10, 50), False), (VAL_EPOCH, None, True)], ids=["val_iter", "val_epoch"])
def test_slowfasts_validation_lines_are_an_evaluations(line, batches, done):
    s = last_sample(line)
    assert (s.evaluation_batches, s.evaluation_done) == (batches, done)
    assert (s.iteration, s.loss, s.sec_per_iter) == (None, None, None)


def test_slowfasts_last_steps_line_ends_a_finished_run_by_progress():
    log = "".join(f"{line}\n" for line in (
        _train_iter(MAX_EPOCH, 1240), _train_iter(MAX_EPOCH, EPOCH_ITERS), TRAIN_EPOCH,
        VAL_ITER, VAL_EPOCH))
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_slowfast_short_of_its_last_step_is_still_running():
    d = read(f"{_train_iter(MAX_EPOCH, 1230)}\n{_train_iter(MAX_EPOCH, 1240)}\n")
    assert (d.class_id, d.decided_by) == ("none", "progress")
