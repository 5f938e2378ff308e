"""What may follow a run's training target in a log read as finished by the target alone.

A loop stops at its target and a loop still training prints progress again, so a log whose
training reached its own target (bot.core.diagnose.last_epoch.ends_after_target) and then
prints only reports, saves or nothing is a loop that ended. These are the lines that undo that
reading, whatever program printed them:
- an outer loop around the training (`Fold 1/5`, `Trial 1/20`, `Round 1/50`, Keras Tuner's
  `Running Trial #2`, Optuna's `Trial 0 finished`, `Score for fold 1`): the target reached is
  one pass's, and only an outer count at its own total says the last pass ended
  (bot.core.outer_loop.outer_loop_open);
- after the target, a line still training, whatever its words (`loss: 0.53`, `[1,  2000] loss:
  2.173`, `G loss: 1.2`, `Epoch 1: loss 0.5`, a step or a bar short of its total), or one
  announcing more training (`Fine-tuning classifier`, `Phase 2: training the full network`,
  W&B's `Agent Starting Run`), a signal's or an abort's notice (`*** SIGTERM received`,
  `double free or corruption`, `Aborted`), or an evaluation announced with no result after it
  (`Running final evaluation on the test set...`, `***** Running Evaluation *****`, a
  `Testing` bar): `goes_on_after`.
After any end a log alone reads (a framework's completion marker, the program's own closing
words, the last epoch's report), a next phase starting keeps the run open (`starts_next_phase`:
a loading or data bar, a tracker's new run, a numbered stage's or phase's header, an epoch
below the end's): a multi-stage job's first stage ended, not the job.
Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.catalogue.scanner import normalize_line
from bot.core.diagnose.ending import says_error
from bot.core.line_time import message_after_time
from bot.core.logprefix import LOG_LEAD
from bot.core.outer_loop import OUTER_PASS
from bot.core.progress_bars import is_start_up_bar

# An outer loop's next pass announced (W&B's `Agent Starting Run: d4e5f6`)
_OUTER_STARTS = re.compile(r"(?i)\b(?:start\w*|begin\w*|running|next|new|launch\w*)\b.*(?<![a-z])"
                           + OUTER_PASS + r"(?![a-z])")
# Training announced: a stage's, a model's, a phase's (`Fine-tuning classifier`, `Now training
# the classifier head`, `Stage: finetuning on labelled data`), unless it says training ended or
# sums it up (`Pretraining finished. Saved encoder`, `Training time: 2h`)
_TRAINING = re.compile(r"(?i)(?<![a-z])(?:fine-?tun\w*|pre-?train\w*|distill\w*|train(?:ing)?)"
                       r"(?![a-z])")
_TRAINING_OVER = re.compile(r"(?i)\b(?:finish\w*|done|complete\w*|ended|over|saved|sav\w+|took"
                            r"|time|elapsed|total|summary)\b")
# An epoch's number after the target's (`Epoch 1: loss 0.5`, Keras's `Epoch 00003: saving`)
_EPOCH_NUMBER = re.compile(r"(?i)\bepoch\b\s*[:\[(]?\s*(\d+)")
# A figure a loop reports (`loss: 0.53`, `G loss: 1.2`, `acc 0.81`, `reward: 21.0`)
_FIGURE = re.compile(r"(?i)(?<![a-z0-9])(?:loss|acc|accuracy|reward|ppl|perplexity)\b\W{0,3}"
                     r"[-+]?(?:\d|\.\d)")
# A result an evaluation reports (a loss or accuracy, or its other figures)
_RESULT = re.compile(r"(?i)(?<![a-z0-9])(?:loss|acc\w*|f1|map\w*|bleu|rouge\w*|fid|ppl|perplexity"
                     r"|precision|recall|auc|score|reward|error|wer|cer|iou|psnr|ssim|metrics?)"
                     r"\b\W{0,3}[-+]?(?:\d|\.\d)")
# A producing or measuring phase's outcome: its output counted (`Generated 1000 sentences`,
# `Sampled 64 images`, `Translated 3003 sentences in 41.2s`) or its throughput measured
# (`Throughput: 123.4 samples/s`, `Inference speed: 812 tokens/s`): the end of a generation's
# or a benchmark's run, as a result is an evaluation's; not a count short of its total
# (`Generated 10/1000 sentences`, `Processed 1000 of 5000 samples`)
_OUTCOME = re.compile(
    r"(?i)^\W*(?:generated|produced|sampled|decoded|translated|synthesi[sz]ed|predicted"
    r"|processed|benchmarked)\s+([\d,]+)\s+(?!/)(?!of\b)(?!out of\b)[a-z]"
    r"|(?<![a-z])(?:throughput|speed)\b\W{0,3}[-+]?\d[\d,.]*\s*(?:[a-z]+|it)/s(?:ec)?\b"
    r"|\d[\d,.]*\s*(?:samples|sentences|tokens|images|sequences|examples|frames|items)/s(?:ec)?\b")
# ... nor a batch's, a step's or an iteration's rate or count (`batch 12: 812 tokens/s`,
# `step 10 | 812 tokens/s`), nor a warmup's (`Warmup throughput: 120.3 samples/s`)
_NOT_OUTCOME = re.compile(r"(?i)(?<![a-z])(?:warm-?up\w*|(?:batch|step|iter\w*|it)[ \t]*[#:=\[]?"
                          r"[ \t]*\d)")
# A producing phase's total announced (Hugging Face's `  Num examples = 5000`, `Total samples:
# 5000`): an output counted short of it is a part's, not the outcome
_TOTAL_ANNOUNCED = re.compile(r"(?i)(?<![a-z])(?:num[_ ]?|total[_ ]|number of )"
                              r"(?:examples|samples|prompts|sentences|images|sequences|items)"
                              r"[ \t]*[:=][ \t]*([\d,]+)")
# Words that say what a line reports finished (`Fold 4 finished, acc: 0.94`, `Training done for
# fold 4, loss: 0.31`) ...
_FINISHED = re.compile(r"(?i)(?<![a-z])(?:finished|done|completed?|ended)(?![a-z])")
# ... a pass of an outer loop by its number: its figure is that pass's result, not a step of
# training (unlike `Discriminator update done, D loss: 0.41`, `step done | loss 0.31`)
_PASS_NUMBER = re.compile(
    rf"(?i)(?<![a-z_])(?!episode){OUTER_PASS}[ \t]*(?:#|no\.?|[=:])?[ \t]*\d+")
# Words that make a figure a report over the run, not a step of training
_REPORT_WORD = re.compile(r"(?i)(?<![a-z])(?:final|best|total|average|avg|mean|summary|overall"
                          r"|test\w*|eval\w*|valid\w*|val|score|result\w*)(?![a-z])")
# Lines no training loop prints: W&B's own (its run summary's `wandb:     loss 0.42`), an
# evaluation's bar at its total (Keras evaluate()'s `313/313 - 0s - loss: 0.0712 - ...`)
_WANDB = re.compile(r"^wandb:")
_DONE_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:━+\s+\d|\[[=>.]+\]\s+-\s|-\s+\d)")
_COUNT = re.compile(r"(?<![\d./])(\d+)\s*/\s*(\d+)(?![\d./])")
_BAR_PERCENT = re.compile(r"(?<![\d.])(\d{1,3})(?:\.\d+)?%\s*\|")
# An evaluation, a test, a generation announced (`Running final evaluation ...`, `Evaluating
# policy over 100 episodes`, `Computing FID over 50000 images`, `Testing DataLoader 0: 100%|`)
_EVALUATION = re.compile(r"(?i)(?<![a-z])(?:evaluat\w*|test\w*|validat\w*|generat\w*|comput\w*"
                         r"|predict\w*|inferenc\w*|sampling|calculat\w*|running)(?![a-z])")
# A signal's, an abort's or a kill's notice (`*** SIGTERM received at time=...`, torchrun's
# `Received Signals.SIGTERM death signal`, glibc's `double free or corruption (out)`, `malloc():
# corrupted top size`, `free(): invalid pointer`, `Aborted (core dumped)`, `Exiting due to an
# exception`): W&B's `Press Control-C to abort syncing` is none
_ALARM = re.compile(r"(?i)(?<![a-z])(?:sig[a-z]{2,4}\d*|signals?|terminat\w*|killed|abort\w*"
                    r"|core dumped|double free|corrupt\w*|invalid pointer|segmentation|exception"
                    r"|interrupt\w*|preempt\w*|cancel\w*|fatal|panic)(?![a-z])")
_NO_ALARM = re.compile(r"(?i)press control-c to abort \w+")
# A new tracker run (`wandb: Tracking run with wandb version 0.16.1`, `wandb: Syncing run`)
_NEXT_RUN_STARTS = re.compile(r"(?i)^wandb: (?:tracking run with wandb|syncing run|currently "
                              r"logged in)")
# A numbered stage's or phase's header (`***** Phase 2: full fine-tune *****`, `Stage 2/2: DPO`,
# `Unfreezing backbone for stage 2`), shaped as one: the line starts with it (after a frame's
# `*`, `=`, `#`, `[`, `-`, `>`) or a start's verb comes before it; not its end, its summary or
# its result (`Stage 2 done`, `Phase 1 time: 2h`, `Stage 1 val acc: 0.88`: `_stage_header`)
_STAGE_HEADER = re.compile(rf"(?i)^(?:{LOG_LEAD})*(?:stage|phase)\s*[#:]?\s*\d"
                           r"|(?<![a-z])(?:start\w*|begin\w*|running|enter\w*|unfreez\w*|freez\w*"
                           r"|switch\w*|mov\w*|now|next|proceed\w*|launch\w*)(?![a-z])"
                           r".*(?<![a-z])(?<!zero )(?<!zero-)(?<!zero_)"
                           r"(?:stage|phase)\s*[#:]?\s*\d")
# A next phase's start announced in words, with no number, as a line of its own: a start's
# verb and a few words naming a stage, a phase or a training (`Starting the reward-model
# stage`, `Now entering the SFT phase`, `Starting DPO training`), or a kind of training, a
# stage or a phase and its start's verb (`Fine-tuning begins`, `Distillation starting...`); not
# an end or a summary (`_TRAINING_OVER`), nor an evaluation's, a test's or a prediction's phase
# with its result after it (`_EVALUATION`: `_phase_starts`);
# after what a logging library puts before it (bot.core.logprefix `LOG_LEAD`: `- INFO -
# __main__ - `, `INFO:__main__:`, `[INFO] `, absl's `train.py:88] `) and a program's tag
# (`[Pipeline] `, `(rlhf) `, `rlhf | `)
_TAG = r"\[[^\]\s]{1,40}\]|\([^)\s]{1,40}\)|[\w.-]{1,40}[ \t]\|"
_FRAME = rf"^(?:{_TAG}|{LOG_LEAD})*"
_FRAME_END = r"[\s.!*=#\]\-<>|:…]*$"
# ... and what it says of the phase after its name (`with 8 GPUs`, `on 4 nodes (bf16)`)
_SAID_AFTER = r"(?:[ \t,(]+[\w().,/-]+){0,5}?"
_PHASE_STARTS = re.compile(
    rf"(?i){_FRAME}(?:now\s+)?(?:start\w*|begin\w*|launch\w*|commenc\w*|enter\w*"
    r"|proceed\w* to|mov\w* on to|switch\w* to)(?:\s+[\w-]+){0,3}?\s+(?:stage|phase"
    r"|training|fine-?tuning|pre-?training|distillation)"
    rf"{_SAID_AFTER}{_FRAME_END}"
    rf"|{_FRAME}(?:fine-?tun\w*|pre-?train\w*|distill\w*|stage|phase)(?:\s+[\w-]+){{0,2}}?"
    rf"\s+(?:begins|starts|started|beginning|starting|commences|commencing){_SAID_AFTER}"
    rf"{_FRAME_END}")
# ... the words that make it an evaluation's or a report's (`Starting val phase`, `Entering eval
# stage`, `Stage summary`), not `final` or `best` (`Starting the final PPO stage`)
# ... or a step after training, of a run that ended (`Starting cleanup phase`, `Entering export
# phase`, `Starting benchmarking stage`, `Starting the scoring phase`, `upload`, `merge`)
_PHASE_REPORT = re.compile(r"(?i)(?<![a-z])(?:summary|test\w*|eval\w*|valid\w*|val|scor\w*"
                           r"|result\w*|clean-?up\w*|clean\w*|export\w*|upload\w*"
                           r"|benchmark\w*|bench|publish\w*|deploy\w*|push\w*|packag\w*"
                           r"|convert\w*|conversion|merg\w*|archiv\w*|teardown|tear-down|shutdown"
                           r"|post-?process\w*|analys[ie]s|analy[sz]\w*|report\w*|plot\w*"
                           r"|visuali[sz]\w*)(?![a-z])")
# A step's start in words, first in the message or after a tool's tag (`TensorRT: starting
# export`, `Beginning conversion`, `Launching upload`), not a word inside a name (`See
# launch_config.yaml`, `wandb: Synced warm-start-lr3e-4`) nor a cleanup's or a shutdown's
# start (`Starting cleanup phase`)
_STEP_STARTS = re.compile(
    rf"(?i)^(?:{LOG_LEAD})*(?:[\w .-]{{1,30}}:[ \t]+)?"
    r"(?:start(?:s|ing)?|begin(?:s|ning)?|launch(?:es|ing)?)(?![\w-])"
    r"(?!.*(?<![a-z])(?:clean-?up\w*|teardown|tear-down|shut\w*)(?![a-z]))")
# A producing phase's end or its output kept (`Saved 500 generations to out/`, `Inference
# finished in 42.1s`, `Prediction done.`, `Done.`, `Predictions written to preds.csv`)
_OUTPUT_DONE = re.compile(r"(?i)(?<![a-z])(?:finished|done|complete[ds]?|ended|saved|written|wrote"
                          r"|exported|stored)(?![a-z])")
# An epoch's number, Hugging Face's logged dicts' too (`Epoch 3/10`, `'epoch': 0.1`)
_EPOCH_AT = re.compile(r"(?i)(?<![a-z])epoch\b['\"]?\s*[:=\[(]?\s*(\d+(?:\.\d+)?)")
# A checkpoint's or a file's name holds an epoch's number (`/ckpt/epoch=7-step=2000.ckpt`), and a
# restore or a load names the epoch it takes (`Loading weights from epoch 7 for inference`):
# neither is an epoch trained
_RESTORES = re.compile(r"(?i)(?<![a-z])(?:restor\w*|re-?load\w*|load\w*)(?![a-z])")


# What a program prints once its loop is over, each line one of: a figure (`Test accuracy:
# 0.61`, `'train_runtime': 120.0`, `  epoch = 3.0`), a save, a summary or a result, a time taken,
# words saying it finished, a banner or a table's rule (punctuation alone)
_FIGURE_NAMED = re.compile(r"(?i)[a-z][\w .'\"/()@-]*?['\"]?\s*[:=]\s*[-+]?(?:\d|\.\d)")
_REPORTED = re.compile(r"(?i)(?<![a-z])(?:sav(?:e|ed|ing)|checkpoint\w*|wr(?:ote|itten)|stored"
                       r"|exported|summary|results?|report|best|final|total|average|mean|time"
                       r"|took|elapsed|duration|finish\w*|done|complete\w*|ended|exit\w*"
                       r"|goodbye|bye)(?![a-z])")
_RULE = re.compile(r"^[\W_]*$")
# A report's heading, words and a colon with nothing after (`Confusion Matrix:`, `Category 1:`,
# `Classification report:`), and a copier's elision (`[...truncated...]`, `<snip>`, `(output
# omitted)`): no line of training
_HEADING = re.compile(r"^[A-Za-z][\w .()/-]{0,60}:$")
_LOG_LEAD = re.compile(rf"(?i)(?:{LOG_LEAD})*")
_ELISION = re.compile(r"(?i)^[\W_]*(?:[a-z]+ )?(?:truncated|snip(?:ped)?|omitted|elided)[\W_]*$")
# A library's own note at glog's or absl's INFO or WARNING severity, its letter, date, time,
# thread id, file and line before it (glog's LogMessage prefix, absl's Python handler's:
# `W1207 12:00:00.123456  1234 gpu_timer.cc:114] Skipping the delay kernel`, `I1207
# 12:00:01.123456 140123 checkpoint.py:88] Waiting for async writes`), TensorFlow's C++ one after
# its time (`2026-12-07 12:00:00.123456: W tensorflow/core/kernels/data/generator_dataset_op.cc:
# 107] Error occurred when finalizing GeneratorDataset iterator: ...`): what the library says as
# it winds down, no training and no error of the run's (an E or F line is one)
_LIBRARY_NOTE = re.compile(r"^([IW])\d{4} [\d:.]+ +\d+ [\w/.-]+\.\w+:\d+\]"
                           r"|^[\d-]+[ T][\d:.]+: ([IW]) [\w/.-]+\.\w+:\d+\]")
# ... whose alarm's words say nothing of the run's end: TensorFlow's tf.data note at the
# interpreter's shutdown (`Error occurred when finalizing GeneratorDataset iterator:
# FAILED_PRECONDITION: Python interpreter state is not initialized. The process may be
# terminated.`); a note's other signal's, kill's or preemption's notice is one (torchelastic's
# `Received Signals.SIGTERM death signal, shutting down workers`, `Worker process 4 was killed
# by signal 9`, `Caught SIGUSR1 (preemption), saving checkpoint and exiting`)
# A step the program announces in a note's message, its gerund first (absl's `I1207 ...
# export.py:88] Exporting SavedModel to /ckpt/export`, `Converting to TFLite`, `Uploading
# model to the hub`) or its start (`_STEP_STARTS`): the program's own step, judged as an
# unprefixed line is, not a library's note (`Waiting for async writes to finish`, `Skipping the
# delay kernel`)
_STEP_ANNOUNCED = re.compile(
    r"(?i)^(?:export|convert|upload|push|publish|deploy|packag|archiv|merg|quantiz|compil"
    r"|serializ|trac|optimiz|prun|distill|fine-?tun|pre-?train|train|evaluat|test|predict"
    r"|generat|sampl|benchmark|infer|decod|translat|calibrat|build)\w*ing(?![a-z])")
_HARMLESS_NOTE = re.compile(r"(?i)^error occurred when finalizing \w+ iterator\b")


def goes_on_after(after: Sequence[str], epoch: int) -> bool:
    """After the target (the last epoch's report, `epoch` its number), the log shows the run
    not over: a line still training or announcing training, a signal's or an abort's notice, an
    error, an evaluation announced that no result follows, or any line that is not what a
    program prints once its loop is over (`_reported`: `Unfreezing backbone`, `Exporting
    TorchScript model` with no result after it): an unknown line is no end. A note at glog's,
    absl's or TensorFlow's INFO or WARNING severity (`_LIBRARY_NOTE`) that does not train nor
    announce a step of the program's (`_announces_step`: absl's `I1207 ... export.py:88]
    Exporting SavedModel to /ckpt/export`, judged as the line with no prefix) is no unknown
    line, and at WARNING no evaluation announced: a library winding down says nothing
    of the run's loop; but a WARNING note's signal, kill or preemption is an alarm
    (`_alarms_after`: torchelastic's `Received Signals.SIGTERM death signal`)."""
    in_report = False  # under a report's heading (`Best Model Performance on Test Data:`)
    for line in after:
        note = _LIBRARY_NOTE.match(line.lstrip())
        if _trains(line, epoch, figures=not in_report) or _alarms_after(line) or (
                not _reported(_note_message(line)) and (note is None or _announces_step(line))):
            return True
        text = message_after_time(line).strip()
        if _heading(text):
            in_report = bool(_REPORT_WORD.search(text) or _REPORTED.search(text)) or in_report
    totals = _totals(after)
    announced = [i for i, line in enumerate(after)
                 if _EVALUATION.search(line) and not _result(line, totals[i])
                 and not _warned(line)]
    return bool(announced) and not any(
        _result(line, totals[i]) for i, line in enumerate(after) if i > announced[-1])


def _totals(lines: Sequence[str]) -> list[int | None]:
    """For each of `lines`, the total a producing phase announced last up to it
    (`_TOTAL_ANNOUNCED`: `Num examples = 5000`), or None."""
    total: int | None = None
    out: list[int | None] = []
    for line in lines:
        if (m := _TOTAL_ANNOUNCED.search(line)) is not None:
            total = int(m.group(1).replace(",", ""))
        out.append(total)
    return out


def _result(line: str, total: int | None = None) -> bool:
    """The line is an evaluation's result (`_RESULT`) or a producing or measuring phase's
    outcome (`_outcome`: `Generated 1000 sentences`, `Throughput: 123.4 samples/s`), its count
    not short of the `total` announced before it."""
    return bool(_RESULT.search(line) or _outcome(message_after_time(line), total))


def _outcome(text: str, total: int | None = None) -> bool:
    """`text` is a producing or measuring phase's outcome (`_OUTCOME`), not a batch's, a step's
    or a warmup's (`_NOT_OUTCOME`: `batch 12: 812 tokens/s`, `Warmup throughput: 120.3
    samples/s`), nor an output counted short of the `total` announced (`Generated 64 samples`
    after `Num examples = 5000`)."""
    if _NOT_OUTCOME.search(text):
        return False
    matches = list(_OUTCOME.finditer(text))
    if total is not None and any(
            m.group(1) and int(m.group(1).replace(",", "")) < total for m in matches):
        return False
    return bool(matches)


def _alarms_after(line: str) -> bool:
    """The line after the target alarms (`_alarms`); a note at WARNING severity
    (`_LIBRARY_NOTE`) by its message's signal's, kill's, abort's or preemption's words
    (`_ALARM`), not its error words (a warning), and not a harmless note's (`_HARMLESS_NOTE`)."""
    if not _warned(line):
        return _alarms(line)
    message = _note_message(line)
    return not _HARMLESS_NOTE.match(message) and bool(_ALARM.search(_NO_ALARM.sub(" ", message)))


def _announces_step(line: str) -> bool:
    """A library note's message announces a step of the program's (`_STEP_ANNOUNCED`:
    `Exporting SavedModel to /ckpt/export`; `_STEP_STARTS`)."""
    message = _note_message(line)
    return bool(_STEP_ANNOUNCED.match(message) or _STEP_STARTS.search(message))


def _note_message(line: str) -> str:
    """A library note's message, after its prefix (`_LIBRARY_NOTE`); any other line whole."""
    text = line.lstrip()
    note = _LIBRARY_NOTE.match(text)
    return text[note.end():].strip() if note is not None else text


def _warned(line: str) -> bool:
    """The line is a note at glog's, absl's or TensorFlow's WARNING severity (`_LIBRARY_NOTE`)."""
    note = _LIBRARY_NOTE.match(line.lstrip())
    return note is not None and "W" in (note.group(1), note.group(2))


def _reported(line: str) -> bool:
    """The line is one a program prints once its loop is over (a figure, a save, a summary, a
    time, a finish, a banner), or an evaluation announced (`goes_on_after` waits for its
    result), W&B's own, an evaluation's bar at its total or a phase's outcome (`_OUTCOME`)."""
    line = message_after_time(line).strip()
    return bool(_RULE.match(line) or _heading(line) or _ELISION.match(line)
                or _FIGURE_NAMED.search(line) or _REPORTED.search(line)
                or _EVALUATION.search(line) or _WANDB.match(line) or _DONE_BAR.match(line)
                or _outcome(line))


def _heading(text: str) -> bool:
    """`text` (a message after its time) is a report's heading (`_HEADING`), after what a
    logging library puts before it too (`- ModelEvaluator - INFO - Confusion Matrix:`)."""
    lead = _LOG_LEAD.match(text)
    return bool(_HEADING.match(text) or (lead and _HEADING.match(text[lead.end():])))


def _alarms(line: str) -> bool:
    return says_error(line) or bool(_ALARM.search(_NO_ALARM.sub(" ", line)))


def trains_after(line: str) -> bool:
    """A line after a program's own closing words that is training's (`_trains`, no epoch of
    its own to compare: any epoch number is another's)."""
    return _trains(line, -1)


def _trains(line: str, epoch: int, *, figures: bool = True) -> bool:
    """A line after the target that is training's: another epoch's number (not on W&B's own
    lines, its run summary's), a count or a bar short
    of its total, a figure that no report word labels nor a pass's finish (`_FINISHED`,
    `_PASS_NUMBER`: `Fold 4 finished, acc: 0.94`) (outside W&B's lines and an evaluation's
    bar at its total, and, `figures` False, under a report's heading: `Best Model Performance
    on Validation Data:` then `Accuracy: 94.20%`), more training or an outer loop's next pass
    announced."""
    line = message_after_time(line)
    # W&B's own lines sum up the run it tracked: their epoch is the last one logged, counted as
    # the logger did (Keras's from 0: `wandb:   epoch/epoch 29` after `Epoch 30/30`), no epoch
    # trained after the target
    if not _WANDB.match(line) and any(
            int(m.group(1)) != epoch for m in _EPOCH_NUMBER.finditer(line)):
        return True
    if any(int(a) < int(b) for a, b in _COUNT.findall(line)):
        return True
    if (percent := _BAR_PERCENT.search(line)) is not None and int(percent.group(1)) < 100:
        return True
    if _OUTER_STARTS.search(line):
        return True
    if _TRAINING.search(line) and not _FIGURE.search(line) and not _TRAINING_OVER.search(line):
        return True
    return bool(figures and _FIGURE.search(line) and not _REPORT_WORD.search(line)
                and not (_FINISHED.search(line) and _PASS_NUMBER.search(line))
                and not _WANDB.match(line) and not _DONE_BAR.match(line))


def starts_next_phase(before: Sequence[str], after: Sequence[str]) -> bool:
    """After a run's end (`before` the lines up to it, `after` the lines after it), a next
    phase of the job starts: a loading or data bar (bot.core.progress_bars.is_start_up_bar:
    `Loading checkpoint shards: 100%|`, `Map: 100%|`) not followed by only an evaluation's or
    a prediction's run (`_bar_starts_phase`), a tracker's new run (`wandb: Tracking
    run with wandb version 0.16.1`), a numbered stage's or phase's header (`***** Phase 2:
    full fine-tune *****`, `Unfreezing backbone for stage 2`) or a phase's start announced in
    words (`Starting the reward-model stage`, `Fine-tuning begins`, `Starting DPO training`,
    `Starting the generation phase` with no result after it yet), or a training line (no report
    word on it: not `the best epoch: 20`; no restore's or load's, no path's epoch: not
    `Restoring states from the checkpoint path at /ckpt/epoch=7-step=2000.ckpt`:
    `_epoch_below`) at an epoch below the last before the end (Hugging Face's `{'loss': 0.9,
    'epoch': 0.1}` after `'epoch': 3.0`): the loop started again. The end was a stage's, not
    the job's."""
    last_epoch = max((float(m.group(1)) for line in before for m in _EPOCH_AT.finditer(line)),
                     default=None)
    for i, line in enumerate(after):
        text = message_after_time(line)
        if is_start_up_bar(text) and _bar_starts_phase(after[i + 1:]):
            return True
        if _NEXT_RUN_STARTS.match(text) or _stage_header(text) or _phase_starts(
                text, after[i + 1:]):
            return True
        if last_epoch is not None and _epoch_below(text, last_epoch):
            return True
    return False


def ends_in_started_step(after: Sequence[str]) -> bool:
    """The last of `after` (the lines after an end the last epoch's report is) starts a step in
    words (`_STEP_STARTS`: `TensorRT: starting export with TensorRT 8.6.1...`, `Beginning
    conversion to TFLite`), no end's, summary's or result's: the log stops inside that step,
    the job still at work, whatever step it is."""
    text = message_after_time(after[-1]).strip() if after else ""
    return bool(_STEP_STARTS.search(text) and not _TRAINING_OVER.search(text)
                and not _RESULT.search(text))


def _bar_starts_phase(rest: Sequence[str]) -> bool:
    """A loading or data bar (`Map: 100%|`) starts a next phase when training or training
    announced follows it, or nothing that says what it loaded for (the log stops while it
    loads): followed by an evaluation's or a prediction's run and no training (`***** Running
    Prediction *****`), it loaded for that."""
    if any(trains_after(line) or _stage_header(message_after_time(line)) for line in rest):
        return True
    return not any(_EVALUATION.search(line) or _result(line) for line in rest)


def _phase_starts(text: str, rest: Sequence[str] = ()) -> bool:
    """The line announces a next phase's start in words (`_PHASE_STARTS`: `Starting the
    reward-model stage`, `Starting the final PPO stage with 8 GPUs`, `Fine-tuning begins`,
    `Starting DPO training`), not an end, a summary, a report's, nor a step after training
    (`_PHASE_REPORT`: `Starting cleanup phase`, `Entering export phase`, `Starting test
    phase`); a phase that produces output of its own (`_EVALUATION`: `Starting the generation
    phase`) only while no result nor its end follows it in `rest` (the lines after it:
    `_OUTPUT_DONE`, `Saved 500 generations to out/`, `Inference finished in 42.1s`, `Done.`):
    the log stops inside it, the job still at work."""
    if not _PHASE_STARTS.search(text) or _TRAINING_OVER.search(text) or _PHASE_REPORT.search(
            text):
        return False
    return not _EVALUATION.search(text) or not any(
        _result(line) or _OUTPUT_DONE.search(line) for line in rest)


def _stage_header(text: str) -> bool:
    """The line is a numbered stage's or phase's header (`_STAGE_HEADER`), not its end, its
    summary or its result (`Stage 2 done`, `Stage 1 val acc: 0.88`)."""
    return bool(_STAGE_HEADER.search(text) and not _TRAINING_OVER.search(text)
                and not _REPORT_WORD.search(text) and not _RESULT.search(text))


def _epoch_below(text: str, last_epoch: float) -> bool:
    """The line trains (`_trains`, no report word on it) at an epoch below `last_epoch`, that
    number not a path's or a file's (`/ckpt/epoch=7-step=2000.ckpt`) and the line no restore
    or load (`Restoring states from the checkpoint path at ...`)."""
    if _REPORT_WORD.search(text) or _RESTORES.search(text) or not _trains(text, -1):
        return False
    return any(float(m.group(1)) < last_epoch and not _in_path(text, m.start())
               for m in _EPOCH_AT.finditer(text))


def _in_path(text: str, at: int) -> bool:
    """The word at `at` is inside a path or a file's name (its whitespace-bounded token holds a
    slash, or ends in an extension)."""
    start = max(text.rfind(" ", 0, at), text.rfind("\t", 0, at)) + 1
    end = next((i for i in range(at, len(text)) if text[i] in " \t"), len(text))
    token = text[start:end].strip("'\"(),;[]{}")
    return "/" in token or "\\" in token or bool(re.search(r"\.(?:ckpt|pt|pth|bin|h5|keras"
                                                        r"|safetensors|pkl|npz|json|hdf5)$", token))


def next_phase_after(tail: Sequence[tuple[int, str]], end_line: int) -> bool:
    """`starts_next_phase` over a log's last lines (`tail`, numbered) around the end at
    `end_line` (a framework's completion marker's line)."""
    lines = [(n, normalize_line(t)) for n, t in tail if t.strip()]
    return starts_next_phase([t for n, t in lines if n <= end_line],
                             [t for n, t in lines if n > end_line])
