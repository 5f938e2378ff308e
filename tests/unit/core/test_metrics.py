"""Metric extraction: every log format, timestamps, checkpoint events, bounded series."""

from __future__ import annotations

import calendar
import math
import re

import pytest
from fakes import present
from support.log_times import TIMES_BEFORE_A_BAR

from bot.core.catalogue import Catalogue
from bot.core.catalogue.scanner import normalize_line
from bot.core.detectors import detect_stall
from bot.core.line_time import LogClock, clean_line
from bot.core.logprefix import PROCESS_PREFIX
from bot.core.metrics import MetricSeries
from bot.core.training_lines import LineParser, is_start_up_bar, parse_mem
from bot.core.units import GIB


def epoch(y, mo, d, hh, mm, ss):
    return float(calendar.timegm((y, mo, d, hh, mm, ss)))


def parse(line: str, parser: LineParser | None = None):
    return (parser or LineParser()).parse(line, 7)


# --- formats ------------------------------------------------------------------------------


def test_key_value_tokens_with_units():
    s, event = parse(
        "2025-05-20 19:08:57,123 INFO [rank0] iter=1000/8000 loss=0.734 s/iter=4.51 "
        "rss=45.5GiB gpu_mem=71.0GiB gpu_util=93%"
    )
    assert event is None
    assert s.line_no == 7
    assert (s.iteration, s.target_iter) == (1000, 8000)
    assert s.loss == pytest.approx(0.734)
    assert s.sec_per_iter == pytest.approx(4.51)
    assert s.host_rss_bytes == int(45.5 * GIB)
    assert s.gpu_mem_bytes == int(71.0 * GIB)
    assert s.gpu_util == 93
    assert s.time == pytest.approx(epoch(2025, 5, 20, 19, 8, 57) + 0.123)


def test_key_colon_value_tokens_and_mib_units():
    s, _ = parse("step: 12 | loss: 0.52 | host_rss: 563200 MiB | sec_per_iter: 2.0")
    assert s.iteration == 12
    assert s.loss == pytest.approx(0.52)
    assert s.host_rss_bytes == 563200 * 1024**2
    assert s.sec_per_iter == 2.0


@pytest.mark.parametrize(
    ("text", "expected_bytes"),
    [
        ("mem=72GB", 72 * GIB),  # GB is read as GiB, as Slurm does
        ("rss: 2048MB", 2048 * 1024**2),
        ("host_rss 1.5 TiB", int(1.5 * 1024**4)),
        ("RSS 72.5 GiB", int(72.5 * GIB)),
        ("rss=90", 90 * GIB),  # a bare small number is GiB
    ],
)
def test_memory_units(text, expected_bytes):
    s, _ = parse(f"iter 5 {text}")
    assert s.host_rss_bytes == expected_bytes


def test_value_before_rate_unit_and_it_per_s():
    s, _ = parse("iter 10 | 4.5 s/iter | loss 0.9")
    assert s.sec_per_iter == 4.5
    s, _ = parse("step=10 it/s=2.0")
    assert s.sec_per_iter == pytest.approx(0.5)
    s, _ = parse("step 10 step_time: 450ms")
    assert s.sec_per_iter == pytest.approx(0.45)


def test_megatron_iteration_line():
    s, _ = parse(
        " iteration      100/    8000 | consumed samples:         6400 | elapsed time per "
        "iteration (ms): 4512.3 | learning rate: 1.000000E-04 | global batch size:    64 | "
        "lm loss: 1.234567E+00 | loss scale: 1.0 | grad norm: 0.812 |"
    )
    assert (s.iteration, s.target_iter) == (100, 8000)
    assert s.loss == pytest.approx(1.234567)
    assert s.sec_per_iter == pytest.approx(4.5123)


def test_hf_trainer_dict():
    s, _ = parse("{'loss': 0.52, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1, "
                 "'step': 10}")
    assert s.loss == pytest.approx(0.52)
    assert s.iteration == 10
    s, _ = parse("{'loss': 0.4321, 'grad_norm': 0.9, 'learning_rate': 4e-05, 'epoch': 0.2}")
    assert s.loss == pytest.approx(0.4321)
    assert s.iteration is None


def test_tqdm_bar_takes_the_last_carriage_return_segment():
    s, _ = parse(
        "  2%|▏         | 122/8000 [01:01<40:00, 1.2s/it]\r"
        "  2%|▏         | 123/8000 [01:02<40:00, 1.3s/it]\r"
    )
    assert (s.iteration, s.target_iter) == (123, 8000)
    assert s.sec_per_iter == pytest.approx(1.3)
    s, _ = parse(" 50%|█████     | 50/100 [00:25<00:25,  2.00it/s]")
    assert s.iteration == 50
    assert s.sec_per_iter == pytest.approx(0.5)


@pytest.mark.parametrize("lead", [
    "2025-05-14 16:10:00 ", "[2025-05-14 16:10:00,123] ", "0: 2025-05-14 16:10:00 ",
    "[rank3]: 2025-05-14T16:10:00 ", "\x1b[2m2025-05-14 16:10:00\x1b[0m ",
])
@pytest.mark.parametrize(("draws", "iteration", "target", "batches"), [
    (["Epoch 3:  10%|#  | 100/1000 [00:10<01:30, 10.0it/s]",
      "Epoch 3:  11%|#  | 110/1000 [00:11<01:29, 10.0it/s]"], 3110, None, None),
    (["  2%|▏         | 122/8000 [01:01<40:00, 1.2s/it]",
      "  2%|▏         | 123/8000 [01:02<40:00, 1.3s/it]"], 123, 8000, None),
    (["Validation DataLoader 0:  40%|####      | 4/10 [00:01<00:01,  4.90it/s]",
      "Validation DataLoader 0:  50%|#####     | 5/10 [00:01<00:01,  4.90it/s]"],
     None, None, (5, 10)),
])
def test_a_lines_redraws_keep_the_time_the_line_starts_with(
        lead: str, draws: list[str], iteration: int | None, target: int | None,
        batches: tuple[int, int] | None):
    """A time (and a rank's label) put once before a bar's first draw is the time of the last
    redraw on that line, read by its label as a line of its own would be."""
    s, _ = parse(lead + "".join("\r" + draw for draw in draws) + "\r")
    assert s is not None and (s.iteration, s.target_iter, s.evaluation_batches) == (
        iteration, target, batches)
    assert s.time == pytest.approx(epoch(2025, 5, 14, 16, 10, 0), abs=1)


