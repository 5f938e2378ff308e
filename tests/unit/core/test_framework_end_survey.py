"""A finished run of widely used training code, as `trainbot diagnose FILE` shows it with no
accounting: each framework's log tail (support.framework_ends, built from its source's format
strings) reads `Training completed` where the code prints a line of its own after its loop or a
counter at its total, and `running, nothing to report` where nothing tells its end from a cut run;
one read by a total its log printed before its loop (nanoGPT's `max_iters`, mmengine's
`max_epochs`, mmcv 1.x's runner's `max: 12 epochs`, torchtune's config's `epochs: 3`), by its
last save's word (k-diffusion's `Done!`) or by its save at the last epoch its progress lines
count (pycls's `Wrote checkpoint to: …/model_epoch_0100.pyth`) reads `running` when cut short of
it at the same point. The new markers (BasicSR's
`End of training. Time consumed`, DeepSpeed-Chat's `saving the final model ...`) are held to the
end markers' rules too: more training or an error after one is no finished run."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import assert_still_running, assert_the_error_decides, read
from support.framework_ends import CUT_SHORT, ENDS, MARKERS

from bot.cli import main
from bot.core.catalogue import Catalogue
from bot.core.models import Accounting

VERDICT = {"completed": "completed - Training completed",
           "none": "none - running, nothing to report"}


def _diagnose(tmp_path, capsys, log: str) -> str:
    """`trainbot diagnose` of `log`'s first line, after the file's path."""
    path = tmp_path / "job.log"
    path.write_text(log, encoding="utf-8")
    assert main(["diagnose", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{path}: ")
    return first.removeprefix(f"{path}: ")


@pytest.mark.parametrize(("log", "verdict"), list(ENDS.values()), ids=list(ENDS))
def test_trainbot_diagnose_shows_the_frameworks_end(tmp_path, capsys, log, verdict):
    assert _diagnose(tmp_path, capsys, log) == VERDICT[verdict]


@pytest.mark.parametrize("log", list(CUT_SHORT.values()), ids=list(CUT_SHORT))
def test_a_run_cut_short_of_its_printed_total_shows_still_running(tmp_path, capsys, log):
    assert _diagnose(tmp_path, capsys, log) == VERDICT["none"]


@pytest.mark.parametrize("name", list(MARKERS), ids=list(MARKERS))
def test_the_end_is_read_by_its_own_line(name):
    d = read(ENDS[name][0])
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert any(MARKERS[name] in e.text for e in d.evidence)


BASICSR = ENDS["BasicSR (Real-ESRGAN, NAFNet, HAT ...)"][0]
DS_CHAT = ENDS["deepspeed-chat step1"][0]
# a next run's first lines after the marker (the same script run again in one job; BasicSR's
# lines are its MessageLogger's, bot.core.framework_lines)
DS_CHAT_AGAIN = "".join(f"Epoch: 0, Step: {s}, Rank: 0, loss = 2.{s:04d}\n" for s in (1, 2, 3))
OPENPCDET = ENDS["OpenPCDet"][0]
SLOWFAST = ENDS["SlowFast"][0]
SPEECHBRAIN = ENDS["SpeechBrain"][0]
MONAI = ENDS["MONAI"][0]
# its next run's training bar (train_one_epoch's tqdm `train` bar on rank 0, its postfix the
# step's figures: with --use_tqdm_to_record) or its `Start training …` line and `Train: ...` log
# lines (without it)
OPENPCDET_BAR_AGAIN = "".join(
    f"train:  {s * 10}%|{'#' * s}{' ' * (10 - s)}| {s * 371}/3712 [0{s}:00<25:00,  2.45it/s, "
    f"loss=1.{s}1, lr=0.002, d_time=0.01(0.01), f_time=0.40(0.41), b_time=0.41(0.42)]\n"
    for s in (1, 2, 3))
OPENPCDET_AGAIN = "2024-05-02 08:00:00,123   INFO  " + "*" * 22 + (
    "Start training cfgs/kitti_models/pointpillar(default)") + "*" * 22 + "\n" + "".join(
    f"2024-05-02 08:0{s}:00,123   INFO  Train: {1:>4d}/80 ({100 / 80:>3.0f}%) [{it:>4d}/3712 "
    f"({100 * it / 3712:>3.0f}%)]  Loss: 1.{s}12 (1.{s}1)  LR: 1.000e-03  Time cost: 0{s}:00/25:00 "
    f"[0{s}:00/1 day, 14:00:00]  Acc_iter {it + 1:<10d}  Data time: 0.01(0.01)  Forward time: "
    f"0.40(0.41)  Batch time: 0.41(0.42)\n" for s, it in ((1, 49), (2, 99), (3, 149)))
# its next run's TrainMeter lines (json_stats, keys sorted)
SLOWFAST_AGAIN = "".join(
    f"[05/02 08:0{s}:00][INFO] logging.py:   97: json_stats: {{\"RAM\": \"41.21/503.81G\", "
    f"\"_type\": \"train_iter_\", \"dt\": 0.41, \"dt_data\": 0.001, \"dt_net\": 0.40, "
    f"\"epoch\": \"1/196\", \"eta\": \"1 day, 4:00:00\", \"gpu_mem\": \"9.12G\", \"grad_norm\": "
    f"3.12, \"iter\": \"{s * 10}/1250\", \"loss\": 5.{s}1, \"lr\": 0.0001, \"top1_err\": 99.0, "
    f"\"top5_err\": 95.0}}\n" for s in (1, 2, 3))
# its next run's StatsHandler lines
MONAI_AGAIN = "".join(
    f"2024-05-01 19:30:0{i},123 - INFO - Epoch: 1/100, Iter: {i}/20 -- loss: 1.{i}1 \n"
    for i in (1, 2, 3))
BASICSR_AGAIN = "".join(
    f"2024-05-01 19:3{s + 2}:00,123 INFO: [train..][epoch:  1, iter:{s * 100:8,d}, "
    f"lr:(1.000e-04,)] [eta: 1 day, 2:03:04, time (data): 0.215 (0.003)] l_pix: 3.{s}000e-02 \n"
    for s in (1, 2, 3))


@pytest.mark.parametrize(("log", "again"), [
    (BASICSR, BASICSR_AGAIN), (DS_CHAT, DS_CHAT_AGAIN), (OPENPCDET, OPENPCDET_BAR_AGAIN),
    (OPENPCDET, OPENPCDET_AGAIN), (SLOWFAST, SLOWFAST_AGAIN), (MONAI, MONAI_AGAIN)],
    ids=["basicsr", "deepspeed-chat", "openpcdet-bar", "openpcdet", "slowfast", "monai"])
def test_more_training_after_the_new_markers_is_still_running(log, again):
    assert_still_running(log + again)


@pytest.mark.parametrize("log", [BASICSR, DS_CHAT, OPENPCDET, SLOWFAST, SPEECHBRAIN, MONAI],
                         ids=["basicsr", "deepspeed-chat", "openpcdet", "slowfast", "speechbrain",
                              "monai"])
def test_an_error_after_the_new_markers_decides(log):
    assert_the_error_decides(log)


def test_a_per_epoch_time_or_another_save_is_no_end():
    # BasicSR's own lines mid-run, and other programs' per-epoch wording
    for line in ("Saving models and training states.", "Epoch 3 done. Time consumed: 0:12:01",
                 "Saving the final model to out/ after epoch 3", "saving model ..."):
        assert read(DS_CHAT_AGAIN + line + "\n" + DS_CHAT_AGAIN).class_id == "none"
        assert read(DS_CHAT_AGAIN + DS_CHAT_AGAIN + line + "\n").class_id == "none"


def test_speechbrains_step_limit_ends_its_epochs():
    # Brain._fit_train once optimizer_step_limit is reached (speechbrain/core.py 9c826ef3937b),
    # then the last validation; not a recipe's own words for another limit
    epoch = ("speechbrain.utils.train_logger - epoch: 3, lr: 1.00e-03 - train loss: 5.12e-01 - "
             "valid loss: 6.01e-01\n")
    d = read(epoch + "speechbrain.core - Train iteration limit exceeded\n" + epoch)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert read(epoch + "Train iteration limit exceeded by 3 steps; clipping\n").class_id == "none"


LDM = ENDS["latent-diffusion main.py"][0]
# main.py's melk (CompVis/latent-diffusion main.py a506df575647): on an exception out of
# trainer.fit (before its traceback), on SIGUSR1 (Slurm's --signal before a time limit: the run
# goes on) and on a KeyboardInterrupt Lightning caught (SetupCallback.on_keyboard_interrupt)
SUMMONING = "Summoning checkpoint.\n"
LDM_OOM = ("Traceback (most recent call last):\n"
           '  File "main.py", line 719, in <module>\n'
           "    trainer.fit(model, data)\n"
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
           "79.15 GiB total capacity; 75.12 GiB already allocated; 1.02 GiB free; 76.01 GiB "
           "reserved in total by PyTorch)\n")
# the next epoch's bar
LDM_MORE = "\r".join(
    f"Epoch 43: {n // 10:3d}%|{'#' * (n // 100):<10}| {n}/1000 [01:00<09:00,  1.50it/s, loss=0.01"
    f"23, v_num=0, global_step={43000 + n - 1}.000]" for n in (100, 200, 300)) + "\n"


def test_ldms_summoning_checkpoint_is_a_failure_sign_not_an_end():
    d = read(LDM + SUMMONING)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")
    assert read(LDM + SUMMONING + LDM_OOM).class_id == "cuda_oom"
    # a signal's: the training goes on after it
    assert read(LDM + SUMMONING + LDM_MORE).class_id == "none"


# Lightning's notice of the SIGTERM at the limit, 2.0 on (signal_connector.py,
# _sigterm_notifier_fn), before its SIGTERMException (a SystemExit: no traceback)
LIGHTNING_SIGTERM = "[rank: 0] Received SIGTERM: 15\n"
KEY_ERROR = ("Traceback (most recent call last):\n"
             '  File "main.py", line 719, in <module>\n'
             "    trainer.fit(model, data)\n"
             "KeyError: 'caption'\n")


@pytest.mark.parametrize("end", [SUMMONING, LIGHTNING_SIGTERM], ids=["melk", "sigterm"])
def test_a_run_that_melk_saved_on_sigusr1_and_then_stops_hit_its_time_limit(end):
    """Training went on after melk's `Summoning checkpoint.`: it was Slurm's --signal=USR1
    warning before the limit; a log that then ends in nothing but a stop ended there (it read
    `unknown_failure`), that first summoning its evidence."""
    d = read(LDM + SUMMONING + LDM_MORE + end)
    assert (d.class_id, d.decided_by) == ("time_limit", "hint")
    assert [e.line for e in d.evidence] == [LDM.count("\n") + 1]


def test_an_error_after_melks_save_on_sigusr1_is_no_time_limit():
    d = read(LDM + SUMMONING + LDM_MORE + SUMMONING + KEY_ERROR)
    assert d.class_id == "unknown_failure"


# main.py's handlers (CompVis/stable-diffusion main.py 21f890f9, latent-diffusion's alike):
# SIGUSR1's melk prints `Summoning checkpoint.`, saves last.ckpt and returns, so training goes
# on; SIGUSR2's divein opens pudb on rank 0 (no line of its own). After `trainer.fit` only an
# exception (melk, then its traceback: exit 1) or a KeyboardInterrupt Lightning caught
# (SetupCallback.on_keyboard_interrupt's `Summoning checkpoint.`; fit() returns, no test
# when trainer.interrupted: exit 0) print it again. Slurm's time limit itself is sacct's TIMEOUT.
_LDM_FAILED = Accounting(state="FAILED", exit_code=1, signal=0, elapsed_s=6000)
_LDM_COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=6000)
_LDM_TIMEOUT = Accounting(state="TIMEOUT", exit_code=0, signal=15, elapsed_s=6000)


@pytest.mark.parametrize(("acct", "reading"), [
    (None, ("none", "progress")),  # training after melk's save: still running
    (_LDM_FAILED, ("unknown_failure", "accounting")),  # died of nothing it said, not the limit
    (_LDM_TIMEOUT, ("time_limit", "accounting")),
], ids=["no accounting", "FAILED", "TIMEOUT"])
def test_a_log_ending_in_training_after_melks_save_on_sigusr1(acct, reading):
    d = read_log(Catalogue.load(), LDM + SUMMONING + LDM_MORE, acct)
    assert (d.class_id, d.decided_by) == reading


def test_a_second_summoning_with_exit_0_is_a_run_stopped_short():
    """The only summoning fit() returns after is Lightning's caught KeyboardInterrupt: exit 0
    with the training not done, a silent exit (not the time limit, which is TIMEOUT)."""
    d = read_log(Catalogue.load(), LDM + SUMMONING + LDM_MORE + SUMMONING, _LDM_COMPLETED)
    assert (d.class_id, d.decided_by) == ("silent_exit", "detector")
