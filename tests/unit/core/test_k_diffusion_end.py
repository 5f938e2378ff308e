"""k-diffusion's finished run, built from its source's format strings (crowsonkb/k-diffusion
train.py 4601bf0): `Epoch: {epoch}, step: {step}, loss: {loss_disp:g}, avg loss: {avg_loss:g}`
every 25 steps, save()'s `Saving to {name}_{step:08}.pth...` every save_every steps and at
--end-step, and only there `Done!` after it (a KeyboardInterrupt ends the loop saying nothing);
all through tqdm.write, the epoch's tqdm bar on stderr drawn again after each."""

from __future__ import annotations

from functools import cache

import pytest
from support.end_marker import LATE_ERROR, assert_the_error_decides, read

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.diagnose.framework_end import ends_in_final_save


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


# what save()'s writing may say on stderr between its `Saving to` and `Done!`: Python's warnings
# module (`{file}:{line}: {category}: {message}` and the source line under it, stacklevel's
# caller's), wandb's logger when --wandb-save-model copies the file
SAVE_WARNINGS = {
    "python-warning": (
        "/opt/conda/lib/python3.11/site-packages/accelerate/accelerator.py:2871: UserWarning: "
        "Failed to detect the safetensors package, saving with torch.save\n"
        "  warnings.warn(\n"),
    "warning-with-its-callers-line": (
        "/opt/conda/lib/python3.11/site-packages/torch/serialization.py:619: FutureWarning: "
        "the `_use_new_zipfile_serialization` default will change\n"
        "  accelerator.save(obj, filename)\n"),
    "wandb": "wandb: WARNING Saving files without folders. If you want to preserve "
             "subdirectories pass base_path to wandb.save, i.e. wandb.save(\"/mnt/folder/file.h5\""
             ", base_path=\"/mnt\")\n",
}


def _finished_with(between: str) -> str:
    return _steps(99900, 99975) + _save(100000) + between + "Done!\n"


@pytest.mark.parametrize("between", list(SAVE_WARNINGS.values()), ids=list(SAVE_WARNINGS))
def test_a_warning_between_the_last_save_and_done_still_ends_a_finished_run(between):
    drawn = "".join(BAR + "\r" + line + "\n" for line in _finished_with(between).splitlines())
    assert read(drawn + BAR + "\n").class_id == "completed"


@cache
def _catalogue() -> Catalogue:
    return Catalogue.load()


def _ends_in_final_save(log: str) -> bool:
    """bot.core.diagnose.framework_end's reading of `log`'s last lines as a final save."""
    analysis = LogAnalysis(_catalogue())
    analysis.feed_text(log)
    analysis.finish()
    return ends_in_final_save(analysis.series, list(analysis.tail))


@pytest.mark.parametrize("between", [
    LATE_ERROR,  # a traceback: the error decides first (below), and the save is no end either
    _steps(100000, 100025),  # training went on after a periodic save
    "Epoch: 41, loss: 0.0121\n",  # a loss figure the series may not count
], ids=["traceback", "progress", "loss-figure"])
def test_an_error_or_progress_between_the_last_save_and_done_is_no_final_save(between):
    assert _ends_in_final_save(_finished_with(SAVE_WARNINGS["python-warning"]))
    assert not _ends_in_final_save(_finished_with(between))


def test_a_traceback_between_the_last_save_and_done_decides():
    assert read(_finished_with(LATE_ERROR)).class_id == "disk_full"
