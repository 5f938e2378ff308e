"""A loop around the training: k-fold's folds, a search's trials, a sweep's runs, federated
rounds, RL episodes, a recipe's stages or phases, repeats over seeds, levels, tasks, models or
configs (`seed=1`, `Fold 1/5`, `Trial 3 of 20`, Keras Tuner's
`Running Trial #2`, Optuna's `Trial 0 finished`, `==> Stage 2/2`). A training target or a line
saying training finished is one pass's when such a loop is short of its last pass.
Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

OUTER_PASS = r"(?:fold|trial|round|episode|sweep|run|stage|phase)s?"
# DeepSpeed's ZeRO stage is a setting, not a pass (`Using DeepSpeed ZeRO stage 2`, `[deepspeed]
# zero stage 3`, `ZeRO-stage 2`)
_NOT_A_PASS = r"(?<!zero )(?<!zero-)(?<!zero_)"
# Every loop's word a pass's number follows: OUTER_PASS's, and a repeat's over seeds, levels,
# tasks, models, configs (`seed=1`, `Running with seed 0`, `Level 2`, `Task 3/5`, `Repeat 2`)
_PASS = r"(?:fold|trial|round|episode|sweep|run|stage|phase|seed|level|task|model|config|repeat)s?"
# A pass's counter with its total (`Fold 1/5`, `Trial 3 of 20`, `==> Stage 2/2`)
_COUNTED = re.compile(r"(?i)(?<![a-z])(" + _PASS + r")\s*[#=:]?\s*(\d+)\s*(?:/|of)\s*(\d+)")
# ... and its number alone (`Score for fold 1`, `Running Trial #2`, `Trial 0 finished`, `seed=1`),
# not a percentage (a bar's `Evaluating best model: 100%|`) nor an identifier's end (a logger's
# `(average_nbest_models:69)`)
# What finds, in a whole block of raw bytes, a line that may hold such a counter (RE2 has no
# look-behind; `counts_pass` confirms the line)
COUNTED_LOCATOR = r"(?i)(?:" + _PASS + r")\s*[#=:]?\s*\d+\s*(?:/|of)\s*\d+"
# A k-fold loop's fold count stated (`Running 10-fold cross-validation`, `10 folds`,
# `KFold(n_splits=10, ...)`, `n_folds=10`): the count its last fold is held to
_FOLDS_STATED_WORDS = (r"(\d+)[ \t]*-?[ \t]*folds?(?![a-z])"
                       r"|(?:n_?splits|n_?folds|num_folds|k_?folds)[ \t]*[=:][ \t]*(\d+)")
_FOLDS_STATED = re.compile(r"(?i)(?<![\w./-])(?:" + _FOLDS_STATED_WORDS + r")")
# ... and a counter's or a fold count's line, in a whole block of raw bytes (`keeps_outer_line`
# confirms it)
OUTER_LOCATOR = (COUNTED_LOCATOR + r"|\d+[ \t]*-?[ \t]*folds?\b"
                 r"|(?:n_?splits|n_?folds|num_folds|k_?folds)[ \t]*[=:][ \t]*\d+")
# ... the number of a pass around a whole training, with or without its total (`names_pass`):
# OUTER_PASS's but an episode, which an RL loop's training counts itself (ColossalChat's `Saved
# final actor model checkpoint at episodes 10`); not a setting's value (`run=5`), a path's or an
# identifier's part (`runs/detect/run2`, `./outputs/phase1`, `W&B run 3f2a9c1d`) nor a best
# pass (`Best round: 312`)
_PASS_NAMED = re.compile(r"(?i)(?<![\w/=.-])(?<!best )" + _NOT_A_PASS
                         + r"(fold|trial|round|sweep|run|stage|phase)s?"
                         r"[ \t]*(?:#|no\.?)?[ \t]*\d+(?![\w.%/-])")
# A pass's header of such a loop: its word and number first in the message, after a log's lead
# and a start's verb at most (`Fold 2`, `===== fold 1 =====`, `Running Trial #2`, `Starting fold
# 3`, `[INFO] Training fold 1`), or a counter with its total (`_COUNTED`)
_PASS_HEADER = (r"(?i)^[\W\d_]*(?:(?:start\w*|running|run|begin\w*|training|train|evaluating"
                r"|now|on|for|entering)[ \t]+)*{word}s?[ \t]*(?:#|no\.?|[=:])?[ \t]*\d+"
                r"(?![\w.%/-])")
_NUMBERED = re.compile(r"(?i)(?<![a-z_])" + _NOT_A_PASS + r"(" + _PASS
                       + r")\s*(?:#|no\.?|[=:])?\s*(\d+)(?![\d/.%])")


def outer_loop_open(lines: Sequence[str], *, ignoring: str | None = None) -> bool:
    """The lines show a loop around the training whose last pass they cannot tell ended: its
    last counter with a total short of that total (`Fold 1/5`), or a pass's number with no total
    that no counter at its total covers (`Score for fold 1`, `Running Trial #2`, Optuna's
    `Trial 0 finished`), read against the loop's last counter in the lines, one after it too (a
    pass's result before the next pass's header is no pass left open). A loop one of whose
    counters is at 0 (`Fold 0/5`) counts from 0: its last pass is one below its total (`Fold
    4/5`). `ignoring` names a loop's word (`fold`) left out: is another loop open?"""
    last: dict[str, tuple[int, int]] = {}
    zero_based: set[str] = set()  # loops counted from 0 (`Fold 0/5` ... `Fold 4/5`)
    numbered: list[tuple[str, int]] = []  # passes named by number alone, weighed at the end
    for line in lines:
        counted = {m.start() for m in _COUNTED.finditer(line)}
        for m in _COUNTED.finditer(line):
            word, done = _word(m.group(1)), int(m.group(2))
            if word == ignoring:
                continue
            if done == 0:
                zero_based.add(word)
            last[word] = (done + 1 if word in zero_based else done, int(m.group(3)))
        for m in _NUMBERED.finditer(line):
            if m.start() in counted or _word(m.group(1)) == ignoring:
                continue
            word = _word(m.group(1))
            numbered.append((word, int(m.group(2)) + (1 if word in zero_based else 0)))
    # a pass named by number alone is covered by the loop's furthest counter at its total, a
    # later one too (`Fold 3 best acc`, then `Fold 4/5` ... `Fold 4 best acc`)
    return any(not (last.get(word, (0, 0))[0] == last.get(word, (0, 0))[1] > 0
                    and number <= last[word][1]) for word, number in numbered) or any(
        done < total for done, total in last.values())