@pytest.mark.parametrize("line", [
    "Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.33 examples/s]",
    "Map (num_proc=8): 100%|██████████| 1000/1000 [00:01<00:00, 812.33 examples/s]",
    "Filter: 100%|██████████| 1000/1000 [00:00<00:00, 20811.27 examples/s]",
    "Generating train split: 100%|██████████| 36718/36718 [00:00<00:00, 412051.20 examples/s]",
    "Running tokenizer on dataset:   9%|▊         | 280000/2969526 [29:55<4:48:08, 155.57 "
    "examples/s]",
    "Grouping texts in chunks of 1024: 100%|██████████| 4358/4358 [00:02<00:00, 1710.11 "
    "examples/s]",
    "Tokenizing: 100%|██████████| 500/500 [00:02<00:00, 200.10it/s]",
    "Tokenizing train dataset: 100%|██████████| 500/500 [00:02<00:00, 200.10 examples/s]",
    "Downloading (…)lve/main/config.json: 100%|██████████| 665/665 [00:00<00:00, 2.41MB/s]",
    "Fetching 5 files: 100%|██████████| 5/5 [00:12<00:00,  2.43s/it]",
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:06<00:00,  1.70s/it]",
    "Loading safetensors checkpoint shards: 100%|██████████| 4/4 [00:06<00:00,  1.70s/it]",
    "Loading dataset shards: 100%|██████████| 18/18 [00:00<00:00, 52.14it/s]",
    "Loading data: 100%|██████████| 1000/1000 [00:01<00:00, 812.33it/s]",
    "Loading weights: 100%|██████████| 291/291 [00:01<00:00, 190.20it/s]",
    "Loading pipeline components...: 100%|██████████| 7/7 [00:03<00:00,  2.10it/s]",
    "Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00,  5.21it/s]",
    "train: Scanning /data/coco/labels/train2017.cache... 117266 images: 100%|██████████| "
    "117266/117266 [00:00<?, ?it/s]",
])
def test_a_start_up_bar_is_no_training_progress(line: str):
    """Data preparation and loading before training: no iteration, target or pace."""
    s, _ = parse(line)
    assert s is None, s
    assert is_start_up_bar(clean_line(line))


@pytest.mark.parametrize(("line", "iteration", "target"), [
    ("Training:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s]", 450, 1000),
    ("  5%|▌         | 50/1000 [00:25<07:55,  2.00it/s]", 50, 1000),  # HF Trainer's bare bar
    ("Steps:  10%|█         | 100/1000 [01:40<15:00,  1.00s/it, lr=1e-05]", 100, 1000),
    # labelled `Loading` but naming nothing a loader reads: a training loop's own label
    ("Loading:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, loss=0.31]", 450, 1000),
    ("Loading batches:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s]", 450, 1000),
    # a label a loader's bar has too, with a rate and a loss: a training loop's bar
    ("Loading data:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, loss=0.31]", 450, 1000),
    ("Loading model:  45%|████▌     | 450/1000 [01:02<01:16,  1.20s/it, train_loss: 0.31]", 450,
     1000),
    ("Loading data:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, lr=1e-5, loss=nan]", 450,
     1000),
])
def test_a_training_bar_is_progress(line: str, iteration: int, target: int):
    s, _ = parse(line)
    assert (s.iteration, s.target_iter) == (iteration, target)
    assert not is_start_up_bar(clean_line(line))


def _hf_training_with_evaluation(eval_total: int = 400, *, paste: bool = False,
                                 logged_loss: bool = True) -> str:
    """Hugging Face Trainer's ProgressCallback as a file receives it (tqdm 4.x): the training
    bar at the top, redrawn in place; at eval_steps an evaluation's bar of its own
    (`on_prediction_step`: `tqdm(total=len(eval_dataloader), leave=False)` while the training
    bar is open, so at position 1: a newline, the bar, the cursor back up), cleared at its end,
    then the training bar again. `paste`: the escape lost, as in a log copied from a terminal;
    `logged_loss`: the Trainer logged its loss before it evaluated (else eval_steps is below
    logging_steps: no dict before the evaluation)."""
    up = "[A" if paste else "\x1b[A"
    train = "".join(f"\r  0%|          | {i}/1000 [00:{i:02d}<16:40,  1.00it/s]"
                    for i in range(1, 4))
    if logged_loss:
        # the Trainer logs at the step before it evaluates (ProgressCallback.on_log: the dict)
        train += ("\r" + " " * 50 + "\r{'loss': 2.3, 'grad_norm': 1.1, 'learning_rate': 5e-05, "
                  "'epoch': 0.01}\n\r  0%|          | 3/1000 [00:03<16:40,  1.00it/s]")
    evaluation = "".join(f"\n\r 15%|#5        | {i}/{eval_total} [00:0{i % 10}<00:40, "
                         f"9.00it/s]{up}" for i in range(58, 61))
    return (train + evaluation + "\n\r" + " " * 50 + up
            + "\r  0%|          | 4/1000 [00:04<16:36,  1.00it/s]"
            + "\r                                                  \r{'eval_loss': 1.9, "
            "'eval_runtime': 6.5, 'epoch': 0.01}\n\r  0%|          | 4/1000 [00:04<16:36,  "
            "1.00it/s]\n")


@pytest.mark.parametrize("logged_loss", [True, False], ids=["after-loss", "before-loss"])
@pytest.mark.parametrize("form", ["file", "pasted", "lines"])
def test_a_hugging_face_evaluation_bar_during_training_is_no_training_progress(
        form: str, logged_loss: bool):
    """The evaluation's bar, drawn below the training bar between two training steps (its own
    total, no loss), counts the evaluation's batches: the series' iteration, target and pace
    stay the training bar's; also when no loss was logged before it (eval_steps below
    logging_steps): the training bar advancing from step 1 to 3 with no bar below it, redrawn
    in place or on lines of their own (`lines`: a collector that turned carriage returns into
    newlines), is the Trainer's step bar, not a loop's outer bar."""
    text = _hf_training_with_evaluation(paste=form == "pasted", logged_loss=logged_loss)
    series = MetricSeries()
    series.feed_block(text.replace("\r", "\n") if form == "lines" else text)
    assert (series.last_iteration, series.target_iter) == (4, 1000)
    assert series.last_progress is not None and "4/1000" in series.last_progress.text
    assert series.sec_per_iter() == pytest.approx(1.0)
    assert all(s.iteration is None or s.target_iter == 1000 for s in series.samples)


@pytest.mark.parametrize("line", [
    # a bar below another with the training bar's own total: the training's inner bar
    "\r 45%|####5     | 450/1000 [01:02<01:16,  7.20it/s]\x1b[A",
    # ... or one that reports a loss, or names itself (a loop's inner bar, not the Trainer's)
    "\r 45%|####5     | 45/100 [01:02<01:16,  7.20it/s, loss=0.31]\x1b[A",
    "\rbatches:  45%|####5     | 45/100 [01:02<01:16,  7.20it/s]\x1b[A",
])
def test_a_bar_below_the_training_bar_that_is_no_bare_evaluation_bar_counts(line: str):
    parser = LineParser()
    parser.parse("\r  0%|          | 3/1000 [00:03<16:40,  1.00it/s]", 1)
    s, _ = parser.parse(line, 2)
    assert s is not None and s.iteration is not None


