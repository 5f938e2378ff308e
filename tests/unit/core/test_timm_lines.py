"""timm's log, built from its source's format strings (huggingface/pytorch-image-models
train.py): main() logs `Scheduled epochs: 300.` before its loop, train_one_epoch `Train: {epoch}
[{update_idx:>4d}/{updates_per_epoch} ({pct:>3.0f}%)]  Loss: …  Time: {val:.3f}s, …` (epochs and
updates from 0), and after the loop, and after `except KeyboardInterrupt: pass` too, `*** Best
metric: {best} (epoch {epoch})` and the `--result` JSON. The best metric ends a finished run only
once the loop's count reached the scheduled epochs."""

from __future__ import annotations

from support.end_marker import read

from bot.core.training_lines import LineParser

UPDATES = 1251


def _epoch(epoch: int) -> str:
    return "".join(
        f"Train: {epoch} [{u:>4d}/{UPDATES} ({100 * (u + 1) / UPDATES:>3.0f}%)]  Loss: 2.{u:03d} "
        f"(2.90)  Time: 0.401s,  638.40/s  (0.419s,  611.00/s)  LR: 1.000e-05  Data: 0.001 "
        "(0.010)\n" for u in (0, 600, UPDATES - 1))


def _test(top1: str) -> str:
    return ("Test: [   0/48]  Time: 1.212 (1.212)  Loss:  0.8123 (0.8123)  Acc@1: 84.3750 "
            "(84.3750)  Acc@5: 96.0938 (96.0938)\n"
            f"Test: [  48/48]  Time: 0.112 (0.312)  Loss:  0.9012 (0.9321)  Acc@1: 81.2500 "
            f"({top1})  Acc@5: 95.3125 (95.0120)\n"
            "Current checkpoints:\n"
            f" ('./output/train/20240501-120000-resnet50-224/checkpoint-0.pth.tar', {top1})\n\n")


HEAD = "Scheduled epochs: 300. LR stepped per epoch.\n"


def _run(last: int) -> str:
    return HEAD + "".join(_epoch(e) + _test(f"80.{e:03d}") for e in (last - 1, last))


def _end(epoch: int) -> str:
    return (f"*** Best metric: 80.{epoch:03d} (epoch {epoch})\n--result\n[\n    {{\n"
            f'        "epoch": {epoch},\n        "eval_top1": 80.{epoch:03d}\n    }}\n]\n')


def test_its_training_line_is_progress_with_the_scheduled_target():
    parser = LineParser()
    parser.parse(HEAD.strip(), 1)
    sample, _ = parser.parse(_epoch(3).splitlines()[1], 2)
    assert sample is not None
    # three epochs of 1251 updates before it, then 601 of this one's; of 300 epochs
    assert (sample.iteration, sample.target_iter, sample.sec_per_iter) == (
        3 * UPDATES + 601, 300 * UPDATES, 0.401)


def test_the_best_metric_after_the_last_scheduled_epoch_ends_a_finished_run():
    d = read(_run(299) + _end(299))
    assert d.class_id == "completed"
    assert (d.metrics.last_iter, d.metrics.target_iter) == (300 * UPDATES, 300 * UPDATES)


def test_the_best_metric_after_an_interrupt_mid_way_is_no_end():
    # `except KeyboardInterrupt: pass` at epoch 150 of 300 prints the same lines
    d = read(_run(150) + _end(148))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_a_run_cut_mid_way_reads_still_running():
    assert read(_run(150)).class_id == "none"
