"""A requeued job's log holds its runs one after the other (submitit appends each run to the same
file, from its `Starting with JobEnvironment(...)` line): the metric series, and with it the
pace, last iteration, loss, leak fit, stall and saves of the diagnosis, is the last run's."""

from __future__ import annotations

import time

import pytest

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import LineCut, MetricSeries, newline_offsets, run_start_lines
from bot.core.models import Accounting

_T0 = 1_709_251_200.0  # 2024-03-01 00:00:00 UTC
_GIB = 1 << 30


@pytest.fixture(scope="module")
def catalogue():
    return Catalogue.load()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _run_start(t: float) -> str:
    """submitit's first line of a run (submitit/core/submission.py, process_job)."""
    return (f"submitit INFO ({_stamp(t)},000) - Starting with JobEnvironment(job_id=4242, "
            "hostname=node07, local_rank=0(1), node=0(1), global_rank=0(1))\n")


def _requeued(t: float) -> str:
    """What submitit prints when a run is preempted and requeued."""
    return (f"submitit WARNING ({_stamp(t)},000) - Bypassing signal SIGTERM\n"
            f"submitit INFO ({_stamp(t)},100) - Job has not timed out. Ran 61 minutes out of "
            "requested 600 minutes.\n"
            f"submitit WARNING ({_stamp(t)},200) - Caught signal SIGUSR1 on node07: this job is "
            "preempted.\n"
            f"submitit INFO ({_stamp(t)},300) - Requeued job 4242 (3 remaining timeouts)\n")


def _progress(first_iter: int, n: int, t0: float, *, spi: float, every: int = 10,
              rss_gib: float | None = None, rss_step_gib: float = 0.0) -> str:
    """`n` progress lines from `first_iter`, one every `every` iterations at `spi` s/iter."""
    out = []
    for k in range(n):
        rss = "" if rss_gib is None else f" | rss: {rss_gib + k * rss_step_gib:.1f} GiB"
        out.append(f"{_stamp(t0 + k * every * spi)}.000 | INFO | iter: {first_iter + k * every}"
                   f"/8000 | loss: {0.9 - k * 0.001:.3f} | {spi:.2f} s/iter{rss}\n")
    return "".join(out)


def _analyse(catalogue, text: str, *, block_bytes: int | None = None,
             max_samples: int = 4096) -> LogAnalysis:
    analysis = LogAnalysis(catalogue, max_samples=max_samples)
    data = text.encode()
    step = block_bytes or len(data)
    for i in range(0, len(data), step):
        analysis.feed(data[i:i + step])
    analysis.finish()
    return analysis


# run 1 reached iteration 800 at 4.5 s/iter, its RSS growing 1 GiB per 10 iterations, and was
# preempted; run 2, on another node an hour later, resumed from the checkpoint at 500.
_RUN_1 = (_run_start(_T0) + _progress(0, 81, _T0 + 60, spi=4.5, rss_gib=40, rss_step_gib=1.0)
          + _requeued(_T0 + 60 + 800 * 4.5))
_RUN_2_START = _T0 + 7200


def test_the_series_of_a_requeued_log_is_its_last_runs(catalogue):
    """Pace, last iteration and loss are the last run's, not a median or maximum over both."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(
        500, 11, _RUN_2_START + 60, spi=2.0, rss_gib=30)
    d = _analyse(catalogue, text).diagnose(Accounting(state="RUNNING"))
    m = d.metrics
    assert (m.last_iter, m.sec_per_iter, m.last_loss) == (600, 2.0, 0.89)
    assert d.class_id == "none"


def test_a_fresh_process_rss_is_no_leak_fit_across_the_requeue(catalogue):
    """Run 2's RSS starts afresh: the fit is its own (flat), not run 1's climb joined to it."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(
        500, 11, _RUN_2_START + 60, spi=2.0, rss_gib=30)
    acct = Accounting(state="RUNNING", mem_limit_bytes=200 * _GIB)
    d = _analyse(catalogue, text).diagnose(acct)
    assert (d.class_id, d.metrics.rss_gib_per_100_iter, d.metrics.projected_oom_iter) == (
        "none", 0.0, None)
    # one run alone: the same climb is a leak
    alone = _analyse(catalogue, _RUN_1).diagnose(acct)
    assert alone.metrics.projected_oom_iter is not None


