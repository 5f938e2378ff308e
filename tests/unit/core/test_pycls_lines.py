"""pycls's training log, built from its source's format strings (facebookresearch/pycls
5719de641657): its logger's `[%(filename)s: %(lineno)3d]: ` (pycls/core/logging.py), its meters'
dump_log_data `json_stats: {…}` (simplejson, keys sorted, floats to 4 places; pycls/core/
meters.py): TrainMeter's `train_iter` every LOG_PERIOD steps (`"epoch": "{cur_epoch + 1}/
{MAX_EPOCH}"`, `"iter": "{cur_iter + 1}/{epoch_iters}"`, `"time_diff"`, `"loss"`) and
`train_epoch`, TestMeter's `test_iter`/`test_epoch` and the EMA model's `test_ema_iter`/
`test_ema_epoch`; then trainer.py's `Wrote checkpoint to: …/checkpoints/model_epoch_0100.pyth`
(checkpoint.py: `model_epoch_{:04d}.pyth`, the epoch from 1) after each epoch, the last thing
train_model prints."""

from __future__ import annotations

import json

import pytest
from support.end_marker import read
from support.line_sample import last_sample

MAX_EPOCH, EPOCH_ITERS, TEST_ITERS = 100, 5005, 196


def _json_stats(stats: dict[str, object], kind: str) -> str:
    """dump_log_data's line of `stats` as `kind`, after the logger's prefix."""
    return "[meters.py: 153]: json_stats: " + json.dumps({**stats, "_type": kind}, sort_keys=True)


def train_iter(epoch: int, it: int, loss: float = 1.2345, time_diff: float = 0.2012) -> str:
    """TrainMeter.log_iter_stats' line, `epoch` and `it` from 1 as it prints them."""
    return _json_stats({"epoch": f"{epoch}/{MAX_EPOCH}", "iter": f"{it}/{EPOCH_ITERS}",
                        "time_avg": 0.2012, "time_diff": time_diff, "eta": "0:00:02",
                        "top1_err": 25.0, "top5_err": 6.25, "loss": loss, "lr": 0.0001,
                        "mem": 9123}, "train_iter")


def train_epoch(epoch: int) -> str:
    return _json_stats({"epoch": f"{epoch}/{MAX_EPOCH}", "time_avg": 0.2012, "time_epoch":
                        1007.006, "eta": "0:00:00", "top1_err": 24.1, "top5_err": 6.1,
                        "loss": 1.19, "lr": 0.0001, "mem": 9123}, "train_epoch")


def eval_iter(epoch: int, it: int, kind: str = "test_iter") -> str:
    return _json_stats({"epoch": f"{epoch}/{MAX_EPOCH}", "iter": f"{it}/{TEST_ITERS}",
                        "time_avg": 0.1, "time_diff": 0.1, "top1_err": 22.1, "top5_err": 5.9,
                        "mem": 9123}, kind)


def eval_epoch(epoch: int, kind: str = "test_epoch") -> str:
    return _json_stats({"epoch": f"{epoch}/{MAX_EPOCH}", "time_avg": 0.1, "time_epoch": 19.6,
                        "top1_err": 22.1, "top5_err": 5.9, "min_top1_err": 22.1,
                        "min_top5_err": 5.9, "mem": 9123}, kind)


def wrote_checkpoint(epoch: int) -> str:
    return ("[trainer.py: 193]: Wrote checkpoint to: /tmp/pycls/checkpoints/model_epoch_"
            f"{epoch:04d}.pyth")


def epoch_end(epoch: int) -> list[str]:
    """After the epoch's last logged step: its summary, both tests and the save."""
    return [train_epoch(epoch), eval_iter(epoch, 190), eval_epoch(epoch),
            eval_iter(epoch, 190, "test_ema_iter"), eval_epoch(epoch, "test_ema_epoch"),
            wrote_checkpoint(epoch)]


def _log(*lines: str) -> str:
    return "".join(f"{line}\n" for line in lines)


def test_a_training_line_gives_its_steps_done_of_every_epochs_its_loss_and_pace():
    s = last_sample(train_iter(3, 640, loss=2.3456, time_diff=0.25))
    assert (s.iteration, s.target_iter) == (2 * EPOCH_ITERS + 640, MAX_EPOCH * EPOCH_ITERS)
    assert s.loss == pytest.approx(2.3456)
    assert s.sec_per_iter == pytest.approx(0.25)


@pytest.mark.parametrize(("line", "batches", "done"), [
    (eval_iter(3, 190), (190, TEST_ITERS), False), (eval_epoch(3), None, True),
    (eval_iter(3, 190, "test_ema_iter"), (190, TEST_ITERS), False),
    (eval_epoch(3, "test_ema_epoch"), None, True)],
    ids=["test_iter", "test_epoch", "test_ema_iter", "test_ema_epoch"])
def test_its_test_lines_are_an_evaluations(line, batches, done):
    s = last_sample(line)
    assert (s.evaluation_batches, s.evaluation_done) == (batches, done)
    assert (s.iteration, s.loss, s.sec_per_iter) == (None, None, None)


def test_the_last_epochs_save_ends_a_finished_run():
    # LOG_PERIOD 10 leaves the epoch's last 5 steps unlogged: its save tells they ran
    d = read(_log(train_iter(MAX_EPOCH, 4990), train_iter(MAX_EPOCH, 5000),
                  *epoch_end(MAX_EPOCH)))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


@pytest.mark.parametrize("cut", [
    # an earlier epoch's save, and the last epoch cut in its test, before its save
    _log(train_iter(MAX_EPOCH - 1, 5000), *epoch_end(MAX_EPOCH - 1)),
    _log(train_iter(MAX_EPOCH, 5000), *epoch_end(MAX_EPOCH)[:3]),
    _log(train_iter(MAX_EPOCH, 4990), train_iter(MAX_EPOCH, 5000))],
    ids=["earlier-epoch", "last-epochs-test", "last-epochs-steps"])
def test_a_run_short_of_its_last_epochs_save_is_still_running(cut):
    d = read(cut)
    assert (d.class_id, d.decided_by) == ("none", "progress")