def _nested_loop_bars(epochs: int = 3, batches: int = 5, *, leave: bool = False) -> str:
    """A custom loop's bars, `for epoch in tqdm(range(3)): for batch in tqdm(range(5))`, as
    tqdm 4.x writes them to a file: the batches' bar at position 1 (a newline, the bar, the
    cursor back up), bare like the epochs' bar above it, with no loss. `leave`: the batches'
    bar closes as tqdm's default leave=True does, its last count drawn over the epochs' bar
    (`close`: `display(pos=0)`, then a newline), after a draw below that its mininterval
    left one batch behind."""
    out = f"\r  0%|          | 0/{epochs} [00:00<?, ?it/s]"
    for e in range(1, epochs + 1):
        out += "".join(f"\n\r 20%|##        | {b}/{batches} [00:{b:02d}<00:04,  1.00it/s]\x1b[A"
                       for b in range(batches if leave else batches + 1))
        if leave:
            out += f"\r100%|##########| {batches}/{batches} [00:05<00:00,  1.00it/s]"
        out += f"\n\r 33%|###3      | {e}/{epochs} [00:{5 * e:02d}<00:10,  0.20it/s]"
    return out + "\n"


@pytest.mark.parametrize("leave", [False, True], ids=["inner-bar-kept", "inner-bar-closed"])
def test_a_custom_loops_nested_batch_bar_is_training_progress(leave: bool):
    """With no Trainer dict in the log, the bar below the top one is a loop's inner bar: its
    batches are the training's progress (not only the epochs above it); the epochs' bar
    advances only after the batches' bar below it ran, so it is no step bar of its own."""
    parser = LineParser()
    batch_samples = [s for i, raw in enumerate(_nested_loop_bars(leave=leave).split("\n"), 1)
                     if (s := parser.parse(raw, i)[0]) is not None
                     and s.iteration is not None and s.target_iter == 5]
    # a line shows its last draw: a closed bar's, the count its last draw below left behind
    first_epoch = [0, 1, 2, 3, 5] if leave else [0, 1, 2, 3, 4, 5]
    assert [s.iteration for s in batch_samples[:len(first_epoch)]] == first_epoch
    assert len(batch_samples) == 3 * len(first_epoch)


@pytest.mark.parametrize(("line", "iteration"), [
    # Lightning 2.x (TQDMProgressBar.BAR_FORMAT, `Epoch {current_epoch}`, 0-based)
    ("Epoch 3:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, v_num=1, loss=0.310]", 3450),
    # Lightning 1.x (its total: the epoch's training and validation batches)
    ("Epoch 0:  50%|█████     | 5/10 [00:01<00:01,  4.90it/s, loss=0.693, v_num=0]", 5),
    # Lightning 0.5 and 0.6 (unit='batch', the batch's number in the postfix; its epochs
    # counted from 1: `Epoch {epoch + 1}`)
    ("Epoch 11: 100%|██████████| 74/74 [16:04<00:00, 13.04s/batch, batch_nb=48, gpu=0, "
     "loss=1.337, train_loss=1.09, v_nb=1, val_acc=0.347, val_loss=1.34]", 814),
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90batch/s, batch_idx=39, loss=0.693, "
     "v_num=3]", 140),
    # Lightning 0.7 (from 1 too): its postfix's keys sorted, a metric of the training step's
    # before `v_num`
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90it/s, acc=0.912, loss=0.693, v_num=3]",
     140),
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90it/s, loss=0.693, lr=0.001, "
     "split_idx=0, v_num=3]", 140),
    # Lightning 0.8 counted from 1 too, but its bar is 0.9 and 1.x's (`loss`, `v_num`, then the
    # metrics: one epoch ahead), as is 0.7's with no metric; a custom loop's bar with the unit
    # `batch` and no batch's number counts from 0
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90it/s, loss=0.693, v_num=3, acc=0.912]",
     240),
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90it/s, loss=0.693, v_num=3, val_acc=0.9]",
     240),
    ("Epoch 2:  40%|████      | 40/100 [00:08<00:12,  4.90batch/s, loss=0.693]", 240),
])
def test_an_epoch_bar_counts_the_batches_of_the_epochs_and_has_no_target(
        line: str, iteration: int):
    """A bar labelled with its epoch counts that epoch's batches: its iteration is the
    batches of the epochs before it and this one's, and its total is not the run's."""
    s, _ = parse(line)
    assert s is not None and (s.iteration, s.target_iter) == (iteration, None)


def test_an_epoch_bar_after_one_showing_lightning_0_7_counts_its_epochs_from_1():
    """Lightning 0.7's bar shows its version only once the training step's metrics are in its
    postfix: the epoch's draws before them, and the next epochs', count from 1 too."""
    series = MetricSeries()
    series.feed_block(
        "\rEpoch 1:  50%|#####     | 2/4 [00:02<00:02,  1.00it/s, acc=0.500, loss=0.900, v_num=0]"
        "\rEpoch 1: 100%|##########| 4/4 [00:04<00:00,  1.00it/s, acc=0.600, loss=0.800, v_num=0]"
        "\n\rEpoch 2:   0%|          | 0/4 [00:00<?, ?it/s]"
        "\rEpoch 2:  25%|##5       | 1/4 [00:01<00:03,  1.00it/s, loss=0.700, v_num=0]\n")
    assert [s.iteration for s in series.samples] == [4, 5]


def _epoch_of_epochs_bars(numbers: range, epochs: int, batches: int = 4) -> str:
    """A custom loop's bar for each epoch labelled with its number and the loop's number of
    epochs (`tqdm(loader, desc=f"Epoch {number}/{epochs}")`), redrawn in place."""
    return "".join(
        "".join(f"\rEpoch {n}/{epochs}:  {25 * b:3d}%|##        | {b}/{batches} "
                f"[00:0{b}<00:03,  1.00it/s, loss=0.{9 - n}00]" for b in range(batches + 1))
        + "\n" for n in numbers)


@pytest.mark.parametrize("numbers", [range(1, 4), range(3)], ids=["from 1", "from 0"])
def test_an_epoch_of_epochs_bar_counts_the_epochs_batches_to_all_epochs(numbers: range):
    """`Epoch 3/10:` counts one epoch's batches (not the run's target) of the loop's 10 epochs,
    from 1 (`desc=f"Epoch {epoch + 1}/{num_epochs}"`), or from 0 when the log shows an epoch 0:
    the run's target is all the epochs' batches, reached at the last epoch's end."""
    series = MetricSeries()
    series.feed_block(_epoch_of_epochs_bars(numbers, 3))
    iterations = [present(s.iteration) for s in series.samples]
    assert iterations == sorted(iterations) and iterations[-1] == 12
    assert (series.last_iteration, series.target_iter) == (12, 12)
    s, _ = parse("Epoch 3/10:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, loss=0.310]")
    assert s is not None and (s.iteration, s.target_iter) == (2450, 10000)


def test_epoch_of_epochs_bars_numbered_0_to_their_last_epoch_count_all_of_them():
    """`Epoch 0/2` … `Epoch 2/2` (`desc=f"Epoch {epoch}/{num_epochs - 1}"`) are 3 epochs: the
    last one's end is the run's target, not past it."""
    series = MetricSeries()
    series.feed_block(_epoch_of_epochs_bars(range(3), 2))
    iterations = [present(s.iteration) for s in series.samples]
    assert iterations == sorted(iterations)
    assert (series.last_iteration, series.target_iter) == (12, 12)


