"""A log that holds a second run after a first one (a user's rerun into the same output file,
torchrun restarting its worker group, a resumed run appended to the log) is read by its last
run: it starts at the framework's own start-of-training banner once the run before it showed
progress (bot.core.training_lines.TRAINING_START), and the class, progress and evidence are that
run's. The banners, read from each framework's source:

- Hugging Face Trainer: `***** Running training *****` (huggingface/transformers
  src/transformers/trainer.py, Trainer._inner_training_loop), `Training completed. Do not forget
  to share your model on huggingface.co/models =)` after its loop;
- BasicSR: `Start training from epoch: {start_epoch}, iter: {current_iter}` before its loop,
  `End of training. Time consumed: …` after it (XPixelGroup/BasicSR basicsr/train.py);
- torch.distributed.elastic: `[{role}] Worker group {state.name}. {remaining}/{max_restarts}
  attempts left; will restart worker group` (pytorch/pytorch
  torch/distributed/elastic/agent/server/api.py, SimpleElasticAgent._invoke_run);
- Lightning: the model summary's header, `  | Name | Type | Params | Mode`, which
  ModelSummary.on_fit_start logs once per fit (Lightning-AI/pytorch-lightning
  src/lightning/pytorch/callbacks/model_summary.py; utilities/model_summary/model_summary.py,
  _format_summary_table), or RichModelSummary's rich table (callbacks/rich_model_summary.py:
  `┃   ┃ Name ┃ Type ┃ Params ┃ Mode ┃`), and `` `Trainer.fit` stopped: `max_epochs=2`
  reached.`` as the fit ends (loops/fit_loop.py, FitLoop.done)."""

from __future__ import annotations

import calendar

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting, Diagnosis


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _read(catalogue: Catalogue, text: str, acct: Accounting | None = None, *,
          block_bytes: int | None = None, now: float | None = None) -> Diagnosis:
    analysis = LogAnalysis(catalogue)
    data = text.encode()
    step = block_bytes or len(data)
    for i in range(0, len(data), step):
        analysis.feed(data[i:i + step])
    analysis.finish()
    return analysis.diagnose(acct, now=now)


def _lines(text: str) -> int:
    return text.count("\n")


# --- BasicSR (timed lines) ------------------------------------------------------------------

def _basicsr_time(minute: int) -> str:
    return f"2024-05-01 {8 + minute // 60:02d}:{minute % 60:02d}:00,123 INFO: "


