"""The lines research repositories' own training loops print (pure; no I/O), read for
bot.core.framework_lines' `read_framework_line`: Swin Transformer's main.py, torchreid's
Engine, PaddleOCR's tools/program.py, timm's train.py, BasicSR's MessageLogger (and the
restoration trainers that run it), nanoGPT's train.py, StyleGAN2-ADA's and StyleGAN3's
training_loop, and OpenPCDet's train_one_epoch (its lines, or its tqdm bars with
--use_tqdm_to_record): each one's step, its target when the line or the log names it, its pace,
loss and GPU memory where it prints them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.framework_lines.epoch_steps import run_step_of_epoch_bar
from bot.core.progress_bars import NUMBER, TQDM_BAR
from bot.core.units import MIB

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# Swin Transformer's loops (microsoft/Swin-Transformer main.py f82860b; main_moe.py,
# main_simmim_pt.py and main_simmim_ft.py alike): train_one_epoch's `Train: [{epoch}/{EPOCHS}]
# [{idx}/{num_steps}]\teta {timedelta} lr {lr:.6f}\t …\ttime {val:.4f} ({avg:.4f})\tloss …\t
# mem {MB:.0f}MB`, logged after step idx (from 0) of epoch `epoch` (from 0: `range(START_EPOCH,
# EPOCHS)`), and validate's `Test: [{idx}/{len}]\tTime …\tLoss …\tAcc@1 …\tMem {MB:.0f}MB`, an
# evaluation's batches. `time` is the step's seconds; `mem`/`Mem` torch.cuda.max_memory_allocated
# in MiB: GPU memory, no host memory.
_SWIN = re.compile(r"(?<![\w:])(?:Train: \[(\d+)/(\d+)\]\[(\d+)/(\d+)\]\s+eta "
                   r"|Test: \[(\d+)/(\d+)\]\s+Time )")
_SWIN_TIME = re.compile(rf"(?<![\w/])time ({NUMBER}) \(")
_SWIN_MEM = re.compile(r"(?<![\w/])[Mm]em (\d+)MB(?=\s|$)")
# torchreid's engine (KaiyangZhou/deep-person-reid torchreid/engine/engine.py f8cd150,
# Engine.train): `epoch: [{epoch}/{max_epoch}][{batch}/{num_batches}]\ttime {val:.3f}
# ({avg:.3f})\tdata …\teta {timedelta}\t{losses}\tlr {lr:.6f}`, every print_freq batches, epoch
# and batch from 1: the steps done are the epochs before it (as many batches as this one's) and
# this one's batches, the target every epoch's batches, `time` the batch's seconds. Its epoch
# counter is what bot.core.diagnose.last_epoch reads for the last epoch; Engine.run ends in
# its final test's results, the model's save and `Elapsed {timedelta}` (a closing summary:
# bot.core.diagnose.closing_summary).
_TORCHREID = re.compile(
    rf"(?<![\w:])epoch: \[(\d+)/(\d+)\]\[(\d+)/(\d+)\]\s+time ({NUMBER}) \(")
# PaddleOCR's training loop (PaddlePaddle/PaddleOCR tools/program.py, train): `epoch: [{epoch}/
# {epoch_num}], global_step: {global_step}, {stats}, avg_reader_cost: {:.5f} s, avg_batch_cost:
# {:.5f} s, avg_samples: …, ips: … samples/s, eta: …` (older releases: `iter: {global_step}`,
# `batch_cost: {:.5f} s`), every print_batch_step steps and at each epoch's last: the global step
# is the iteration (no target: the steps of an epoch are not printed), the batch cost the
# seconds per step averaged since the line before. Its epoch counter is what
# bot.core.diagnose.last_epoch reads for the last epoch.
_PADDLEOCR = re.compile(r"(?<![\w:])epoch: \[\d+/\d+\], (?:global_step|iter): (\d+),")
_PADDLEOCR_PACE = re.compile(rf"(?<![\w])(?:avg_)?batch_cost: ({NUMBER}) s(?=,|\s|$)")

# timm's train.py (huggingface/pytorch-image-models train.py, train_one_epoch): `Train: {epoch}
# [{update_idx:>4d}/{updates_per_epoch} ({pct:>3.0f}%)]  Loss: {val:#.3g} ({avg:#.3g})  Time:
# {val:.3f}s, {rate:>7.2f}/s  ({avg:.3f}s, …)  LR: …  Data: …` (before 2023 `[{batch_idx:>4d}/
# {len(loader)} …]`), every log_interval updates and at an epoch's last, epochs and updates from
# 0 (`range(start_epoch, num_epochs)`): the steps done are the epochs before it (as many as this
# one's) and this one's up to its update, `Time:` the update's seconds. The line names no epoch
# total: main() logs it before the loop (`Scheduled epochs: 300. LR stepped per epoch.`, since
# 2023 `Scheduled epochs: 300.` and the LR line apart): the epochs announced
# (bot.core.announced_targets) for the target. After the loop, and after `except
# KeyboardInterrupt: pass` too, it logs `*** Best metric: 80.124 (epoch 289)`: a closing summary
# only once the loop's count reached its target (bot.core.diagnose.closing_summary).
_TIMM = re.compile(r"(?<![\w:])Train: (\d+) \[\s*(\d+)/(\d+) \(\s*\d+%\)\]\s+(?:\w[^:]*: )")
_TIMM_TIME = re.compile(rf"(?<![\w/])Time: ({NUMBER})s, ")
# BasicSR's MessageLogger (XPixelGroup/BasicSR basicsr/utils/logger.py 8d56e3a, which Real-ESRGAN,
# NAFNet, Restormer, HAT and SwinIR's trainers run): `[{exp_name[:5]}..][epoch:{epoch:3d},
# iter:{current_iter:8,d}, lr:({lr:.3e},…)] [eta: {timedelta}, time (data): {iter:.3f}
# ({data:.3f})] {key}: {value:.4e} …`, every print_freq iterations (basicsr/train.py's loop:
# current_iter counts the iterations done, from 1 to total_iter, with thousands' commas), the
# eta/time part when the loop passed its timers (it always does). `time` is the iteration's
# seconds (the average over the timer's window). The values are the model's get_current_log():
# the loss terms, weighted, `l_pix`, `l_percep`, `l_style` (SRModel), `l_g_pix`, `l_g_percep`,
# `l_g_gan` then the discriminator's `l_d_real`, `out_d_real`, … (SRGANModel, Real-ESRGAN),
# `l_g`, `l_d`, … (StyleGAN2): the loss read is the first generator's term, the first `l_` key
# that is no discriminator's (`l_d…`), as the log shows it. The line names no total:
# create_train_val_dataloader logs it before the loop, in its `Training statistics:` record's
# last line, `\tTotal epochs: {total_epochs}; iters: {total_iters}.`: the
# iterations announced (bot.core.announced_targets) for the target.
_BASICSR = re.compile(r"\[[^\[\]]{1,5}\.\.\]\[epoch:\s*(\d+), iter:\s*(\d{1,3}(?:,\d{3})*), lr:\(")
_BASICSR_TIME = re.compile(rf"\btime \(data\): ({NUMBER}) \(")
_BASICSR_LOSS = re.compile(rf"(?<![\w.])(l_\w+): ({NUMBER}|nan|inf)(?=\s|$)")
# nanoGPT's train.py (karpathy/nanoGPT train.py 3adf61e1): `iter {iter_num}: loss {lossf:.4f},
# time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%` every log_interval iterations, iter_num
# counted from 0 up to max_iters itself (the loop breaks once iter_num passes max_iters, printing
# nothing): the iteration, max_iters its target. The line names no total: configurator.py prints
# each override, a `--max_iters=5000` argument's `Overriding: max_iters = 5000` and a config
# file's text after `Overriding config with config/train_shakespeare_char.py:` (its
# `max_iters = 5000` line), in the order they are run (the last one printed is the one in
# force): the iterations announced (bot.core.announced_targets) for the
# target. train.py's own default (600000) is printed nowhere: no target then. `time`
# is that one iteration's milliseconds (`dt = t1 - t0; t0 = t1` at each iteration's end: one that
# evaluated and saved first counts those too, the first one its compilation), the pace. Every
# eval_interval iterations, before that iteration's step, estimate_loss's `step {iter_num}: train
# loss {:.4f}, val loss {:.4f}`: a summary of an evaluation (Sample.evaluation_done), no step.
_NANOGPT = re.compile(
    rf"(?<![\w:])iter (\d+): loss (?:{NUMBER}|nan|inf), time ({NUMBER})ms, mfu ")
_NANOGPT_EVAL = re.compile(
    rf"(?<![\w:])step \d+: train loss (?:{NUMBER}|nan|inf), val loss (?:{NUMBER}|nan|inf)$")
# StyleGAN2-ADA's and StyleGAN3's training_loop (NVlabs/stylegan2-ada-pytorch training/
# training_loop.py d72cc7d041b4; stylegan3's alike): each tick's `tick {cur_tick:<5d} kimg
# {cur_nimg / 1e3:<8.1f} time {format_time:<12s} sec/tick {:<7.1f} sec/kimg {:<7.2f} …`, the
# thousands of images shown so far (kimg) counted as its iterations and its seconds per kimg as
# the pace. The line names no total: the loop announces it first, `Training for {total_kimg}
# kimg...` (bot.core.announced_targets), and runs until cur_nimg >= total_kimg * 1000; its
# last tick, at that total (a batch's images past it at most), is then logged, a last snapshot
# and metrics follow and `Exiting...`.
# The kimg are counted down to whole ones: a tick at the total is the loop's last
_STYLEGAN_TICK = re.compile(rf"^tick (\d+) +kimg ({NUMBER}) +time .+ sec/kimg ({NUMBER}) ")
# OpenPCDet's train_one_epoch (open-mmlab/OpenPCDet tools/train_utils/train_utils.py
# 8cacccec11db), unless tools/train.py ran with --use_tqdm_to_record: `Train:
# {cur_epoch+1:>4d}/{total_epochs} ({:>3.0f}%) [{cur_it:>4d}/{total_it_each_epoch} ({:>3.0f}%)]
# Loss: {loss.val:#.4g} ({loss.avg:#.3g})  LR: {lr:.3e}  Time cost: …  Acc_iter
# {accumulated_iter:<10d}  Data time: …  Forward time: …  Batch time: {val:.2f}({avg:.2f})`,
# every logger_iter_interval steps, at an epoch's first step and at its last, each once its
# step is done: cur_it counts from 0 (the last step's line is `3711/3712`), so the steps done
# are the epochs before it (as many as this one's) and this one's up to cur_it and it; the
# target every epoch's steps (the last step's line reaches it: only the checkpoint's save and
# `End training …` follow); `Batch time` the step's seconds. With --use_tqdm_to_record it
# draws tqdm bars instead: train_model's `tqdm.trange(start_epoch, total_epochs, desc='epochs')`,
# counting the epochs done (`epochs:  33%|███▎      | 1/3 [...]`, train_one_epoch's disp_dict
# as its postfix: `loss=…, lr=…, d_time=…`), and below it each epoch's `tqdm(total=
# total_it_each_epoch, desc='train')`, counting that epoch's steps, its postfix the run's
# (`total_it=` accumulated_iter, a resumed run's from its checkpoint's). The train bar's count is
# one epoch's, not the run's: its total_it is the iteration, the epochs bar's total times its
# total the target (`_OPENPCDET_EPOCHS_BAR`, the epochs announced: its first draw, `0/3`, comes
# before the first train bar's; any script's `tqdm(range(10), desc="epochs")` draws the same bar,
# so it is OpenPCDet's only in a run that showed the train bar: bot.core.training_lines keeps
# the epochs it counts until then). The epochs bar's count is no step of the run, and is left out:
# it moves only once the epoch's checkpoint is saved (the next loop's turn), after the train
# bar's draws at its total, and every rank draws it (the train bar is rank zero's alone).
_OPENPCDET = re.compile(
    r"(?<![\w:])Train: +(\d+)/(\d+) \( *\d+%\) \[ *(\d+)/(\d+) \( *\d+%\)\] +"
    rf"Loss: ({NUMBER}|nan|inf) \(")
_OPENPCDET_TIME = re.compile(rf"(?<![\w/])Batch time: ({NUMBER})\(")
_OPENPCDET_EPOCHS_BAR = re.compile(r"^epochs: +\d{1,3}%\|[^|]*\| *\d+/(\d+) \[")
_OPENPCDET_TRAIN_BAR = re.compile(r"^train: +\d{1,3}%\|")
_OPENPCDET_TOTAL_IT = re.compile(r"[ ,]total_it=(\d+)\]$")


def read_swin(body: str, s: Sample) -> str:
    """A Swin Transformer line (`_SWIN`): the training's gives its iteration (the steps done:
    the epochs before it, as many steps as this one's, and this one's up to its step), its
    target (all the epochs' steps) and its seconds per step; a validation's its batches done,
    as an evaluation's bar; any one's GPU memory (`mem 8123MB`). The body left for the rest of
    the grammar (its `loss …`): without the memory, which is no host memory."""
    m = _SWIN.search(body)
    if m is None:
        return body
    epoch, epochs, step, steps, batch, batches = m.groups()
    if epoch is not None:
        s.iteration = int(epoch) * int(steps) + int(step) + 1
        s.target_iter = int(epochs) * int(steps)
        pace = _SWIN_TIME.search(body, m.end())
        if pace is not None:
            s.sec_per_iter = float(pace.group(1))
    else:
        s.evaluation_batches = (int(batch) + 1, int(batches))
    mem = _SWIN_MEM.search(body, m.end())
    if mem is None:
        return body
    s.gpu_mem_bytes = int(mem.group(1)) * MIB
    return body[:mem.start()] + body[mem.end():]


def read_paddleocr(body: str, s: Sample) -> None:
    """A PaddleOCR training line (`_PADDLEOCR`): its global step as the iteration and its batch
    cost as the seconds per step."""
    m = _PADDLEOCR.search(body)
    if m is None:
        return
    s.iteration = int(m.group(1))
    pace = _PADDLEOCR_PACE.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def read_torchreid(body: str, s: Sample) -> None:
    """A torchreid training line (`_TORCHREID`): its steps done as the iteration, every epoch's
    batches as the target and the batch's seconds as the pace."""
    m = _TORCHREID.search(body)
    if m is None:
        return
    epoch, epochs, batch, batches = (int(g) for g in m.group(1, 2, 3, 4))
    s.iteration = (max(epoch, 1) - 1) * batches + batch
    s.target_iter = epochs * batches
    s.sec_per_iter = float(m.group(5))


def read_timm(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A timm training line (`_TIMM`): its steps done as the iteration, every scheduled epoch's
    updates as the target (when main() announced the epochs), the update's seconds as the
    pace."""
    m = _TIMM.search(body)
    if m is None:
        return
    epoch, update, updates = (int(g) for g in m.group(1, 2, 3))
    if updates <= 0 or update >= updates:
        return
    s.iteration = epoch * updates + update + 1
    if targets.epochs is not None and targets.epochs > epoch:
        s.target_iter = targets.epochs * updates
    pace = _TIMM_TIME.search(body, m.end() - 1)
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def read_basicsr(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A BasicSR training line (`_BASICSR`): its iterations done, the iterations train.py
    announced as the target (when it did), the iteration's seconds as the pace and its first
    generator's loss term as the loss."""
    m = _BASICSR.search(body)
    if m is None:
        return
    s.iteration = int(m.group(2).replace(",", ""))
    if targets.iterations is not None and targets.iterations >= s.iteration:
        s.target_iter = targets.iterations
    pace = _BASICSR_TIME.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))
    for loss in _BASICSR_LOSS.finditer(body, m.end()):
        if not loss.group(1).startswith("l_d"):
            s.loss = float(loss.group(2))
            return