@pytest.mark.parametrize(("numbers", "true_last"), [(range(2, 4), 16), (range(3, 5), 16)],
                         ids=["from 0", "from 1"])
def test_epoch_of_epochs_bars_cut_before_the_first_epoch_read_no_epoch_ahead(
        numbers: range, true_last: int):
    """A log cut before its loop's first epoch is read from 1: a loop counting from 0, whose
    log shows neither an `Epoch 0/4` nor an `Epoch 4/4` bar (its epochs 2 and 3), reads one
    epoch behind (12 of its 16 batches), never ahead; one counting from 1 reads right."""
    series = MetricSeries()
    series.feed_block(_epoch_of_epochs_bars(numbers, 4))
    assert series.target_iter == 16
    assert series.last_iteration == 4 * (numbers[-1] - 1) + 4 <= true_last


@pytest.mark.parametrize("label", [
    "Epoch 3/10 [train]", "Epoch 3/10 train", "Epoch 3/10 - training", "Epoch 3/10 (Train)"])
def test_an_epoch_bar_naming_the_training_phase_counts_the_epochs_batches(label: str):
    """A loop naming the phase after the epoch (`desc=f"Epoch {epoch + 1}/{epochs} [train]"`)
    counts its training batches over all the epochs, as `Epoch 3/10:` does."""
    s, _ = parse(f"{label}:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s, loss=0.310]")
    assert s is not None and (s.iteration, s.target_iter) == (2450, 10000)
    s, _ = parse(f"{label.replace('/10', '')}:  45%|████▌     | 450/1000 [01:02<01:16,  7.20it/s]")
    assert s is not None and (s.iteration, s.target_iter) == (3450, None)


@pytest.mark.parametrize("phase", ["[val]", "[valid]", "[eval]", "[test]", "validation", "(Val)"])
def test_an_epoch_bar_naming_an_evaluation_phase_is_no_training_progress(phase: str):
    """`Epoch 3/10 [val]:` counts the validation's batches: activity, no iteration, target or
    pace, so the training's bars of the epochs around it go on to the run's target."""
    series = MetricSeries()
    series.feed_block("".join(
        f"\rEpoch {n}/2 [train]:  {25 * b:3d}%|##        | {b}/4 [00:0{b}<00:03,  1.00it/s, "
        f"loss=0.{9 - n}00]" for n in (1, 2) for b in range(5)) + "\n")
    s, _ = parse(f"Epoch 1/2 {phase}:  50%|#####     | 5/10 [00:01<00:01,  9.00it/s, loss=0.7]")
    assert s is not None and not s.is_metric and s.evaluation_batches == (5, 10), s
    series.feed_block(f"Epoch 2/2 {phase}:  50%|#####     | 5/10 [00:01<00:01,  9.00it/s]\n")
    assert (series.last_iteration, series.target_iter) == (8, 8)


def _lightning_fit(epochs: int = 2, batches: int = 4, val_batches: int = 2) -> str:
    """Lightning 2.x's TQDMProgressBar as a file receives it: each epoch's bar (`Epoch N`,
    reset to the epoch's batches, redrawn in place) and, at the epoch's end, the validation's
    bar below it (`Validation DataLoader 0`, position 1, leave=False: cleared at its end)."""
    out = ""
    for e in range(epochs):
        out += "".join(f"\rEpoch {e}:  {25 * b:3d}%|##        | {b}/{batches} [00:0{b}<00:03,  "
                       f"1.00it/s, v_num=0, train_loss=0.{9 - e}00]" for b in range(batches + 1))
        out += "".join(f"\n\rValidation DataLoader 0:  50%|#####     | {b}/{val_batches} "
                       "[00:00<00:00,  9.00it/s]\x1b[A" for b in range(val_batches + 1))
        out += "\n\r" + " " * 60 + "\x1b[A"
    return out + "\n"


def test_lightnings_epoch_bars_count_on_across_epochs_and_validation_is_no_progress():
    """An epoch's bar at its total is no target reached, the next epoch's bar goes on from the
    batches before it (no step back to 0), and the validation's bar counts no training."""
    series = MetricSeries()
    series.feed_block(_lightning_fit())
    assert (series.last_iteration, series.target_iter) == (8, None)
    assert series.last_progress is not None and "Epoch 1" in series.last_progress.text
    assert not any("Validation" in s.text for s in series.samples)


@pytest.mark.parametrize(("line", "batches"), [
    # Lightning 2.x: a validation bar below the epoch's, its test and predict bars
    ("\rValidation DataLoader 0:  50%|█████     | 5/10 [00:01<00:01,  4.90it/s]\x1b[A", (5, 10)),
    ("Testing DataLoader 0: 100%|██████████| 10/10 [00:01<00:00,  9.80it/s]", (10, 10)),
    ("Predicting DataLoader 0:  30%|███       | 3/10 [00:00<00:01,  9.80it/s]", (3, 10)),
    # Lightning 1.x and 0.x: `Validating` and its sanity check before the first epoch (a
    # start-up bar: not even an evaluation's activity)
    ("\rValidating:  50%|█████     | 5/10 [00:01<00:01,  4.90it/s]\x1b[A", (5, 10)),
    ("Validation sanity check:  50%|█████     | 1/2 [00:00<00:00,  5.21it/s]", None),
])
def test_an_evaluation_pass_bar_is_no_training_progress(
        line: str, batches: tuple[int, int] | None):
    """An evaluation's bar gives no iteration, target or pace of training, only its batches
    (activity: `detect_stall` counts idleness from its last advance)."""
    s, _ = parse(line)
    if batches is None:
        assert s is None, s
    else:
        assert s is not None and not s.is_metric, s
        assert s.evaluation_batches == batches


@pytest.mark.parametrize("time", TIMES_BEFORE_A_BAR)
@pytest.mark.parametrize(("bar", "batches"), [
    ("Validation DataLoader 0:  50%|#####     | 5/10 [00:01<00:01,  4.90it/s]", (5, 10)),
    ("Validating:  50%|█████     | 5/10 [00:01<00:01,  4.90it/s]", (5, 10)),
    ("Testing DataLoader 0: 100%|██████████| 10/10 [00:01<00:00,  9.80it/s]", (10, 10)),
    ("Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.33 examples/s]", None),
])
def test_a_bar_after_the_lines_time_is_read_by_its_label(
        time: str, bar: str, batches: tuple[int, int] | None):
    """A time at the start of the line (and a rank's prefix before or after it) is no part of
    the bar's label: an evaluation's bar after it is activity, a start-up bar no sample."""
    s, _ = parse(time + bar)
    if batches is None:
        assert s is None, s
    else:
        assert s is not None and not s.is_metric and s.evaluation_batches == batches, s
        assert s.time == pytest.approx(epoch(2025, 5, 14, 16, 10, 0), abs=1)


@pytest.mark.parametrize("time", TIMES_BEFORE_A_BAR)
def test_an_epoch_bar_after_the_lines_time_keeps_the_time_and_counts_the_epochs(time: str):
    s, _ = parse(time + "Epoch 3:  45%|####5     | 450/1000 [01:02<01:16,  7.20it/s, v_num=0]")
    assert s is not None and (s.iteration, s.target_iter) == (3450, None)
    assert s.time == pytest.approx(epoch(2025, 5, 14, 16, 10, 0), abs=1)


