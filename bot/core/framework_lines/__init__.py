"""The progress lines of named training frameworks' own loggers (pure; no I/O), one module a
family, each with the sources its lines are read from:

- metric_loggers: torchvision's MetricLogger (and the DETR, DeiT and MAE scripts that copy it),
  maskrcnn-benchmark's trainer and its inference's start, and detectron2's inference;
- openmmlab: OpenMMLab's runners (mmcv 1.x, mmengine);
- training_scripts: research repositories' own training loops, Swin Transformer's,
  torchreid's, PaddleOCR's, timm's, BasicSR's, nanoGPT's, StyleGAN's and OpenPCDet's (its
  lines and its tqdm bars);
- json_stats: SlowFast's and pycls's meters' `json_stats:` lines;
- pytorch_ignite: PyTorch-Ignite's ProgressBar and FBResearchLogger, and MONAI's
  StatsHandler (an ignite handler);
- spacy_table: spaCy's training table's rows;
- torchtune: torchtune's recipes' bars and validation;
- composer: MosaicML composer's Trainer's bars and console lines;
- epoch_steps: what the families share, a bar counting one epoch's steps of a run that names
  its step elsewhere, and the target of the epochs a log announced.

Each says, in its own shape, which step of the training it is at, its pace and its GPU memory;
bot.core.training_lines' `LineParser` asks `read_framework_line` first, then reads what is
left of the line with its generic grammar (`key: value` tokens, bars, Hugging Face dicts).
Some name no total on their progress lines but announce it before their loop: the parser
keeps what such lines announced (bot.core.announced_targets' `AnnouncedTargets`) and hands it
to `read_framework_line`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.framework_lines.composer import read_composer_bar, read_composer_console
from bot.core.framework_lines.json_stats import JSON_STATS, json_stats_epoch, read_json_stats
from bot.core.framework_lines.metric_loggers import (
    MASKRCNN_EVALUATION_START,
    read_detectron2_inference,
    read_maskrcnn,
    read_metric_logger,
)
from bot.core.framework_lines.openmmlab import openmmlab_epoch, read_openmmlab
from bot.core.framework_lines.pytorch_ignite import read_ignite, read_monai
from bot.core.framework_lines.spacy_table import (
    SPACY_TABLE_HEADER,
    SPACY_TABLE_MARKER,
    read_spacy_row,
    spacy_table_columns,
)
from bot.core.framework_lines.torchtune import read_torchtune_bar, read_torchtune_validation
from bot.core.framework_lines.training_scripts import (
    is_openpcdet_train_bar,
    openpcdet_epochs_bar_total,
    read_basicsr,
    read_nanogpt,
    read_openpcdet,
    read_openpcdet_bar,
    read_paddleocr,
    read_stylegan,
    read_swin,
    read_timm,
    read_torchreid,
)

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

__all__ = [
    "EVALUATION_MARKERS",
    "MASKRCNN_EVALUATION_START",
    "SPACY_TABLE_HEADER",
    "SPACY_TABLE_MARKER",
    "is_openpcdet_train_bar",
    "json_stats_epoch",
    "openmmlab_epoch",
    "openpcdet_epochs_bar_total",
    "read_framework_line",
    "spacy_table_columns",
]

#: The texts that mark a line opening or summing up a framework's evaluation (maskrcnn-benchmark's
#: `Start evaluation on …` and `[Validation]:` lines, metric_loggers; torchtune's `Validation
#: loss: …`, torchtune), for a locator of such lines (bot.core.metrics, in a series read
#: sparsely: the bars between them are the evaluation's only once the line that opened it was
#: read, and a summary is the run's activity).
EVALUATION_MARKERS = ("Start evaluation on ", "[Validation]: ", "Validation loss: ")

_NONE_ANNOUNCED = AnnouncedTargets()


def read_framework_line(body: str, s: Sample, targets: AnnouncedTargets = _NONE_ANNOUNCED,
                        *, openpcdet_bars: bool = False, spacy_columns: int | None = None) -> str:
    """The figures a named framework's logger puts on a line's message `body` (after its time),
    set on `s`; the body left for the generic grammar (bot.core.training_lines): without the
    figures it must not read again as its own (a GPU memory as a host memory). `targets`: the
    totals the log announced before the loop, for the target of lines that name none;
    `openpcdet_bars`: whether the run showed OpenPCDet's train bar (its `epochs:` bar is then
    OpenPCDet's, else any script's bar, the generic grammar's); `spacy_columns`: the columns of
    the spaCy table whose header the run showed (`spacy_table_columns`), None when none (its
    rows are then no progress)."""
    if spacy_columns is not None and body[:1].isdigit():
        read_spacy_row(body, s, spacy_columns)
    if "eta: " in body:
        body = read_metric_logger(body, s)
        if "iter: " in body:
            body = read_maskrcnn(body, s)
    if ("Epoch" in body or "Iter" in body) and "[" in body:
        read_openmmlab(body, s, targets)
    if "Train: [" in body or "Test: [" in body:
        body = read_swin(body, s)
    elif "Train: " in body and "[" in body:
        read_timm(body, s, targets)
        read_openpcdet(body, s)
    if "epoch: [" in body:
        read_paddleocr(body, s)
        read_torchreid(body, s)
    if "..][epoch:" in body:
        read_basicsr(body, s, targets)
    if body.startswith(("iter ", "step ")):
        read_nanogpt(body, s, targets)
    if body.startswith("tick "):
        read_stylegan(body, s, targets)
    if JSON_STATS in body:
        read_json_stats(body, s)
    if body[:1].isdigit() and "|" in body:
        body = read_torchtune_bar(body, s, targets)
    elif body.startswith("train:") or (openpcdet_bars and body.startswith("epochs:")):
        body = read_openpcdet_bar(body, s, targets)
    elif "%|" in body:
        body = read_composer_bar(body, s, targets)
    elif body[:1] == "[" and "=" in body:
        read_composer_console(body, s, targets)
    if ", Iter: " in body:
        body = read_monai(body, s, targets)
    if "Epoch [" in body:
        body = read_ignite(body, s, targets)
    if "nference " in body:
        read_detectron2_inference(body, s)
    if "Validation loss: " in body:
        read_torchtune_validation(body, s)
    return body