def read_nanogpt(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A nanoGPT line: a training line's iteration (`_NANOGPT`) with the max_iters its
    configurator announced as its target (when it did) and its milliseconds as the seconds per
    iteration, or its evaluation's summary (`_NANOGPT_EVAL`)."""
    m = _NANOGPT.match(body)
    if m is not None:
        s.iteration = int(m.group(1))
        s.sec_per_iter = float(m.group(2)) / 1000
        if targets.iterations is not None and targets.iterations >= s.iteration:
            s.target_iter = targets.iterations
    elif _NANOGPT_EVAL.match(body) is not None:
        s.evaluation_done = True


def read_stylegan(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A StyleGAN tick line (`_STYLEGAN_TICK`): its whole kimg as the iteration, the kimg the
    loop announced as the target (when it did), its seconds per kimg as the pace."""
    m = _STYLEGAN_TICK.match(body)
    if m is None:
        return
    s.iteration = int(float(m.group(2)))
    s.sec_per_iter = float(m.group(3))
    if targets.iterations is not None and targets.iterations >= s.iteration:
        s.target_iter = targets.iterations


def read_openpcdet(body: str, s: Sample) -> None:
    """An OpenPCDet training line (`_OPENPCDET`): its steps done as the iteration, every
    epoch's steps as the target, its loss and the step's seconds (`Batch time`) as the pace."""
    m = _OPENPCDET.search(body)
    if m is None:
        return
    epoch, epochs, step, steps = (int(g) for g in m.group(1, 2, 3, 4))
    s.iteration = (max(epoch, 1) - 1) * steps + step + 1  # cur_it counts from 0
    s.target_iter = epochs * steps
    s.loss = float(m.group(5))
    pace = _OPENPCDET_TIME.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def read_openpcdet_bar(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """An OpenPCDet bar: the train bar's (`_OPENPCDET_TRAIN_BAR`, its postfix's `total_it=`)
    run's steps done as the iteration, every announced epoch's steps (as many as this bar
    counts) as the target, its rate as the pace; the epochs bar's (`_OPENPCDET_EPOCHS_BAR`)
    nothing but its postfix's figures. The body left for the rest of the grammar: without the
    bar's count, which is one epoch's steps or the epochs', not the run's steps."""
    bar = TQDM_BAR.search(body)
    if bar is None:
        return body
    if _OPENPCDET_EPOCHS_BAR.match(body) is not None:
        return body[:bar.start()] + body[bar.end():]
    total_it = _OPENPCDET_TOTAL_IT.search(body, bar.end())
    if _OPENPCDET_TRAIN_BAR.match(body) is None or total_it is None:
        return body
    return run_step_of_epoch_bar(body, bar, int(total_it.group(1)), s, targets)


def openpcdet_epochs_bar_total(body: str) -> int | None:
    """The epochs a line's message `body` counts when it is a bar labelled `epochs` drawn as
    OpenPCDet's (`_OPENPCDET_EPOCHS_BAR`); any script's `tqdm(..., desc="epochs")` draws the
    same, so it is OpenPCDet's only in a run that showed its train bar (`is_openpcdet_train_bar`,
    the caller's to know)."""
    m = _OPENPCDET_EPOCHS_BAR.match(body) if body.startswith("epochs:") else None
    return int(m.group(1)) if m is not None else None


def is_openpcdet_train_bar(body: str) -> bool:
    """Whether a line's message `body` is OpenPCDet's train bar: labelled `train`, its postfix's
    `total_it=` the run's steps (`_OPENPCDET_TRAIN_BAR`, `_OPENPCDET_TOTAL_IT`)."""
    return (body.startswith("train:") and _OPENPCDET_TRAIN_BAR.match(body) is not None
            and _OPENPCDET_TOTAL_IT.search(body) is not None)
