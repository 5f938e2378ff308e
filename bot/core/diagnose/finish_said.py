"""A log that ends in the program's own words that its training finished (`Done training.`,
`TRAINING COMPLETE`, the final model saved, an early stop it announces, PyCharm's exit 0:
`ends_in_finish_said`), with only what may follow an end after them; and an early stop or a
marker naming a pass inside a pass of an outer loop short of its last (`ends_open_pass`), that
pass's end, not the run's. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from bot.core.catalogue.scanner import normalize_line
from bot.core.diagnose.after_target import goes_on_after, starts_next_phase, trains_after
from bot.core.diagnose.progress_shown import (
    COUNT,
    ends_in_open_progress_bar,
    in_open_pass,
    shows_progress,
)
from bot.core.diagnose.shell_prompt import SHELL_PROMPT
from bot.core.line_time import message_after_time
from bot.core.logprefix import LOG_LEAD
from bot.core.metrics import MetricSeries
from bot.core.outer_loop import closes_uncounted_loop, names_pass

# A program's own sentence that its training finished, in words none of the catalogue's
# `completed` markers has (those read `Training finished`, `Finished training.`, `Training
# complete(d)`, `done training in`, ...): `Done training.`, `INFO: training done`, `All done!`
# `All done!`; a word after the phrase says what it was (`done training epoch`, `All done with
# preprocessing`, `training done for fold 1`): none
_FINISH_SAID = re.compile(r"(?i)(?<![a-z])(?:done training|training (?:is )?done|all done)"
                          r"(?![a-z])(?![ \t]*[a-z0-9])")
# ... unless a stage or a phase is named before them (`[Stage: SFT] training done`, `Phase 1:
# done training`): that stage's end, the next one to come in a multi-stage pipeline
_STAGE_BEFORE = re.compile(r"(?i)(?<![a-z])(?:stage|phase)s?(?![a-z])")
# The program's other closing words, each saying its run ended, whatever framework printed it:
# the run or the whole program named done (`sft done`, `Fine-tuning finished.`, `TRAINING
# COMPLETE`, `Pipeline complete!`; not `training done for fold 1`, `training finished epoch
# 3`, nor a pretraining's end, the first stage of a program that fine-tunes next); the whole
# run's only when nothing qualifies it (`_WHOLE_RUN_LEAD`)
_RUN_DONE = re.compile(
    r"(?i)(?<![a-z-])(?:sft|fine-?tun(?:ing|e)|training|pipeline|program|script|job)"
    r" (?:is )?(?:done|finished|complete[d]?)(?![a-z])"
    r"(?![ \t]*(?:for|with|epoch|step|iter\w*|fold|stage|phase|round|part|on|of)\b)")
# ... the final model saved or exported (`Saving final model to out/`, `Final model saved`,
# `Export complete (35.4s)`, `TensorFlow Lite: export success`)
_FINAL_MODEL = re.compile(
    r"(?i)(?<![a-z])(?:(?:sav(?:ing|ed)|wr(?:iting|ote)|export(?:ing|ed)?) (?:the )?final model"
    r"|final model (?:saved|written|exported|stored)"
    r"|export (?:complete[d]?|success(?:ful)?|finished|done)(?![a-z]))")
# ... or the process's exit with status 0 as a runner reports it (PyCharm's `Process finished
# with exit code 0`)
_EXITED = re.compile(r"(?i)(?<![a-z])process finished with exit code 0(?!\d)")
# An early stop the program announces (`Early stopping`, `Early stopping triggered at epoch
# 18`, Keras's `Epoch 14: early stopping`, `EarlyStopping`, `Stopping training early`): the
# loop ended before its total by design, so the count short of it is no sign of a part; not an
# early stop's counter, wait, tracker or setting, printed each epoch (`EarlyStopping counter:
# 3 out of 10`, `[EarlyStopping] counter 3 of 10`, `Early stop count: 3`, `early stopping wait:
# 3 / 10`, `EarlyStopping tracker: best=0.31`, `Early stopping not triggered`, `early_stopping:
# true`, `early_stopping_patience=5`, `early stopping is enabled with patience 3`), nor one
# denied or to come (`No early stopping this epoch`, `Early stopping would trigger in 3 more
# epochs`, `early stopping if val_loss stalls`); a patience run out says one too (`Patience
# exhausted, stopping training.`, `Early stopping: patience 3 reached`, `Patience reached.
# Stopping training.`), and so does an early stop's counter at its total (`early stopping counter
# 3 of 3 -> stop`)
_STOPPED_EARLY = re.compile(
    r"(?i)(?<![a-z])(?<!\bno )(?<!\bnot )(?<!\bnever )(?<!\bwithout )(?<!\bskipping )(?<!\bskip )"
    r"(?:early[ _-]?stop(?:ping|ped)?|stopp(?:ing|ed)(?: training)? early"
    r"|patience (?:\d+ )?(?:exhausted|ran out|run out|exceeded|reached)"
    r"|reached (?:the )?patience\b"
    r"|early[ _-]?stop\w*[ \t]*count(?:er)?[ \t]*[:=]?[ \t]*(\d+)[ \t]*(?:/|of|out of)[ \t]*"
    r"\1(?!\d)"
    r"[^:=(]*)"
    r"(?![a-z_])(?![\])]?[ \t]*(?:[:=(]|count(?:er)?\b|wait|tracker|best\b|in\b|not\b|state\b"
    r"|patience|callback|monitor|with\b|would\b|will\b|could\b|might\b|may\b|can\b|should\b"
    r"|if\b|unless\b|when\b|(?:is |was )?"
    r"(?:enabled|disabled|active|activated|configured|set|on|off)\b))")

# ... and no improvement with a stop of the training itself, now (`No improvement for 5 epochs,
# stopping.`, `val_loss did not improve for 10 epochs. Stopping training`, `No improvement in
# 3 epochs, training stopped`): the stop's word starts the clause after the reason and ends
# it, alone or with the training or the run it stops, not a stop to come (`stopping
# after 3 more`, `stopping at 5`, `stopping soon if this continues`, `will stop`, `not stopping
# yet`) nor one of something else (`stopping warmup`, `stop decaying lr`, `Stopped lr
# scheduler.`, `stopping data augmentation`, `stopping criterion not met`)
_NO_IMPROVEMENT_STOP = re.compile(
    r"(?i)(?<![a-z])(?:no(?:t)? improv\w*|did(?: not|n't) improve|ha(?:s|ve)(?: not|n't) improved"
    r"|without improv\w*)"
    r"(?:[^.;!?]{0,60}?(?:[,.;:]|[ \t]+-+>?|[ \t]*->))?[ \t]*"
    r"(?:(?:the[ \t]+)?(?:training|run)[ \t]+(?:is[ \t]+|was[ \t]+|has been[ \t]+)?)?"
    r"stop(?:ping|ped|s)?(?:[ \t]+(?:the[ \t]+)?(?:training|run|fit|boosting(?:[ \t]+rounds?)?))?"
    r"(?:[ \t]+early)?(?=[ \t]*(?:[.!,;]|$))"
    # ... or the stop, then no improvement as its reason (skorch's `Stopping since valid_loss
    # has not improved in the last 5 epochs.`, `Stopped: no improvement in 3 epochs`, `Early
    # stopping: val_loss did not improve for 3 epochs`), not an early stop's counter
    r"|(?<![a-z][ \t])(?<![a-z])(?:(?:the[ \t]+)?(?:training|run)[ \t]+(?:is[ \t]+|was[ \t]+)?)?"
    r"(?:early[ _-]?)?stop(?:ping|ped)(?:[ \t]+(?:the[ \t]+)?training)?"
    r"(?:[ \t]*[:,\]-][ \t]*(?:[\w.]+[ \t]+){0,3}?"
    r"|[ \t]+(?:since|because|as|due to)[ \t][^.;!?]{0,40}?)"
    r"(?:no(?:t)? improv|did(?: not|n't) improve|ha(?:s|ve)(?: not|n't) improved|without improv)"
    r"(?![^.;!?]*(?:count(?:er)?\b|\d+[ \t]*(?:/|out of)[ \t]*\d+))")

# ... and an early stop's words alone as the message, its setting or its reason in parentheses
# after them (`Early stopping (patience=3)`, `Epoch 14: early stopping (patience=3,
# monitor=val_loss)`, `Early stopping (no improvement in 3 epochs)`): the stop as it happens,
# not a callback's repr (`EarlyStopping(patience=3)`), its use announced (`Using early stopping
# (patience=3)`) nor a setting with more said after it (`Early stopping (patience=3) enabled`)
_STOPPED_EARLY_NOTED = re.compile(
    rf"(?i)^(?:{LOG_LEAD})*(?:epoch[ \t]*\d+[ \t]*:[ \t]*)?early[ _-]?stop(?:ping|ped)?[ \t]+\("
    r"(?:(?:[\w.]+[ \t]*[=:][ \t]*[\w.+-]+(?:,[ \t]*)?)+"
    r"|(?:no(?:t)? improv|did(?: not|n't) improve|ha(?:s|ve)(?: not|n't) improved)[^()]{0,60})"
    r"\)[ \t.!]*$")

# ... its setting's keys and values (`patience=3`), an early stop's counter among them (`wait=1`,
# `counter=1`, `bad_epochs=1`): short of the patience, the stop's state printed each epoch, not
# the stop
_NOTED_SETTING = re.compile(r"(?i)([\w.]+)[ \t]*[=:][ \t]*([\w.+-]+)")
_STOP_COUNTER = re.compile(r"(?i)^(?:wait|count(?:er)?|(?:num_)?bad_epochs|stale\w*"
                           r"|epochs?_(?:without|since|no)_improvement|no_improvement\w*)$")

# The whole run named done: `_RUN_DONE` with nothing before its words but a log's level or
# logger (bot.core.logprefix `LOG_LEAD`: `INFO: training done`, `[INFO] __main__: Training
# complete`) and `the` or `model`;
# a word naming what trained or ran (`Data pipeline completed`, `Head training complete.`,
# `Tokenizer training complete`, `Warmup training finished`, `Pretraining stage: training
# complete`, `pretrain.py: training finished`) makes it a stage's of a larger job
_WHOLE_RUN_LEAD = re.compile(rf"(?i)^(?:{LOG_LEAD})*(?:(?:the|model) )?$")
# A log's level or logger before a message (`[INFO] `, `INFO:__main__:`)
_LEAD = re.compile(rf"(?i)(?:{LOG_LEAD})*")
# ... and nothing after them announcing the next phase (`SFT done, starting DPO...`, `SFT
# complete, moving to RL stage`, `SFT finished. Merging LoRA`)
_NEXT_PHASE_SAID = re.compile(
    r"(?i)(?<![a-z])(?:start\w*|begin\w*|moving|move on|proceed\w*|switch\w*|next|now|launch\w*"
    r"|load\w*|running|merg\w*|then|continu\w*|resum\w*)(?![a-z])")
# An interruption before the words (`Interrupted`, `KeyboardInterrupt`, `Training interrupted
# by user`): a script's save in a `finally:` or an interrupt handler, not a clean end
_INTERRUPTED = re.compile(r"(?i)(?<![a-z])(?:keyboard ?interrupt|interrupted)(?![a-z])")
# A fit's result figure (`R²=0.8271`, `CV Accuracy:    92.9%`, `ROC-AUC: 0.98`, `val loss 0.31`)
_RESULT_FIGURE = re.compile(r"(?i)(?<![a-z0-9])(?:loss|acc|accuracy|auc|r²|r2|rmse|mae|f1)"
                            r"[ \t]*[:=]?[ \t]*[-+]?(?:\d|\.\d)")


def _whole_run_done(text: str) -> bool:
    """`text` (a normalized line) names the whole run done (`_RUN_DONE`) with nothing
    qualifying what ended before the words (`_WHOLE_RUN_LEAD`) nor a next phase after them
    (`_NEXT_PHASE_SAID`)."""
    message = message_after_time(text)
    return any(_WHOLE_RUN_LEAD.match(message[:m.start()])
               and not _NEXT_PHASE_SAID.search(message[m.end():])
               for m in _RUN_DONE.finditer(message))


def _finish_said(text: str) -> bool:
    """`text` (a normalized line) says training finished (`_FINISH_SAID`) with no stage or
    phase named before the words (`_STAGE_BEFORE`)."""
    message = message_after_time(text)
    return any(not _STAGE_BEFORE.search(message[:m.start()])
               for m in _FINISH_SAID.finditer(message))


def stopped_early(text: str) -> bool:
    """`text` announces an early stop (`_STOPPED_EARLY`: `Early stopping`, `Patience
    exhausted, stopping training.`; `_NO_IMPROVEMENT_STOP`: `No improvement for 5 epochs,
    stopping.`), not an early stop's counter, setting, denial or one to come (`EarlyStopping
    counter: 3 out of 10`, `No early stopping this epoch`, `Early stopping would trigger in 3
    more epochs`, `No improvement for 2 epochs, stopping after 3 more`), nor a stop of something
    else than training (`no improvement -> stopping data augmentation`); the stop's words alone
    with its setting or reason in parentheses are one (`_stop_noted`: `Early stopping
    (patience=3)`, not `Early stopping (wait=1, patience=3)`): the one definition of an early
    stop the quiet endings read."""
    return (_STOPPED_EARLY.search(text) is not None or _NO_IMPROVEMENT_STOP.search(text) is not None
            or _stop_noted(message_after_time(text)))


def _stop_noted(message: str) -> bool:
    """The message is an early stop's words with its setting or reason in parentheses
    (`_STOPPED_EARLY_NOTED`: `Early stopping (patience=3)`), not its counter's state short of
    its patience (`_STOP_COUNTER`: `Early stopping (wait=1, patience=3)`, `(patience=3,
    counter=1)`); a counter at its patience is the stop (`(wait=3, patience=3)`)."""
    if (noted := _STOPPED_EARLY_NOTED.match(message)) is None:
        return False
    settings = {key.lower(): value for key, value in _NOTED_SETTING.findall(noted.group(0))}
    counters = [value for key, value in settings.items() if _STOP_COUNTER.match(key)]
    if not counters:
        return True
    patience = settings.get("patience", "")
    return patience.isdigit() and all(c.isdigit() and int(c) >= int(patience) for c in counters)


def _closing(text: str) -> bool:
    return stopped_early(text) or any(p.search(text) for p in (_FINISH_SAID, _RUN_DONE,
                                                                _FINAL_MODEL, _EXITED))


def _count_short(lines: Sequence[str]) -> bool:
    """The last count of progress before the sentence stops short of its total by more than a
    zero-based count's one (`Iter 200/1000 loss 0.7` then `Done training.`): a run that ends its
    loop there stopped early or ended a part, which the sentence does not tell apart from a
    phase's end, so it is no finish."""
    last = next((m for line in reversed(lines) if (m := _PROGRESS_COUNT.search(line))), None)
    return last is not None and int(last.group(1)) < int(last.group(2)) - 1


# A count of training progress (`Iter 200/1000`, `Epoch [3/10]`, `step 200 / 1000`)
_PROGRESS_COUNT = re.compile(r"(?i)(?<![a-z])(?:iter\w*|step|epoch|batch|it)\s*[:\[(]?\s*(\d+)"
                             r"\s*/\s*(\d+)")

def ends_open_pass(tail: Sequence[tuple[int, str]], series: MetricSeries,
                   outer_headers: Sequence[tuple[int, str]], line: int) -> bool:
    """The log's line `line` (a completion marker's) is an early stop (`_STOPPED_EARLY`:
    Keras's `Epoch 25: early stopping`) or names a pass of an outer loop (`Training complete
    for fold 2`, a pass the lines before it count: bot.core.outer_loop.names_pass) inside a
    pass of that loop short of its last (`in_open_pass`: `Fold 1/5`, a pass's number with no
    total that no counter at its total covers): the loop it ended is that pass's, and the next
    pass trains next. A marker naming the last fold of a k-fold loop no line counts with a
    total, at a count such a loop usually runs (`Training complete for fold 5` after `Fold 1`
    ... `Fold 5`: bot.core.outer_loop.closes_uncounted_loop), ends that loop."""
    text = next((normalize_line(t) for n, t in tail if n == line), "")
    before = [_message_lead_stripped(t) for n, t in [*outer_headers, *tail] if n < line]
    if not stopped_early(text) and not names_pass(message_after_time(text), before):
        return False
    if not stopped_early(text) and closes_uncounted_loop(message_after_time(text), [
            *before, *(_message_lead_stripped(t) for n, t in tail if n > line)]):
        return False
    return in_open_pass(tail, series, outer_headers)


def _message_lead_stripped(line: str) -> str:
    """A log's line's message: its time and a logging library's lead (`[INFO] `) stripped."""
    message = message_after_time(normalize_line(line))
    lead = _LEAD.match(message)
    return message[lead.end():] if lead is not None else message


class FinishSaid(NamedTuple):
    """The line of a log alone that says its training finished in the program's own words
    (`ends_in_finish_said`)."""

    line: int
    text: str


def ends_in_finish_said(tail: Sequence[tuple[int, str]], series: MetricSeries,
                        outer_headers: Sequence[tuple[int, str]] = ()) -> FinishSaid | None:
    """After training progress, the last line saying training finished in the program's own
    words (`_FINISH_SAID`: `Done training.`, `training done`, `All done!`, with no stage named
    before them; the whole run or program named done with no stage before the words nor a next
    phase after them,
    `_whole_run_done`: `sft done`, `TRAINING COMPLETE`, `Pipeline complete!`, which a fit's
    results around it may stand in for progress before; the final model saved or exported,
    `_FINAL_MODEL`; the process's exit 0 as a runner reports it, `_EXITED`, which ends every
    loop it ran, so no outer loop or count short of its total before it undoes it; an early
    stop it announces, `_STOPPED_EARLY`, which no count short of its total undoes, nor does it
    for the words after such a stop: `Initiating early stopping` then `Saving final model`), with
    nothing after it but what `ends_after_target` lets follow a target: None when that line or
    one after it trains or names a pass or an epoch (`Done training epoch 3`, `training done
    for fold 1/5`), when the log shows an outer loop short of its last pass (read from
    `outer_headers` too, the log's latest lines with an outer loop's counter before the tail,
    this run's: a `Fold 1/5` more than the tail's lines back still holds an early stop to its
    fold), when the series' progress goes on after it, when the next phase starts after it
    (a loading bar, a tracker's new run), when an interruption comes before it
    (`KeyboardInterrupt` then the final save), or when a signal, an error or an evaluation
    with no result follows it (bot.core.diagnose.after_target.goes_on_after); None with no
    training progress before it (`All done.` after a data-preparation step)."""
    if ends_in_open_progress_bar(tail) or series.ends_inside_evaluation:
        return None
    lines = [(n, normalize_line(t)) for n, t in tail if t.strip()]
    said = next((i for i in range(len(lines) - 1, -1, -1) if _closing(lines[i][1])), None)
    if said is None:
        return None
    n, text = lines[said]
    early = stopped_early(text)
    # the process's own exit (`Process finished with exit code 0`) ends every loop it ran,
    # whatever it counted (`Episode 9501/10000, rewards: 41.6`)
    exited = _EXITED.search(text) is not None
    # a stage or the run named done with a qualifier or a next phase (`Head training
    # complete.`, `SFT done, starting DPO...`, `[Stage: SFT] training done`) is a stage's end
    if not early and not any(p.search(text) for p in (_FINAL_MODEL, _EXITED)
                             ) and not _finish_said(text) and not _whole_run_done(text):
        return None
    # training progress before the words, or for the whole run named done a fit's results
    # around them (`R²=0.8271`, `CV Accuracy: 92.9%`: a scikit-learn pipeline prints no
    # progress), not a data or setup step's words at a job's start
    if not any(shows_progress(t) or (exited and COUNT.search(t)) for _, t in lines[:said]) and (
            not _whole_run_done(text) or not any(_RESULT_FIGURE.search(t) for _, t in lines)):
        return None
    # the next phase starting after the words (its checkpoint's or data's loading bar, a new
    # tracker run, a stage's header: after_target.starts_next_phase), or an interruption after
    # the last progress before them
    last_progress = max((i for i in range(said) if shows_progress(lines[i][1])), default=-1)
    if starts_next_phase([t for _, t in lines[:said + 1]], [t for _, t in lines[said + 1:]]) or any(
            _INTERRUPTED.search(t) for _, t in lines[last_progress + 1:said]):
        return None
    # the sentence's own line is read as one after it (`Done training epoch 3` trains), but
    # an early stop's names the epoch it stopped at (`Epoch 14: early stopping`)
    after = lines[said + 1:] if early or exited else lines[said:]
    # the series' progress after the sentence goes on only where it trains (not an
    # evaluation's bar at its total: `Evaluating best model: 100%|...| 125/125`)
    progress_after = series.last_iteration_line is not None and any(
        m == series.last_iteration_line and trains_after(t) for m, t in lines[said + 1:]) or (
        series.last_iteration_line is not None and series.last_iteration_line > n
        and not any(m == series.last_iteration_line for m, _ in lines))
    # an early stop announced after the last progress and before the words (`Initiating early
    # stopping`, then `Saving final model to out/`) stopped the count short of its total too
    stopped = early or any(stopped_early(t) for _, t in lines[last_progress + 1:said])
    if (not stopped and not exited and _count_short([t for _, t in lines[:said]])) or (
            progress_after) or (
            (not exited and in_open_pass(tail, series, outer_headers))
            or goes_on_after(
                [t for _, t in after if not SHELL_PROMPT.match(t.rstrip())], epoch=-1)):
        return None
    return FinishSaid(n, text)
