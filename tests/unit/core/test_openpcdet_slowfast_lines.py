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


# OpenPCDet with --use_tqdm_to_record (train_utils.py, train_model and train_one_epoch): rank
# zero's `tqdm.trange(start_epoch, total_epochs, desc='epochs')` at position 0, its postfix
# train_one_epoch's disp_dict after each step; below it (position 1: a newline before each draw,
# the cursor moved up after it) each epoch's `tqdm(total=total_it_each_epoch, desc='train')`,
# drawn at its update() and at set_postfix(dict(total_it=accumulated_iter)), closed cleared
# (leave) but for the last epoch's, left drawn at position 0; the epochs bar moves once the
# epoch's checkpoint is saved
BAR_EPOCHS, BAR_STEPS = 3, 400
DISP = ", loss=0.412, lr=0.000123, d_time=0.01(0.01), f_time=0.40(0.41), b_time=0.41(0.42)"
START = ("2024-05-01 19:00:00,123   INFO  **********************Start training cfgs/kitti_models/"
         "pointpillar(default)**********************\n")
END = ("2024-05-01 19:28:06,123   INFO  **********************End training cfgs/kitti_models/poin"
       "tpillar(default)**********************\n\n\n\n")


def epochs_draw(done: int, postfix: str = DISP) -> str:
    filled = "\u2588" * (10 * done // BAR_EPOCHS)
    return (f"\repochs: {100 * done / BAR_EPOCHS:3.0f}%|{filled:<10}| {done}/{BAR_EPOCHS} "
            f"[{done * 164 // 60:02d}:{done * 164 % 60:02d}<05:28, 164.00s/it{postfix}]")


def train_draw(done: int, total_it: int) -> str:
    filled = "\u2588" * (10 * done // BAR_STEPS)
    return (f"\rtrain: {100 * done / BAR_STEPS:3.0f}%|{filled:<10}| {done}/{BAR_STEPS} "
            f"[02:44<00:00,  2.44it/s, total_it={total_it}]")


def bar_epoch(epoch: int) -> str:
    """Epoch `epoch`'s (from 0) draws as a file gets them, up to the epochs bar's move after it
    (the last epoch's train bar left drawn)."""
    out = f"\n\rtrain:   0%|          | 0/{BAR_STEPS} [00:00<?, ?it/s]\x1b[A"
    for done in (1, 200, BAR_STEPS):
        total_it = epoch * BAR_STEPS + done
        out += f"\n{train_draw(done, total_it - 1)}\x1b[A"  # update()
        out += f"\n{train_draw(done, total_it)}\x1b[A{epochs_draw(epoch)}"  # the postfixes
    if epoch + 1 == BAR_EPOCHS:
        out += train_draw(BAR_STEPS, total_it) + "\n"
    else:
        out += "\n\r\x1b[A"
    return out + epochs_draw(epoch + 1)


def test_an_openpcdet_train_bar_gives_the_runs_steps_of_every_epochs_and_its_pace():
    s = last_sample(epochs_draw(0, postfix=""), train_draw(200, BAR_STEPS + 200))
    assert (s.iteration, s.target_iter) == (BAR_STEPS + 200, BAR_EPOCHS * BAR_STEPS)
    assert s.sec_per_iter == pytest.approx(1 / 2.44)


def test_openpcdets_first_epoch_at_its_total_is_no_end_of_the_run():
    # cut while the first epoch's checkpoint is saved: its train bar at its total, the epochs
    # bar not moved yet
    log = START + epochs_draw(0, postfix="") + bar_epoch(0)
    d = read(log[:log.rindex(epochs_draw(1))] + "\n")
    assert (d.class_id, d.decided_by) == ("none", "progress")
    d = read(log + "\n")
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_openpcdets_last_epoch_ends_a_finished_run():
    epochs = START + epochs_draw(0, postfix="") + "".join(map(bar_epoch, range(BAR_EPOCHS)))
    d = read(epochs + "\n")
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    d = read(epochs + "\n" + END)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def test_another_ranks_epochs_bar_is_no_step_of_the_run():
    # every rank draws the epochs bar (rank zero's alone has a postfix): another rank's moved
    # to `1/3` while rank zero saves the first epoch's checkpoint
    log = START + epochs_draw(0, postfix="") + bar_epoch(0)
    log = log[:log.rindex(epochs_draw(1))] + "\n" + epochs_draw(1, postfix="") + "\n"
    d = read(log)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_a_scripts_own_epochs_bar_ends_its_run_by_its_progress():
    # any script's `tqdm(range(10), desc="epochs")`: drawn like OpenPCDet's epochs bar, but with
    # no OpenPCDet train bar before it, its count is the run's progress
    draws = "".join(f"\repochs: {10 * done:3d}%|{'#' * done:<10}| {done}/10 "
                    f"[00:{done:02d}<00:{10 - done:02d},  1.00s/it]" for done in range(1, 11))
    d = read(draws + "\n")
    assert (d.class_id, d.decided_by) == ("completed", "progress")
