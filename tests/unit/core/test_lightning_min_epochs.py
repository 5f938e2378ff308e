"""Lightning's stop signalled below min_epochs or min_steps, read from its source
(Lightning-AI/pytorch-lightning 7f0c3436cd3f): EarlyStopping._run_early_stopping_check
(src/lightning/pytorch/callbacks/early_stopping.py) sets `trainer.should_stop` and, verbose,
logs `Monitored metric val_loss did not improve in the last 3 records. Best score: 0.123.
Signaling Trainer to stop.`; FitLoop.done stops only once `_can_stop_early` (the minimums met),
and until then the epoch loop's `done` (src/lightning/pytorch/loops/training_epoch_loop.py)
logs `Trainer was signaled to stop but the required `min_epochs=5` or `min_steps=None` has not
been met. Training will continue...` and trains on (before 1.5, ae9803137a: `... but required
minimum epochs (5) or minimum steps (None) has not been met. Training will continue...`)."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.cli import main
from bot.core.catalogue import Catalogue

EPOCH = "Epoch {epoch}: {n:>3}%|          | {n}/100 [00:10<00:00,  9.80it/s, loss=0.31]\n"
EPOCHS = "".join(EPOCH.format(epoch=e, n=100) for e in range(3))
STOP = ("Monitored metric val_loss did not improve in the last 3 records. Best score: 0.123. "
        "Signaling Trainer to stop.\n")
GOES_ON = ("Trainer was signaled to stop but the required `min_epochs=5` or `min_steps=None` "
           "has not been met. Training will continue...\n")
GOES_ON_1_4 = ("Trainer was signaled to stop but required minimum epochs (5) or minimum steps "
               "(None) has not been met. Training will continue...\n")


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def test_the_stop_alone_ends_a_finished_run(catalogue):
    d = read_log(catalogue, EPOCHS + STOP)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


@pytest.mark.parametrize("goes_on", [
    GOES_ON,
    GOES_ON_1_4,
    "INFO: " + GOES_ON,  # a logging format of the script's own
    GOES_ON + EPOCH.format(epoch=3, n=0),  # the next epoch's bar, at its start
], ids=["lightning 1.5+", "lightning before 1.5", "prefixed", "then the next epoch's bar"])
def test_the_stop_below_min_epochs_is_no_end(catalogue, goes_on):
    """The log cut right after Lightning said training will continue: still training (the
    watcher decides it by the clock), not completed."""
    d = read_log(catalogue, EPOCHS + STOP + goes_on)
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert not any("Signaling Trainer to stop" in e.text for e in d.evidence)


def test_the_end_at_max_epochs_after_it_still_decides(catalogue):
    text = (EPOCHS + STOP + GOES_ON + EPOCH.format(epoch=3, n=100)
            + EPOCH.format(epoch=4, n=100) + "`Trainer.fit` stopped: `max_epochs=5` reached.\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def test_a_failure_after_it_decides(catalogue):
    d = read_log(catalogue, EPOCHS + STOP + GOES_ON + "Traceback (most recent call last):\n"
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert d.class_id == "cuda_oom"


def test_it_before_the_runs_first_marker_is_not_kept(catalogue):
    """A line that says training goes on before any marker cancels nothing: the marker
    after it ends the run."""
    d = read_log(catalogue, GOES_ON + EPOCHS + STOP)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


# Since 1.8 (f3574176e2) the epoch loop logs `Training will continue...` through a
# WarningCache: once per fit, however many stops come below the minimum. should_stop stays
# set, EarlyStopping (verbose) logs a stop at each later validation that does not improve,
# and FitLoop.done stops once `epoch_progress.processed >= min_epochs` (`_can_stop_early`).
GOES_ON_6 = GOES_ON.replace("min_epochs=5", "min_epochs=6")
LATER = "Monitored metric val_loss did not improve in the last {k} records. Best score: 0.123. " \
        "Signaling Trainer to stop.\n"


def _epochs(first: int, last: int) -> str:
    return "".join(EPOCH.format(epoch=e, n=100) for e in range(first, last + 1))


def test_a_later_stop_once_the_minimum_is_met_ends_the_run(catalogue):
    """Epoch 5's stop (the sixth epoch: min_epochs=6 met), nothing after it: completed."""
    text = (_epochs(0, 3) + LATER.format(k=3) + GOES_ON_6 + _epochs(4, 4) + LATER.format(k=4)
            + _epochs(5, 5) + LATER.format(k=5))
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert d.evidence[-1].text == LATER.format(k=5).rstrip()


