"""PyTorch-Ignite's own progress lines, built from its source's format strings (pytorch/ignite
de08e799cfb5). Its ProgressBar (ignite/handlers/tqdm_logger.py) draws a tqdm bar of each epoch's
iterations (initial=1) with `{desc}[{n_fmt}/{total_fmt}] {percentage:3.0f}%|{bar}{postfix}
[{elapsed}<{remaining}]`, desc `Epoch [{epoch}/{max_epochs}]` when max_epochs is over 1 (an
evaluator's one epoch: `Iteration`). Its FBResearchLogger (ignite/handlers/fbresearch_logger.py,
log_every) joins `Epoch [{epoch}/{max_epochs}]`, `[{i}/{epoch_length}]:`, `ETA: …`, the learning
rate, the outputs, `Iter time: {:.4f} s`, `Data prep time: {:.4f} s` and `GPU Max Mem: {:.0f} MB`
with two blanks, i counting the epoch's iterations from 1. A run by iterations
(`run(data, max_iters=N)`) logs `Engine run starting with max_iters=N.` (since 3745b937e, its
max_epochs then `None`) and stops at N, inside its last epoch unless epoch_length divides it."""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.training_lines import LineParser, Sample

STEPS = 100


def _bar(epoch: int, n: int, epochs: int = 5) -> str:
    """ProgressBar's draw at the epoch's iteration n (its postfix: the output's loss)."""
    done = n * 10 // STEPS
    return (f"Epoch [{epoch}/{epochs}]: [{n}/{STEPS}] {100 * n // STEPS:3d}%|{'█' * done:<10}"
            f", loss=0.412 [00:{n // 10:02d}<00:10]")


def _research(epoch: int, i: int, epochs: int | str = 5) -> str:
    """FBResearchLogger's line at the epoch's iteration i, after setup_logger's format."""
    return (f"2024-04-22 12:{epoch:02d}:{i % 60:02d},843 trainer INFO: Epoch [{epoch}/{epochs}]  "
            f"[{i}/{STEPS}]:  ETA: 0:00:10  lr: 0.00100  loss: 0.4123  Iter time: 0.1012 s  "
            f"Data prep time: 0.0021 s  GPU Max Mem: 1234 MB")


def _sample(*lines: str) -> Sample:
    parser = LineParser()
    sample = None
    for n, line in enumerate(lines, 1):
        sample, _ = parser.parse(line, n)
    assert sample is not None
    return sample


def test_a_progress_bar_draw_gives_the_epochs_before_it_and_its_count():
    s = _sample(_bar(3, 50))
    assert (s.iteration, s.target_iter) == (2 * STEPS + 50, 5 * STEPS)
    assert s.loss == pytest.approx(0.412)


def test_a_research_line_gives_its_iterations_pace_and_gpu_memory():
    s = _sample(_research(3, 20))
    assert (s.iteration, s.target_iter) == (2 * STEPS + 20, 5 * STEPS)
    assert s.sec_per_iter == pytest.approx(0.1012)
    # `MB` is torch's max_memory_allocated in MiB: the GPU's, no host memory
    assert (s.gpu_mem_bytes, s.host_rss_bytes) == (1234 * 1024**2, None)


def test_a_research_line_of_one_epoch_is_not_read():
    """An evaluator's engine runs one epoch (`Epoch [1/1]`): its batches are no training's."""
    s = _sample(_research(1, 20, epochs=1))
    assert s.iteration is None


def test_a_bar_of_one_epoch_is_not_read():
    """ProgressBar names the epoch only when max_epochs is over 1: `Epoch [1/1]` is no
    trainer's bar (an evaluator's), so it counts nothing."""
    s = _sample(_bar(1, 20, epochs=1))
    assert s.iteration is None


def test_an_evaluators_bar_after_the_first_of_ten_epochs_is_still_running():
    d = read("Epoch [1/10]: [100/100] 100%|██████████, loss=0.5 [00:10<00:00]\n"
             "Epoch [1/1]: [20/20] 100%|██████████ [00:01<00:00]\n")
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert d.metrics.last_iter == STEPS


