"""The lines of torchvision's MetricLogger and its kin (pure; no I/O), read for
bot.core.framework_lines' `read_framework_line`: the reference scripts' MetricLogger (pytorch/vision
references, which DETR, DeiT and MAE copy), maskrcnn-benchmark's trainer, whose own MetricLogger
prints the same meters, and the start of its inference, and detectron2's inference (its
successor's evaluation): each line's step, pace and GPU memory, or an evaluation's batches.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.progress_bars import NUMBER
from bot.core.units import MIB

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# The MetricLogger of torchvision's reference scripts (pytorch/vision references/classification/
# utils.py 041fe3bc301e, MetricLogger.log_every), which DETR, DeiT and MAE copy: the loop's
# header, `[{i}/{len(iterable)}]` (i padded to the length's width), `eta: …`, the meters (`loss:
# 0.8123 (0.8450)`: the window's median, the global average), `time: …` (seconds per step, the
# average), `data: …` and, on a GPU, `max mem: {MB:.0f}` (torch.cuda.max_memory_allocated in
# MiB: GPU memory, no host memory), joined by the logger's delimiter (the scripts' two blanks).
# The training loop's header is `Epoch: [3]` (train_one_epoch's; epochs from 0,
# `range(start_epoch, epochs)`): its iteration is the epochs before it (as many steps as this
# one's) and this one's steps, as an epoch's bar is read (bot.core.progress_bars,
# read_epoch_bar). Another header (`Test:`) is an evaluation's.
_METRIC_LOGGER = re.compile(r"\[\s*(\d+)/(\d+)\]\s+eta: ")
_METRIC_LOGGER_EPOCH = re.compile(r"(?<![\w:])Epoch: \[(\d+)\]\s+$")
_METRIC_LOGGER_TEST = re.compile(r"(?<![\w:])Test:\s+$")
_METRIC_LOGGER_TIME = re.compile(rf"(?<![\w/])time: ({NUMBER})(?=\s|$)")
_METRIC_LOGGER_MEM = re.compile(r"(?<![\w/])max mem: (\d+)(?=\s|$)")
# maskrcnn-benchmark's trainer (facebookresearch/maskrcnn-benchmark 57eec25
# maskrcnn_benchmark/engine/trainer.py, do_train), which FCOS and its kin copy: its own
# MetricLogger's meters after `eta: {timedelta}  iter: {iteration}` (the steps done, from 1 to
# MAX_ITER, which is not printed: no target), `time: …` among them (the step's seconds, the
# window's median), then `lr: …  max mem: {MB:.0f}` (GPU MiB, as above). Its periodic
# validation (every TEST_PERIOD iterations) logs one line once the pass is over, `[Validation]:
# ` and the same parts joined alike (`[Validation]:   eta: …  iter: …`): the training's eta and
# iteration then, no progress of its own, and the validation set's meters (`loss: …`, no
# `time`), no training's: a summary of an evaluation (Sample.evaluation_done).
# Its inference (maskrcnn_benchmark/engine/inference.py, inference: the periodic validation's,
# dataset_name `[Validation]`, and tools/train_net.py's run_test after training) logs `Start
# evaluation on {dataset_name} dataset({len(dataset)} images).` before compute_on_dataset's
# `tqdm(data_loader)`, an unlabelled bar counting the evaluation's batches; the validation then
# runs its losses over a second such bar before its `[Validation]:` line.
MASKRCNN_EVALUATION_START = re.compile(r"(?<![\w:])Start evaluation on .+ dataset\(\d+ images\)\.")
_MASKRCNN = re.compile(r"(?<![\w:])(\[Validation\]:\s+)?eta: (?:\d+ days?, )?\d+:\d\d:\d\d\s+"
                       r"iter: (\d+)(?=\s)")
# detectron2's inference_on_dataset (facebookresearch/detectron2 detectron2/evaluation/
# evaluator.py 02b5c4e295e9), which DefaultTrainer.test runs on each test dataset (EvalHook's
# periodic evaluations, and its final one in after_train, after IterationTimer's `Total training
# time` since 1dac147 (2021-04): the hooks run in their order; tools/plain_train_net.py's do_test
# after do_train): `Start inference on {len(data_loader)} batches` (before 3a686d8, 2021-04:
# `images`), then, past its warm-up, every 5 s (log_every_n_seconds) `Inference done
# {idx + 1}/{total}. Dataloading: {:.4f} s/iter. Inference: {:.4f} s/iter. Eval: {:.4f} s/iter.
# Total: {:.4f} s/iter. ETA={eta}` (before: `Inference done {}/{}. {:.4f} s / img. ETA={}`):
# the evaluation's batches (0 of them as it starts), their seconds no pace of training.
_DETECTRON2_INFERENCE = re.compile(
    r"(?<![\w:])(?:Start inference on (\d+) (?:batches|images)(?=\s|$)"
    r"|Inference done (\d+)/(\d+)\. )")


def read_metric_logger(body: str, s: Sample) -> str:
    """A MetricLogger line's step and pace (`_METRIC_LOGGER`): the training's, under an
    `Epoch: [N]` header; an evaluation's (`Test:`) its batches done, as an evaluation's bar
    (its meters then read as no training's); and any one's GPU memory (`max mem: …` in MiB).
    The body left for the rest of the grammar (its meters: `loss: …`): without `max mem: …`,
    which is no host memory."""
    m = _METRIC_LOGGER.search(body)
    if m is None:
        return body
    epoch = _METRIC_LOGGER_EPOCH.search(body, 0, m.start())
    if epoch is not None:
        step, steps = int(m.group(1)), int(m.group(2))
        s.iteration = int(epoch.group(1)) * steps + step
        pace = _METRIC_LOGGER_TIME.search(body, m.end())
        if pace is not None:
            s.sec_per_iter = float(pace.group(1))
    elif _METRIC_LOGGER_TEST.search(body, 0, m.start()) is not None:
        s.evaluation_batches = (int(m.group(1)) + 1, int(m.group(2)))  # i counts from 0
    mem = _METRIC_LOGGER_MEM.search(body, m.end())
    if mem is None:
        return body
    s.gpu_mem_bytes = int(mem.group(1)) * MIB
    return body[:mem.start()] + body[mem.end():]


def read_maskrcnn(body: str, s: Sample) -> str:
    """A maskrcnn-benchmark trainer's line (`_MASKRCNN`): the training's gives its iteration
    and its seconds per step; its validation's is an evaluation's summary (its meters are the
    validation set's: the grammar reads no more of it); any one's GPU memory (`max mem: …` in
    MiB). The body left for the rest of the grammar (the training's meters: `loss: …`):
    without `max mem: …`, which is no host memory."""
    m = _MASKRCNN.search(body)
    if m is None:
        return body
    if m.group(1) is not None:
        s.evaluation_done = True
    else:
        s.iteration = int(m.group(2))
        pace = _METRIC_LOGGER_TIME.search(body, m.end())
        if pace is not None:
            s.sec_per_iter = float(pace.group(1))
    mem = _METRIC_LOGGER_MEM.search(body, m.end())
    if mem is None:
        return body
    s.gpu_mem_bytes = int(mem.group(1)) * MIB
    return body[:mem.start()] + body[mem.end():]


def read_detectron2_inference(body: str, s: Sample) -> None:
    """A detectron2 inference line (`_DETECTRON2_INFERENCE`): its batches done (none as it
    starts) and their total, as an evaluation's bar; no iteration, target or pace of
    training."""
    m = _DETECTRON2_INFERENCE.search(body)
    if m is None:
        return
    start, done, total = m.groups()
    s.evaluation_batches = (0, int(start)) if start is not None else (int(done), int(total))
