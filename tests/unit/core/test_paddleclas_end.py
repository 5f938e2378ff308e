"""PaddleClas's end of training, read from its source (PaddlePaddle/PaddleClas
ppcls/engine/engine.py d178931f, Engine.train): after each epoch's steps (`[Train][Epoch 120/120]
[Iter: 1250/1251]...`) it logs that epoch's summary, `[Train][Epoch 120/120][Avg]CELoss: ...,
loss: ...`, and prints no line of its own after its last: the last epoch's summary as the last
progress ends the run (bot.core.diagnose.last_epoch.ends_at_last_epoch). Its logger starts each
line with `[2024/10/18 17:05:14]` (ppcls/utils/logger.py, datefmt `%Y/%m/%d %H:%M:%S`), whose
`2024/10` is no count of the epoch's steps."""

from __future__ import annotations

import pytest
from support.end_marker import LATE_ERROR, read

STEP = ("[2024/10/18 17:{m:02d}:{s:02d}] ppcls INFO: [Train][Epoch {e}/120][Iter: {i}/1251]"
        "lr(LinearWarmup): 0.00000123, CELoss: 1.23456, loss: 1.23456, batch_cost: 0.25000s, "
        "reader_cost: 0.00100, ips: 512.00000 samples/s, eta: 0:00:06\n")
AVG = ("[2024/10/18 17:{m:02d}:59] ppcls INFO: [Train][Epoch {e}/120][Avg]CELoss: 1.23456, "
       "loss: 1.23456\n")
SAVE = "[2024/10/18 17:{m:02d}:59] ppcls INFO: Already save model in ./output/ResNet50/{name}\n"


def _epoch(e: int, *, summary: bool = True) -> str:
    m = e % 60
    steps = "".join(STEP.format(m=m, s=i // 25, e=e, i=i) for i in range(0, 1251, 250))
    return steps + (AVG.format(m=m, e=e) + SAVE.format(m=m, name="latest") if summary else "")


def _diagnosis(text: str) -> tuple[str, str]:
    d = read(text)
    return d.class_id, d.decided_by


def test_the_last_epochs_summary_ends_a_finished_run():
    log = _epoch(118) + _epoch(119) + _epoch(120)
    assert _diagnosis(log) == ("completed", "progress")


@pytest.mark.parametrize("log", [
    pytest.param(_epoch(118) + _epoch(119), id="an earlier epoch's summary"),
    pytest.param(_epoch(119) + _epoch(120, summary=False), id="the last epoch's steps"),
])
def test_short_of_the_last_epochs_summary_is_still_running(log):
    assert _diagnosis(log) == ("none", "progress")


def test_an_error_after_it_decides():
    assert read(_epoch(119) + _epoch(120) + LATE_ERROR).class_id == "disk_full"