def _basicsr_run(first_minute: int, last_iter: int, *, total: int = 1000) -> str:
    """basicsr/train.py from its statistics to its loop's lines (MessageLogger's format), one
    every 100 iterations, a minute apart."""
    t = first_minute
    out = (_basicsr_time(t) + "Training statistics:\n\tRequire iter number per epoch: 1000\n"
           f"\tTotal epochs: 1; iters: {total}.\n"
           + _basicsr_time(t) + "Start training from epoch: 0, iter: 0\n")
    for it in range(100, last_iter + 1, 100):
        out += (_basicsr_time(t + it // 100) + f"[train..][epoch:  0, iter:{it:8,d}, "
                "lr:(1.000e-04,)] [eta: 0:10:00, time (data): 0.600 (0.003)] "
                f"l_pix: {2 - it / 1000:.4e} \n")
    return out


def _basicsr_end(minute: int) -> str:
    return (_basicsr_time(minute) + "End of training. Time consumed: 0:10:05\n"
            + _basicsr_time(minute) + "Save the latest model.\n")


BASICSR_FINISHED = _basicsr_run(0, 1000) + _basicsr_end(11)
BASICSR_RERUN = _basicsr_run(30, 300)  # the rerun, into the same file, at iteration 300
_RERUN_LAST = calendar.timegm((2024, 5, 1, 8, 33, 0)) + 0.123
CUDA_OOM = ("Traceback (most recent call last):\n"
            '  File "basicsr/train.py", line 187, in train_pipeline\n'
            "    model.optimize_parameters(current_iter)\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 79.15 GiB of which 1.02 GiB is free.\n")


@pytest.mark.parametrize("block_bytes", [89, None])
def test_a_rerun_after_a_finished_run_is_in_progress_not_completed(catalogue, block_bytes):
    """The first run's target and end of training are not the rerun's: it is running, at its
    own iteration."""
    d = _read(catalogue, BASICSR_FINISHED + BASICSR_RERUN, block_bytes=block_bytes)
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (300, 1000)


def test_a_rerun_in_progress_is_no_hang_from_the_first_runs_progress(catalogue):
    """A minute after its last line the rerun is going at its pace: its progress dates the
    silence, not the first run's highest iteration half an hour before."""
    d = _read(catalogue, BASICSR_FINISHED + BASICSR_RERUN, Accounting(state="RUNNING"),
              now=_RERUN_LAST + 60)
    assert (d.class_id, d.metrics.last_iter, d.metrics.sec_per_iter) == ("none", 300, 0.6)


def test_a_rerun_that_crashed_after_a_finished_run_is_that_crash(catalogue):
    """With the log alone and with Slurm's FAILED: the crash, its evidence the rerun's."""
    text = BASICSR_FINISHED + BASICSR_RERUN + CUDA_OOM
    for acct in (None, Accounting(state="FAILED", exit_code=1)):
        d = _read(catalogue, text, acct)
        assert d.class_id == "cuda_oom"
        assert d.metrics.last_iter == 300
        assert all(e.line > _lines(BASICSR_FINISHED) for e in d.evidence)


# --- Hugging Face Trainer --------------------------------------------------------------------

def _hf_run(steps: int) -> str:
    """Trainer.train() from its banner: the loss dicts and the bar, every 10 steps of 500."""
    out = ("***** Running training *****\n  Num examples = 4,000\n  Num Epochs = 1\n"
           "  Total optimization steps = 500\n")
    for step in range(10, steps + 1, 10):
        out += (f"{{'loss': {2 - step / 1000:.4f}, 'grad_norm': 0.5, 'learning_rate': 5e-05, "
                f"'epoch': {step / 500:.2f}}}\n"
                f"{100 * step // 500:3d}%|#         | {step}/500 [00:{step // 10:02d}<00:40,  "
                "1.20it/s]\n")
    return out


HF_DONE = ("\n\nTraining completed. Do not forget to share your model on "
           "huggingface.co/models =)\n\n\n"
           "{'train_runtime': 420.1, 'train_samples_per_second': 9.5, "
           "'train_steps_per_second': 1.2, 'train_loss': 1.75, 'epoch': 1.0}\n")
HF_CRASHED = _hf_run(120) + CUDA_OOM


def test_a_finished_run_after_a_crashed_one_is_completed(catalogue):
    """The first run's CUDA OOM was the reason for the rerun (a smaller batch): the rerun
    finished, by its own end of training."""
    text = HF_CRASHED + _hf_run(500) + HF_DONE
    for acct in (None, Accounting(state="COMPLETED", exit_code=0, signal=0)):
        d = _read(catalogue, text, acct)
        assert (d.class_id, d.decided_by) == ("completed", "signature")
        assert "cuda_oom" not in d.secondary
        assert any("Training completed" in e.text for e in d.evidence)
    assert _read(catalogue, HF_CRASHED).class_id == "cuda_oom"  # the first run alone


def test_runs_count_the_submitit_run_and_the_rerun_its_banner_starts():
    """submitit's start line begins the log's first run; the Trainer's banner after its
    progress the second."""
    series = MetricSeries()
    series.feed_block("submitit INFO (2024-03-01 00:00:00,000) - Starting with JobEnvironment("
                      "job_id=4242, hostname=node07, local_rank=0(1), node=0(1), "
                      "global_rank=0(1))\n" + _hf_run(120) + _hf_run(40))
    assert (series.runs, series.last_iteration) == (2, 40)


def test_a_rerun_after_a_finished_train_is_in_progress(catalogue):
    d = read_log(catalogue, _hf_run(500) + HF_DONE + _hf_run(40))
    assert (d.class_id, d.decided_by, d.metrics.last_iter) == ("none", "progress", 40)


# --- torch.distributed.elastic ---------------------------------------------------------------

def _worker_lines(first: int, last: int) -> str:
    return "".join(f"[rank0]: iter {i}: loss {2.0 - i / 1000:.4f}, time 312.45ms\n"
                   for i in range(first, last + 1, 10))


WORKER_FAILED = ("[rank1]: Traceback (most recent call last):\n"
                 '[rank1]:   File "train.py", line 88, in <module>\n'
                 "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                 "GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
RESTART = ("I1205 10:21:07.113000 140210 torch/distributed/elastic/agent/server/api.py:711] "
           "[default] Worker group FAILED. 3/3 attempts left; will restart worker group\n")


def test_progress_after_the_worker_group_restarted_is_the_restarted_runs(catalogue):
    """--max-restarts: the group failed and restarted from its checkpoint at 300; the job runs
    on, the failure was the restarted run's predecessor's."""
    text = _worker_lines(300, 590) + WORKER_FAILED + RESTART + _worker_lines(300, 350)
    for acct in (None, Accounting(state="RUNNING")):
        d = _read(catalogue, text, acct)
        assert (d.class_id, d.secondary, d.metrics.last_iter) == ("none", (), 350)
        assert d.evidence == ()


def test_a_restart_with_no_progress_before_it_starts_no_run():
    """The group failed before a step: the restarted workers' run is the first run."""
    series = MetricSeries()
    series.feed_block(WORKER_FAILED + RESTART + _worker_lines(0, 50))
    assert (series.run_start, series.runs) == (None, 0)
    assert series.last_iteration == 50


# --- Lightning -------------------------------------------------------------------------------

LIGHTNING_SUMMARY = ("\n  | Name  | Type   | Params | Mode \n"
                     "-----------------------------------------\n"
                     "0 | model | ResNet | 11.2 M | train\n"
                     "-----------------------------------------\n"
                     "11.2 M    Trainable params\n")


def _lightning_epoch(epoch: int, done: int) -> str:
    return (f"Epoch {epoch}: {100 * done // 50:3d}%|#         | {done}/50 [00:10<00:00,  "
            "4.90it/s, v_num=0, train_loss=0.500]\n")


LIGHTNING_FIT = (LIGHTNING_SUMMARY + _lightning_epoch(0, 50) + _lightning_epoch(1, 50)
                 + "`Trainer.fit` stopped: `max_epochs=2` reached.\n")


# RichModelSummary's table (callbacks/rich_model_summary.py, summarize: the columns ` `, `Name`,
# `Type`, `Params`, `Mode`, `FLOPs`, then its grid of totals), as rich draws it in its default
# box (HEAVY_HEAD) on a log file, in ASCII on an output that takes ASCII only, and coloured (its
# header_style, `bold magenta`) on a terminal
RICH_SUMMARY = ("┏━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━┳━━━━━━━┓\n"
                "┃   ┃ Name  ┃ Type   ┃ Params ┃ Mode  ┃ FLOPs ┃\n"
                "┡━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━╇━━━━━━━┩\n"
                "│ 0 │ model │ ResNet │ 11.2 M │ train │ 0     │\n"
                "└───┴───────┴────────┴────────┴───────┴───────┘\n"
                "Trainable params: 11.2 M\nNon-trainable params: 0\nTotal params: 11.2 M\n")
_HEADER_CELL = "\x1b[1;35m \x1b[0m\x1b[1;35m{}\x1b[0m\x1b[1;35m \x1b[0m"
SUMMARIES = {
    "model-summary": LIGHTNING_SUMMARY,
    "rich-model-summary": RICH_SUMMARY,
    "rich-in-ascii": ("+-------------------------------------------------+\n"
                      "|   | Name  | Type   | Params | Mode  | FLOPs |\n"
                      "|---+-------+--------+--------+-------+-------|\n"
                      "| 0 | model | ResNet | 11.2 M | train | 0     |\n"
                      "+-------------------------------------------------+\n"),
    "rich-on-a-terminal": RICH_SUMMARY.replace(
        "┃   ┃ Name  ┃ Type   ┃ Params ┃ Mode  ┃ FLOPs ┃",
        "┃" + "┃".join(_HEADER_CELL.format(name)
                       for name in (" ", "Name ", "Type  ", "Params", "Mode ", "FLOPs")) + "┃"),
}


@pytest.mark.parametrize("summary", list(SUMMARIES.values()), ids=list(SUMMARIES))
def test_a_next_fit_after_a_finished_fit_is_in_progress(catalogue, summary):
    """Its progress is the next fit's, 20 batches into its first epoch, not the finished
    fit's 100, whichever summary callback printed the next fit's table."""
    fit = LIGHTNING_FIT.replace(LIGHTNING_SUMMARY, summary)
    d = read_log(catalogue, fit + summary + _lightning_epoch(0, 20))
    assert (d.class_id, d.decided_by, d.metrics.last_iter) == ("none", "progress", 20)
    assert read_log(catalogue, fit).class_id == "completed"  # the fit alone


# --- the totals a run announced --------------------------------------------------------------

# BasicSR's model logs its network (basicsr/models/base_model.py, print_network: `Network:
# {name}, with parameters: {n:,d}` and the network's repr) between the statistics that announce
# the run's total and its banner (basicsr/train.py, main: create_train_val_dataloader, then
# build_model, then `Start training from epoch: …`).
_BASICSR_NETWORK = "".join(f"  (body.{i}): RRDB(conv1): Conv2d(64, 32, kernel_size=(3, 3))\n"
                           for i in range(80))


@pytest.mark.parametrize("block_bytes", [997, None])
@pytest.mark.parametrize("max_samples", [16, 4096])
def test_a_rerun_is_held_to_the_total_it_announced_before_its_banner(catalogue, block_bytes,
                                                                      max_samples):
    """BasicSR announces the rerun's 2,000 iterations before the banner that starts the rerun:
    its progress is 300 of those 2,000, not of the first run's 30,000 (read densely or
    downsampled, whatever blocks the log arrives in)."""
    rerun = _basicsr_run(400, 300, total=2000).replace(
        "Start training", _BASICSR_NETWORK + _basicsr_time(400) + "Start training")
    analysis = LogAnalysis(catalogue, max_samples=max_samples)
    data = (_basicsr_run(0, 30000, total=30000) + rerun).encode()
    step = block_bytes or len(data)
    for i in range(0, len(data), step):
        analysis.feed(data[i:i + step])
    analysis.finish()
    d = analysis.diagnose(Accounting(state="RUNNING"))
    assert (d.class_id, d.metrics.last_iter, d.metrics.target_iter) == ("none", 300, 2000)


def _timm_epoch(epoch: int) -> str:
    """timm's train.py: train_one_epoch's last update (of 100) logged, then validate's last
    batch."""
    return (f"Train: {epoch} [  99/100 (100%)]  Loss: 2.100 (2.20)  Time: 0.401s,  638.40/s  "
            "(0.419s,  611.00/s)  LR: 1.000e-05  Data: 0.001 (0.010)\n"
            "Test: [  48/48]  Time: 0.112 (0.312)  Loss:  0.9012 (0.9321)  Acc@1: 81.2500 "
            "(80.1200)  Acc@5: 95.3125 (95.0120)\n")


def test_a_rerun_that_announced_no_schedule_is_not_held_to_the_first_runs(catalogue):
    """The first run announced 300 epochs (timm's `Scheduled epochs: 300.`); the restarted
    workers' run shows no schedule of its own and ends in timm's best metric after its second
    epoch: that run is over, not 2 epochs into the first run's 300 (nor ended short of
    them)."""
    first = "Scheduled epochs: 300.\n" + _timm_epoch(0) + _timm_epoch(1) + WORKER_FAILED
    rerun = _timm_epoch(0) + _timm_epoch(1) + "*** Best metric: 80.120 (epoch 1)\n"
    d = read_log(catalogue, first + RESTART + rerun)
    assert (d.class_id, d.metrics.last_iter, d.metrics.target_iter) == ("completed", 200, None)


# --- what starts no run ----------------------------------------------------------------------

def test_each_nodes_banner_before_the_first_step_is_the_first_runs():
    """Two nodes' main processes log the banner before the first step (which waits for both),
    the second after the first node's bar was drawn at 0 (ProgressCallback, on world rank 0)."""
    series = MetricSeries()
    series.feed_block("***** Running training *****\n  0%|          | 0/500 [00:00<?, ?it/s]\n"
                      + _hf_run(30))
    assert (series.run_start, series.last_iteration) == (None, 30)


@pytest.mark.parametrize("block_bytes", [97, None])
@pytest.mark.parametrize("max_samples", [16, 4096])
def test_the_run_starts_at_the_banner_however_the_log_arrives(catalogue, block_bytes,
                                                              max_samples):
    """In small blocks (a watcher's ticks) or one, densely sampled or downsampled."""
    first = _basicsr_run(0, 1000)
    analysis = LogAnalysis(catalogue, max_samples=max_samples)
    data = (first + BASICSR_RERUN).encode()
    step = block_bytes or len(data)
    for i in range(0, len(data), step):
        analysis.feed(data[i:i + step])
    analysis.finish()
    banner = _lines(first) + 4  # the rerun's `Start training from epoch: 0, iter: 0`
    assert "Start training" in BASICSR_RERUN.splitlines()[3]
    assert (analysis.series.run_start, analysis.series.last_iteration) == (banner, 300)
    assert analysis.series.runs == 2