def counts_pass(line: str) -> bool:
    """The line holds an outer loop's counter with its total (`Fold 1/5`, `Running seed 1 of
    3`): a header a log's scan keeps however far back it is (`outer_loop_open` over a tail
    alone misses a pass's header more than the tail's lines back)."""
    return _COUNTED.search(line) is not None


def keeps_outer_line(line: str) -> bool:
    """The line holds an outer loop's counter with its total (`counts_pass`) or states a k-fold
    loop's fold count (`Running 10-fold cross-validation`, `n_splits=10`): a line a log's scan
    keeps however far back it is (`closes_uncounted_loop` holds the last fold to that count)."""
    return counts_pass(line) or _FOLDS_STATED.search(line) is not None


def furthest_passes(lines: Sequence[str]) -> list[str]:
    """Of `lines` (each with a counter: `counts_pass`), for each loop's word the line with its
    furthest pass, in their order: passes run side by side end out of order (Optuna's or a
    pool's `trial 5/5` before `trial 3/5`), and the furthest says how far the loop got."""
    best: dict[str, tuple[int, int]] = {}
    first: set[int] = set()  # a zero-based loop's pass 0 (`Fold 0/5`): its last is `Fold 4/5`
    for i, line in enumerate(lines):
        for m in _COUNTED.finditer(line):
            word, done = _word(m.group(1)), int(m.group(2))
            if done == 0:
                first.add(i)
            if word not in best or done >= best[word][1]:
                best[word] = (i, done)
    return [lines[i] for i in sorted({i for i, _ in best.values()} | first)]