def test_a_research_line_of_a_run_by_iterations_counts_towards_its_max_iters():
    s = _sample("2024-04-22 12:00:00,001 ignite.engine.engine.Engine INFO: Engine run starting "
                "with max_iters=250.", _research(3, 20, epochs="None"))
    assert (s.iteration, s.target_iter) == (2 * STEPS + 20, 250)


def _epochs_bars(last_epoch: int, last_n: int = STEPS) -> str:
    return "".join(_bar(e, n) + "\n" for e in range(1, last_epoch + 1)
                   for n in range(10, (STEPS if e < last_epoch else last_n) + 1, 10))


def test_the_last_epochs_bar_at_its_total_ends_a_finished_run_by_progress():
    d = read(_epochs_bars(5))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (5 * STEPS, 5 * STEPS)


def test_an_earlier_epochs_bar_at_its_total_is_still_running():
    d = read(_epochs_bars(3))
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert d.metrics.last_iter == 3 * STEPS


def test_a_run_by_iterations_that_reached_its_max_iters_completed():
    start = "2024-04-22 12:00:00,001 ignite.engine.engine.Engine INFO: Engine run starting " \
            "with max_iters=250.\n"
    lines = [_research(e, i, epochs="None") + "\n" for e in (1, 2, 3)
             for i in range(10, (STEPS if e < 3 else 50) + 1, 10)]
    d = read(start + "".join(lines))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (250, 250)


# Engine.run's end on an exception (pytorch/ignite ignite/engine/engine.py de08e799cfb5): its
# logger's error() `Engine run is terminating due to exception: {e}` (and _run_once_on_dataset's
# `Current run is terminating due to exception: {e}`), str(e) alone, then _handle_exception
# re-raises it, or hands it to an EXCEPTION_RAISED handler that may swallow it: no traceback.
_TERMINATING = ("Engine run is terminating due to exception: {e}",
                "Current run is terminating due to exception: {e}")
_FORMATS = ("{m}",                                                        # logging's %(message)s
            "ERROR:ignite.engine.engine.Engine:{m}",                      # basicConfig's default
            "2024-04-22 12:03:20,101 ignite.engine.engine.Engine ERROR: {m}")  # setup_logger's


@pytest.mark.parametrize("form", _FORMATS, ids=["message", "basic", "setup_logger"])
@pytest.mark.parametrize("said", _TERMINATING, ids=["engine", "current"])
def test_an_engine_run_terminating_on_an_exception_is_a_failure_naming_it(form, said):
    """A log that ends in ignite's notice of the exception that ended its run, with no
    traceback after it: a failure (it read `none`, still running, without a level word), its
    evidence the notice, which names the exception's words (`'labels'`: a KeyError's)."""
    line = form.format(m=said.format(e="'labels'"))
    d = read("".join(_research(2, i) + "\n" for i in (20, 40, 60)) + line + "\n")
    assert d.class_id == "unknown_failure"
    assert any("terminating due to exception: 'labels'" in e.text for e in d.evidence)


@pytest.mark.parametrize(("e", "class_id"), [
    ("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
     "cuda_oom"),
    ("[Errno 28] No space left on device", "disk_full"),
], ids=["cuda_oom", "disk_full"])
def test_the_exceptions_words_name_its_class(e, class_id):
    d = read("".join(_research(2, i) + "\n" for i in (20, 40, 60))
             + _TERMINATING[0].format(e=e) + "\n")
    assert d.class_id == class_id


def test_a_run_terminated_by_a_handler_is_no_exception():
    """Engine.terminate() (`Terminate signaled. ...`, a handler's early stop) then `Engine run
    finished.`: no exception, no failure read from it."""
    d = read("".join(_research(2, i) + "\n" for i in (20, 40, 60))
             + "Terminate signaled. Engine will stop after current iteration is finished.\n"
             "Engine run finished. Time taken: 00:02:01.345\n")
    assert d.class_id != "unknown_failure"
