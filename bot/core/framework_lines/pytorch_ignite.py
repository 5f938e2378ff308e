"""The lines of PyTorch-Ignite's own progress handlers and of MONAI's StatsHandler, an ignite
handler (pure; no I/O), read for bot.core.framework_lines' `read_framework_line`: ignite's
ProgressBar draws and FBResearchLogger lines, MONAI's iteration lines, each an epoch's step of a
run counted in epochs (or in the iterations its start announced).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.progress_bars import NUMBER
from bot.core.units import MIB

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# MONAI's StatsHandler (Project-MONAI/MONAI monai/handlers/stats_handler.py d388d1c6fec8,
# _default_iteration_print; since 72021b6, 2020-05): `Epoch: {epoch}/{max_epochs}, Iter:
# {i}/{epoch_length} -- ` and the output's `{name}: {value:.4f} ` (`Loss: 0.4123 `, its tag, for
# a scalar output; the dict's scalar keys, sorted, for a dict: the trainers' `loss: 0.4123 `),
# after every iteration, i counting the epoch's iterations from 1: the steps done are the epochs
# before it (as many as this one's) and this one's, the target every epoch's. No pace. Its
# `Iter: 20/20` alone is the epoch's end, not the training's (the generic grammar read it so).
# An evaluator's engine runs as `Epoch: {E}/{E}` (SupervisedEvaluator.run: max_epochs = the
# trainer's epoch), but its default output_transform gives no scalar: it prints no such line.
# An engine run by iterations (ignite's `run(data, max_iters=N)`) stops at max_iters, inside
# its last epoch unless epoch_length divides it: the iterations its start announced
# (bot.core.announced_targets) are the target then; since ignite 3745b937e (2026-06) its state
# keeps no max_epochs in that mode, printed `Epoch: 3/None`
_MONAI = re.compile(r"(?<![\w:])Epoch: (\d+)/(\d+|None), Iter: (\d+)/(\d+) --(?= |$)")

# PyTorch-Ignite's own progress lines (pytorch/ignite de08e799cfb5), each at an iteration of
# the epoch, counted from 1 (`(iteration - 1) % epoch_length + 1`): the steps done are the epochs
# before it (epoch_length each) and this one's; the target every epoch's, or the max_iters its
# start announced (bot.core.announced_targets) when it reaches them (a run by iterations stops
# inside its last epoch unless epoch_length divides max_iters).
# - its ProgressBar (ignite/handlers/tqdm_logger.py): a tqdm bar of the epoch's iterations
#   (initial=1) drawn with `{desc}[{n_fmt}/{total_fmt}] {percentage:3.0f}%|{bar}{postfix}
#   [{elapsed}<{remaining}]`, desc `Epoch [{epoch}/{max_epochs}]` (tqdm adds `: `) only when
#   max_epochs is over 1: `Epoch [3/10]: [50/100]  50%|█████     , loss=0.123 [00:10<00:10]`
#   (an evaluator's engine runs one epoch: its bar is `Iteration: [20/50]`, none of these)
# - its FBResearchLogger (ignite/handlers/fbresearch_logger.py, log_every): the parts joined by
#   its delimiter (two blanks by default), `Epoch [{epoch}/{max_epochs}]`, `[{i}/{epoch_length}]:`,
#   `ETA: …`, the learning rates, the outputs, `Iter time: {:.4f} s` (the epoch's average seconds
#   per iteration), `Data prep time: …` and on a GPU `GPU Max Mem: {:.0f} MB` (MiB: GPU memory);
#   max_epochs is `None` in a run by iterations since ignite 3745b937e. An evaluator attached to
#   it runs one epoch (`Epoch [1/1]`): a line of one epoch is not read (whose engine's it is, the
#   line does not say)
_IGNITE_BAR = re.compile(r"^Epoch \[(\d+)/(\d+)\]: \[(\d+)/(\d+)\]\s+\d{1,3}%\|")
_IGNITE_RESEARCH = re.compile(r"(?<![\w:])Epoch \[(\d+)/(\d+|None)\]  \[(\d+)/(\d+)\]:  ETA: ")
_IGNITE_RESEARCH_PACE = re.compile(rf"  Iter time: ({NUMBER}) s(?=  |\s*$)")
_IGNITE_RESEARCH_GPU = re.compile(r"  GPU Max Mem: (\d+) MB\s*$")


def read_ignite(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A PyTorch-Ignite ProgressBar's draw (`_IGNITE_BAR`) or FBResearchLogger's line
    (`_IGNITE_RESEARCH`), each of more than one epoch: its steps done as the iteration, the target
    as `_epochs_steps` gives it; the research line's pace and GPU memory too. The body left for
    the rest of the grammar (the bar's postfix, the line's outputs): without what was read."""
    if (m := _IGNITE_BAR.match(body)) is not None:
        epoch, epochs, step, steps = (int(g) for g in m.group(1, 2, 3, 4))
        if epochs == 1:
            # ProgressBar names the epoch only when max_epochs is over 1: a bar of one epoch
            # (an evaluator's `Epoch [1/1]: [20/20] 100%|`) is no trainer's, and no count
            return body[m.end():]
        _epochs_steps(s, epoch, step, steps, epochs, targets)
        return body[m.end():]
    m = _IGNITE_RESEARCH.search(body)
    if m is None or m.group(2) == "1":
        return body
    epoch, step, steps = (int(g) for g in m.group(1, 3, 4))
    _epochs_steps(s, epoch, step, steps, None if m.group(2) == "None" else int(m.group(2)),
                  targets)
    if (pace := _IGNITE_RESEARCH_PACE.search(body, m.end())) is not None:
        s.sec_per_iter = float(pace.group(1))
    rest = body[m.end():]
    if (gpu := _IGNITE_RESEARCH_GPU.search(rest)) is not None:
        s.gpu_mem_bytes = int(gpu.group(1)) * MIB
        rest = rest[:gpu.start()]
    return body[:m.start()] + rest


def _epochs_steps(s: Sample, epoch: int, step: int, steps: int, epochs: int | None,
                  targets: AnnouncedTargets) -> None:
    """An epoch's `step` of `steps` (from 1) as the iteration, the epochs before it as many
    steps each; the iterations announced (`targets`: ignite's max_iters) as the target when
    they reach it, else every epoch's (`epochs`, when known)."""
    s.iteration = (max(epoch, 1) - 1) * steps + step
    if targets.iterations is not None and targets.iterations >= s.iteration:
        s.target_iter = targets.iterations
    elif epochs is not None:
        s.target_iter = epochs * steps


def read_monai(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A MONAI StatsHandler iteration line (`_MONAI`): its steps done as the iteration, the
    iterations announced (`targets`: ignite's max_iters) as the target when they reach it, else
    every epoch's. The body left for the rest of the grammar (its output's `loss: …`): without
    the epoch's own `Iter: i/n`, which is no count of the training's."""
    m = _MONAI.search(body)
    if m is None:
        return body
    epoch, step, steps = (int(g) for g in m.group(1, 3, 4))
    _epochs_steps(s, epoch, step, steps, None if m.group(2) == "None" else int(m.group(2)),
                  targets)
    return body[:m.start()] + body[m.end():]
