"""mmengine's finished run (mmdet 3.x and its kin), built from its source's format strings
(open-mmlab/mmengine 25434293): Runner._log_env logs its config before the loop (`Config:`, then
pretty_text: keys sorted, `train_cfg = dict(max_epochs=12, type='EpochBasedTrainLoop', …)`, one
key a line when long); LoggerHook logs `Epoch(train) [E][i/n]  …` every 50 steps, the epoch's
last steps past the last interval unlogged (ignore_last, its default); CheckpointHook logs
`Saving checkpoint at {E} epochs` once an epoch is over (every interval, and at the last epoch:
save_last), then the validation runs. EpochBasedTrainLoop.run ends in the after_train hooks,
which print nothing: the save at the config's max_epochs, after the last epoch's last logged
step, is what tells a finished run from one cut at that step."""

from __future__ import annotations

import pytest
from support.end_marker import assert_the_error_decides, read

from bot.core.training_lines import LineParser

STEPS = 7330
CONFIG = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
          "max_epochs = 12\n"
          "train_cfg = dict(max_epochs=12, type='EpochBasedTrainLoop', val_interval=1)\n")
# a long dict: one key a line
CONFIG_LONG = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
               "train_cfg = dict(\n"
               "    dynamic_intervals=[\n        (\n            280,\n            1,\n        ),\n"
               "    ],\n"
               "    max_epochs=12,\n"
               "    type='EpochBasedTrainLoop',\n"
               "    val_interval=10)\n")

# yapf filling a line with several keys (an unsorted config: its keys as the file wrote them)
CONFIG_FILLED = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
                 "train_cfg = dict(\n"
                 "    type='EpochBasedTrainLoop', max_epochs=12, val_interval=1,\n"
                 "    dynamic_intervals=[(280, 1)])\n")


def _line(epoch: int, step: int, steps: int = STEPS) -> str:
    width = len(str(steps))
    return (f"05/01 19:28:00 - mmengine - INFO - Epoch(train) [{epoch:>2}][{step:>{width}}"
            f"/{steps}]  base_lr: 2.0000e-04 lr: 2.0000e-04  eta: 0:00:12  time: 0.4012  "
            "data_time: 0.0100  memory: 4012  grad_norm: 4.1000  loss: 0.5123\n")


def _epoch(epoch: int, steps: int = STEPS, every: int = 50) -> str:
    """An epoch's lines as LoggerHook logs them (its last steps past an interval unlogged, all
    of a short one's at its end), then CheckpointHook's save and the validation's summary."""
    logged = range(every, steps + 1, every) if steps > every else [steps]
    return ("".join(_line(epoch, i, steps) for i in logged)
            + "05/01 19:28:12 - mmengine - INFO - Exp name: faster-rcnn_r50_fpn_1x_coco\n"
            + _end_of(epoch))


def _end_of(epoch: int) -> str:
    return (f"05/01 19:28:12 - mmengine - INFO - Saving checkpoint at {epoch} epochs\n"
            f"05/01 19:32:00 - mmengine - INFO - Epoch(val) [{epoch}][5000/5000]    "
            "coco/bbox_mAP: 0.3740  coco/bbox_mAP_50: 0.5810  data_time: 0.0010  time: 0.0412\n")


def _cut(log: str) -> str:
    """`log` up to its last epoch's save (a run cut at its last logged step)."""
    return log[:log.rindex("05/01 19:28:12 - mmengine - INFO - Exp name")]


@pytest.mark.parametrize("config", [CONFIG, CONFIG_LONG, CONFIG_FILLED],
                         ids=["one-line", "a-key-a-line", "keys-filling-a-line"])
def test_its_training_line_takes_every_epoch_its_config_said_as_its_target(config):
    parser = LineParser()
    for n, line in enumerate(config.splitlines(), 1):
        parser.parse(line, n)
    sample, _ = parser.parse(_line(3, 7300).rstrip("\n"), 20)
    assert sample is not None
    assert (sample.iteration, sample.target_iter) == (2 * STEPS + 7300, 12 * STEPS)


# the same number in another program's printed arguments: argparse's Namespace repr, a
# Lightning Trainer's arguments, a traceback's source line of either
OTHER_ARGUMENTS = [
    "05/01 07:00:00 - mmengine - INFO - Namespace(config='configs/faster-rcnn.py', "
    "max_epochs=12, work_dir=None)",
    "Namespace(accelerator='gpu', devices=8, max_epochs=12)",
    "Trainer(accelerator='gpu', devices=8, max_epochs=12)",
    "    trainer = pl.Trainer(max_epochs=12, callbacks=[ckpt], logger=dict(name='x'))",
    "max_epochs=12, lr=0.1",
]


