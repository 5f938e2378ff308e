"""An out-of-memory error the training framework catches and recovers from is no cause of the
run's end: the run goes on after its recovery line. Each framework's lines are built from its
source's format strings.

fairseq (facebookresearch/fairseq fairseq/trainer.py 3d262bb25690): Trainer.train_step catches
a RuntimeError whose text says `out of memory`, logs it through `_log_oom` (`OOM: Ran out of
memory with exception: {exc}`, then `torch.cuda.memory_summary()` of each device), then
`attempting to recover from OOM in forward/backward pass`, and goes on with the next batch;
valid_step logs `ran out of memory in validation step, retrying batch` and retries once;
an OOM in the optimizer step is `OOM during optimization, irrecoverable` and re-raised. Before
its 2020 move to `logging` (bafeed46, 2019) it printed the same with a `| ` prefix
(`| WARNING: attempting to recover ...`, `| WARNING: OOM in all workers, skipping update`).

Lightning's batch size finder (Lightning-AI/pytorch-lightning src/lightning/pytorch/tuner/
batch_size_scaling.py 7f0c3436cd): a trial whose RuntimeError `is_oom_error` says is an OOM is
caught without a word of the OOM, then `_adjust_batch_size` logs `Batch size {batch_size}
{desc}, trying batch size {new_size}` (desc `failed`, or `succeeded` as it grows), and the
search ends in `Finished batch size finder, will continue with full run using batch size N`.

OpenNMT-py (OpenNMT/OpenNMT-py onmt/trainer.py 97111d97551c, Trainer._gradient_accumulation):
an exception whose traceback says `CUDA out of memory` is caught and logged as `Step %d, cuda
OOM - batch removed` through its logger (onmt/utils/logging.py: `[%(asctime)s %(levelname)s]
%(message)s`), with no traceback, and the next batch trains; with more than one GPU in
tensor-parallel mode (since 16aaba80, 2023-09) it then calls `destroy_process_group()` and
`sys.exit()` instead, each rank after logging the line; its reports are
`Statistics.output`'s `Step %s; acc: %2.1f; ppl: %5.1f; xent: %2.1f; lr: %7.5f; ...`."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.diagnose.ending import (
    FAIRSEQ_OOM_RECOVERIES,
    GOES_ON_AFTER_OOM,
    LIGHTNING_BATCH_SIZE_BACK_OFF,
    OPENNMT_BATCH_REMOVED,
)
from bot.core.models import Accounting


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _fairseq(minute: int, level: str, name: str, message: str) -> str:
    """A line in fairseq_cli.train's logging format (`%(asctime)s | %(levelname)s | %(name)s |
    %(message)s`)."""
    return f"2024-05-01 10:{minute:02d}:00 | {level} | {name} | {message}\n"


def _train_inner(minute: int, update: int) -> str:
    return _fairseq(minute, "INFO", "train_inner",
                    f"epoch 001:    {update} / 1000 loss=9.12, ppl=556.2, wps=12345, ups=1.2, "
                    f"wpb=8192, bsz=64, num_updates={update}, lr=0.0005, gnorm=1.2, "
                    f"train_wall=80, gb_free=10.1, wall={minute * 60}")


OOM_TEXT = ("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 39.59 GiB total capacity; "
            "35.10 GiB already allocated; 1.02 GiB free; 36.90 GiB reserved in total by PyTorch)")
MEMORY_SUMMARY = (
    "|===========================================================================|\n"
    "|                  PyTorch CUDA memory summary, device ID 0                 |\n"
    "|---------------------------------------------------------------------------|\n"
    "|            CUDA OOMs: 1            |        cudaMalloc retries: 1         |\n"
    "|===========================================================================|\n"
    "| Allocated memory      |   30612 MB |   39870 MB |  512 GB    |  482 GB    |\n"
    "|===========================================================================|\n")
TRAINING = _train_inner(1, 100) + _train_inner(2, 200)
LOGGED_OOM = (_fairseq(3, "WARNING", "fairseq.trainer",
                       f"OOM: Ran out of memory with exception: {OOM_TEXT}")
              + _fairseq(3, "WARNING", "fairseq.trainer", "") + MEMORY_SUMMARY)
RECOVERY = _fairseq(3, "WARNING", "fairseq.trainer",
                    "attempting to recover from OOM in forward/backward pass")
DONE = _fairseq(9, "INFO", "fairseq_cli.train", "done training in 540.2 seconds")
COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=600)


def test_a_run_that_trains_on_after_fairseqs_recovery_from_an_oom_is_running(catalogue):
    d = read_log(catalogue, TRAINING + LOGGED_OOM + RECOVERY + _train_inner(4, 300))
    assert d.class_id == "none"


@pytest.mark.parametrize("acct", [None, COMPLETED])
def test_a_run_that_finishes_after_fairseqs_recovery_from_an_oom_completed(catalogue, acct):
    text = TRAINING + LOGGED_OOM + RECOVERY + _train_inner(4, 300) + DONE
    d = read_log(catalogue, text, acct)
    assert d.class_id == "completed"
    assert "cuda_oom" not in d.secondary


def test_fairseqs_retried_validation_batch_is_survived(catalogue):
    retry = _fairseq(5, "WARNING", "fairseq.trainer",
                     "ran out of memory in validation step, retrying batch")
    d = read_log(catalogue, TRAINING + LOGGED_OOM + retry + _train_inner(6, 300) + DONE)
    assert d.class_id == "completed"


def test_fairseqs_printed_recovery_before_its_logging_is_survived(catalogue):
    """fairseq before 0.9 printed its lines with a `| ` prefix."""
    progress = ("| epoch 001:   {n} / 1000 loss=9.12, nll_loss=8.1, ppl=274.4, wps=12345, ups=1, "
                "wpb=8192, bsz=64, num_updates={n}, lr=0.0005, gnorm=1.2, clip=0.000, oom=0.000, "
                "wall=80, train_wall=70\n")
    text = (progress.format(n=100) + f"| OOM: Ran out of memory with exception: {OOM_TEXT}\n"
            "| WARNING: attempting to recover from OOM in forward/backward pass\n"
            "| WARNING: OOM in all workers, skipping update\n"
            + progress.format(n=200) + "| done training in 540.2 seconds\n")
    assert read_log(catalogue, text).class_id == "completed"


def test_an_oom_whose_recovery_the_log_ends_in_is_still_the_cause(catalogue):
    """Nothing after the recovery line shows the run survived it."""
    d = read_log(catalogue, TRAINING + LOGGED_OOM + RECOVERY)
    assert d.class_id == "cuda_oom"


def test_an_oom_fairseq_does_not_recover_from_is_the_cause(catalogue):
    """An earlier OOM recovered from does not excuse the one in the optimizer step."""
    irrecoverable = (
        _fairseq(7, "WARNING", "fairseq.trainer",
                 f"OOM: Ran out of memory with exception: {OOM_TEXT}")
        + _fairseq(7, "ERROR", "fairseq.trainer", "OOM during optimization, irrecoverable")
        + "Traceback (most recent call last):\n"
        '  File "/opt/fairseq/fairseq/trainer.py", line 1003, in train_step\n'
        "    self.task.optimizer_step(\n"
        f"torch.cuda.OutOfMemoryError: {OOM_TEXT}\n")
    text = TRAINING + LOGGED_OOM + RECOVERY + _train_inner(4, 300) + irrecoverable
    d = read_log(catalogue, text)
    assert d.class_id == "cuda_oom"
    assert min(e.line for e in d.evidence) > len((TRAINING + LOGGED_OOM).splitlines())


FINDER = ("GPU available: True (cuda), used: True\n"
          "Batch size 2 succeeded, trying batch size 4\n"
          "Batch size 4 succeeded, trying batch size 8\n"
          "Batch size 8 failed, trying batch size 4\n")
FINDER_DONE = "Finished batch size finder, will continue with full run using batch size 4\n"
EPOCH_BAR = ("Epoch 0:  45%|████▌     | 450/1000 [02:10<02:39,  3.45it/s, v_num=3, "
             "train_loss=0.512]\n")


def test_a_log_that_ends_in_lightnings_batch_size_finder_backing_off_is_running(catalogue):
    assert read_log(catalogue, FINDER).class_id == "none"
    assert read_log(catalogue, FINDER + FINDER_DONE + EPOCH_BAR).class_id == "none"


def test_a_run_that_finishes_after_lightnings_finder_backed_off_completed(catalogue):
    end = ("Epoch 9: 100%|██████████| 1000/1000 [04:50<00:00,  3.45it/s, v_num=3, "
           "train_loss=0.112]\n`Trainer.fit` stopped: `max_epochs=10` reached.\n")
    d = read_log(catalogue, FINDER + FINDER_DONE + EPOCH_BAR + end, COMPLETED)
    assert d.class_id == "completed"


def test_an_oom_after_lightnings_finder_is_the_cause(catalogue):
    """The finder's pick still runs out of memory in the fit: nothing caught that one."""
    oom = ("Traceback (most recent call last):\n"
           '  File "train.py", line 40, in <module>\n'
           "    trainer.fit(model, datamodule=dm)\n"
           f"torch.OutOfMemoryError: {OOM_TEXT}\n")
    assert read_log(catalogue, FINDER + FINDER_DONE + EPOCH_BAR + oom).class_id == "cuda_oom"


def test_another_error_after_lightnings_finder_backed_off_still_reads_as_a_failure(catalogue):
    error = ("Traceback (most recent call last):\n"
             '  File "train.py", line 40, in <module>\n'
             "    trainer.fit(model, datamodule=dm)\n"
             "KeyError: 'labels'\n")
    assert read_log(catalogue, FINDER + error).class_id == "unknown_failure"


UNCAUGHT_OOM = ("Traceback (most recent call last):\n"
                '  File "/opt/fairseq/fairseq_cli/train.py", line 180, in train\n'
                "    log_output = trainer.train_step(samples)\n"
                f"torch.cuda.OutOfMemoryError: {OOM_TEXT}\n")
FAILED = Accounting(state="FAILED", exit_code=1, signal=0, elapsed_s=600)


@pytest.mark.parametrize("acct", [None, FAILED])
def test_an_oom_raised_through_a_traceback_is_the_cause_despite_a_later_recovery(catalogue, acct):
    """fairseq logs the OOM it catches with no traceback: one raised through a traceback (a
    rank's own) is no OOM its recovery line answers."""
    ranks = "".join(f"[rank1]:{line}\n" for line in UNCAUGHT_OOM.splitlines())
    for uncaught in (UNCAUGHT_OOM, ranks):
        d = read_log(catalogue, TRAINING + uncaught + RECOVERY + _train_inner(4, 300), acct)
        assert d.class_id == "cuda_oom"


def test_another_ranks_recovery_answers_no_oom(catalogue):
    caught = "".join(f"[rank1]:{line}\n" for line in LOGGED_OOM.splitlines())
    d = read_log(catalogue, TRAINING + caught + f"[rank0]:{RECOVERY}" + _train_inner(4, 300),
                 FAILED)
    assert d.class_id == "cuda_oom"


def test_a_recovery_answers_no_oom_before_the_training_line_before_it(catalogue):
    text = TRAINING + UNCAUGHT_OOM + _train_inner(4, 300) + LOGGED_OOM + RECOVERY
    d = read_log(catalogue, text + _train_inner(5, 400), FAILED)
    assert d.class_id == "cuda_oom"
    assert min(e.line for e in d.evidence) <= len((TRAINING + UNCAUGHT_OOM).splitlines())


@pytest.mark.parametrize("acct", [None, FAILED])
def test_lightnings_finder_backing_off_answers_no_oom_in_the_log(catalogue, acct):
    """The finder never logs the OOM it backs off from: an OOM line before its back-off is
    another one, which nothing caught."""
    text = TRAINING + UNCAUGHT_OOM + "Batch size 8 failed, trying batch size 4\n" + EPOCH_BAR
    assert read_log(catalogue, text, acct).class_id == "cuda_oom"


def test_the_reports_of_going_on_after_an_oom_are_the_catalogues_hints(catalogue):
    hints = {p.pattern for p in catalogue.classes["cuda_oom"].hints}
    going_on = {*FAIRSEQ_OOM_RECOVERIES, LIGHTNING_BATCH_SIZE_BACK_OFF, OPENNMT_BATCH_REMOVED}
    assert going_on <= hints
    reports = [line for line in hints if GOES_ON_AFTER_OOM.search(line.replace("[0-9]+", "8"))]
    assert sorted(reports) == sorted(going_on)


def _onmt(second: int, message: str) -> str:
    """A line of OpenNMT-py's logger (`[%(asctime)s %(levelname)s] %(message)s`)."""
    return f"[2024-06-01 10:{second // 60:02d}:{second % 60:02d},123 INFO] {message}\n"


def _onmt_report(step: int, second: int) -> str:
    return _onmt(second, f"Step {step:2d}/10000; acc: 45.2; ppl: 30.1; xent: 3.4; lr: 0.00100; "
                         f"sents:    3200; bsz: 1234/1456/32; 12345/13456 tok/s; {second:6d} sec;")


ONMT_TRAINING = _onmt_report(100, 60) + _onmt_report(200, 120)
BATCH_REMOVED = _onmt(130, "Step 250, cuda OOM - batch removed")
KEY_ERROR = ("Traceback (most recent call last):\n"
             '  File "/opt/OpenNMT-py/onmt/bin/train.py", line 71, in <module>\n'
             "    main()\n"
             "KeyError: 'src'\n")
CANCELLED = "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-06-01T10:05:00 ***\n"


@pytest.mark.parametrize("acct", [None, FAILED])
@pytest.mark.parametrize("end", [KEY_ERROR, CANCELLED], ids=["KeyError", "scancel"])
def test_an_error_after_opennmts_removed_batch_is_not_its_oom(catalogue, acct, end):
    """OpenNMT-py caught the OOM and skipped its batch: a later error is another one, not a GPU
    memory exhaustion (its words `cuda OOM` no longer name the cause)."""
    d = read_log(catalogue, ONMT_TRAINING + BATCH_REMOVED + end, acct)
    assert d.class_id == "unknown_failure"
    assert "cuda_oom" not in d.secondary


def test_a_run_that_trains_on_after_opennmts_removed_batch_is_running(catalogue):
    d = read_log(catalogue, ONMT_TRAINING + BATCH_REMOVED + _onmt_report(300, 180))
    assert d.class_id == "none"


@pytest.mark.parametrize("acct", [None, FAILED, COMPLETED], ids=["log alone", "exit 1", "exit 0"])
@pytest.mark.parametrize("ranks", [1, 2])
def test_a_log_that_ends_in_opennmts_removed_batch_ended_of_that_oom(catalogue, acct, ranks):
    """Tensor-parallel's exit after the line (each rank's own): nothing after it, the OOM it
    caught ended the run. Its `sys.exit()` exits 0: Slurm's COMPLETED 0:0 is that exit, no
    silent one (it read `silent_exit`)."""
    d = read_log(catalogue, ONMT_TRAINING + BATCH_REMOVED * ranks, acct)
    assert (d.class_id, d.decided_by) == ("cuda_oom", "hint")
    assert "Step 250, cuda OOM - batch removed" in d.evidence[-1].text


def test_an_exit_0_after_training_on_past_opennmts_removed_batch_is_no_oom(catalogue):
    """The run trained on after the batch it removed: its exit 0 short of its steps is a silent
    exit, not that OOM."""
    d = read_log(catalogue, ONMT_TRAINING + BATCH_REMOVED + _onmt_report(300, 180), COMPLETED)
    assert d.class_id == "silent_exit"
