"""ParlAI's end of training, read from its source (facebookresearch/ParlAI a29567f7,
parlai/scripts/train_model.py): TrainLoop.train_steps leaves its loop logging the limit it reached
(`num_epochs completed:10.0 time elapsed:8123.45s`, `max_train_steps elapsed:16000 time
elapsed:...s`, `max_train_time elapsed:...s`) or validate()'s stop (`ran out of patience! stopping
training.`, `task solved! stopping.`); train() then saves, reloads the best model and runs its
final evaluations (`_run_eval`: `running eval: valid`, `eval completed in 41.20s`, then `valid:`
and nice_report's table at REPORT level). Before 21b74e0a (2020-06) it print()ed them in `[ ... ]`.
parlai/utils/logging.py: a console that is no terminal gets CONSOLE_FORMAT, `%(asctime)s
%(levelname).4s | %(message)s` with `%H:%M:%S`; log() logs `time:Ns total_exs:N total_steps:N
epochs:E time_left:Ns` and the report table on the lines after it."""

from __future__ import annotations

import pytest
from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
)

_HEAD = ("    clen  ctpb  ctps  exps  exs  gnorm  llen  loss    lr  ltpb  ltps   ppl  token_acc  "
         "total_train_updates   tpb   tps   ups\n")


def _train_log(clock: str, steps: int) -> str:
    """TrainLoop.log(): the counters, then the training report's table."""
    return (f"{clock} INFO | time:{steps // 2}s total_exs:{steps * 32} total_steps:{steps} "
            f"epochs:{steps / 1600:.2f} time_left:{(16000 - steps) // 2}s\n" + _HEAD
            + f"   15.21   486  9912 20.38  640  1.201 11.21 2.012 .0001   359  7321 7.478      "
              f".5312                {steps}   846 17233 20.38\n")


def _valid(clock: str, steps: int, verdict: str) -> str:
    """validate() during training: the report, then its verdict on the best score."""
    return (f"{clock} INFO | running eval: valid\n"
            f"{clock} INFO | eval completed in 41.20s\n"
            f"{clock} REPO | valid:\n    accuracy  exs  loss   ppl  total_train_updates\n"
            f"       .4012  7801 2.101 8.175                {steps}\n{verdict}")


LOOP = (_train_log("10:00:00", 15000) + _train_log("10:04:10", 15500)
        + _valid("10:05:00", 15500, "10:05:00 SUCC | new best ppl: 8.175 (previous best was "
                 "8.201)\n10:05:00 INFO | saving best valid model: /ckpt/model\n")
        + _train_log("10:09:10", 16000))
# train(): the final evaluations on the reloaded best model
FINAL = (
    "12:35:00 INFO | running eval: valid\n"
    "12:35:41 INFO | eval completed in 41.20s\n"
    "12:35:41 REPO | valid:\n    accuracy  exs  loss   ppl  total_train_updates\n"
    "       .4012  7801 2.101 8.175                16000\n"
    "12:35:42 INFO | running eval: test\n"
    "12:36:20 INFO | eval completed in 38.01s\n"
    "12:36:20 REPO | test:\n    accuracy  exs  loss   ppl  total_train_updates\n"
    "       .3987  7512 2.112 8.265                16000\n")
ENDS = {
    "num_epochs": "12:34:57 INFO | num_epochs completed:10.0 time elapsed:8123.45s\n",
    "max_train_steps": "12:34:57 INFO | max_train_steps elapsed:16000 time elapsed:8123.45s\n",
    "max_train_time": "12:34:57 INFO | max_train_time elapsed:8123.45s\n",
    "patience": _valid("12:34:57", 16000, "12:34:57 REPO | did not beat best ppl: 8.175 "
                       "impatience: 10\n12:34:57 INFO | ran out of patience! stopping training.\n"),
    "validation cutoff": _valid("12:34:57", 16000, "12:34:57 SUCC | new best accuracy: .9012 "
                                "(previous best was .8998)\n12:34:57 INFO | task solved! "
                                "stopping.\n"),
    # print()ed, 2017-11 to 2020-06 (two blanks before `time elapsed`)
    "num_epochs, print": "[ num_epochs completed:10  time elapsed:8123.45s ]\n",
    "patience, print": "[ ran out of patience! stopping training. ]\n",
    # examples/train_model.py before 293e4bec (2017-11): `print('[ max_train_time elapsed: {}
    # ]'.format(train_time.time()))`, before c402f550 (2017-06) `"[max_train_time elapsed: " +
    # str(train_time.time()) + "]"`; `print('[ ran out of patience! stopping. ]')` before
    # fdadbdd8 (2017-06)
    "max_train_time, 2017": "[ max_train_time elapsed: 8123.456789 ]\n",
    "max_train_time, 2017-05": "[max_train_time elapsed: 8123.456789]\n",
    "patience, 2017-06": "[ ran out of patience! stopping. ]\n",
}
MARKER = {"num_epochs": "num_epochs completed", "max_train_steps": "max_train_steps elapsed",
          "max_train_time": "max_train_time elapsed", "patience": "ran out of patience",
          "validation cutoff": "task solved!", "num_epochs, print": "num_epochs completed",
          "patience, print": "ran out of patience",
          "max_train_time, 2017": "max_train_time elapsed",
          "max_train_time, 2017-05": "max_train_time elapsed",
          "patience, 2017-06": "ran out of patience"}


@pytest.mark.parametrize("name", list(ENDS))
@pytest.mark.parametrize("after", ["", FINAL], ids=["last line", "final evaluations after it"])
def test_the_train_loops_end_ends_a_finished_run(name, after):
    assert_ends_the_run(LOOP + ENDS[name] + after, MARKER[name])


def test_a_validation_that_did_not_stop_training_is_no_end():
    """validate()'s verdict short of its patience, then training goes on."""
    assert_still_running(LOOP + _valid("12:30:00", 16000, "12:30:00 REPO | did not beat best "
                                       "ppl: 8.175 impatience: 3\n")
                         + _train_log("12:34:10", 16500))


@each_end(ENDS)
def test_an_error_after_it_decides(end):
    assert_the_error_decides(LOOP + end + FINAL)


@pytest.mark.parametrize("name", ["num_epochs", "max_train_steps", "patience"])
def test_training_logged_after_the_end_undoes_it(name):
    """A next `parlai train_model` stage or a requeued run appended: TrainLoop.log()'s counters
    after the loop's end say training goes on."""
    assert_still_running(LOOP + ENDS[name] + FINAL + _train_log("13:00:00", 500)
                         + _train_log("13:04:10", 1000))


def test_a_print_era_progress_line_after_the_end_undoes_it():
    assert_still_running(LOOP + ENDS["num_epochs, print"]
                         + "[ time:120s total_exs:3840 epochs:0.08 ] {'loss': 2.1}\n")


def test_another_scripts_epoch_count_is_no_end():
    """Not ParlAI's logger or print(): a script's own `num_epochs completed: 3` mid-run."""
    assert_still_running(LOOP + "num_epochs completed: 3\n")