def test_nan_loss_is_kept_as_nan():
    s, _ = parse("iter=5 loss=nan")
    assert math.isnan(s.loss)


def test_rank_prefix_and_ansi_codes_are_removed():
    s, _ = parse("[rank3]: \x1b[32m2025-05-20 10:00:00\x1b[0m iter=3 loss=1.0")
    assert s.iteration == 3
    assert s.time == epoch(2025, 5, 20, 10, 0, 0)


@pytest.mark.parametrize("line", [
    "(RayTrainWorker pid=4567, ip=10.0.0.3) 2025-05-20 10:00:00 iter=3 loss=1.0",
    "(TorchTrainer pid=123) [2025-05-20 10:00:00] iter=3 loss=1.0",
    "[pod/trainer-0/pytorch] 2025-05-20 10:00:00 iter=3 loss=1.0",
    "[task 2025-05-20T10:00:00.000Z] iter=3 loss=1.0",
    "[2025-05-20 10:00:00,000][rank1]: iter=3 loss=1.0",
    "2025-05-20T10:00:00.1234567Z [rank1]: iter=3 loss=1.0",
    "0: [task 2025-05-20T10:00:00Z] 2025-05-20 12:00:00 iter=3 loss=1.0",  # the first time
])
def test_a_runner_prefix_keeps_the_time_and_the_progress(line: str):
    # Ray's, kubectl's and a task runner's prefixes come before the log's own time; a runner's
    # and torchrun's dated prefix is the line's time
    s, _ = parse(line)
    assert s.iteration == 3
    assert s.time == pytest.approx(epoch(2025, 5, 20, 10, 0, 0), abs=1)
    assert LogClock().parse_line(line) == pytest.approx(epoch(2025, 5, 20, 10, 0, 0), abs=1)


#: Each kind of prefix a launcher, a process runner, a CI runner or a terminal puts before a
#: log line (bot.core.logprefix).
PREFIXES = [
    "[rank3]:", "[rank3]: ", "[default0]:", "[default0]:[rank0]: ", "[RANK 3] ",  # torchrun
    "rank3: ",  # accelerate, DeepSpeed
    "[1,0]<stderr>:", "[1,12]<stdout>: ",  # mpirun --tag-output
    "3: ", "  12: ",  # srun --label
    "[2024-05-01 19:38:57,123][rank1]: ",  # torchrun's dated prefix
    "(RayTrainWorker pid=4567, ip=10.0.0.3) ", "(raylet) ",  # Ray
    "#033[36m(WorkerDict pid=3175143, ip=10.49.193.113)#033[0m ",  # Ray via syslog
    "[pod/trainer-0/pytorch] ", "[pod/trainer-0/pytorch] 11: ",  # kubectl --prefix
    "[task 2025-01-21T16:30:37.188Z] ", "2025-01-21T16:30:37.1234567Z ",  # CI runners
    "\x1b[32m[rank0]:\x1b[0m ", "\x1b[36m(TaskRunner pid=2)\x1b[0m ",  # ANSI colour
]
FAILURES = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "MemoryError"]  # a catalogue pattern anchored at the message (`^MemoryError`)


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_metric_parser_and_the_scanner_read_a_line_alike_after_each_prefix(
        catalogue, prefix: str):
    """One definition (bot.core.logprefix) for both readers of a line: the same message, the
    same failure class, the same progress, even for a recipe pattern anchored at the message."""
    for failure in FAILURES:
        line = prefix + failure
        assert clean_line(line) == normalize_line(line) == failure
        assert [m.class_id for m in catalogue.scan([line])] == [
            m.class_id for m in catalogue.scan([failure])] != []
    recipe = LineParser([r"^step (?P<iteration>\d+) L=(?P<loss>[\d.]+)$"])
    for progress, parser in (("iter=3 loss=1.5", None), ("step 3 L=1.5", recipe)):
        s, _ = parse(prefix + progress, parser)
        assert s is not None and (s.iteration, s.loss) == (3, 1.5), progress


@pytest.mark.parametrize("prefix", ["(RayTrainWorker pid=4567, ip=10.0.0.3) ", "(raylet) ",
                                    "[pod/trainer-0/pytorch] "])
def test_the_process_prefixes_are_logprefix_s(prefix: str):
    assert re.fullmatch(PROCESS_PREFIX, prefix)


def test_lines_without_metrics_give_no_sample():
    assert parse("Traceback (most recent call last):") == (None, None)
    assert parse("") == (None, None)
    # A loss scale is not a loss; a path with step_ in it is not an iteration.
    s, _ = parse("loss scale: 65536.0 | /ckpt/global_step_10")
    assert s is None


def test_recipe_regex_with_named_groups():
    parser = LineParser([r"EPOCH \d+ BATCH (?P<iteration>\d+) L=(?P<loss>[\d.]+) "
                         r"MEM=(?P<rss>[\d.]+\s*[GM]B)"])
    s, _ = parser.parse("EPOCH 1 BATCH 77 L=0.33 MEM=12.5 GB", 1)
    assert s is not None
    assert (s.iteration, s.loss, s.host_rss_bytes) == (77, 0.33, int(12.5 * GIB))


def test_recipe_regex_with_unknown_group_is_rejected():
    with pytest.raises(ValueError, match="unknown group"):
        LineParser([r"(?P<iter>\d+)"])


def test_parse_mem_bare_large_numbers_are_bytes():
    assert parse_mem("4294967296") == 4 * GIB


# --- timestamps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "2025-05-20T19:08:57 iter=1",
        "2025-05-20 19:08:57,000 iter=1",
        "[2025-05-20 19:08:57] iter=1",
        "2025-05-20 19:08:57.000 | INFO | iter: 1",
    ],
)
def test_iso_timestamps(line):
    s, _ = parse(line)
    assert s.time == epoch(2025, 5, 20, 19, 8, 57)


@pytest.mark.parametrize("line", [
    "2025-05-20T21:08:57+02:00 iter=1",
    "2025-05-20 14:08:57,000-0500 iter=1",
    "[2025-05-21T00:38:57.000+05:30] iter=1",
    "2025-05-20T19:08:57Z iter=1",
    "2025-05-20T19:08:57.000000+00:00 iter=1",
])
def test_an_iso_timestamps_utc_offset_is_read(line):
    s, _ = parse(line)
    assert s.time == epoch(2025, 5, 20, 19, 8, 57)


@pytest.mark.parametrize("line", [
    "2025-05-20 14:08:57 -0500 iter=1",  # strftime's `%Y-%m-%d %H:%M:%S %z`, git's iso date
    "2025-05-20 14:08:57,000 -05:00 iter=1",
    "[2025-05-20 14:08:57 -0500] iter=1",
    "2025-05-20 19:08:57 +0000 iter=1",
    "2025-05-20 14:08:57.000000000 -0500 EST iter=1",  # Go's time.Time.String()
    "2025-05-20 19:08:57 +0000 UTC iter=1",
    "2025-05-21 00:38:57 +0530 IST iter=1",
])
def test_a_utc_offset_after_a_space_is_read(line):
    s, _ = parse(line)
    assert (s.time, s.iteration) == (epoch(2025, 5, 20, 19, 8, 57), 1)


