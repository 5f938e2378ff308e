"""nanoGPT's log, built from its source's format strings (karpathy/nanoGPT train.py 3adf61e1,
configurator.py): the configurator prints each override (`Overriding: max_iters = 5000`, a
config file's text after `Overriding config with ...:`), the loop `iter {iter_num}: loss …, time
…ms, mfu …%` every log_interval iterations from 0 up to max_iters itself, and every
eval_interval iterations, before that iteration's step, `step {iter_num}: train loss …, val loss
…` (then `saving checkpoint to …`). The loop breaks past max_iters printing nothing: only its
`iter N` at the max_iters printed ends a finished run."""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.training_lines import LineParser

CONFIG_FILE = ("Overriding config with config/train_shakespeare_char.py:\n"
               "out_dir = 'out-shakespeare-char'\n"
               "eval_interval = 250 # keep frequent because we'll overfit\n"
               "log_interval = 10 # don't print too too often\n"
               "max_iters = 5000\n"
               "lr_decay_iters = 5000 # make equal to max_iters usually\n")
ARGUMENT = "Overriding: max_iters = 3000\n"


def _iters(first: int, last: int) -> str:
    return "".join(f"iter {i}: loss 0.{9000 - i:04d}, time 45.12ms, mfu 30.12%\n"
                   for i in range(first, last + 1, 10))


def _eval(i: int) -> str:
    return (f"step {i}: train loss 0.8012, val loss 1.4712\n"
            "saving checkpoint to out-shakespeare-char\n")


# the last evaluation, then its iteration's step: the loop's end (5000 = max_iters)
FINISHED = (CONFIG_FILE + _eval(4750) + _iters(4750, 4990) + _eval(5000)
            + "iter 5000: loss 0.8101, time 5012.12ms, mfu 27.12%\n")


def test_its_iteration_line_takes_max_iters_as_its_target():
    parser = LineParser()
    for n, line in enumerate(CONFIG_FILE.splitlines(), 1):
        parser.parse(line, n)
    sample, _ = parser.parse("iter 4990: loss 0.8123, time 45.12ms, mfu 30.12%", 9)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.loss) == (4990, 5000, 0.8123)


def test_its_iterations_time_is_the_pace():
    """`time {dt*1000:.2f}ms` is one iteration's time: the pace, in seconds per iteration,
    the median over the log (the last iteration's 5 s, which evaluated and saved, is one)."""
    sample, _ = LineParser().parse("iter 4990: loss 0.8123, time 45.12ms, mfu 30.12%", 1)
    assert sample is not None
    assert sample.sec_per_iter == pytest.approx(0.04512)
    assert read(FINISHED).metrics.sec_per_iter == 0.045  # as the diagnosis rounds it


def test_the_iteration_at_max_iters_ends_a_finished_run():
    d = read(FINISHED)
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (5000, 5000)


@pytest.mark.parametrize("log", [
    CONFIG_FILE + _eval(4750) + _iters(4750, 4990),  # its last step's line not yet printed
    CONFIG_FILE + _eval(4750) + _iters(4750, 4990) + _eval(5000),  # evaluating before it
], ids=["cut-at-4990", "cut-in-the-last-evaluation"])
def test_a_run_cut_before_its_last_iteration_is_still_running(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert d.metrics.target_iter == 5000


def test_an_argument_after_the_config_file_sets_the_target():
    # `python train.py config/train_shakespeare_char.py --max_iters=3000`: the argument is run
    # after the file, so 5000 is no end and 3000 is
    assert read(CONFIG_FILE + ARGUMENT + _iters(4900, 5000)).metrics.target_iter is None
    d = read(CONFIG_FILE + ARGUMENT + _iters(2900, 3000))
    assert (d.class_id, d.metrics.target_iter) == ("completed", 3000)


def test_without_a_printed_max_iters_its_end_is_unknown():
    # train.py's own default (600000) is printed nowhere
    assert read(_eval(4750) + _iters(4750, 5000)).class_id == "none"