def test_a_last_run_with_too_few_rss_points_has_no_leak_fit(catalogue):
    """Two RSS points of the new run are no trend: no slope and no projection (rather than one
    fitted through the earlier run's)."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(
        500, 2, _RUN_2_START + 60, spi=2.0, rss_gib=90, rss_step_gib=1.0)
    acct = Accounting(state="RUNNING", mem_limit_bytes=200 * _GIB)
    d = _analyse(catalogue, text).diagnose(acct)
    assert (d.metrics.rss_gib_per_100_iter, d.metrics.projected_oom_iter) == (None, None)
    assert "memory_leak" not in (d.class_id, *d.secondary)


def test_the_last_runs_own_leak_is_projected_from_its_own_points(catalogue):
    """Run 2 leaks too, from its fresh RSS: projected from its points, at its own slope."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(
        500, 21, _RUN_2_START + 60, spi=2.0, rss_gib=30, rss_step_gib=2.0)
    acct = Accounting(state="RUNNING", mem_limit_bytes=200 * _GIB)
    d = _analyse(catalogue, text).diagnose(acct)
    assert d.metrics.rss_gib_per_100_iter == 20.0
    # 30 GiB at iteration 500, 0.2 GiB per iteration: 200 GiB at iteration 1350
    assert (d.class_id, d.metrics.projected_oom_iter) == ("memory_leak", 1350)
    assert all(e.line > _RUN_1.count("\n") for e in d.evidence)