@pytest.mark.parametrize(("line", "iteration"), [
    ("2025-05-20 19:08:57 -1 iter=1", 1),
    ("2025-05-20 19:08:57 -0.52 iter=1", 1),
    ("2025-05-20 19:08:57 -0052 iter=1", 1),  # no zone is 52 minutes off UTC
    ("2025-05-20 19:08:57 +1500 iter=1", 1),  # past +14:00
    ("2025-05-20 19:08:57 -05001 iter=1", 1),
    ("2025-05-20 19:08:57 -0500.5 iter=1", 1),
    ("2025-05-20 19:08:57 -05:00:12 iter=1", 1),
    ("2025-05-20 19:08:57 +100 iter=1", 1),
])
def test_a_number_after_a_time_and_a_space_is_no_utc_offset(line, iteration):
    """Only 4 digits or HH:MM that a zone may be off UTC, then a blank, are an offset: the
    line's time is read as UTC."""
    s, _ = parse(line)
    assert (s.time, s.iteration) == (epoch(2025, 5, 20, 19, 8, 57), iteration)


@pytest.mark.parametrize("line", [
    "2025-05-20 12:08:57 PDT iter=1",  # strftime's `%Y-%m-%d %H:%M:%S %Z`
    "2025-05-20 21:08:57,000 CEST iter=1",
    "[2025-05-21 04:08:57 JST] iter=1",
    "2025-05-20 19:08:57 UTC iter=1",
])
def test_a_zone_name_alone_that_names_one_zone_is_its_offset(line):
    s, _ = parse(line)
    assert (s.time, s.iteration) == (epoch(2025, 5, 20, 19, 8, 57), 1)


@pytest.mark.parametrize("line", ["2025-05-20 19:08:57 CST iter=1",  # US Central? China? Cuba?
                                  "2025-05-20 19:08:57 IST iter=1",
                                  "2025-05-20 19:08:57 INFO iter=1"])  # no zone's name
def test_a_zone_name_several_zones_print_or_another_word_is_read_as_written(line):
    s, _ = parse(line)
    assert (s.time, s.iteration) == (epoch(2025, 5, 20, 19, 8, 57), 1)


@pytest.mark.parametrize(("before", "after"), [("PST", "PDT"), ("CET", "CEST"), ("CST", "CDT")])
def test_a_change_of_daylight_time_named_by_its_zones_keeps_the_pace_and_is_no_stall(
        before, after):
    """`%Z` logs across a change to daylight time: 01:59 PST then 03:01 PDT are 2 minutes
    apart, not an hour's stop; CST/CDT, whose offset is not known, alike."""
    series = MetricSeries()
    series.feed_block(f"2025-03-09 01:57:00 {before} iter=9 loss=1.0\n"
                      f"2025-03-09 01:59:00 {before} iter=10 loss=1.0\n"
                      f"2025-03-09 03:01:00 {after} iter=11 loss=1.0\n")
    assert series.sec_per_iter() == pytest.approx(120)
    last = present(present(series.last_progress).time)
    assert detect_stall(series, last + 200) is None


def test_a_bars_label_starts_after_a_zone_name():
    line = "2025-05-20 14:08:57 PST Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.33 " \
        "examples/s]"
    s, _ = parse(line)
    assert s is None  # a start-up bar: no iteration, target or pace


def test_a_bars_label_starts_after_a_spaced_utc_offset_and_zone_name():
    line = "2025-05-20 14:08:57 -0500 EST Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.33 " \
        "examples/s]"
    s, _ = parse(line)
    assert s is None  # a start-up bar: no iteration, target or pace


def test_times_across_a_change_of_utc_offset_keep_their_pace():
    """A run over a daylight-saving change (`+01:00` to `+02:00`) logs an hour's jump in its
    clock: 2 minutes between the lines, no hour-long stop; the glog and bare times after them
    are in their zone."""
    series = MetricSeries()
    series.feed_block("2025-03-30T01:59:00+01:00 iter=10 loss=1.0\n"
                      "2025-03-30T03:01:00+02:00 iter=11 loss=1.0\n"
                      "[W0330 03:02:00.000000 socket.cpp:663] slow\n"
                      "03:03:00 iter=12 loss=1.0\n")
    assert [s.time for s in series.samples] == [
        epoch(2025, 3, 30, 0, 59, 0), epoch(2025, 3, 30, 1, 1, 0), epoch(2025, 3, 30, 1, 3, 0)]
    assert series.sec_per_iter() == pytest.approx(120)
    clock = LogClock()
    clock.parse("2025-03-30T03:01:00+02:00 iter=11 loss=1.0")
    assert clock.parse("[W0330 03:02:00.000000 socket.cpp:663]") == epoch(2025, 3, 30, 1, 2, 0)


def test_bare_hms_rolls_over_midnight_monotonically():
    clock = LogClock()
    times = [present(clock.parse(t))
             for t in ("23:59:50 a", "23:59:58 b", "00:00:03 c", "00:10:00 d")]
    assert times == sorted(times)
    assert times[2] - times[1] == 5


def test_bare_hms_after_a_dated_line_uses_that_date_and_rolls_over():
    clock = LogClock()
    first = present(clock.parse("2025-05-20 23:59:00 start"))
    later = present(clock.parse("00:01:00 after midnight"))
    assert later - first == 120


def test_small_backwards_jitter_is_not_a_rollover():
    clock = LogClock()
    a = present(clock.parse("10:00:05 rank0"))
    b = present(clock.parse("10:00:04 rank1"))
    assert a - b == 1


def test_glog_timestamp_uses_the_year_of_the_dated_lines():
    clock = LogClock()
    clock.parse("2025-05-14 19:08:57 iter")
    t = clock.parse("[E0514 19:38:57.123456 ProcessGroupNCCL.cpp:616] Watchdog")
    assert t == pytest.approx(epoch(2025, 5, 14, 19, 38, 57) + 0.123456)


@pytest.mark.parametrize(("dated", "glog", "after_s"), [
    # the watchdog's abort half an hour after the last progress line, past New Year's midnight
    ("2025-12-31 23:50:00 iter=10 loss=1.0", "[E0101 00:20:00.000000 ProcessGroupNCCL.cpp:616]",
     1800),
    # a line printed just before midnight, read after the first dated line of the new year
    ("2026-01-01 00:00:10 iter=10 loss=1.0", "[W1231 23:59:50.000000 socket.cpp:663]", -20),
])
def test_glog_timestamp_across_new_year_is_in_the_nearest_year(dated, glog, after_s):
    clock = LogClock()
    first = present(clock.parse(dated))
    assert present(clock.parse(glog)) - first == pytest.approx(after_s)