@pytest.mark.parametrize("line", OTHER_ARGUMENTS,
                         ids=["namespace-logged", "namespace", "trainer", "traceback", "print"])
def test_a_max_epochs_in_other_printed_arguments_sets_no_target(line):
    """Only mmengine's config dump (pretty_text: `max_epochs = 12` alone, a `dict(…)` key, a
    long dict's key lines) announces its epochs: the same words in another call's arguments
    would give the epoch lines after it (mmengine's, timm's) a target their run never had."""
    parser = LineParser()
    parser.parse(line, 1)
    sample, _ = parser.parse(_line(3, 7300).rstrip("\n"), 2)
    assert sample is not None
    assert (sample.iteration, sample.target_iter) == (2 * STEPS + 7300, None)


def _target_after(lines: str) -> int | None:
    """The target of an `Epoch(train)` line read right after `lines`, each parsed in order."""
    parser = LineParser()
    for n, line in enumerate(lines.splitlines(), 1):
        parser.parse(line, n)
    sample, _ = parser.parse(_line(3, 7300).rstrip("\n"), len(lines.splitlines()) + 1)
    assert sample is not None
    return sample.target_iter


# Python 3.13's traceback shows the whole source of a call written one argument a line (3.11's
# showed its first line): `max_epochs=12,` alone on its line, in no config dump's dict
TRAINER_CALL_313 = ("Traceback (most recent call last):\n"
                    '  File "/work/train.py", line 41, in <module>\n'
                    "    trainer = Trainer(\n"
                    '        accelerator="gpu",\n'
                    "        max_epochs=12,\n"
                    "    )\n")
ONE_ARGUMENT_A_LINE = {
    "python-3.13-traceback": TRAINER_CALL_313,
    "a-namespace-printed-one-a-line": "Namespace(\n    config='x.py',\n    max_epochs=12,\n)\n",
    "the-key-line-alone": "    max_epochs=12,\n",
    # a config dict's key line, but the lines between them not read (a log read sparsely)
    "a-dicts-key-line-not-next": "train_cfg = dict(\n    type='EpochBasedTrainLoop',\n\n"
                                 "    max_epochs=12,\n    val_interval=1)\n",
}


@pytest.mark.parametrize("lines", list(ONE_ARGUMENT_A_LINE.values()),
                         ids=list(ONE_ARGUMENT_A_LINE))
def test_a_max_epochs_key_line_sets_a_target_only_inside_a_config_dumps_dict(lines):
    """A line of keys (`max_epochs=12,`) is mmengine's config only in a dict pretty_text opened
    on the lines before it (`train_cfg = dict(`), its brackets followed line by line."""
    assert _target_after(lines) is None
    in_its_dict = "train_cfg = dict(\n    type='EpochBasedTrainLoop',\n    max_epochs=12,\n)\n"
    assert _target_after(in_its_dict) == 12 * STEPS


def test_a_nested_config_dict_and_a_string_with_brackets_keep_its_key_lines_inside():
    nested = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
              "train_cfg = dict(\n"
              "    loop=dict(\n        name='loop (by epoch[s]',\n        type='x'),\n"
              "    max_epochs=12,\n"
              "    type='EpochBasedTrainLoop')\n")
    assert _target_after(nested) == 12 * STEPS
    # the same key line after the dict's own `)`: no key of it
    closed = nested.replace("    max_epochs=12,\n    type='EpochBasedTrainLoop')\n",
                            "    type='EpochBasedTrainLoop')\nmax_epochs=12,\n")
    assert _target_after(closed) is None


def test_the_save_after_the_last_epoch_ends_a_finished_run():
    d = read(CONFIG + _epoch(11) + _epoch(12))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    # its last 30 steps were never logged: the save once the epoch was over says they ran
    assert (d.metrics.last_iter, d.metrics.target_iter) == (11 * STEPS + 7300, 12 * STEPS)


@pytest.mark.parametrize("log", [
    _cut(CONFIG + _epoch(11) + _epoch(12)),  # at the last epoch's last logged step
    CONFIG + _epoch(10) + _epoch(11),  # after an earlier epoch's save and validation
    CONFIG + _epoch(11) + _epoch(12) + _line(12, 7300),  # a line after the save is no end
    _epoch(11) + _epoch(12),  # no config printed: the epochs' total is unknown
], ids=["cut-at-the-last-logged-step", "an-earlier-epochs-save", "progress-after-the-save",
        "no-config"])
