"""The lines of torchtune's recipes (pure; no I/O), read for bot.core.framework_lines'
`read_framework_line`: the tqdm bar each epoch draws, described with the run's global step and
loss, and the distributed recipes' validation summary.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.framework_lines.epoch_steps import run_step_of_epoch_bar
from bot.core.progress_bars import NUMBER, TQDM_BAR

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# torchtune's recipes (pytorch/torchtune recipes/full_finetune_single_device.py and the other
# recipes' train(), bd2a0fc7c314): a tqdm bar per epoch counting its optimizer steps,
# `tqdm(total=self._steps_per_epoch)` (the full_finetune recipes' with `initial=inner_step_count,
# desc=f"{self.epochs_run}|{self.global_step}"`), described after each step as
# `f"{curr_epoch + 1}|{self.global_step}|Loss: {loss}"`: `3|3000|Loss: 0.8123: 100%|██████████|
# 1000/1000 [41:12<00:00,  2.47s/it]`. The bar's total is one epoch's steps, not the run's; the
# global step counts the run's steps (a resumed run's from its checkpoint's): the iteration.
# The run's total is every epoch's steps (TrainingProgress.total_training_steps: total_epochs *
# steps_per_epoch, max_steps_per_epoch already in the bar's total); the epochs are printed
# before the loop, in config.log_config's dump (`Running FullFinetuneRecipeSingleDevice with
# resolved config:`, then OmegaConf.to_yaml of the config, keys sorted): `epochs: 3` alone on
# its line, the epochs announced (bot.core.announced_targets) for the target only inside
# that dump (its `ResolvedConfigLines`: another program's YAML `epochs: 3` is no run's total
# of such bars; the banner also starts a run, bot.core.training_lines.TRAINING_START).
# After the loop only the checkpointer's final save speaks (`Saving final epoch checkpoint.`, the
# catalogue's marker); its metric logger writes a file (DiskLogger) unless configured to stdout
# (StdoutLogger's `Step 1000 | loss:0.8123 lr:2e-05 …`, the generic grammar's).
_TORCHTUNE_BAR = re.compile(rf"^(\d+)\|(\d+)(?:\|Loss: ({NUMBER}|nan|inf))?: *\d{{1,3}}%\|")
# The distributed recipes' validation (recipes/full_finetune_distributed.py,
# lora_finetune_distributed.py, qat_distributed.py: validate(), run every run_val_every_n_steps
# steps): rank zero logs `f"Validation loss: {avg_val_loss:.4f}"` (`inf` with no tokens), a
# summary of the pass (Sample.evaluation_done), no training loss; as its own log line, after its
# logger's prefix if any (logged after a bar's refresh, it may also follow the bar's draw on its
# line: that line's figures are the bar's)
_TORCHTUNE_VALIDATION = re.compile(rf"(?:^|:)Validation loss: (?:{NUMBER}|nan|inf)$")


def read_torchtune_bar(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A torchtune recipe's bar (`_TORCHTUNE_BAR`): its global step as the iteration, every
    announced epoch's steps (as many as this bar counts) as the target (when the config dump
    announced the epochs), its loss and its rate as the pace. The body left for the rest of
    the grammar: without the bar's count, which counts one epoch's steps, not the run's."""
    m = _TORCHTUNE_BAR.match(body)
    bar = TQDM_BAR.search(body, m.end()) if m is not None else None
    if m is None or bar is None:
        return body
    if m.group(3) is not None:
        s.loss = float(m.group(3))
    return run_step_of_epoch_bar(body, bar, int(m.group(2)), s, targets)


def read_torchtune_validation(body: str, s: Sample) -> None:
    """A distributed recipe's validation line (`_TORCHTUNE_VALIDATION`): the summary of its
    pass."""
    if _TORCHTUNE_VALIDATION.search(body) is not None:
        s.evaluation_done = True
