"""The progress lines of named training frameworks' own loggers (pure; no I/O): torchvision's
MetricLogger (and the DETR, DeiT and MAE scripts that copy it), maskrcnn-benchmark's trainer,
OpenMMLab's runners, Swin Transformer's loops, PaddleOCR's, torchreid's, timm's, BasicSR's,
nanoGPT's, StyleGAN's, OpenPCDet's, SlowFast's, pycls's and MONAI's, spaCy's training table's
rows, torchtune's recipes' bars and validation, MosaicML composer's Trainer's bars and console
lines, and detectron2's inference.

Each says, in its own shape, which step of the training it is at, its pace and its GPU memory;
bot.core.training_lines' `LineParser` asks `read_framework_line` first, then reads what is
left of the line with its generic grammar (`key: value` tokens, bars, Hugging Face dicts).
Some name no total on their progress lines but announce it before their loop: the parser
keeps what such lines announced (bot.core.announced_targets' `AnnouncedTargets`) and hands it
to `read_framework_line`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets
from bot.core.progress_bars import NUMBER, TQDM_BAR

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# The MetricLogger of torchvision's reference scripts (pytorch/vision references/classification/
# utils.py 041fe3bc301e, MetricLogger.log_every), which DETR, DeiT and MAE copy: the loop's
# header, `[{i}/{len(iterable)}]` (i padded to the length's width), `eta: …`, the meters (`loss:
# 0.8123 (0.8450)`: the window's median, the global average), `time: …` (seconds per step, the
# average), `data: …` and, on a GPU, `max mem: {MB:.0f}` (torch.cuda.max_memory_allocated in
# MiB: GPU memory, no host memory), joined by the logger's delimiter (the scripts' two blanks).
# The training loop's header is `Epoch: [3]` (train_one_epoch's; epochs from 0,
# `range(start_epoch, epochs)`): its iteration is the epochs before it (as many steps as this
# one's) and this one's steps, as an epoch's bar is read (bot.core.progress_bars,
# read_epoch_bar). Another header (`Test:`) is an evaluation's.
_METRIC_LOGGER = re.compile(r"\[\s*(\d+)/(\d+)\]\s+eta: ")
_METRIC_LOGGER_EPOCH = re.compile(r"(?<![\w:])Epoch: \[(\d+)\]\s+$")
_METRIC_LOGGER_TEST = re.compile(r"(?<![\w:])Test:\s+$")
_METRIC_LOGGER_TIME = re.compile(rf"(?<![\w/])time: ({NUMBER})(?=\s|$)")
_METRIC_LOGGER_MEM = re.compile(r"(?<![\w/])max mem: (\d+)(?=\s|$)")
_MIB = 1024**2
# maskrcnn-benchmark's trainer (facebookresearch/maskrcnn-benchmark 57eec25
# maskrcnn_benchmark/engine/trainer.py, do_train), which FCOS and its kin copy: its own
# MetricLogger's meters after `eta: {timedelta}  iter: {iteration}` (the steps done, from 1 to
# MAX_ITER, which is not printed: no target), `time: …` among them (the step's seconds, the
# window's median), then `lr: …  max mem: {MB:.0f}` (GPU MiB, as above). Its periodic
# validation (every TEST_PERIOD iterations) logs one line once the pass is over, `[Validation]:
# ` and the same parts joined alike (`[Validation]:   eta: …  iter: …`): the training's eta and
# iteration then, no progress of its own, and the validation set's meters (`loss: …`, no
# `time`), no training's: a summary of an evaluation (Sample.evaluation_done).
# Its inference (maskrcnn_benchmark/engine/inference.py, inference: the periodic validation's,
# dataset_name `[Validation]`, and tools/train_net.py's run_test after training) logs `Start
# evaluation on {dataset_name} dataset({len(dataset)} images).` before compute_on_dataset's
# `tqdm(data_loader)`, an unlabelled bar counting the evaluation's batches; the validation then
# runs its losses over a second such bar before its `[Validation]:` line.
MASKRCNN_EVALUATION_START = re.compile(r"(?<![\w:])Start evaluation on .+ dataset\(\d+ images\)\.")
#: The texts that mark a line opening or summing up a framework's evaluation (maskrcnn-benchmark's
#: `Start evaluation on …` and `[Validation]:` lines, above; torchtune's `Validation loss: …`,
#: `_TORCHTUNE_VALIDATION`), for a locator of such lines (bot.core.metrics, in a series read
#: sparsely: the bars between them are the evaluation's only once the line that opened it was
#: read, and a summary is the run's activity).
EVALUATION_MARKERS = ("Start evaluation on ", "[Validation]: ", "Validation loss: ")
_MASKRCNN = re.compile(r"(?<![\w:])(\[Validation\]:\s+)?eta: (?:\d+ days?, )?\d+:\d\d:\d\d\s+"
                       r"iter: (\d+)(?=\s)")
# OpenMMLab's runners' lines (mmdet 2.x, mmseg 0.x, mmpose: open-mmlab/mmcv 1.x
# mmcv/runner/hooks/logger/text.py, TextLoggerHook._log_info; mmdet 3.x and its kin:
# open-mmlab/mmengine mmengine/runner/log_processor.py, LogProcessor.get_log_after_iter): a
# header, then the logged values (`lr: 2.000e-04, eta: …, time: 0.512, data_time: 0.010, memory:
# 3512, …, loss: 0.4123`; mmengine's blank-separated). The training's header is `Iter [i/N]` /
# `Iter(train) [i/N]` (by iteration: i from 1 to max_iters N) or `Epoch [E][i/n]` /
# `Epoch(train) [E][i/n]` (by epoch: epochs and the epoch's steps from 1, n its steps; mmengine
# pads both: `Epoch(train)  [1][  50/7330]`); an evaluation's (`Epoch(val) [12][500]`,
# `Iter(val) [500]`, mmengine's `Epoch(val) [12][500/500]`, `Epoch(test) [500/500]`) is no
# training progress but an evaluation's batches (mmcv's, logged once the pass is over, all of
# them: EvalHook's `eval_iter_num`, the same count after each epoch's pass, or the epoch's
# training steps before mmcv 1.3.x: a summary of the pass, Sample.evaluation_done). mmengine
# sums a pass up once it is over too (LogProcessor.get_log_after_epoch: `Epoch(val)
# [12][500/500]    coco/bbox_mAP: 0.3740  …  data_time: 0.0100  time: 0.1000`, `Iter(val)
# [500/500]    mIoU: …`, `Epoch(test) [500/500]    …`): all n of n and the evaluator's metrics,
# no `eta:` (its batch lines, get_log_after_iter's, have one with IterTimerHook, 500/500 too:
# `_OPENMMLAB_ETA`). The logged names may hold `/` and `-` (mmengine's `coco/bbox_mAP`,
# mmcls's `accuracy_top-1`). `time:` is the seconds per step; `memory:`
# torch.cuda.max_memory_allocated in MiB: GPU memory, no host memory.
_OPENMMLAB = re.compile(
    r"(?<![\w(])(Epoch|Iter)(?:\((\w+)\))?\s*(?:\[\s*(\d+)\]\s*)?"
    r"\[\s*(\d+)(?:/(\d+))?\]\s+[\w./-]+: ")
_OPENMMLAB_ETA = re.compile(r"(?<![\w.])eta: ")
# mmengine's and mmcv 1.x's by-epoch lines name no epoch total: their config dump or runner
# announces it before the loop (bot.core.announced_targets), the epochs announced for their lines'
# target. LoggerHook's ignore_last (its default, mmcv's TextLoggerHook's too) leaves an epoch's last
# steps past the last logging interval unlogged (`[12][7300/7330]` is the last epoch's last line):
# CheckpointHook's save once the epoch is over says the rest (bot.core.diagnose.quiet_ending,
# ends_in_final_save).
_OPENMMLAB_TIME = re.compile(rf"(?<![\w.])time: ({NUMBER})(?=,|\s|$)")
_OPENMMLAB_MEM = re.compile(r"(?<![\w.])memory: (\d+)(?=,|\s|$)")
# detectron2's inference_on_dataset (facebookresearch/detectron2 detectron2/evaluation/
# evaluator.py 02b5c4e295e9), which DefaultTrainer.test runs on each test dataset (EvalHook's
# periodic evaluations, and its final one in after_train, after IterationTimer's `Total training
# time` since 1dac147 (2021-04): the hooks run in their order; tools/plain_train_net.py's do_test
# after do_train): `Start inference on {len(data_loader)} batches` (before 3a686d8, 2021-04:
# `images`), then, past its warm-up, every 5 s (log_every_n_seconds) `Inference done
# {idx + 1}/{total}. Dataloading: {:.4f} s/iter. Inference: {:.4f} s/iter. Eval: {:.4f} s/iter.
# Total: {:.4f} s/iter. ETA={eta}` (before: `Inference done {}/{}. {:.4f} s / img. ETA={}`):
# the evaluation's batches (0 of them as it starts), their seconds no pace of training.
_DETECTRON2_INFERENCE = re.compile(
    r"(?<![\w:])(?:Start inference on (\d+) (?:batches|images)(?=\s|$)"
    r"|Inference done (\d+)/(\d+)\. )")
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
# counter is what bot.core.diagnose.quiet_ending reads for the last epoch; Engine.run ends in
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
# bot.core.diagnose.quiet_ending reads for the last epoch.
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
# SlowFast's meters (facebookresearch/SlowFast slowfast/utils/meters.py 287ec0076846), logged by
# slowfast/utils/logging.py's log_json_stats as `json_stats: {…}` (simplejson, keys sorted,
# floats to 5 places): TrainMeter.log_iter_stats's `"_type": "train_iter_"` (`train_iter_ssl`)
# every LOG_PERIOD steps with `"epoch": "{cur_epoch+1}/{MAX_EPOCH}"`, `"iter": "{cur_iter+1}/
# {epoch_iters}"`, `"dt"` (the step's seconds) and `"loss"` (the window's median): the steps done
# are the epochs before it (as many as this one's) and this one's, the target every epoch's
# steps; its `train_epoch` summary names no step. ValMeter's `val_iter` lines count its
# evaluation's batches (`"iter": "{cur_iter+1}/{max_iter}"`) and its `val_epoch` line sums the
# pass up: an evaluation's, no training figure.
# pycls's meters (facebookresearch/pycls pycls/core/meters.py 5719de641657), which SlowFast's
# come from, log the same way (pycls/core/logging.py, dump_log_data: `json_stats: ` and
# simplejson's dump, keys sorted, floats to 4 places, after its `[%(filename)s: %(lineno)3d]: `):
# TrainMeter's `"_type": "train_iter"` every LOG_PERIOD steps (its `"epoch"` and `"iter"` as
# SlowFast's, `"time_diff"` the step's seconds), and `train_epoch` after the epoch; TestMeter's
# `test_iter` and `test_epoch` (the EMA model's `test_ema_iter`, `test_ema_epoch`) are the
# evaluation pycls/core/trainer.py's train_model runs after each epoch. Its loop then saves the
# epoch's checkpoint (`Wrote checkpoint to: …/checkpoints/model_epoch_0100.pyth`, the epoch from
# 1) and prints nothing after the last: a last epoch's steps left unlogged (LOG_PERIOD not
# dividing them) are told done by that save (bot.core.diagnose.quiet_ending,
# ends_in_final_save; `json_stats_epoch`)
_JSON_STATS = "json_stats: {"
_COUNT_OF_TOTAL = re.compile(r"(\d+)/(\d+)")
_JSON_STATS_TRAIN_EPOCH = re.compile(
    r'json_stats: \{.*?"_type": "train_iter\w*".*?"epoch": "(\d+)/\d+".*?"iter": "\d+/(\d+)"')
# MONAI's StatsHandler (Project-MONAI/MONAI monai/handlers/stats_handler.py d388d1c6fec8,
# _default_iteration_print; since 72021b6, 2020-05): `Epoch: {epoch}/{max_epochs}, Iter:
# {i}/{epoch_length} -- ` and the output's `{name}: {value:.4f} ` (`Loss: 0.4123 `, its tag, for
# a scalar output; the dict's scalar keys, sorted, for a dict: the trainers' `loss: 0.4123 `),
# after every iteration, i counting the epoch's iterations from 1: the steps done are the epochs
# before it (as many as this one's) and this one's, the target every epoch's. No pace. Its
# `Iter: 20/20` alone is the epoch's end, not the training's (the generic grammar read it so).
# An evaluator's engine runs as `Epoch: {E}/{E}` (SupervisedEvaluator.run: max_epochs = the
# trainer's epoch), but its default output_transform gives no scalar: it prints no such line.
# An engine run by iterations (ignite's `run(data, max_iters=N)`) stops at max_iters, inside
# its last epoch unless epoch_length divides it: the iterations its start announced
# (bot.core.announced_targets) are the target then; since ignite 3745b937e (2026-06) its state
# keeps no max_epochs in that mode, printed `Epoch: 3/None`
_MONAI = re.compile(r"(?<![\w:])Epoch: (\d+)/(\d+|None), Iter: (\d+)/(\d+) --(?= |$)")

# PyTorch-Ignite's own progress lines (pytorch/ignite de08e799cfb5), each at an iteration of
# the epoch, counted from 1 (`(iteration - 1) % epoch_length + 1`): the steps done are the epochs
# before it (epoch_length each) and this one's; the target every epoch's, or the max_iters its
# start announced (bot.core.announced_targets) when it reaches them (a run by iterations stops
# inside its last epoch unless epoch_length divides max_iters).
# - its ProgressBar (ignite/handlers/tqdm_logger.py): a tqdm bar of the epoch's iterations
#   (initial=1) drawn with `{desc}[{n_fmt}/{total_fmt}] {percentage:3.0f}%|{bar}{postfix}
#   [{elapsed}<{remaining}]`, desc `Epoch [{epoch}/{max_epochs}]` (tqdm adds `: `) only when
#   max_epochs is over 1: `Epoch [3/10]: [50/100]  50%|█████     , loss=0.123 [00:10<00:10]`
#   (an evaluator's engine runs one epoch: its bar is `Iteration: [20/50]`, none of these)
# - its FBResearchLogger (ignite/handlers/fbresearch_logger.py, log_every): the parts joined by
#   its delimiter (two blanks by default), `Epoch [{epoch}/{max_epochs}]`, `[{i}/{epoch_length}]:`,
#   `ETA: …`, the learning rates, the outputs, `Iter time: {:.4f} s` (the epoch's average seconds
#   per iteration), `Data prep time: …` and on a GPU `GPU Max Mem: {:.0f} MB` (MiB: GPU memory);
#   max_epochs is `None` in a run by iterations since ignite 3745b937e. An evaluator attached to
#   it runs one epoch (`Epoch [1/1]`): a line of one epoch is not read (whose engine's it is, the
#   line does not say)
_IGNITE_BAR = re.compile(r"^Epoch \[(\d+)/(\d+)\]: \[(\d+)/(\d+)\]\s+\d{1,3}%\|")
_IGNITE_RESEARCH = re.compile(r"(?<![\w:])Epoch \[(\d+)/(\d+|None)\]  \[(\d+)/(\d+)\]:  ETA: ")
_IGNITE_RESEARCH_PACE = re.compile(rf"  Iter time: ({NUMBER}) s(?=  |\s*$)")
_IGNITE_RESEARCH_GPU = re.compile(r"  GPU Max Mem: (\d+) MB\s*$")

# spaCy's console logger (explosion/spaCy spacy/training/loggers.py 041f47b3, console_logger_v3,
# which console_logger calls): before the loop it writes its table's header, wasabi's msg.row of
# `E`, `#`, each trainable component's `Loss {pipe}`, the score weights' columns and `Score`,
# upper-cased by setup_table (`Loss …` before 3.1; a name over 13 characters cut to 10 and
# `...`), each padded to its width (3, 6, 8 a loss, 6 a score), two blanks apart:
#     `E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE `
# then a rule of dashes; after each evaluation, log_step writes a row of the epoch, the step
# (`info["step"]`), each loss and score `{0:.2f}` and the score, right-aligned:
#     `  3     200         41.79   2123.60   41.19    0.41`
# The step (optimizer steps done, from 0) is the iteration; max_steps is printed nowhere (no
# target), and each loss is one component's sum since the last evaluation (no loss of the
# training's). A row of bare numbers is spaCy's only under its header, as many columns as it:
# rows before any header are another program's, no progress.
SPACY_TABLE_HEADER = r"^E {4}# {7}(?:LOSS|Loss) "
#: The text a spaCy table's header starts with, for a locator of such lines (bot.core.metrics)
SPACY_TABLE_MARKER = "E    #       "
_SPACY_HEADER = re.compile(SPACY_TABLE_HEADER)
_SPACY_COLUMN_GAP = re.compile(r" {2,}")
_SPACY_ROW = re.compile(r"^ *\d+ +(\d+)(?: +(?:-?\d+\.\d\d|nan|-?inf))+ *$")

# torchtune's recipes (pytorch/torchtune recipes/full_finetune_single_device.py and the other
# recipes' train(), bd2a0fc7c314): a tqdm bar per epoch counting its optimizer steps,
# `tqdm(total=self._steps_per_epoch)` (the full_finetune recipes' with `initial=inner_step_count,
# desc=f"{self.epochs_run}|{self.global_step}"`), described after each step as
# `f"{curr_epoch + 1}|{self.global_step}|Loss: {loss}"`: `3|3000|Loss: 0.8123: 100%|██████████|
# 1000/1000 [41:12<00:00,  2.47s/it]`. The bar's total is one epoch's steps, not the run's; the
# global step counts the run's steps (a resumed run's from its checkpoint's): the iteration.
# The run's total is every epoch's steps (TrainingProgress.total_training_steps: total_epochs *
# steps_per_epoch, max_steps_per_epoch already in the bar's total); the epochs are printed
# before the loop, in config.log_config's dump (`Running FullFinetuneRecipeSingleDevice with
# resolved config:`, then OmegaConf.to_yaml of the config, keys sorted): `epochs: 3` alone on
# its line, the epochs announced (bot.core.announced_targets) for the target only inside
# that dump (its `ResolvedConfigLines`: another program's YAML `epochs: 3` is no run's total
# of such bars; the banner also starts a run, bot.core.training_lines.TRAINING_START).
# After the loop only the checkpointer's final save speaks (`Saving final epoch checkpoint.`, the
# catalogue's marker); its metric logger writes a file (DiskLogger) unless configured to stdout
# (StdoutLogger's `Step 1000 | loss:0.8123 lr:2e-05 …`, the generic grammar's).
_TORCHTUNE_BAR = re.compile(rf"^(\d+)\|(\d+)(?:\|Loss: ({NUMBER}|nan|inf))?: *\d{{1,3}}%\|")
# The distributed recipes' validation (recipes/full_finetune_distributed.py,
# lora_finetune_distributed.py, qat_distributed.py: validate(), run every run_val_every_n_steps
# steps): rank zero logs `f"Validation loss: {avg_val_loss:.4f}"` (`inf` with no tokens), a
# summary of the pass (Sample.evaluation_done), no training loss; as its own log line, after its
# logger's prefix if any (logged after a bar's refresh, it may also follow the bar's draw on its
# line: that line's figures are the bar's)
_TORCHTUNE_VALIDATION = re.compile(rf"(?:^|:)Validation loss: (?:{NUMBER}|nan|inf)$")

# MosaicML composer's Trainer (mosaicml/composer 6405188805a0). Its ProgressBarLogger, on by
# default (progress_bar=True; composer/loggers/progress_bar_logger.py, _build_pbar), draws tqdm
# bars with `bar_format=desc + ' {l_bar}{bar:25}{r_bar}'`, desc the dataloader's label padded to
# 15 (`f'{state.dataloader_label:15}'`: the training's `train`, an evaluator's own, `eval`)
# then, with max_duration in epochs, `Epoch {n:3}: ` (n from 0; an evaluation mid-epoch `Batch
# {batch:3}: `), or for an evaluation with max_duration in another unit `{Unit:6} {value:5}: `,
# its unit `ba`: `train          Epoch   0:  45%|███████████▎             | 352/782 [00:18<00:22,
# 18.93ba/s, loss/train/total=0.4123]`. In epochs there is a training bar per epoch, counting
# its batches (their target every epoch's batches, as many as this one's, when the epochs
# max_duration names were printed, in its hyperparameters' dump: bot.core.announced_targets;
# else none); in another unit
# one bar for the whole training, its label `train` padded further, counting to max_duration
# (the generic grammar reads it). An evaluator's bar counts its batches: an evaluation's
# (`_COMPOSER_BAR`). Its ConsoleLogger (log_to_console=True; composer/loggers/console_logger.py)
# prints `[{unit}={n}/{max_duration}]` (`[batch=120/4800]:`, in batches, samples or tokens) or
# in epochs `[epoch={epoch + 1}][batch={batch_in_epoch}/{dataloader_len}]:`, each followed by
# its metrics on lines of their own (`\t Train loss/train/total: 2.1102`), and an evaluation's
# `[Eval batch={batch}/{total}] Eval on {label} data` at the deciles of its batches, then at
# eval_end the same with `:` and its metrics after it, the pass's summary (`_COMPOSER_CONSOLE`,
# `_COMPOSER_EVAL`). Trainer.fit prints nothing of its own after its loop (the ConsoleLogger's
# last line at fit_end, when the last batch's was not just printed): a run in batches, samples
# or tokens ends by progress; one in epochs too when its max_duration was dumped, else it has
# nothing to tell its end from a cut.
_COMPOSER_BAR = re.compile(r"^(\S+) *(?:(Epoch|Batch|Sample|Token) +(\d+):)? +\d{1,3}%\|")
_COMPOSER_BAR_PACE = re.compile(rf"\b({NUMBER})(ba/s|s/ba)\b")
_COMPOSER_BAR_LOSS = re.compile(rf"\bloss/train[\w/]*=({NUMBER}|nan|inf)\b")
_COMPOSER_CONSOLE = re.compile(
    r"^(?:\[epoch=(\d+)\])?\[(?:batch|sample|token)=(\d+)(?:/(\d+))?\]:?$")
_COMPOSER_EVAL = re.compile(r"^\[Eval batch=(\d+)/(\d+)\] Eval on \S+ data(:?)$")
# desc's label is padded to this many characters, the training bar's (in another unit than
# epochs) to as many as an evaluation's label and point: its percentage's `%|` after them
_COMPOSER_LABEL_WIDTH = 15
_COMPOSER_TRAINING_PERCENT_END = _COMPOSER_LABEL_WIDTH + 14 + 4

_NONE_ANNOUNCED = AnnouncedTargets()


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


def spacy_table_columns(body: str) -> int | None:
    """The number of columns of spaCy's training table when a line's message `body` is its
    header (`SPACY_TABLE_HEADER`), else None."""
    if not body.startswith("E ") or _SPACY_HEADER.match(body) is None:
        return None
    return len(_SPACY_COLUMN_GAP.split(body.strip()))


def read_framework_line(body: str, s: Sample, targets: AnnouncedTargets = _NONE_ANNOUNCED,
                        *, openpcdet_bars: bool = False, spacy_columns: int | None = None) -> str:
    """The figures a named framework's logger puts on a line's message `body` (after its time),
    set on `s`; the body left for the generic grammar (bot.core.training_lines): without the
    figures it must not read again as its own (a GPU memory as a host memory). `targets`: the
    totals the log announced before the loop, for the target of lines that name none;
    `openpcdet_bars`: whether the run showed OpenPCDet's train bar (its `epochs:` bar is then
    OpenPCDet's, else any script's bar, the generic grammar's); `spacy_columns`: the columns of
    the spaCy table whose header the run showed (`spacy_table_columns`), None when none (its
    rows are then no progress)."""
    if spacy_columns is not None and body[:1].isdigit():
        _spacy_row(body, s, spacy_columns)
    if "eta: " in body:
        body = _metric_logger(body, s)
        if "iter: " in body:
            body = _maskrcnn(body, s)
    if ("Epoch" in body or "Iter" in body) and "[" in body:
        _openmmlab(body, s, targets)
    if "Train: [" in body or "Test: [" in body:
        body = _swin(body, s)
    elif "Train: " in body and "[" in body:
        _timm(body, s, targets)
        _openpcdet(body, s)
    if "epoch: [" in body:
        _paddleocr(body, s)
        _torchreid(body, s)
    if "..][epoch:" in body:
        _basicsr(body, s, targets)
    if body.startswith(("iter ", "step ")):
        _nanogpt(body, s, targets)
    if body.startswith("tick "):
        _stylegan(body, s, targets)
    if _JSON_STATS in body:
        _json_stats(body, s)
    if body[:1].isdigit() and "|" in body:
        body = _torchtune(body, s, targets)
    elif body.startswith("train:") or (openpcdet_bars and body.startswith("epochs:")):
        body = _openpcdet_bar(body, s, targets)
    elif "%|" in body:
        body = _composer_bar(body, s, targets)
    elif body[:1] == "[" and "=" in body:
        _composer_console(body, s, targets)
    if ", Iter: " in body:
        body = _monai(body, s, targets)
    if "Epoch [" in body:
        body = _ignite(body, s, targets)
    if "nference " in body:
        _detectron2_inference(body, s)
    if "Validation loss: " in body and _TORCHTUNE_VALIDATION.search(body) is not None:
        s.evaluation_done = True
    return body


def _metric_logger(body: str, s: Sample) -> str:
    """A MetricLogger line's step and pace (`_METRIC_LOGGER`): the training's, under an
    `Epoch: [N]` header; an evaluation's (`Test:`) its batches done, as an evaluation's bar
    (its meters then read as no training's); and any one's GPU memory (`max mem: …` in MiB).
    The body left for the rest of the grammar (its meters: `loss: …`): without `max mem: …`,
    which is no host memory."""
    m = _METRIC_LOGGER.search(body)
    if m is None:
        return body
    epoch = _METRIC_LOGGER_EPOCH.search(body, 0, m.start())
    if epoch is not None:
        step, steps = int(m.group(1)), int(m.group(2))
        s.iteration = int(epoch.group(1)) * steps + step
        pace = _METRIC_LOGGER_TIME.search(body, m.end())
        if pace is not None:
            s.sec_per_iter = float(pace.group(1))
    elif _METRIC_LOGGER_TEST.search(body, 0, m.start()) is not None:
        s.evaluation_batches = (int(m.group(1)) + 1, int(m.group(2)))  # i counts from 0
    mem = _METRIC_LOGGER_MEM.search(body, m.end())
    if mem is None:
        return body
    s.gpu_mem_bytes = int(mem.group(1)) * _MIB
    return body[:mem.start()] + body[mem.end():]


def _maskrcnn(body: str, s: Sample) -> str:
    """A maskrcnn-benchmark trainer's line (`_MASKRCNN`): the training's gives its iteration
    and its seconds per step; its validation's is an evaluation's summary (its meters are the
    validation set's: the grammar reads no more of it); any one's GPU memory (`max mem: …` in
    MiB). The body left for the rest of the grammar (the training's meters: `loss: …`):
    without `max mem: …`, which is no host memory."""
    m = _MASKRCNN.search(body)
    if m is None:
        return body
    if m.group(1) is not None:
        s.evaluation_done = True
    else:
        s.iteration = int(m.group(2))
        pace = _METRIC_LOGGER_TIME.search(body, m.end())
        if pace is not None:
            s.sec_per_iter = float(pace.group(1))
    mem = _METRIC_LOGGER_MEM.search(body, m.end())
    if mem is None:
        return body
    s.gpu_mem_bytes = int(mem.group(1)) * _MIB
    return body[:mem.start()] + body[mem.end():]


def _openmmlab(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """An OpenMMLab runner's line (`_OPENMMLAB`): the training's gives its iteration (`Iter
    [i/N]`: i of the target N; `Epoch [E][i/n]`: the epochs before it, as many steps as this
    one's, and this one's, as an epoch's bar is read: bot.core.progress_bars, read_epoch_bar;
    with every one of the epochs announced as the target, when they were: mmengine's config's,
    mmcv 1.x's runner's) and its seconds per step; an evaluation's (`Epoch(val)`, `Iter(val)`,
    `Epoch(test)`) its batches done and their total, as an evaluation's bar (mmcv's `[500]`,
    printed once the pass is over, and mmengine's `[500/500]` with no `eta:`, its summary
    after the pass: all 500, a summary of the pass, new activity though the pass's last batch
    line or the epoch before printed the same count); any one's `memory:` is the GPU memory in
    MiB."""
    m = _OPENMMLAB.search(body)
    if m is None:
        return
    kind, mode, epoch, step, steps = m.groups()
    mem = _OPENMMLAB_MEM.search(body, m.end())
    if mem is not None:
        s.gpu_mem_bytes = int(mem.group(1)) * _MIB
    if mode not in (None, "train"):
        # an evaluation's: its batches, no iteration, target or pace of training
        s.evaluation_batches = (int(step), int(steps if steps is not None else step))
        # a summary once the pass is over: mmcv 1.x's (no total), mmengine's (n of n, no eta)
        s.evaluation_done = steps is None or (
            step == steps and _OPENMMLAB_ETA.search(body, m.start()) is None)
        return
    if steps is None or (kind == "Epoch") != (epoch is not None):
        return
    if epoch is None:
        s.iteration, s.target_iter = int(step), int(steps)
    else:
        s.iteration = (max(int(epoch), 1) - 1) * int(steps) + int(step)
        if targets.epochs is not None and targets.epochs >= int(epoch):
            s.target_iter = targets.epochs * int(steps)
    pace = _OPENMMLAB_TIME.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def _detectron2_inference(body: str, s: Sample) -> None:
    """A detectron2 inference line (`_DETECTRON2_INFERENCE`): its batches done (none as it
    starts) and their total, as an evaluation's bar; no iteration, target or pace of
    training."""
    m = _DETECTRON2_INFERENCE.search(body)
    if m is None:
        return
    start, done, total = m.groups()
    s.evaluation_batches = (0, int(start)) if start is not None else (int(done), int(total))


def _swin(body: str, s: Sample) -> str:
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
    s.gpu_mem_bytes = int(mem.group(1)) * _MIB
    return body[:mem.start()] + body[mem.end():]


def _paddleocr(body: str, s: Sample) -> None:
    """A PaddleOCR training line (`_PADDLEOCR`): its global step as the iteration and its batch
    cost as the seconds per step."""
    m = _PADDLEOCR.search(body)
    if m is None:
        return
    s.iteration = int(m.group(1))
    pace = _PADDLEOCR_PACE.search(body, m.end())
    if pace is not None:
        s.sec_per_iter = float(pace.group(1))


def _torchreid(body: str, s: Sample) -> None:
    """A torchreid training line (`_TORCHREID`): its steps done as the iteration, every epoch's
    batches as the target and the batch's seconds as the pace."""
    m = _TORCHREID.search(body)
    if m is None:
        return
    epoch, epochs, batch, batches = (int(g) for g in m.group(1, 2, 3, 4))
    s.iteration = (max(epoch, 1) - 1) * batches + batch
    s.target_iter = epochs * batches
    s.sec_per_iter = float(m.group(5))


def _timm(body: str, s: Sample, targets: AnnouncedTargets) -> None:
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


def _basicsr(body: str, s: Sample, targets: AnnouncedTargets) -> None:
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


def _nanogpt(body: str, s: Sample, targets: AnnouncedTargets) -> None:
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


def _stylegan(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A StyleGAN tick line (`_STYLEGAN_TICK`): its whole kimg as the iteration, the kimg the
    loop announced as the target (when it did), its seconds per kimg as the pace."""
    m = _STYLEGAN_TICK.match(body)
    if m is None:
        return
    s.iteration = int(float(m.group(2)))
    s.sec_per_iter = float(m.group(3))
    if targets.iterations is not None and targets.iterations >= s.iteration:
        s.target_iter = targets.iterations


def _openpcdet(body: str, s: Sample) -> None:
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


def _openpcdet_bar(body: str, s: Sample, targets: AnnouncedTargets) -> str:
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
    return _run_step_of_epoch_bar(body, bar, int(total_it.group(1)), s, targets)


def _json_stats(body: str, s: Sample) -> None:
    """A SlowFast or pycls `json_stats:` line (`_JSON_STATS`): a training step's gives its steps
    done as the iteration, every epoch's steps as the target, its loss and the step's seconds
    (SlowFast's `dt`, pycls's `time_diff`) as the pace; a validation's or test's its batches
    (`val_iter`, `test_iter`, `test_ema_iter`) or the summary of its pass (`val_epoch`,
    `test_epoch`, `test_ema_epoch`)."""
    try:
        stats = json.loads(body[body.index(_JSON_STATS) + len(_JSON_STATS) - 1:])
    except ValueError:
        return
    kind = stats.get("_type") if isinstance(stats, dict) else None
    if not isinstance(kind, str):
        return
    epoch = _COUNT_OF_TOTAL.fullmatch(str(stats.get("epoch", "")))
    step = _COUNT_OF_TOTAL.fullmatch(str(stats.get("iter", "")))
    if kind.startswith(("val_", "test_")):
        if "_epoch" in kind:
            s.evaluation_done = True
        elif "_iter" in kind and step is not None:
            s.evaluation_batches = (int(step.group(1)), int(step.group(2)))
    elif kind.startswith("train_iter") and epoch is not None and step is not None:
        steps = int(step.group(2))
        s.iteration = (max(int(epoch.group(1)), 1) - 1) * steps + int(step.group(1))
        s.target_iter = int(epoch.group(2)) * steps
        if isinstance(loss := stats.get("loss"), (int, float)):
            s.loss = float(loss)
        pace = stats.get("dt", stats.get("time_diff"))
        if isinstance(pace, (int, float)):
            s.sec_per_iter = float(pace)


def _torchtune(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A torchtune recipe's bar (`_TORCHTUNE_BAR`): its global step as the iteration, every
    announced epoch's steps (as many as this bar counts) as the target (when the config dump
    announced the epochs), its loss and its rate as the pace. The body left for the rest of
    the grammar: without the bar's count, which counts one epoch's steps, not the run's."""
    m = _TORCHTUNE_BAR.match(body)
    bar = TQDM_BAR.search(body, m.end()) if m is not None else None
    if m is None or bar is None:
        return body
    if m.group(3) is not None:
        s.loss = float(m.group(3))
    return _run_step_of_epoch_bar(body, bar, int(m.group(2)), s, targets)


def _run_step_of_epoch_bar(body: str, bar: re.Match[str], step: int, s: Sample,
                           targets: AnnouncedTargets) -> str:
    """A bar counting one epoch's steps (`bar`: its `TQDM_BAR` match in `body`) that names the
    run's `step` elsewhere (torchtune's description, OpenPCDet's postfix): that step as the
    iteration, every announced epoch's steps (as many as this bar counts) as the target, the
    bar's rate as the pace. The body left for the rest of the grammar: without the bar's count,
    one epoch's steps, not the run's."""
    s.iteration = step
    _target_of_announced_epochs(s, int(bar.group(2)), targets)
    if bar.group(3) is not None and (rate := float(bar.group(3))) > 0:
        s.sec_per_iter = rate if bar.group(4) == "s/it" else 1 / rate
    return body[:bar.start()] + body[bar.end():]


def _target_of_announced_epochs(s: Sample, steps: int, targets: AnnouncedTargets) -> None:
    """Every announced epoch's steps (`steps` each, as many as the line's epoch counts) as the
    target of `s`, its iteration set: when the epochs were announced and their steps reach
    that iteration (else no target: the announcement was another run's)."""
    if targets.epochs is not None and s.iteration is not None and (
            targets.epochs * steps >= s.iteration):
        s.target_iter = targets.epochs * steps


def _composer_bar(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A composer ProgressBarLogger's bar (`_COMPOSER_BAR`, its label padded to 15): the
    training's in epochs (`train          Epoch   N:`) gives the batches of the epochs before
    it (as many as this one's) and this one's as the iteration, every announced epoch's
    (`targets`: max_duration's, in the hyperparameters' dump) as the target; the training's in
    another unit (`train`, padded further) is the generic grammar's, its count of
    max_duration; either one's loss and pace are read; an evaluator's bar gives its batches,
    as an evaluation's bar. The body left for the rest of the grammar: without the epoch's
    bar's count (one epoch's batches, not the run's)."""
    m = _COMPOSER_BAR.match(body)
    bar = TQDM_BAR.search(body, m.end()) if m is not None else None
    if m is None or bar is None:
        return body
    label, kind = m.group(1), m.group(2)
    if kind is None:
        if label != "train" or body.find("%|") != _COMPOSER_TRAINING_PERCENT_END:
            return body
    elif m.start(2) != max(_COMPOSER_LABEL_WIDTH, len(label)):
        return body
    elif label != "train":
        s.evaluation_batches = (int(bar.group(1)), int(bar.group(2)))
        return body
    elif kind != "Epoch":
        return body
    if (loss := _COMPOSER_BAR_LOSS.search(body, bar.end())) is not None:
        s.loss = float(loss.group(1))
    if (pace := _COMPOSER_BAR_PACE.search(body, bar.end())) is not None and float(pace.group(1)):
        rate = float(pace.group(1))
        s.sec_per_iter = rate if pace.group(2) == "s/ba" else 1 / rate
    if kind is None:
        return body
    s.iteration = int(m.group(3)) * int(bar.group(2)) + int(bar.group(1))
    _target_of_announced_epochs(s, int(bar.group(2)), targets)
    return body[:bar.start()] + body[bar.end():]


def _composer_console(body: str, s: Sample, targets: AnnouncedTargets) -> None:
    """A composer ConsoleLogger's progress line (`_COMPOSER_CONSOLE`): its count of
    max_duration's unit as the iteration and max_duration as the target, or in epochs the
    batches of the epochs before it (as many as this one's) and this one's, every announced
    epoch's (`targets`) the target; or an
    evaluation's (`_COMPOSER_EVAL`): its batches, and at its end (`:`, its metrics after it)
    the pass's summary."""
    if (m := _COMPOSER_CONSOLE.match(body)) is not None:
        epoch, done, total = m.groups()
        if epoch is None and total is not None:
            s.iteration, s.target_iter = int(done), int(total)
        elif epoch is not None and total is not None:
            s.iteration = (max(int(epoch), 1) - 1) * int(total) + int(done)
            _target_of_announced_epochs(s, int(total), targets)
    elif (m := _COMPOSER_EVAL.match(body)) is not None:
        s.evaluation_batches = (int(m.group(1)), int(m.group(2)))
        s.evaluation_done = m.group(3) == ":"


def json_stats_epoch(text: str) -> tuple[int, int] | None:
    """The epoch and its steps (`"epoch": "100/100"`, `"iter": "5000/5005"`: 100, 5005) of a
    SlowFast or pycls training `json_stats:` line's text (its message, prefix and all; the
    keys sorted put both before the figures), or None when it is no such line."""
    m = _JSON_STATS_TRAIN_EPOCH.search(text) if _JSON_STATS in text else None
    return (int(m.group(1)), int(m.group(2))) if m is not None else None


def _spacy_row(body: str, s: Sample, columns: int) -> None:
    """A row of spaCy's training table (`_SPACY_ROW`, as many columns as its header's): its
    step as the iteration."""
    m = _SPACY_ROW.match(body)
    if m is not None and len(body.split()) == columns:
        s.iteration = int(m.group(1))


def _ignite(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A PyTorch-Ignite ProgressBar's draw (`_IGNITE_BAR`) or FBResearchLogger's line
    (`_IGNITE_RESEARCH`), each of more than one epoch: its steps done as the iteration, the target
    as `_epochs_steps` gives it; the research line's pace and GPU memory too. The body left for
    the rest of the grammar (the bar's postfix, the line's outputs): without what was read."""
    if (m := _IGNITE_BAR.match(body)) is not None:
        epoch, epochs, step, steps = (int(g) for g in m.group(1, 2, 3, 4))
        if epochs == 1:
            # ProgressBar names the epoch only when max_epochs is over 1: a bar of one epoch
            # (an evaluator's `Epoch [1/1]: [20/20] 100%|`) is no trainer's, and no count
            return body[m.end():]
        _epochs_steps(s, epoch, step, steps, epochs, targets)
        return body[m.end():]
    m = _IGNITE_RESEARCH.search(body)
    if m is None or m.group(2) == "1":
        return body
    epoch, step, steps = (int(g) for g in m.group(1, 3, 4))
    _epochs_steps(s, epoch, step, steps, None if m.group(2) == "None" else int(m.group(2)),
                  targets)
    if (pace := _IGNITE_RESEARCH_PACE.search(body, m.end())) is not None:
        s.sec_per_iter = float(pace.group(1))
    rest = body[m.end():]
    if (gpu := _IGNITE_RESEARCH_GPU.search(rest)) is not None:
        s.gpu_mem_bytes = int(gpu.group(1)) * _MIB
        rest = rest[:gpu.start()]
    return body[:m.start()] + rest


def _epochs_steps(s: Sample, epoch: int, step: int, steps: int, epochs: int | None,
                  targets: AnnouncedTargets) -> None:
    """An epoch's `step` of `steps` (from 1) as the iteration, the epochs before it as many
    steps each; the iterations announced (`targets`: ignite's max_iters) as the target when
    they reach it, else every epoch's (`epochs`, when known)."""
    s.iteration = (max(epoch, 1) - 1) * steps + step
    if targets.iterations is not None and targets.iterations >= s.iteration:
        s.target_iter = targets.iterations
    elif epochs is not None:
        s.target_iter = epochs * steps


def _monai(body: str, s: Sample, targets: AnnouncedTargets) -> str:
    """A MONAI StatsHandler iteration line (`_MONAI`): its steps done as the iteration, the
    iterations announced (`targets`: ignite's max_iters) as the target when they reach it, else
    every epoch's. The body left for the rest of the grammar (its output's `loss: …`): without
    the epoch's own `Iter: i/n`, which is no count of the training's."""
    m = _MONAI.search(body)
    if m is None:
        return body
    epoch, step, steps = (int(g) for g in m.group(1, 3, 4))
    _epochs_steps(s, epoch, step, steps, None if m.group(2) == "None" else int(m.group(2)),
                  targets)
    return body[:m.start()] + body[m.end():]


def openmmlab_epoch(text: str) -> tuple[int, int] | None:
    """The epoch and its steps (`Epoch(train) [12][7300/7330]`, mmcv 1.x's `Epoch
    [12][7300/7330]`: 12, 7330) of an OpenMMLab runner's by-epoch training line's text (its
    message, time and all), or None when it is no such line."""
    m = _OPENMMLAB.search(text) if "Epoch" in text else None
    if (m is None or m.group(1) != "Epoch" or m.group(2) not in (None, "train")
            or m.group(3) is None or m.group(5) is None):
        return None
    return int(m.group(3)), int(m.group(5))