def test_a_run_cut_short_of_the_save_at_its_last_epoch_is_still_running(log):
    assert read(log).class_id == "none"


def test_the_save_before_the_last_epoch_is_no_end_when_epochs_are_shorter_than_the_interval():
    # 30 steps an epoch, logged every 50: each epoch's one line is its last step's
    log = CONFIG + "".join(_epoch(e, steps=30) for e in (10, 11))
    assert read(log).class_id == "none"
    assert read(log + _epoch(12, steps=30)).class_id == "completed"


def test_an_iteration_based_loops_save_at_its_target_ends_it():
    # `Iter(train) [i/N]` names its target; the steps past the last interval are unlogged
    lines = "".join(
        f"05/01 19:28:00 - mmengine - INFO - Iter(train) [{i}/90010]  lr: 2.0000e-04  eta: "
        "0:00:12  time: 0.4012  data_time: 0.0100  memory: 4012  loss: 0.5123\n"
        for i in range(89800, 90001, 50))
    save = "05/01 19:28:12 - mmengine - INFO - Saving checkpoint at 90010 iterations\n"
    assert read(lines).class_id == "none"
    assert read(lines + save).class_id == "completed"


def test_an_error_after_the_last_save_decides():
    assert_the_error_decides(CONFIG + _epoch(11) + _epoch(12))


def test_a_config_dict_the_log_leaves_open_ends_at_the_next_line_of_no_config():
    """A config dump whose long dict the log never closes (its last lines lost) ends at the
    next line that is no config line (pretty_text's lines end in a comma or a bracket): the
    logger's next record, a training line. A key line printed after that (`max_epochs=24,`
    alone) is no key of it: the training lines after it read as progress with the config's 12
    epochs as their target. Before, the dict stayed open to the log's end and that line set
    24."""
    unclosed = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
                "max_epochs = 12\n"
                "model = dict(\n"
                "    type='FasterRCNN',\n")
    assert _target_after(unclosed + _line(1, 50) + "max_epochs=24,\n") == 12 * STEPS
    # its lines read in order up to such a line are still its keys
    assert _target_after(unclosed + "    max_epochs=24,\n") == 24 * STEPS
    # and so are they when something stamped each line with a time of its own
    stamped = "".join(f"2025-05-01 07:00:00 {line}\n" for line in CONFIG_LONG.splitlines()[1:])
    assert _target_after(stamped) == 12 * STEPS


# pretty_text (mmengine 25434293, yapf's pep8 style) of a train_cfg holding a mapping (keys that
# are no identifiers: `'key': value` in `dict({…})`, sorted before max_epochs): a long entry
# splits after its `:`, every entry then a key line and a value line; a short one stays on its
# line, the last entry with no comma
CONFIG_MAPPING_SPLIT = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
                        "train_cfg = dict(\n"
                        "    loss_weights=dict({\n"
                        "        'auxiliary_head.loss_ce':\n"
                        "        0.4,\n"
                        "        'backbone.stages.0.blocks.0.attn.relative_position_bias_table':\n"
                        "        0.0,\n"
                        "        'decode_head.loss_ce':\n"
                        "        1.0\n"
                        "    }),\n"
                        "    max_epochs=12,\n"
                        "    type='EpochBasedTrainLoop',\n"
                        "    val_interval=1)\n")
CONFIG_MAPPING = ("05/01 07:00:00 - mmengine - INFO - Config:\n"
                  "train_cfg = dict(\n"
                  "    loss_weights=dict({\n"
                  "        'auxiliary_head.loss_ce': 0.4,\n"
                  "        'decode_head.loss_ce': 1.0\n"
                  "    }),\n"
                  "    max_epochs=12,\n"
                  "    type='EpochBasedTrainLoop',\n"
                  "    val_interval=1)\n")


@pytest.mark.parametrize("config", [CONFIG_MAPPING_SPLIT, CONFIG_MAPPING],
                         ids=["entries-split-after-the-colon", "entries-on-their-lines"])
def test_a_mapping_in_a_config_dict_keeps_the_key_lines_after_it_inside(config):
    """A mapping's key alone on its line (`'decode_head.loss_ce':`), its value on the next
    with no comma when last (`1.0`), and a last entry on one line with no comma are the config
    dump's lines: the dict stays open, its `max_epochs=12,` line after them is its key, the
    training lines' target every epoch's steps. Before, such a line (ending in no comma or
    bracket) closed the dict: no target."""
    assert _target_after(config) == 12 * STEPS
    assert read(config + _epoch(11) + _epoch(12)).class_id == "completed"
