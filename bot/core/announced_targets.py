"""The totals a training framework announces before its loop (pure; no I/O): the epochs or
iterations its progress lines then count towards without naming them (timm's `Scheduled
epochs: 300.`, BasicSR's `Total epochs: 80; iters: 400000.`, nanoGPT's `max_iters = 5000`,
StyleGAN's `Training for 25000 kimg...`, torchtune's resolved config's `epochs: 3`, mmengine's
and mmcv's config dumps' `max_epochs=12`, mmcv 1.x's runner's `workflow: …, max: 12 epochs`,
composer's hyperparameters' `max_duration: 3ep`, PyTorch-Ignite's `Engine run starting with
max_iters=5000.`).

One row of `_TARGET_ANNOUNCEMENTS` per announcing line; `announced_totals` reads a line's
totals, `ConfigDictLines` and `ResolvedConfigLines` say whether a line is inside the dump some
announce in. bot.core.training_lines' `LineParser` keeps what was announced
(`AnnouncedTargets`) and hands it to bot.core.framework_lines' `read_framework_line`, whose
progress lines take their target from it; bot.core.metrics locates such lines in a series
read sparsely (`ANNOUNCEMENT_MARKERS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

# timm's train.py (huggingface/pytorch-image-models train.py, main(); its lines:
# bot.core.framework_lines): the epochs, logged before the loop (`Scheduled epochs: 300. LR
# stepped per epoch.`, since 2023 `Scheduled epochs: 300.` and the LR line apart).
_SCHEDULED_EPOCHS = re.compile(r"(?<![\w:])Scheduled epochs: (\d+)(?:\.|$)")
# BasicSR's create_train_val_dataloader (XPixelGroup/BasicSR basicsr/train.py; its lines:
# bot.core.framework_lines): the iterations, in its `Training statistics:` record's last line
# before the loop, `\tTotal epochs: {total_epochs}; iters: {total_iters}.`.
_BASICSR_TOTAL = re.compile(r"(?<![\w:])Total epochs: \d+; iters: (\d+)\.")
# nanoGPT's configurator.py (karpathy/nanoGPT configurator.py; its lines:
# bot.core.framework_lines): each override, a `--max_iters=5000` argument's `Overriding:
# max_iters = 5000` and a config file's text after `Overriding config with
# config/train_shakespeare_char.py:` (its `max_iters = 5000` line), in the order they are run
# (the last one printed is the one in force).
_NANOGPT_MAX_ITERS = re.compile(r"^(?:Overriding: )?max_iters = (\d+)\s*(?:#.*)?$")
# StyleGAN2-ADA's and StyleGAN3's training_loop (NVlabs/stylegan2-ada-pytorch training/
# training_loop.py d72cc7d041b4; its ticks: bot.core.framework_lines): `Training for
# {total_kimg} kimg...` before the loop.
_STYLEGAN_TOTAL_KIMG = re.compile(r"^Training for (\d+) kimg\.\.\.$")
# torchtune's recipes (pytorch/torchtune; their bars: bot.core.framework_lines): the epochs,
# in config.log_config's dump before the loop, `epochs: 3` alone on its line, only inside that
# dump (`ResolvedConfigLines`: another program's YAML `epochs: 3` is no run's total of such
# bars).
_TORCHTUNE_EPOCHS = re.compile(r"^epochs: (\d+)$")
# config.log_config's banner (after its logger's prefix, if any: `INFO:torchtune.utils._logging:`)
# and a line of the YAML dump after it, stripped (`key: value`, `key:`, a list's `- item`)
_TORCHTUNE_RESOLVED_CONFIG = re.compile(r"(?:^|:)Running \w+ with resolved config:$")
_YAML_LINE = re.compile(r"^(?:[\w.-]+:(?: .*)?|- .*|-)$")
# mmengine's by-epoch lines name no epoch total (LogProcessor pads the epoch to the width of
# max_epochs, no more): Runner._log_env logs the config before the loop (`Config:` and its
# pretty_text: Config._format_dict's `key=value` and `key=dict(…)`, sorted or as written, as
# Python formatted by yapf (pep8, split_before_expression_after_opening_paren): a top-level
# `max_epochs = 12` alone on its line where the config names one, and `train_cfg =
# dict(max_epochs=12, type='EpochBasedTrainLoop', val_interval=1)`; a long one opened on a line
# of its own, `train_cfg = dict(`, its keys on the lines after it (one a line, or several yapf
# filled into one), each line ending in `,` or the call's `)`, a nested dict alike
# (`    train_cfg=dict(`)): `_MMENGINE_MAX_EPOCHS` on a line of its own,
# `_MMENGINE_MAX_EPOCHS_KEYS` on a line of keys only inside such a dict (`ConfigDictLines`), the
# last one printed (train_cfg's, after the top-level one), the epochs announced
# (`_TARGET_ANNOUNCEMENTS`) for the target of its `Epoch(train)` lines: the epochs' steps, as
# many each as the line's epoch counts. A `max_epochs=12` among another call's arguments
# (argparse's `Namespace(…)`, a `Trainer(…)`'s, on one line or, in a Python 3.13 traceback of
# a call written one argument a line, alone on its line) is no mmengine config's.
_MMENGINE_MAX_EPOCHS = re.compile(
    r"^(?:max_epochs = (?=\d+$)"  # a top-level variable
    # a key of a `dict(…)` call, past its other keys (a tuple's parentheses in their values)
    r"|.*?(?<![\w.])dict\((?:[^()]|\([^()]*\))*?(?<![^(\s])max_epochs=(?=\d+[,)]))(\d+)")
_MMENGINE_MAX_EPOCHS_KEYS = re.compile(r"^(?:\w+=[^=()]*, )*max_epochs=(\d+)(?:, .*)?[,)]$")
# A config dump's dict opened on a line of its own by a top-level assignment (pep8's blanks
# around its `=`, which a keyword argument has none of); the strings on its lines, whose
# brackets are text, and the brackets that open and close its calls, lists and tuples.
_CONFIG_DICT_OPENED = re.compile(r"^[A-Za-z_]\w* = dict\(")
_CONFIG_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CONFIG_BRACKET = re.compile(r"(?<![\w.])dict\(|[(\[{)\]}]")
# How each line of such a dict ends, yapf's lines being split after an opening bracket or a
# comma, or closing brackets: `train_cfg = dict(`, `    max_epochs=12,`, `    ],`,
# `    val_interval=10)`.
_CONFIG_LINE_END = (",", "(", "[", "{", ")", "]", "}")
# A mapping's entry: pretty_text writes a dict with a key that is no identifier as a mapping
# (`dict({'backbone.norm': dict(decay_mult=0.0), …})`, its keys quoted, or a number's str()),
# its last entry with no comma (`    'decode_head.loss_ce': 1.0`, then `})`); yapf (pep8:
# allow_split_before_dict_value) splits its long entries after the `:`, every entry's value
# then on the line after its key (`    'backbone.norm':`, then `    dict(decay_mult=0.0),`).
_CONFIG_MAPPING_ENTRY = re.compile(r"(?:'(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?):(?: |$)")
_CONFIG_MAPPING_KEY_START = "'-0123456789"
# mmcv 1.x's `Epoch [E][i/n]` lines name no epoch total either: its EpochBasedRunner.run logs
# it as it starts (open-mmlab/mmcv 1.x mmcv/runner/epoch_based_runner.py: `Start running, host:
# …, work_dir: …`, then `workflow: %s, max: %d epochs`: `workflow: [('train', 1)], max: 12
# epochs`), the max_epochs in force (the config's `runner = dict(type='EpochBasedRunner',
# max_epochs=12)`, or before runner configs mmdet's top-level `total_epochs = 12`, which
# tools/train.py passed to run() and its pretty_text prints alone on its line):
# `_MMCV_MAX_EPOCHS`, `_MMCV_TOTAL_EPOCHS`, the epochs announced for its lines' target too.
_MMCV_MAX_EPOCHS = re.compile(r"(?<![\w:])workflow: \[.*\], max: (\d+) epochs$")
_MMCV_TOTAL_EPOCHS = re.compile(r"^total_epochs = (\d+)$")


# MosaicML composer's Trainer (mosaicml/composer 6405188805a0; its bars and console lines:
# bot.core.framework_lines): its ProgressBarLogger and ConsoleLogger print the hyperparameters
# logged to them at fit_start, before the loop (composer/loggers/console_logger.py,
# _log_hparams_to_console: `Config:` then `yaml.dump(self.hparams)`, keys sorted): the Trainer's
# own arguments with auto_log_hparams=True (composer/utils/auto_log_hparams.py, extract_hparams:
# a string as passed), or a script's config (llm-foundry's), `max_duration: 3ep` alone on its
# line when the training is measured in epochs (composer's Time string: `ep` its epochs' unit),
# the epochs its per-epoch bars and `[epoch=N]` lines count towards.
_COMPOSER_MAX_DURATION_EPOCHS = re.compile(r"^max_duration: (\d+)ep$")
# PyTorch-Ignite's Engine.run (pytorch/ignite ignite/engine/engine.py de08e799cfb5; MONAI's
# StatsHandler lines: bot.core.framework_lines): a run by iterations (`run(data, max_iters=N)`,
# since 307ac11a8, 2020-11) ends when its iteration reaches max_iters, inside an epoch when
# epoch_length does not divide it. Since 3745b937e (2026-06) its state then keeps no max_epochs
# and its start says the total, `Engine run starting with max_iters={max_iters}.`, or on a
# resumed state `Engine run resuming from iteration {i}, epoch {e} until {max_iters}
# iterations` (before it, only `max_epochs=ceil(max_iters / epoch_length)`, no total of its
# own): the iterations announced.
_IGNITE_MAX_ITERS = re.compile(
    r"Engine run (?:starting with max_iters=(?=\d+\.$)"
    r"|resuming from iteration \d+, epoch \d+ until (?=\d+ iterations$))(\d+)")
#: What an announced total counts: the name of its `AnnouncedTargets` field.
Counted = Literal["epochs", "iterations"]


@dataclass(frozen=True, slots=True)
class AnnouncedTargets:
    """The totals a framework announced, before its training loop, that the loop would run, by
    what they count (None: none announced): the epochs (timm's `Scheduled epochs: 300.`,
    mmengine's config's `max_epochs=12`) and the iterations (BasicSR's `Total epochs: 80; iters:
    400000.`, nanoGPT's `Overriding: max_iters = 5000`). The framework's progress lines name
    their step, not that total: bot.core.framework_lines' `read_framework_line` takes their
    target from here."""

    epochs: int | None = None
    iterations: int | None = None

    def with_total(self, counted: Counted, total: int) -> AnnouncedTargets:
        """These targets with `total` as the one announced for what it counts."""
        return replace(self, **{counted: total})


#: Where a line announces a total: on any line, only inside a config dump's dict opened on a
#: line before it (mmengine's, `ConfigDictLines`), or only inside torchtune's resolved config
#: (`ResolvedConfigLines`).
Where = Literal["any line", "config dict", "resolved config"]

#: The lines in which a framework announces its training's total before its loop: a text the
#: line holds (tested before the pattern), the pattern (group 1: the total), what the total
#: counts and where the line announces it (`Where`). A new framework's announcement is a row
#: here.
_TARGET_ANNOUNCEMENTS: tuple[tuple[str, re.Pattern[str], Counted, Where], ...] = (
    ("Scheduled epochs: ", _SCHEDULED_EPOCHS, "epochs", "any line"),  # timm
    ("Total epochs: ", _BASICSR_TOTAL, "iterations", "any line"),  # BasicSR
    ("max_iters = ", _NANOGPT_MAX_ITERS, "iterations", "any line"),  # nanoGPT
    ("Training for ", _STYLEGAN_TOTAL_KIMG, "iterations", "any line"),  # StyleGAN2-ADA, StyleGAN3
    ("epochs: ", _TORCHTUNE_EPOCHS, "epochs", "resolved config"),  # torchtune's config dump
    ("max_epochs", _MMENGINE_MAX_EPOCHS, "epochs", "any line"),  # mmengine's config
    ("max_epochs", _MMENGINE_MAX_EPOCHS_KEYS, "epochs", "config dict"),  # its long dicts' keys
    ("workflow: ", _MMCV_MAX_EPOCHS, "epochs", "any line"),  # mmcv 1.x's EpochBasedRunner
    ("total_epochs = ", _MMCV_TOTAL_EPOCHS, "epochs", "any line"),  # its older configs
    ("max_duration: ", _COMPOSER_MAX_DURATION_EPOCHS, "epochs", "any line"),  # composer
    ("Engine run ", _IGNITE_MAX_ITERS, "iterations", "any line"),  # PyTorch-Ignite
)

#: The texts that mark a line announcing a total (`_TARGET_ANNOUNCEMENTS`) or opening the dump
#: some announce in (torchtune's banner), for a locator of such lines (bot.core.metrics, in a
#: series read sparsely).
ANNOUNCEMENT_MARKERS = (*dict.fromkeys(marker for marker, *_ in _TARGET_ANNOUNCEMENTS),
                        " with resolved config:")


def announced_totals(body: str, *, inside: frozenset[Where] = frozenset()
                     ) -> Iterator[tuple[Counted, int]]:
    """The totals a line's message `body` announces (`_TARGET_ANNOUNCEMENTS`; `inside`: the
    dumps the line is inside of, besides `any line`), each with what it counts, in the table's
    order and one at a time: one read stands when a later one's number is too long for `int`
    (the line parser then drops the line, as any such line)."""
    for marker, pattern, counted, where in _TARGET_ANNOUNCEMENTS:
        if (marker in body and (where == "any line" or where in inside)
                and (m := pattern.search(body)) is not None):
            yield counted, int(m.group(1))


class ConfigDictLines:
    """Where a log's consecutive lines stand in a config dump's long dict (mmengine's and
    mmcv's Config.pretty_text: `train_cfg = dict(` on a line of its own, its keys on the lines
    after it up to its `)`): `inside` is fed each line's message in order and says whether the
    line is one of that dict's, or of a dict nested in it, right inside a `dict(` (not in a
    list or a tuple of it). A line that does not follow the one fed before (a log read
    sparsely, or backwards) starts afresh: a key line alone is inside no dict. So does a line
    that is no config line (`_CONFIG_LINE_END`: the logger's next record, a training line), so
    a dict the log leaves open (its closing lines lost) ends there, not at the log's end; a
    mapping's entry in it, and the value on the line after its key alone, are config lines
    whatever they end in (`_CONFIG_MAPPING_ENTRY`)."""

    def __init__(self) -> None:
        self._open: list[str] = []  # the brackets open, the innermost last (`dict(`, `(`, …)
        self._next_line: int | None = None
        # the line before was a mapping's key alone (`'backbone.norm':`): this line is its value
        self._value_next = False

    def inside(self, body: str, line_no: int) -> bool:
        """Whether the line `line_no` (its message `body`) is inside a config dump's dict, by
        the brackets the lines before it left open; its own are then counted for the next."""
        config_line = body.endswith(_CONFIG_LINE_END) or self._value_next
        entry = (_CONFIG_MAPPING_ENTRY.match(body) if self._open and not config_line
                 and body[:1] in _CONFIG_MAPPING_KEY_START else None)
        if line_no != self._next_line or not (config_line or entry is not None):
            self._open = []
        self._next_line = line_no + 1
        self._value_next = bool(self._open) and entry is not None and entry.end() == len(body)
        inside = bool(self._open) and self._open[-1] == "dict("
        # every line the parser reads comes here: a substring test leaves the regex the lines
        # that may open a dict
        if self._open or ("dict(" in body and _CONFIG_DICT_OPENED.match(body) is not None):
            for bracket in _CONFIG_BRACKET.findall(_CONFIG_STRING.sub("", body)):
                if bracket[-1] in "([{":
                    self._open.append(bracket)
                elif self._open:
                    self._open.pop()
        return inside


class ResolvedConfigLines:
    """Whether a log's lines are inside torchtune's resolved config (config.log_config's
    `Running FullFinetuneRecipeSingleDevice with resolved config:`, then OmegaConf.to_yaml's
    lines): `inside` is fed the messages of the lines in order (blank ones never are) and says
    whether the line is one of the YAML lines after that banner, up to the first line that is
    none (`key: value`, `key:`, `- item`: the next log line). A series read sparsely feeds the
    banner and the announcing lines it located (bot.core.metrics); the lines between them it
    does not read keep the dump open."""

    def __init__(self) -> None:
        self._open = False

    def inside(self, body: str) -> bool:
        """Whether the line of message `body` is one of the dump's."""
        if " with resolved config:" in body and _TORCHTUNE_RESOLVED_CONFIG.search(body):
            self._open = True
            return False
        self._open = self._open and _YAML_LINE.match(body) is not None
        return self._open
