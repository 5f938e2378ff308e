"""An exit status given alone (`trainbot diagnose LOG --exit-code 0:0`, no `--state`) is how a
job that ended ended: the diagnosis reads it as the State Slurm gives such a job (COMPLETED for
0:0, FAILED for any other code or signal), the State the watcher's sacct always gives with it,
so the command and the watcher read one log alike. It used to be ignored: a log that ends in
progress read `none` (still running) whatever the exit status said.

The logs are PyTorch-Ignite's FBResearchLogger lines (pytorch/ignite de08e799cfb5,
ignite/handlers/fbresearch_logger.py `log_every`: `Epoch [{epoch}/{max_epochs}]`,
`[{i}/{epoch_length}]:`, `ETA: …`, the learning rate, the outputs, `Iter time: {:.4f} s`,
`Data prep time: {:.4f} s`, joined by two blanks) after ignite.utils.setup_logger's format
(`%(asctime)s %(name)s %(levelname)s: %(message)s`), and a plain loop's `step N loss X` lines
that print no target.
"""

from __future__ import annotations

from functools import cache

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting


@cache
def _catalogue() -> Catalogue:
    return Catalogue.load()


def _research(epoch: int, i: int, epochs: int = 4, steps: int = 100) -> str:
    """FBResearchLogger's line at the epoch's iteration i, after setup_logger's format."""
    return (f"2024-04-22 12:{epoch:02d}:{i % 60:02d},843 trainer INFO: Epoch [{epoch}/{epochs}]  "
            f"[{i}/{steps}]:  ETA: 0:00:10  lr: 0.00100  total_loss: 1.5969  Iter time: "
            f"0.0008 s  Data prep time: 0.0001 s")


#: the last epoch's last iteration logged, and nothing after it (no `Engine run finished.`)
AT_TARGET = "\n".join(_research(e, i) for e in (3, 4) for i in (20, 40, 60, 80, 100)) + "\n"
#: the second of four epochs, and nothing after it
SHORT = "\n".join(_research(2, i) for i in (20, 40, 60)) + "\n"
#: a loop that prints no target
NO_TARGET = "".join(f"step {n} loss {2 - n / 100:.2f}\n" for n in range(10, 60, 10))


def _read(text: str, acct: Accounting | None = None):
    return read_log(_catalogue(), text, acct)


@pytest.mark.parametrize("text", [AT_TARGET, SHORT, NO_TARGET], ids=["at_target", "short",
                                                                      "no_target"])
@pytest.mark.parametrize(("code", "signal", "state"), [(0, 0, "COMPLETED"), (1, 0, "FAILED"),
                                                       (2, 0, "FAILED"), (0, 15, "FAILED")])
def test_an_exit_status_alone_reads_as_the_state_slurm_gives_it(text, code, signal, state):
    alone = _read(text, Accounting(exit_code=code, signal=signal))
    with_state = _read(text, Accounting(state=state, exit_code=code, signal=signal))
    assert (alone.class_id, alone.decided_by, alone.detail) == (
        with_state.class_id, with_state.decided_by, with_state.detail)


def test_exit_0_after_ordinary_progress_is_completed():
    """The log alone ends in progress (`none`, still running): with exit 0:0 the job ended, and
    nothing says it failed or stopped short."""
    assert _read(NO_TARGET).class_id == "none"
    d = _read(NO_TARGET, Accounting(exit_code=0, signal=0))
    assert (d.class_id, d.decided_by) == ("completed", "accounting")


def test_exit_0_short_of_the_logged_target_is_a_silent_exit():
    """Epoch 2 of 4 and exit 0: the work did not happen, as COMPLETED 0:0 reads it."""
    assert _read(SHORT).class_id == "none"
    assert _read(SHORT, Accounting(exit_code=0, signal=0)).class_id == "silent_exit"


@pytest.mark.parametrize(("code", "signal"), [(1, 0), (0, 15)])
def test_a_nonzero_exit_status_after_ordinary_progress_is_a_failure(code, signal):
    assert _read(NO_TARGET).class_id == "none"
    d = _read(NO_TARGET, Accounting(exit_code=code, signal=signal, exit_code_mod_128=True))
    assert (d.class_id, d.decided_by) == ("unknown_failure", "accounting")


def test_a_state_given_is_kept():
    """A State says more than the exit status (a running job's sacct ExitCode is 0:0)."""
    d = _read(SHORT, Accounting(state="RUNNING", exit_code=0, signal=0))
    assert d.class_id == "none"
    assert Accounting(state="TIMEOUT", exit_code=0, signal=15).as_ended().state == "TIMEOUT"
    assert Accounting().as_ended().state is None
