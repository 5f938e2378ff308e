"""k-diffusion's finished run, built from its source's format strings (crowsonkb/k-diffusion
train.py 4601bf0): `Epoch: {epoch}, step: {step}, loss: {loss_disp:g}, avg loss: {avg_loss:g}`
every 25 steps, save()'s `Saving to {name}_{step:08}.pth...` every save_every steps and at
--end-step, and only there `Done!` after it (a KeyboardInterrupt ends the loop saying nothing);
all through tqdm.write, the epoch's tqdm bar on stderr drawn again after each."""

from __future__ import annotations

import pytest
from support.end_marker import assert_the_error_decides, read


def _steps(first: int, last: int) -> str:
    return "".join(f"Epoch: 41, step: {s}, loss: 0.0123, avg loss: 0.0456\n"
                   for s in range(first, last + 1, 25))


def _save(step: int) -> str:
    return f"Saving to model_{step:08}.pth...\n"


FINISHED = _steps(99900, 99975) + _save(100000) + "Done!\n"
# the epoch's bar (tqdm on stderr, merged into the log) drawn before each line and after `Done!`
BAR = "\r 41%|####1     | 1020/2500 [05:00<07:00,  3.40it/s]"


def test_done_after_the_save_at_the_end_step_ends_a_finished_run():
    d = read(FINISHED)
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_the_bar_drawn_around_its_lines_does_not_hide_the_end():
    drawn = "".join(BAR + "\r" + " " * 60 + "\r" + line + "\n" for line in FINISHED.splitlines())
    assert read(drawn + BAR + "\n").class_id == "completed"


@pytest.mark.parametrize("log", [
    _steps(99900, 99975) + _save(100000),  # cut in its last save
    _steps(9900, 9975) + _save(10000) + _steps(10000, 10050),  # a periodic save
    _steps(99900, 99975) + "Done!\n",  # a bare `Done!`: many a script's word
    _steps(99900, 99975) + _save(100000) + "Done!\n" + _steps(0, 50),  # training again
], ids=["cut-in-the-save", "periodic-save", "bare-done", "progress-after"])
def test_no_done_right_after_a_save_is_no_end(log):
    assert read(log).class_id == "none"


def test_an_error_after_it_decides():
    assert_the_error_decides(FINISHED)