def names_pass(line: str, before: Sequence[str]) -> bool:
    """The line names a pass of an outer loop around a whole training (a fold, a trial, a
    round, ...) by its number, with or without a total (`Training complete for fold 2`, `fold
    2/5 done`), a loop the log's lines `before` it count (messages, the time and a log's lead
    stripped: a counter with its total, `Fold 1/5`, or a pass's header with the same word, `Fold
    2`, `Running Trial #2`); not an RL loop's episode nor a repeat's setting a line may echo (`at
    episodes 10`, `seed=42`), nor a run's identifier, a setting, a path or a best pass where no
    such loop is counted (`W&B run 3f2a9c1d`, `run=5`, `runs/detect/run2`, `Best round: 312`,
    `ZeRO stage 2`)."""
    words = {_word(m.group(1)) for m in _PASS_NAMED.finditer(line)}
    headers = [re.compile(_PASS_HEADER.format(word=re.escape(word))) for word in words]
    return any(_word(m.group(1)) in words for b in before for m in _COUNTED.finditer(b)) or any(
        header.match(b) for header in headers for b in before)


# The fold counts k-fold cross-validation runs with when its script prints no total: scikit-learn's
# KFold default (n_splits=5) and 10-fold
_USUAL_FOLDS = frozenset({5, 10})


def closes_uncounted_loop(line: str, others: Sequence[str]) -> bool:
    """`line` names a fold by its number (`Training complete for fold 5`) of a k-fold loop that
    no line of the log (`line`, `others`) counts with a total (`Fold 1/5`), the furthest fold
    the log names, every fold before it named too (`Fold 1` ... `Fold 5`, or from `Fold 0`), and
    their count one k-fold cross-validation usually runs (`_USUAL_FOLDS`: 5, 10), or the count a
    line states when one does (`Running 10-fold cross-validation`, `KFold(n_splits=10)`,
    `n_folds=10`: `_FOLDS_STATED`, which wins over the usual counts): with no total
    to hold it to, that fold's end said with no next fold started is the loop's end. A fold
    short of such a count (`fold 2`) leaves it open, and so does another loop around the folds
    open (`=== seed 1/3 ===`, `Repeat 1/3`, `Seed 0 (1/3)`: `outer_loop_open` but the folds):
    the folds' end is one pass's of that loop."""
    named = [int(m.group(2)) for m in _NUMBERED.finditer(line) if _word(m.group(1)) == "fold"]
    if len(named) != 1:
        return False
    numbers: set[int] = set()
    stated: set[int] = set()  # the fold counts the log states (`Running 10-fold CV`)
    for text in [line, *others]:
        if any(_word(m.group(1)) == "fold" for m in _COUNTED.finditer(text)):
            return False
        numbers |= {int(m.group(2)) for m in _NUMBERED.finditer(text)
                    if _word(m.group(1)) == "fold"}
        stated |= {int(m.group(1) or m.group(2)) for m in _FOLDS_STATED.finditer(text)}
    first = min(numbers)
    if outer_loop_open([line, *others], ignoring="fold"):
        return False
    return (named[0] == max(numbers) and first in (0, 1)
            and numbers == set(range(first, named[0] + 1))
            and named[0] + 1 - first in (stated or _USUAL_FOLDS))


def names_pass_short_of_last(line: str) -> bool:
    """The line names a pass of an outer loop short of its total (`training finished for fold
    1/5`): what it says is that pass's."""
    return any(int(m.group(2)) < int(m.group(3)) for m in _COUNTED.finditer(line))


def _word(word: str) -> str:
    return word.lower().removesuffix("s")
