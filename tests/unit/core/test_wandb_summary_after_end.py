"""A Keras run tracked by W&B whose last epoch's bar is at its total, then W&B's closing lines
(its run history and summary, whose `epoch/epoch 29` counts from 0 as Keras logs it), reads
`completed`: W&B's own lines sum up the run and train nothing
(bot.core.diagnose.after_target: an epoch on a `wandb:` line is no epoch trained). A run whose
last epoch is short of its total still reads open.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

from support.end_marker import read

from bot.core.diagnose.after_target import goes_on_after

BAR = "782/782 [==============================] - 12s 15ms/step - loss: 0.{l} - val_loss: 0.5\n"
WANDB_END = ("wandb: Waiting for W&B process to finish... (success).\n"
             "wandb: Run history:\n"
             "wandb:               epoch/epoch ▁▂▃▄▅▆▇█\n"
             "wandb: Run summary:\n"
             "wandb:               epoch/epoch {last}\n"
             "wandb:                epoch/loss 0.61\n"
             "wandb: Synced 5 W&B file(s), 0 media file(s), 0 artifact file(s)\n")


def _keras(epochs: int, total: int) -> str:
    return "".join(f"Epoch {e}/{total}\n" + BAR.format(l=90 - e) for e in range(1, epochs + 1))


def test_wandbs_summary_after_kerass_last_epoch_ends_the_run():
    assert read(_keras(30, 30) + WANDB_END.format(last=29)).class_id == "completed"


def test_wandbs_summary_after_an_epoch_short_of_the_total_leaves_the_run_open():
    assert read(_keras(12, 30) + WANDB_END.format(last=11)).class_id == "none"


def test_an_epoch_on_wandbs_line_is_no_epoch_trained_but_a_loops_is():
    assert not goes_on_after(["wandb:               epoch/epoch 29"], 30)
    assert goes_on_after(["Epoch 29: loss 0.5"], 30)
