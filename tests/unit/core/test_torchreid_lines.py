"""torchreid's log, built from its source's format strings (KaiyangZhou/deep-person-reid
torchreid/engine/engine.py f8cd150): Engine.train's `epoch: [{epoch}/{max_epoch}][{batch}/
{num_batches}]\\ttime {val:.3f} ({avg:.3f})\\tdata …\\teta …\\t{losses}\\tlr {lr:.6f}` every
print_freq batches (epochs and batches from 1), and Engine.run's end after its loop: `=> Final
test`, the test's results, the model's save, then `Elapsed {datetime.timedelta}`. run() has no
try, except or finally, so an exception leaves before that line."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
    read,
)

from bot.core.training_lines import LineParser

BATCHES = 32  # print_freq 10: an epoch prints batches 10, 20 and 30, never its last


def _epoch(epoch: int, epochs: int = 60) -> str:
    return "".join(
        f"epoch: [{epoch}/{epochs}][{b}/{BATCHES}]\ttime 0.212 (0.230)\tdata 0.001 (0.010)\t"
        f"eta 0:{(epochs - epoch) // 6:02d}:{b:02d}\tloss_t 0.{b + epoch:04d} (0.3000)\t"
        f"loss_x 1.{b:04d} (1.2000)\tacc 50.00 (48.00)\tlr 0.000350\n"
        for b in range(10, BATCHES + 1, 10))


FINAL_TEST = ("=> Final test\n##### Evaluating market1501 (source) #####\n"
              "Extracting features from query set ...\nDone, obtained 3368-by-2048 matrix\n"
              "Extracting features from gallery set ...\nDone, obtained 15913-by-2048 matrix\n"
              "Speed: 0.0123 sec/batch\nComputing distance matrix with metric=euclidean ...\n"
              "Computing CMC and mAP ...\n** Results **\nmAP: 71.2%\nCMC curve\n"
              "Rank-1  : 87.6%\nRank-5  : 95.1%\nRank-10 : 96.9%\nRank-20 : 98.0%\n"
              'Checkpoint saved to "log/resnet50/model/model.pth.tar-60"\n')
LOOP = "".join(_epoch(e) for e in range(57, 61)) + FINAL_TEST
ENDS = {"minutes": "Elapsed 0:42:07\n", "a day": "Elapsed 1 day, 2:03:04\n"}


def test_its_training_line_is_progress_with_its_target():
    sample, _ = LineParser().parse(_epoch(3).splitlines()[1], 1)
    assert sample is not None
    # two epochs of 32 batches before it, then 20 of this one; of 60 epochs
    assert (sample.iteration, sample.target_iter, sample.sec_per_iter) == (
        2 * BATCHES + 20, 60 * BATCHES, 0.212)


@each_end(ENDS)
def test_elapsed_after_the_final_test_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "Elapsed")


def test_a_finished_run_is_no_early_stop_for_its_unprinted_last_batches():
    # its last line printed is batch 30 of 32: not "ended before the target"
    d = read(LOOP + ENDS["minutes"])
    assert (d.metrics.last_iter, d.metrics.target_iter) == (59 * BATCHES + 30, 60 * BATCHES)
    assert d.detail is None
    # ... as one whose last line printed is a whole epoch short is
    early = read("".join(_epoch(e) for e in range(56, 59)) + FINAL_TEST + ENDS["minutes"])
    assert early.detail == {"kind": "ended_early", "last_iter": 57 * BATCHES + 30,
                            "target_iter": 60 * BATCHES}


def test_an_elapsed_time_on_a_line_of_its_own_words_is_no_end():
    # another program's per-epoch `Elapsed time: 12.3s`, mid-run
    d = read(_epoch(3) + "Elapsed time: 12.3s\n" + _epoch(4))
    assert d.class_id == "none"


def test_more_training_after_it_is_still_running():
    assert_still_running(LOOP + ENDS["minutes"] + _epoch(1, epochs=10) + _epoch(2, epochs=10))


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + ENDS["minutes"])


def test_a_run_cut_mid_way_reads_still_running():
    d = read(_epoch(10) + _epoch(11))
    assert (d.class_id, d.decided_by) == ("none", "progress")