# --- checkpoint events --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind", "iteration", "duration"),
    [
        ("Saving checkpoint at iteration 1000", "start", 1000, None),
        ("saving checkpoint to /scratch/ckpt/iter_000002000", "start", 2000, None),
        ("[DCP] saving state dict to checkpoints/iter_000001000/model", "start", 1000, None),
        ("Saving model checkpoint to /out/checkpoint-1200", "start", 1200, None),
        ("dcp.save started for step 3000", "start", 3000, None),
        ("Saved checkpoint /scratch/ckpt/iter_000001000", "end", 1000, None),
        ("checkpoint saved in 47.2s", "end", None, 47.2),
        ("  successfully saved checkpoint from iteration    1000 to /ckpt [ t 1/4 ]", "end",
         1000, None),
        ("dcp.save finished in 3500 ms", "end", None, 3.5),
    ],
)
def test_checkpoint_save_events(line, kind, iteration, duration):
    sample, event = parse(line)
    assert event is not None and event.kind == kind
    assert event.iteration == iteration
    assert event.duration_s == (pytest.approx(duration) if duration else None)
    # "at iteration 1000" on a save line is not training progress
    assert sample is None or sample.iteration is None


@pytest.mark.parametrize(
    "line",
    ["loading checkpoint from latest_checkpoint.txt done",
     "resuming from checkpoint iter_000001000, saved by job 88016",
     "looking for the latest checkpoint in /scratch/ckpt"],
)
def test_loading_a_checkpoint_is_not_a_save(line):
    assert parse(line)[1] is None


def test_save_windows_merge_the_lines_of_one_save_and_stay_open_without_end():
    series = MetricSeries()
    series.feed_lines([
        "2025-05-12 11:15:00 iter=999 loss=0.8",
        "2025-05-12 11:15:03 Saving checkpoint at iteration 1000",
        "2025-05-12 11:15:24 [DCP] writing /ckpt/iter_000001000/model",
    ])
    (window,) = series.save_windows()
    assert (window.start_line, window.end_line, window.iteration) == (2, None, 1000)
    assert series.open_save() == window


# --- the series ---------------------------------------------------------------------------


def progress_lines(
    n: int, *, start_iter: int = 1, rss_spike_at: int | None = None, step_s: int = 5
) -> list[str]:
    out = []
    for k in range(n):
        it = start_iter + k
        rss = 400.0 if it == rss_spike_at else 50.0
        hh, rem = divmod(it * step_s, 3600)
        out.append(f"2025-05-20 {hh % 24:02d}:{rem // 60:02d}:{rem % 60:02d} iter={it} "
                   f"loss=0.5 rss={rss}GiB")
    return out


def test_series_tracks_latest_progress_target_and_step_time():
    series = MetricSeries()
    series.feed_lines(["iter 1/800 loss 1.0"] + progress_lines(20, start_iter=2))
    assert series.last_iteration == 21
    assert series.target_iter == 800
    assert present(series.last_progress).line_no == 21
    assert series.sec_per_iter() == pytest.approx(5.0)
    assert series.last_loss == 0.5


def test_memory_only_line_inherits_the_current_iteration():
    series = MetricSeries()
    series.feed_lines(["iter=64 loss=1.0", "[memory] host RSS: 72.0 GiB"])
    assert series.rss_points()[-1].iteration == 64
    assert present(series.last_progress).line_no == 1


def test_feed_block_matches_line_by_line_feeding():
    lines = progress_lines(300) + ["Saving checkpoint at iteration 300", "checkpoint saved in 4s"]
    a, b = MetricSeries(), MetricSeries()
    a.feed_lines(lines)
    b.feed_block("\n".join(lines[:150]) + "\n", 1)
    b.feed_block("\n".join(lines[150:]), 151)  # no final newline
    assert [(s.line_no, s.iteration, s.host_rss_bytes) for s in a.samples] == [
        (s.line_no, s.iteration, s.host_rss_bytes) for s in b.samples
    ]
    assert list(a.events) == list(b.events)
    assert b.lines_seen == len(lines)


def test_compaction_bounds_memory_and_keeps_latest_and_extremes():
    series = MetricSeries(max_samples=64)
    series.feed_lines(progress_lines(5000, rss_spike_at=1234))
    assert len(series.samples) <= 65
    assert series.stride > 1
    assert series.samples[-1].iteration == 5000
    assert max(s.host_rss_bytes or 0 for s in series.samples) == 400 * GIB  # the spike survived
    assert series.last_iteration == 5000


def test_sparse_block_keeps_exact_latest_iteration_time_and_every_checkpoint_event():
    lines = progress_lines(20000, step_s=1)
    lines[9000] = "2025-05-20 02:30:01 Saving checkpoint at iteration 9000"
    lines[9001] = "2025-05-20 02:30:02 checkpoint saved in 1.0s"
    series = MetricSeries(max_samples=64)
    series.feed_block("\n".join(lines) + "\n", 1)
    assert len(series.samples) <= 65
    assert series.last_iteration == 20000
    assert present(series.last_progress).line_no == 20000
    assert [(e.kind, e.line_no) for e in series.events] == [("start", 9001), ("end", 9002)]
    assert series.last_time == series.samples[-1].time


# --- numbers no machine prints ---------------------------------------------------------------

HUGE = "9" * 400


@pytest.mark.parametrize("line", [
    f"2025-05-20 19:08:57 INFO iter: 1004/8000 | loss: 0.6 | 4.50 s/iter | rss: {HUGE} GiB",
    f"2025-05-20 19:08:57 INFO iter: {'9' * 5000}/8000 | loss: 0.6 | rss: 4 GiB",
    f"2025-05-20 19:08:57 INFO iter: 1004/8000 | loss: 0.6 | {HUGE} s/iter | rss: 4 GiB",
    f"2025-05-20 19:08:57 INFO iteration {'9' * 5000}/ 8000 | lm loss: 0.6 |",
    f"2025-05-20 19:08:57 INFO saved checkpoint at iteration {'9' * 5000}",
    f"2025-05-20 19:08:57 INFO saved checkpoint at iteration {HUGE}",
    f"2025-05-20 19:08:57 INFO iter: {HUGE}/{HUGE} | loss: 0.6",
])
def test_a_number_with_hundreds_of_digits_is_not_a_metric(line):
    parser = LineParser()
    s, event = parser.parse(line, 7)  # no OverflowError / ValueError
    for value in (s.host_rss_bytes, s.gpu_mem_bytes, s.sec_per_iter) if s else ():
        assert value is None or math.isfinite(value) and value < 2**64
    if s is not None and s.iteration is not None:
        assert s.iteration < 10**18
    parser.parse_event(line, 7)
    assert parse_mem("4", "GiB") == 4 * GIB


def test_a_log_with_absurd_numbers_still_diagnoses():
    series = MetricSeries()
    for i, line in enumerate([
        "2025-05-20 19:08:57 INFO iter: 1000/8000 | loss: 0.6 | 4.50 s/iter | rss: 40 GiB",
        f"2025-05-20 19:09:01 INFO iter: 1001/8000 | loss: 0.6 | 4.50 s/iter | rss: {HUGE} GiB",
        f"2025-05-20 19:09:05 INFO iter: 1002/8000 | loss: 0.6 | {HUGE} s/iter | rss: 41 GiB",
    ], start=1):
        series.feed_line(line, i)
    assert series.last_iteration == 1002
    assert series.sec_per_iter() == pytest.approx(4.5)
    assert [x.host_rss_bytes for x in series.rss_points()] == [40 * GIB, 41 * GIB]