@pytest.mark.parametrize(("goes_on", "stop_epoch"), [
    (GOES_ON_6, 4),  # epoch 4 is the fifth: below min_epochs=6, and no second message
    (GOES_ON_6.replace("`min_epochs=6`", "`min_epochs=None`").replace(
        "`min_steps=None`", "`min_steps=600`"), 4),  # 500 batches trained: below 600 steps
    (GOES_ON_1_4.replace("(5)", "(6)", 1), 4),  # before 1.5: the log cut before its next one
], ids=["min_epochs", "min_steps", "lightning before 1.5"])
def test_a_later_stop_below_the_minimum_is_no_end(catalogue, goes_on, stop_epoch):
    """The log cut right at a later stop below the minimum the earlier message named:
    Lightning trains on (still running), not completed. Before, any later stop ended it."""
    text = (_epochs(0, 3) + LATER.format(k=3) + goes_on + _epochs(4, stop_epoch)
            + LATER.format(k=4))
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_the_max_time_stop_once_the_minimum_is_met_ends_the_run(catalogue):
    text = (_epochs(0, 3) + LATER.format(k=3) + GOES_ON_6 + _epochs(4, 5)
            + "Time limit reached. Elapsed time is 2:00:00. Signaling Trainer to stop.\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


# The evidence a completed run shows (`trainbot diagnose`'s `evidence:` lines, the thread's
# *Evidence* block that `trainbot report` writes): the stop that ended it, not the stops below
# the minimum that Lightning overrode and trained on after.
OVERRIDDEN_RUNS = {
    # the stop below min_epochs=5 then `Training will continue...`; epoch 4's stop ends it
    "goes on after the stop": (_epochs(0, 2) + LATER.format(k=3) + GOES_ON + _epochs(3, 4)
                               + LATER.format(k=5), ["3"], "5"),
    # since 1.8 the line once per fit: epoch 4's stop below min_epochs=6 has none after it
    "a later stop below the minimum": (_epochs(0, 3) + LATER.format(k=3) + GOES_ON_6
                                       + _epochs(4, 4) + LATER.format(k=4) + _epochs(5, 5)
                                       + LATER.format(k=6), ["3", "4"], "6"),
}


@pytest.mark.parametrize(("text", "overridden", "decisive"), list(OVERRIDDEN_RUNS.values()),
                         ids=list(OVERRIDDEN_RUNS))
def test_the_evidence_of_the_finished_run_is_its_decisive_stop(tmp_path, capsys, text,
                                                               overridden, decisive):
    """Before, the evidence listed every stop, the overridden ones beside the last, as if they
    had decided the run too."""
    log = tmp_path / "train.log"
    log.write_text(text)
    assert main(["diagnose", str(log)]) == 0
    shown = capsys.readouterr().out
    assert "completed" in shown
    evidence = shown.split("evidence:", 1)[1]
    assert f"in the last {decisive} records" in evidence
    assert not any(f"in the last {k} records" in evidence for k in overridden)
    out = tmp_path / "out"
    assert main(["report", str(log), "--state", "COMPLETED", "--exit-code", "0:0",
                 "--out", str(out)]) == 0
    message = (out / "message.txt").read_text()
    assert f"in the last {decisive} records" in message
    assert not any(f"in the last {k} records" in message for k in overridden)
