"""Lightning's own stop messages, read from its source (Lightning-AI/pytorch-lightning
7f0c3436cd3f, src/lightning/pytorch/callbacks/early_stopping.py `_evaluate_stopping_criteria`,
logged through `rank_prefixed_message` by `_log_info`; `[0] ` before 1.5, d12c6cf2b3): the
metric is `logs[monitor].squeeze()`, a 0-dim tensor that an f-string formats as its float.

EarlyStopping's patience and stopping_threshold stops end a finished run (`completed`); its
check_finite (`... = nan is not finite.`) and divergence_threshold stops are the catalogue's
divergence (`nan_loss`: the run stopped itself because its training diverged, and resuming it
with the same settings diverges again). tqdm leaves the epoch bar's line open until the bar
closes, so in a job's output file the message often ends the bar's line (`Epoch 9: 100%|...|
100/100 [...]Monitored metric ...`), and Lightning draws the bar again at its count after it."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting
from bot.slack.render import explain_title

BAR = "Epoch {e}: {n:>3}%|##########| {n}/100 [00:10<00:00,  9.80it/s, v_num=0, train_loss=0.31]"
# the last epoch's bar, its line still open: tqdm's redraws, each after a carriage return
OPEN_BAR = "".join(f"\rEpoch 9: {n:>3}%|#         | {n}/100 [00:01<00:10,  9.80it/s, v_num=0]"
                   for n in (10, 50, 90)) + "\r" + BAR.format(e=9, n=100)
EPOCHS = "".join(BAR.format(e=e, n=100) + "\n" for e in range(9))
PATIENCE = ("Monitored metric val_loss did not improve in the last 3 records. Best score: 0.123. "
            "Signaling Trainer to stop.")
THRESHOLD = ("Stopping threshold reached: val_loss = 0.009300000034272671 < 0.01. "
             "Signaling Trainer to stop.")
NON_FINITE = ("Monitored metric val_acc = nan is not finite. Previous best value was 0.412. "
              "Signaling Trainer to stop.")
DIVERGED = "Divergence threshold reached: val_loss = 12.5 > 10.0. Signaling Trainer to stop."
TEARDOWN = ("LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n"
            "Testing DataLoader 0: 100%|##########| 20/20 [00:01<00:00, 15.10it/s]\n")
DONE = Accounting(state="COMPLETED", exit_code=0, elapsed_s=3600.0)


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _layouts(stop: str) -> dict[str, str]:
    return {
        "own line": EPOCHS + OPEN_BAR + "\n" + stop + "\n",
        "ending the bar's line": EPOCHS + OPEN_BAR + stop + "\n",
        "ending the bar's line, bar redrawn": EPOCHS + OPEN_BAR + stop + "\n"
        + BAR.format(e=9, n=100) + "\n",
        "rank-prefixed, then teardown": EPOCHS + OPEN_BAR + "[rank: 0] " + stop + "\n" + TEARDOWN,
        "lightning 1.3's prefix": EPOCHS + OPEN_BAR + "\n[0] " + stop + "\n",
    }


@pytest.mark.parametrize("stop", [PATIENCE, THRESHOLD], ids=["patience", "stopping_threshold"])
@pytest.mark.parametrize("layout", list(_layouts("")))
def test_an_early_stop_ends_a_finished_run(catalogue, stop, layout):
    """With no accounting, the log that ends in the stop reads completed by its signature,
    with the stop as its evidence; before, a stop written at the end of the epoch bar's line
    read as progress after it (`none`, still running)."""
    d = read_log(catalogue, _layouts(stop)[layout])
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert "Signaling Trainer to stop." in d.evidence[-1].text


@pytest.mark.parametrize("stop", [PATIENCE, THRESHOLD], ids=["patience", "stopping_threshold"])
def test_training_after_the_stop_is_no_end(catalogue, stop):
    """The next epoch's bar after the stop on the bar's line: training went on (a stop below
    min_epochs), the stop was not the end."""
    text = EPOCHS + OPEN_BAR + stop + "\n" + BAR.format(e=10, n=40) + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("none", "progress")


@pytest.mark.parametrize("stop", [NON_FINITE, DIVERGED], ids=["check_finite", "divergence"])
@pytest.mark.parametrize("layout", list(_layouts("")))
@pytest.mark.parametrize("acct", [None, DONE], ids=["no accounting", "COMPLETED 0:0"])
def test_a_divergence_stop_is_a_divergence(catalogue, stop, layout, acct):
    """The run stopped itself, exit 0, because its training diverged: the divergence, not a
    finished run, whatever the accounting says."""
    d = read_log(catalogue, _layouts(stop)[layout], acct)
    assert (d.class_id, d.decided_by) == ("nan_loss", "signature")
    assert any("Signaling Trainer to stop." in e.text for e in d.evidence)


# Trainer(max_time=...): the Timer callback (src/lightning/pytorch/callbacks/timer.py,
# _check_time_remaining; by default after each training batch, so mid-epoch); before
# 7e6010fc93 (1.3.4) its message showed the bound method, not the time
TIME_LIMIT = "Time limit reached. Elapsed time is 1 day, 23:59:01. Signaling Trainer to stop."
TIME_LIMIT_1_3 = ("Time limit reached. Elapsed time is <bound method Timer.time_elapsed of "
                  "<pytorch_lightning.callbacks.timer.Timer object at 0x7f3a2c1d5e80>>. "
                  "Signaling Trainer to stop.")
MID_EPOCH = "\rEpoch 9:  45%|####5     | 45/100 [00:04<00:05,  9.80it/s, v_num=0]"
VALIDATION = "\rValidation DataLoader 0: 100%|##########| 20/20 [00:01<00:00, 15.10it/s]\n"


@pytest.mark.parametrize("text", [
    EPOCHS + MID_EPOCH + "\n" + TIME_LIMIT + "\n",
    EPOCHS + MID_EPOCH + TIME_LIMIT + "\n",
    # the stop's validation, then the epoch's bar drawn again with its metrics
    EPOCHS + MID_EPOCH + TIME_LIMIT + "\n" + VALIDATION + MID_EPOCH.replace("v_num=0",
                                                                            "v_num=0, val_loss=0.2")
    + "\n",
    "INFO:lightning.pytorch.callbacks.timer:" + TIME_LIMIT + "\n" + TEARDOWN,
    EPOCHS + TIME_LIMIT_1_3 + "\n",
], ids=["own line", "ending the bar's line", "then validation", "logger-prefixed", "lightning 1.3"])
@pytest.mark.parametrize("acct", [None, DONE], ids=["no accounting", "COMPLETED 0:0"])
def test_the_max_time_budget_ends_a_finished_run(catalogue, text, acct):
    """The owner's own training budget reached: a finished run, never the allocation's time
    limit to resume from (a resume restores the Timer's elapsed time and stops at once)."""
    d = read_log(catalogue, text, acct)
    assert d.class_id == "completed"
    assert acct is not None or d.decided_by == "signature"
    assert "time_limit" not in d.secondary


def test_slurms_time_limit_after_it_is_still_the_time_limit(catalogue):
    """Slurm killed the job at its --time after Lightning had stopped (a teardown or a test
    run that outlived the allocation): Slurm's TIMEOUT, not the owner's budget, ended it."""
    text = (EPOCHS + MID_EPOCH + TIME_LIMIT + "\n"
            + "slurmstepd: error: *** JOB 4242 ON gpu-a07 CANCELLED AT 2026-12-01T04:00:07 DUE TO "
            "TIME LIMIT ***\n")
    acct = Accounting(state="TIMEOUT", exit_code=0, signal=15, elapsed_s=7200.0)
    assert read_log(catalogue, text, acct).class_id == "time_limit"


def test_the_max_time_stop_below_min_epochs_is_no_end(catalogue):
    text = (EPOCHS + MID_EPOCH + TIME_LIMIT + "\n" + "Trainer was signaled to stop but the "
            "required `min_epochs=20` or `min_steps=None` has not been met. Training will "
            "continue...\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("none", "progress")


# check_finite's metric as the f-string shows it when it is no plain 0-dim Tensor: torch's
# Tensor.__format__ formats a 0-dim tensor as its float only when `type(self) is Tensor`, so a
# tensor subclass shows its repr, named by its class (torch/_tensor_str.py, _str_intern:
# `type(inp).__name__` instead of `tensor`); before 1.6 (847e24011a) the metric was not
# squeezed, and a 1-element one showed as `tensor([nan], ...)`. The metric is any the owner
# monitors.
NON_FINITE_AS = ("Monitored metric val_acc = {value} is not finite. Previous best value was "
                 "0.812. Signaling Trainer to stop.")
TENSOR_VALUES = ["tensor(nan, device='cuda:0')", "tensor(inf)", "tensor(-inf, device='cuda:1')",
                 "tensor(nan, device='cuda:0', dtype=torch.float64)",
                 "tensor([nan], device='cuda:0')",
                 "T(nan, device='cuda:0')", "ScaledMetric(inf)",
                 "Parameter(MyTensor([nan], device='cuda:0', requires_grad=True))"]
COLOUR = "\x1b[32mINFO\x1b[0m \x1b[2m[lightning.pytorch.callbacks.early_stopping]\x1b[0m "


def _non_finite_layouts(stop: str) -> dict[str, str]:
    return {**_layouts(stop),
            "logger-prefixed, coloured": EPOCHS + OPEN_BAR + "\n" + COLOUR + stop + "\x1b[0m\n",
            "torchrun's rank prefix": EPOCHS + OPEN_BAR + "\n[rank1]: [rank: 1] " + stop + "\n"}


@pytest.mark.parametrize("value", TENSOR_VALUES)
@pytest.mark.parametrize("layout", list(_non_finite_layouts("")))
@pytest.mark.parametrize("acct", [None, DONE], ids=["no accounting", "COMPLETED 0:0"])
def test_a_non_finite_metric_shown_as_a_tensor_is_a_divergence(catalogue, value, layout, acct):
    """`Monitored metric val_acc = tensor(nan, device='cuda:0') is not finite. ...`: the run
    stopped itself on a diverged metric, whatever the metric's name and however the tensor
    shows; before, only `= nan` was read, and this read completed (or none, still running)."""
    stop = NON_FINITE_AS.format(value=value)
    d = read_log(catalogue, _non_finite_layouts(stop)[layout], acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)
    assert any(f"val_acc = {value} is not finite" in e.text for e in d.evidence)
    assert explain_title(d) == catalogue.classes["nan_loss"].title  # the thread's heading


@pytest.mark.parametrize("acct", [None, DONE], ids=["no accounting", "COMPLETED 0:0"])
def test_a_non_finite_metric_whose_repr_spans_lines_is_a_divergence(catalogue, acct):
    """A plain Parameter's repr is `Parameter containing:` and the tensor on the next line
    (torch/nn/parameter.py, __repr__), so the f-string splits check_finite's message: its last
    line (`tensor(nan, ...) is not finite. Previous best value was ...`) still names the stop,
    and is the evidence."""
    stop = NON_FINITE_AS.format(value="Parameter containing:\ntensor(nan, device='cuda:0', "
                                      "requires_grad=True)")
    d = read_log(catalogue, EPOCHS + OPEN_BAR + "\n" + stop + "\n", acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)
    assert any(e.text.startswith("tensor(nan, device='cuda:0', requires_grad=True) is not "
                                 "finite.") for e in d.evidence), d.evidence


TIMEOUT = Accounting(state="TIMEOUT", exit_code=0, signal=15, elapsed_s=7200.0)
SLURM_TIME_LIMIT = ("slurmstepd: error: *** JOB 4242 ON gpu-a07 CANCELLED AT 2026-12-01T04:00:07 "
                    "DUE TO TIME LIMIT ***\n")


@pytest.mark.parametrize("stop", [NON_FINITE,
                                  NON_FINITE_AS.format(value="T(nan, device='cuda:0')")],
                         ids=["float", "tensor subclass"])
@pytest.mark.parametrize("layout", list(_layouts("")))
@pytest.mark.parametrize("slurm_line", ["", SLURM_TIME_LIMIT], ids=["no slurm line", "slurm line"])
def test_a_non_finite_stop_that_idled_to_the_time_limit_is_a_divergence(catalogue, stop, layout,
                                                                        slurm_line):
    """check_finite stopped the run, which then idled until Slurm's TIMEOUT (a teardown, a peer
    waiting): the divergence is why it stopped, and a resume diverges again, so it is nan_loss
    (not retryable) with the stop as its evidence and the time limit a secondary class. Before,
    it read time_limit, retryable, with no evidence when the log had no slurmstepd line."""
    d = read_log(catalogue, _layouts(stop)[layout] + slurm_line, TIMEOUT)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)
    assert "time_limit" in d.secondary
    assert any("is not finite." in e.text for e in d.evidence), d.evidence
