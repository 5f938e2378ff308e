"""A last line after the last epoch's report keeps the run open as a step started only where a
start's word leads its message or follows a tool's tag (`TensorRT: starting export ...`:
bot.core.diagnose.after_target `ends_in_started_step`); a start's word inside a name (`See
launch_config.yaml for settings`, `wandb: Synced warm-start-lr3e-4: https://…`) or a
cleanup's start (`Starting cleanup phase`) leaves the finished run ended.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

EPOCHS = epochs(10)


@pytest.mark.parametrize("line", [
    "Starting cleanup phase",
    "See launch_config.yaml for settings",
    "wandb: Synced warm-start-lr3e-4: https://wandb.ai/me/proj/runs/abc123",
])
def test_a_start_word_in_a_name_or_a_cleanup_leaves_the_run_ended(line):
    assert read(EPOCHS + line + "\n").class_id == "completed"


def test_a_step_started_last_keeps_the_run_open():
    assert read(EPOCHS + "TensorRT: starting export with TensorRT 8.6.1...\n").class_id == "none"
