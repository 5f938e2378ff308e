"""LitGPT's end of training, read from its source (Lightning-AI/litgpt 26857050): pretrain.py's
setup and the finetune scripts (finetune/lora.py, adapter.py, full.py, ...) call fit(), which
returns when the loop reaches its steps, epochs or time budget, and only then print how long
training took: `| - Training Time : 1234.56 s` in pretrain.py's performance report and
`| - Training Time             :  1234.56 s` in utils.create_finetuning_performance_report
(since 36bfe87d, 2024-10), `Training time: 1234.56s` before (lit-gpt, bb78a209 2023-08 on).
No `finally` prints them: an exception in fit() ends the script before them."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, assert_still_running

LOOP = "".join(
    f"Epoch 1 | iter {i} step {i // 4} | loss train: {2.0 - i / 1000:.3f}, val: n/a | "
    f"iter time: 312.45 ms{' (step)' if i % 4 == 0 else ''} "
    f"remaining time: 0:00:{40 - i // 10:02d}\n"
    for i in range(381, 401))
PRETRAIN = ("Saving checkpoint to 'out/pretrain/final/lit_model.pth'\n"
            "----------------------------------------\n"
            "| Performance\n"
            "| - Total tokens  : 3,276,800\n"
            "| - Training Time : 125.03 s\n"
            "| - Tok/sec       : 26207.41 tok/s\n"
            "| ----------------------------------------\n"
            "| Memory Usage\n"
            "| - Memory Used   : 12.41 GB\n"
            "----------------------------------------\n")
FINETUNE = ("\n| ------------------------------------------------------\n"
            "| Token Counts\n"
            "| - Input Tokens              :  41237\n"
            "| - Tokens w/ Prompt          :  52811\n"
            "| - Total Tokens (w/ Padding) :  61440\n"
            "| -----------------------------------------------------\n"
            "| Performance\n"
            "| - Training Time             :  125.03 s\n"
            "| - Tok/sec                   :  491.40 tok/s\n"
            "| -----------------------------------------------------\n"
            "-------------------------------------------------------\n")
OLDER = "Training time: 125.03s\nMemory used: 12.41 GB\n"


@pytest.mark.parametrize(("end", "marker"), [(PRETRAIN, "Training Time"),
                                             (FINETUNE, "Training Time"),
                                             (OLDER, "Training time")],
                         ids=["pretrain", "finetune", "before 36bfe87d"])
def test_the_training_time_after_fit_ends_a_finished_run(end, marker):
    assert_ends_the_run(LOOP + end, marker)


def test_a_training_time_that_progress_follows_is_no_end():
    """Another program's per-epoch `Training time: 12.34s`, then the next epoch: not its end."""
    assert_still_running(LOOP + "Training time: 12.34s\n" + LOOP)