def test_paddles_slashed_date_is_a_log_time():
    # PaddleOCR's logger: `[%(asctime)s] ppocr INFO: …`, datefmt `%Y/%m/%d %H:%M:%S`
    line = "[2024/10/18 17:05:14] ppocr INFO: epoch: [1/100], global_step: 10, loss: 1.2"
    assert LogClock().parse_line(line) == epoch(2024, 10, 18, 17, 5, 14)
    assert LogClock().parse_line("2024/10-18 17:05:14 mixed separators") is None


def test_mmengines_month_and_day_take_the_year_of_the_dated_lines():
    # mmengine's MMFormatter: `%(asctime)s - %(name)s - …`, datefmt `%m/%d %H:%M:%S`
    clock = LogClock()
    clock.parse("2025-05-14 19:08:57 start")
    line = "05/14 19:38:57 - mmengine - INFO - Epoch(train)  [1][ 100/7330]  lr: 1.0000e-02"
    assert clock.parse_line(line) == epoch(2025, 5, 14, 19, 38, 57)
    # with no dated line before, its time of day still measures the pace
    bare = LogClock()
    first = present(bare.parse_line("05/14 23:59:00 - mmengine - INFO - Epoch(train) [1][9/9]"))
    assert present(bare.parse_line("05/15 00:01:00 - mmengine - INFO - x")) - first == 120


@pytest.mark.parametrize("lines", [
    [f"[2024/10/18 17:{m:02d}:14] ppocr INFO: epoch: [1/100], global_step: {10 * m}, "
     f"lr: 0.001000, loss: 1.2, avg_batch_cost: 0.50000 s" for m in range(1, 6)],
    [f"10/18 17:{m:02d}:14 - mmengine - INFO - Epoch(train)  [1][{100 * m:4d}/7330]  "
     f"lr: 1.0000e-02  eta: 1:00:00  time: 0.0500  data_time: 0.0100  loss: 1.2"
     for m in range(1, 6)],
], ids=["paddleocr", "mmengine"])
def test_a_slashed_log_times_its_progress(lines):
    # a minute between progress lines: the stall threshold scales with it, not with the
    # printed per-batch cost alone
    series = MetricSeries()
    series.feed_lines(lines)
    assert series.progress_interval_s() == pytest.approx(60)


# Lightning's RichProgressBar as a file receives its tasks' lines (rich's Progress, its
# columns one blank apart: the description padded to `Validation`'s length, a bar of `━`
# with `╸` where the done part ends, `{done}/{total}`, `{elapsed} • {remaining}`,
# `{speed:.2f}it/s`, the training task's metrics `name: value`).
_RICH_BAR = "━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━━━━━━━"


@pytest.mark.parametrize(("line", "progress"), [
    (f"Epoch 3/9  {_RICH_BAR} 120/200 0:01:02 • 0:00:40 3.21it/s v_num: 0 train_loss: 0.512",
     (720, 2000, 0.512, 1 / 3.21)),
    # no number of epochs (max_epochs -1: by steps), an unknown remaining time
    (f"Epoch 3/-2 {_RICH_BAR} 120/200 0:01:02 • -:--:-- 3.21it/s v_num: 0 loss: 0.5",
     (720, None, 0.5, 1 / 3.21)),
    # a plain rich.progress bar with a percentage and a count column
    (f"Training   {_RICH_BAR}  45% 45/100 0:00:40", (45, 100, None, None)),
])
def test_a_rich_progress_bar_is_read_as_the_trainings_progress(
        line: str, progress: tuple[int, int | None, float | None, float | None]):
    """An epoch's Rich bar counts the epochs before it (numbered from 0) and its batches, to
    all the epochs' batches; its rate is the pace and its metrics' loss the loss."""
    iteration, target, loss, pace = progress
    s, _ = parse(line)
    assert s is not None and (s.iteration, s.target_iter) == (iteration, target), s
    assert s.loss == (pytest.approx(loss) if loss is not None else None)
    assert s.sec_per_iter == (pytest.approx(pace) if pace is not None else None)


@pytest.mark.parametrize(("line", "batches"), [
    (f"Validation {_RICH_BAR} 10/50 0:00:02 • 0:00:08 5.00it/s", (10, 50)),
    (f"Testing    {_RICH_BAR} 50/50 0:00:09 • 0:00:00 5.00it/s", (50, 50)),
    (f"Predicting {_RICH_BAR} 3/50 0:00:01 • 0:00:15 3.00it/s", (3, 50)),
    (f"Sanity Checking {_RICH_BAR} 2/2 0:00:00 • 0:00:00 0.00it/s", None),
])
def test_a_rich_evaluation_bar_is_no_training_progress(
        line: str, batches: tuple[int, int] | None):
    """Lightning's validation, test and predict tasks count their batches (activity), no
    iteration, target or pace; its sanity check is start-up output, nothing."""
    s, _ = parse(line)
    if batches is None:
        assert s is None, s
    else:
        assert s is not None and not s.is_metric and s.evaluation_batches == batches, s


def _rich_fit(epochs: int, batches: int = 4, val_batches: int = 2) -> str:
    """A Lightning fit with RichProgressBar on a console forced to be a terminal: at each
    refresh the cursor goes back over the tasks' lines (`\\x1b[2K\\x1b[1A`) and each visible
    task's line is written again, the validation's below the epoch's while it runs."""
    out, up = "", "\r\x1b[2K\x1b[1A\x1b[2K"
    for e in range(epochs):
        train = ""
        for b in range(1, batches + 1):
            train = (f"Epoch {e}/{epochs - 1}  {_RICH_BAR} {b}/{batches} 0:00:0{b} • 0:00:01 "
                     f"2.00it/s v_num: 0 train_loss: 0.{9 - e}00")
            out += f"{up}{train}\n"
        for b in range(1, val_batches + 1):
            out += (f"{up}{train}\nValidation {_RICH_BAR} {b}/{val_batches} 0:00:00 • "
                    "0:00:00 9.00it/s\n")
    return out


def test_a_rich_fit_counts_the_epochs_batches_and_its_validation_is_no_progress():
    """A Rich fit's progress goes on across epochs to all the epochs' batches, the validation
    task between them counting none of it; the last epoch's last batch is the target."""
    series = MetricSeries()
    series.feed_block(_rich_fit(epochs=3))
    assert (series.last_iteration, series.target_iter) == (12, 12)
    assert series.sec_per_iter() == pytest.approx(0.5)
    assert not any(s.iteration is not None and "Validation" in s.text for s in series.samples)
    lines = _rich_fit(epochs=3).splitlines(keepends=True)
    cut = next(n for n, line in enumerate(lines) if "Epoch 2/2" in line and " 4/4 " in line)
    series = MetricSeries()
    series.feed_block("".join(lines[:cut]))
    assert (series.last_iteration, series.target_iter) == (11, 12)
