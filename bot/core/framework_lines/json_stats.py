"""The `json_stats:` lines of SlowFast's and pycls's meters (pure; no I/O), read for
bot.core.framework_lines' `read_framework_line`: a training step's figures, or an evaluation's
batches and summary; and the epoch of a training line, for bot.core.diagnose.framework_end.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# SlowFast's meters (facebookresearch/SlowFast slowfast/utils/meters.py 287ec0076846), logged by
# slowfast/utils/logging.py's log_json_stats as `json_stats: {…}` (simplejson, keys sorted,
# floats to 5 places): TrainMeter.log_iter_stats's `"_type": "train_iter_"` (`train_iter_ssl`)
# every LOG_PERIOD steps with `"epoch": "{cur_epoch+1}/{MAX_EPOCH}"`, `"iter": "{cur_iter+1}/
# {epoch_iters}"`, `"dt"` (the step's seconds) and `"loss"` (the window's median): the steps done
# are the epochs before it (as many as this one's) and this one's, the target every epoch's
# steps; its `train_epoch` summary names no step. ValMeter's `val_iter` lines count its
# evaluation's batches (`"iter": "{cur_iter+1}/{max_iter}"`) and its `val_epoch` line sums the
# pass up: an evaluation's, no training figure.
# pycls's meters (facebookresearch/pycls pycls/core/meters.py 5719de641657), which SlowFast's
# come from, log the same way (pycls/core/logging.py, dump_log_data: `json_stats: ` and
# simplejson's dump, keys sorted, floats to 4 places, after its `[%(filename)s: %(lineno)3d]: `):
# TrainMeter's `"_type": "train_iter"` every LOG_PERIOD steps (its `"epoch"` and `"iter"` as
# SlowFast's, `"time_diff"` the step's seconds), and `train_epoch` after the epoch; TestMeter's
# `test_iter` and `test_epoch` (the EMA model's `test_ema_iter`, `test_ema_epoch`) are the
# evaluation pycls/core/trainer.py's train_model runs after each epoch. Its loop then saves the
# epoch's checkpoint (`Wrote checkpoint to: …/checkpoints/model_epoch_0100.pyth`, the epoch from
# 1) and prints nothing after the last: a last epoch's steps left unlogged (LOG_PERIOD not
# dividing them) are told done by that save (bot.core.diagnose.framework_end,
# ends_in_final_save; `json_stats_epoch`)
JSON_STATS = "json_stats: {"
_COUNT_OF_TOTAL = re.compile(r"(\d+)/(\d+)")
_JSON_STATS_TRAIN_EPOCH = re.compile(
    r'json_stats: \{.*?"_type": "train_iter\w*".*?"epoch": "(\d+)/\d+".*?"iter": "\d+/(\d+)"')


def read_json_stats(body: str, s: Sample) -> None:
    """A SlowFast or pycls `json_stats:` line (`JSON_STATS`): a training step's gives its steps
    done as the iteration, every epoch's steps as the target, its loss and the step's seconds
    (SlowFast's `dt`, pycls's `time_diff`) as the pace; a validation's or test's its batches
    (`val_iter`, `test_iter`, `test_ema_iter`) or the summary of its pass (`val_epoch`,
    `test_epoch`, `test_ema_epoch`)."""
    try:
        stats = json.loads(body[body.index(JSON_STATS) + len(JSON_STATS) - 1:])
    except ValueError:
        return
    kind = stats.get("_type") if isinstance(stats, dict) else None
    if not isinstance(kind, str):
        return
    epoch = _COUNT_OF_TOTAL.fullmatch(str(stats.get("epoch", "")))
    step = _COUNT_OF_TOTAL.fullmatch(str(stats.get("iter", "")))
    if kind.startswith(("val_", "test_")):
        if "_epoch" in kind:
            s.evaluation_done = True
        elif "_iter" in kind and step is not None:
            s.evaluation_batches = (int(step.group(1)), int(step.group(2)))
    elif kind.startswith("train_iter") and epoch is not None and step is not None:
        steps = int(step.group(2))
        s.iteration = (max(int(epoch.group(1)), 1) - 1) * steps + int(step.group(1))
        s.target_iter = int(epoch.group(2)) * steps
        if isinstance(loss := stats.get("loss"), (int, float)):
            s.loss = float(loss)
        pace = stats.get("dt", stats.get("time_diff"))
        if isinstance(pace, (int, float)):
            s.sec_per_iter = float(pace)


def json_stats_epoch(text: str) -> tuple[int, int] | None:
    """The epoch and its steps (`"epoch": "100/100"`, `"iter": "5000/5005"`: 100, 5005) of a
    SlowFast or pycls training `json_stats:` line's text (its message, prefix and all; the
    keys sorted put both before the figures), or None when it is no such line."""
    m = _JSON_STATS_TRAIN_EPOCH.search(text) if JSON_STATS in text else None
    return (int(m.group(1)), int(m.group(2))) if m is not None else None
