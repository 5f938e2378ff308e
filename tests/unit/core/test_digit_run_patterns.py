"""Patterns rewritten not to retry a long digit run from each digit find what they found."""
import re

import pytest

from bot.core import progress_bars, training_lines
from bot.core.diagnose import ending

_FORMER_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_FORMER_RATE = re.compile(rf"({_FORMER_NUMBER})\s*(s/it(?:er)?|it/s)(?![\w])", re.IGNORECASE)
_FORMER_BAR_RATE_AND_LOSS = re.compile(
    rf"[0-9.]+\s*(?:s/it|it/s)\s*,[^\]]*\b\w*loss\s*[=:]\s*(?:{_FORMER_NUMBER}|nan|inf)",
    re.IGNORECASE)

LINES = [
    "Epoch 1:  45%|████▌     | 45/100 [01:02<01:16,  7.20it/s, loss=0.31]",
    "100%|██████████| 10/10 [00:05<00:00,  2.1 s/it, loss: 0.693, v_num=3]",
    "train: 1.5e-2 s/iter eta 0:01:00",
    "step 5+3 it/s", "speed 5-3 it/s", "rate .5 it/s", "rate 12.5it/s", "x 1.2E+00s/it",
    "1.1.1.2 it/s, loss=nan", "123456 it/sec", "no rate here 12:34", "3.it/s, closs=inf]",
    "Iter 100 | 0.25 s/it | loss 1.0", "1" * 300 + ".x", "9" * 300 + "e", "1." * 150,
]


@pytest.mark.parametrize("line", LINES)
def test_rate_is_found_as_before(line: str) -> None:
    new, old = training_lines._RATE.search(line), _FORMER_RATE.search(line)
    assert (new and (new.span(), new.groups())) == (old and (old.span(), old.groups()))


@pytest.mark.parametrize("line", LINES)
def test_bar_rate_and_loss_is_found_as_before(line: str) -> None:
    new = progress_bars._BAR_RATE_AND_LOSS.search(line)
    old = _FORMER_BAR_RATE_AND_LOSS.search(line)
    assert (new is None) == (old is None)


_FORMER_ERROR_LINE = re.compile(
    ending._ERROR_LINE.pattern.replace(r"[^\s:]: not found", r"[^\s:]+: not found"))
ERROR_LINES = [
    "sh: 1: torchrun: not found", "bash: torchrun: command not found", "torchrun: not found",
    "x: not found", ": not found", "a:: not found", "python: not found.", "a : not found",
    "node: not found here", "srun: error: gpu-a07: task 0: Exited with exit code 1",
    "ok line 12:34", "1" * 300 + ": not found", "1" * 300 + ".x",
]


@pytest.mark.parametrize("line", ERROR_LINES)
def test_error_line_is_read_as_before(line: str) -> None:
    assert _FORMER_ERROR_LINE.pattern != ending._ERROR_LINE.pattern
    assert bool(ending._ERROR_LINE.match(line)) == bool(_FORMER_ERROR_LINE.match(line))