def test_a_last_run_that_hangs_below_the_earlier_runs_iteration_is_a_stall(catalogue):
    """Run 2 resumed at 500 and stopped at 600, short of run 1's 800: its own progress, not
    the earlier run's highest iteration, dates the stall."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(500, 11, _RUN_2_START + 60, spi=2.0)
    last_line = _RUN_2_START + 60 + 100 * 2.0
    d = _analyse(catalogue, text).diagnose(Accounting(state="RUNNING"), now=last_line + 3600)
    assert (d.class_id, d.metrics.stall_seconds, d.metrics.last_iter) == ("hang", 3600.0, 600)
    assert "iter: 600/8000" in d.evidence[0].text


def test_an_earlier_runs_save_cut_off_by_the_requeue_is_not_the_last_runs(catalogue):
    """Run 1 was requeued in the middle of a save; run 2's host OOM came outside any save:
    the checkpoint run 1 was writing is not the one it broke."""
    text = (_run_start(_T0) + _progress(0, 11, _T0 + 60, spi=4.5)
            + f"{_stamp(_T0 + 600)}.000 | INFO | Saving checkpoint to /ckpt/iter_100\n"
            + _requeued(_T0 + 620) + _run_start(_RUN_2_START)
            + _progress(0, 11, _RUN_2_START + 60, spi=4.5)
            + f"{_stamp(_RUN_2_START + 600)}.000 | INFO | iter: 110/8000 | loss: 0.8\n")
    d = _analyse(catalogue, text).diagnose(
        Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9))
    assert (d.class_id, d.during_checkpoint_save) == ("host_oom", False)


@pytest.mark.parametrize("block_bytes", [97, 4096, None])
@pytest.mark.parametrize("max_samples", [16, 4096])
def test_the_last_run_is_found_however_the_log_arrives(catalogue, block_bytes, max_samples):
    """In small blocks (a watcher's ticks) or one, densely sampled or downsampled: the same
    series starts at run 2's first line."""
    text = _RUN_1 + _run_start(_RUN_2_START) + _progress(500, 11, _RUN_2_START + 60, spi=2.0)
    analysis = _analyse(catalogue, text, block_bytes=block_bytes, max_samples=max_samples)
    series = analysis.series
    assert (series.runs, series.run_start) == (2, _RUN_1.count("\n") + 1)
    assert [s.iteration for s in series.samples][-1] == 600
    assert min(s.iteration for s in series.samples if s.iteration is not None) == 500
    assert (series.last_iteration, series.sec_per_iter()) == (600, 2.0)


def test_run_start_lines_are_the_lines_holding_submitits_start_or_a_training_banner():
    data = (b"srun: preamble\n" + _run_start(_T0).encode() + b"iter: 1\n"
            + _run_start(_T0 + 9).encode() + b"[INFO|trainer.py:2314] >> ***** Running training "
            b"*****\nprefix " + _run_start(_T0 + 10).encode()[:-1])
    submitit, banner = LineCut.BEFORE_RUN_START, LineCut.BEFORE_TRAINING_START
    assert run_start_lines(data, 0, len(data), newline_offsets(data)) == [
        (1, submitit), (3, submitit), (4, banner), (5, submitit)]
    # a part of the data: indexes of its lines
    start = data.index(b"iter: 1")
    assert run_start_lines(data, start, len(data), newline_offsets(data, start)) == [
        (1, submitit), (2, banner), (3, submitit)]


def test_a_logs_one_run_keeps_its_preamble():
    """The first run's start line is no boundary: the lines before it are its own."""
    series = MetricSeries()
    series.feed_block("iter: 3/10 loss: 1.0\n" + _run_start(_T0) + "iter: 4/10 loss: 0.9\n")
    assert (series.runs, series.run_start) == (1, None)
    assert [s.iteration for s in series.samples] == [3, 4]


def test_a_log_read_from_inside_has_an_earlier_run_before_the_first_start_it_shows(catalogue):
    """A restarted watcher reads the window before its offset: the lines before the first
    start line there are an earlier run's (its preemption verdict too), not a preamble."""
    analysis = LogAnalysis(catalogue)
    analysis.lines = 5000  # the window starts after line 5000
    earlier = _progress(700, 11, _T0 + 3000, spi=4.5) + _requeued(_T0 + 3600)
    analysis.feed((earlier + _run_start(_RUN_2_START)
                   + _progress(500, 11, _RUN_2_START + 60, spi=2.0)).encode())
    analysis.finish()
    d = analysis.diagnose(Accounting(state="RUNNING"))
    assert analysis.series.run_start == 5000 + earlier.count("\n") + 1
    assert (d.class_id, d.secondary, d.metrics.last_iter, d.metrics.sec_per_iter) == (
        "none", (), 600, 2.0)


def _epoch_and_batch_bars(first_epoch: int, last_epoch: int, *, epochs: int = 10,
                          batches: int = 5) -> str:
    """A custom loop's bars, `for epoch in tqdm(range(epochs), initial=…)` over `for batch in
    tqdm(range(batches), leave=False)`, as tqdm 4.x writes them to a file: the epochs' bar at
    the top from `first_epoch`, the batches' bar below it (a newline, the bar, the cursor back
    up: bare, no loss), cleared at each epoch's end, then the epochs' bar advanced."""
    out = f"\r{first_epoch * 10:3d}%|#         | {first_epoch}/{epochs} [00:00<?, ?it/s]"
    for e in range(first_epoch + 1, last_epoch + 1):
        out += "".join(f"\n\r 20%|##        | {b}/{batches} [00:{b:02d}<00:04,  1.00it/s]\x1b[A"
                       for b in range(batches + 1))
        out += "\n\r" + " " * 50 + "\x1b[A"
        out += f"\r{e * 10:3d}%|#         | {e}/{epochs} [00:{5 * e:02d}<00:10,  0.20it/s]"
    return out + "\n"


def test_a_later_runs_first_bar_is_not_read_against_the_earlier_runs_last_bar():
    """Run 1's epochs' bar last drew 3/10 at the top; run 2 resumed it at 4/10: that is no
    bar advancing with no bar below it (a Trainer's step bar, below which a bare bar is an
    evaluation's), so run 2's batches, drawn below it, are its training progress."""
    text = (_run_start(_T0) + _epoch_and_batch_bars(0, 3) + _requeued(_T0 + 600)
            + _run_start(_RUN_2_START) + _epoch_and_batch_bars(4, 5))
    series = MetricSeries()
    series.feed_block(text)
    assert series.runs == 2
    assert [s.iteration for s in series.samples if s.target_iter == 5] == [0, 1, 2, 3, 4, 5]
    assert series.last_evaluation is None


# Hugging Face Trainer's end of training (`Training completed.`, the train metrics after it)
# and the example scripts' trainer.evaluate() after it (`***** Running Evaluation *****`)
_HF_TRAINED = ("{'loss': 1.9, 'grad_norm': 0.5, 'learning_rate': 5e-05, 'epoch': 0.01}\n"
               "  0%|          | 10/8000 [00:10<2:40:00,  1.2it/s]\n"
               "\n\nTraining completed. Do not forget to share your model on "
               "huggingface.co/models =)\n\n\n"
               "{'train_runtime': 36.1, 'train_samples_per_second': 3.3, "
               "'train_steps_per_second': 0.8, 'train_loss': 1.75, 'epoch': 0.01}\n"
               "***** train metrics *****\n  epoch = 0.01\n  train_loss = 1.75\n")
_HF_EVALUATING = ("***** Running Evaluation *****\n  Num examples = 400\n  Batch size = 8\n"
                  " 45%|####5     | 45/100 [00:10<00:12,  4.50it/s]\n")


@pytest.mark.parametrize("block_bytes", [61, None])
def test_an_earlier_runs_evaluation_after_its_completion_is_not_the_last_runs(
        catalogue, block_bytes):
    """Run 1 completed its training and was requeued while it evaluated: the evaluation the
    last run opened after its own completion marker is the one sought, from that marker on;
    run 1's is none of the last run's, whether run 2 evaluates or not."""
    run_1 = _run_start(_T0) + _HF_TRAINED + _HF_EVALUATING + _requeued(_T0 + 600)
    run_2 = _run_start(_RUN_2_START) + _HF_TRAINED
    analysis = _analyse(catalogue, run_1 + run_2, block_bytes=block_bytes)
    assert (analysis.series.runs, analysis.evaluation_start) == (2, None)
    analysis = _analyse(catalogue, run_1 + run_2 + _HF_EVALUATING, block_bytes=block_bytes)
    header = (run_1 + run_2).count("\n") + 1
    assert analysis.evaluation_start == header
    marker = header - 4  # the train metrics' dict: the last run's last completion marker
    assert analysis.diagnose(Accounting(state="RUNNING")).detail == {
        "kind": "evaluating", "line": marker}


# fastai's fit stopped by EarlyStoppingCallback (fastai/callback/tracker.py) after its table,
# then the header of the script's next fit's table (ProgressCallback.before_fit)
_FASTAI_STOPPED = ("epoch     train_loss  valid_loss  accuracy  time    \n"
                   "0         0.880000    0.500000    0.800000  01:10     \n"
                   "1         0.860000    0.510000    0.810000  01:11     \n"
                   "No improvement since epoch 0: early stopping\n")
_FASTAI_NEXT_FIT = "epoch     train_loss  valid_loss  accuracy  time    \n"


@pytest.mark.parametrize("block_bytes", [61, None])
def test_an_earlier_runs_next_fit_after_its_early_stop_is_not_the_last_runs(
        catalogue, block_bytes):
    """Run 1's fit stopped early and its next fit began before the requeue; the last run's fit
    stopped early and its log ends there: the last run ended in its marker, read from its own
    marker on (and so is a next fit of its own, whatever block its header is fed in)."""
    run_1 = _run_start(_T0) + _FASTAI_STOPPED + _FASTAI_NEXT_FIT + _requeued(_T0 + 600)
    run_2 = _run_start(_RUN_2_START) + _FASTAI_STOPPED
    analysis = _analyse(catalogue, run_1 + run_2, block_bytes=block_bytes)
    assert (analysis.series.runs, analysis.goes_on_at) == (2, None)
    d = analysis.diagnose()
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    analysis = _analyse(catalogue, run_1 + run_2 + _FASTAI_NEXT_FIT, block_bytes=block_bytes)
    assert analysis.goes_on_at == (run_1 + run_2).count("\n") + 1
    assert analysis.diagnose().class_id == "none"
