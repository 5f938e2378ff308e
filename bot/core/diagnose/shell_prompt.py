"""A log that ends at a shell's prompt: the process it ran ended with nothing said
(`ends_at_shell_prompt`), after progress or after a command's start-up output when there is no
progress; and the prompt's form (`SHELL_PROMPT`), which the other readings of how a log ends let
follow an end. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from bot.core.catalogue.scanner import normalize_line
from bot.core.diagnose.progress_shown import shows_progress
from bot.core.metrics import MetricSeries

# An interactive shell's prompt with nothing typed after it: the shell got the terminal back,
# so the process it ran had ended. Only a whole line in a prompt's form counts: bash's
# `user@host:~/proj$` (a git branch before the `$` allowed), Red Hat's `[user@host dir]$`,
# zsh's `user@host ~ %`, `bash-5.1$`, PowerShell's `PS C:\x>`, cmd's `C:\Users\me>`, a bare
# `$`, each after a virtualenv's or conda env's `(venv) `; root's `#` in place of `$`.
_PROMPT = (
    r"^(?:\([\w.+-]+\)\s+)?"
    r"(?:[\w.-]+@[\w.-]+:[^\s$#]*(?: \([\w./-]+\))?[$#]"
    r"|\[[\w.-]+@[\w.-]+(?: [^\]\s]+)?\][$#]"
    r"|[\w.-]+@[\w.-]+ [^\s%#]+ [%#]"
    r"|(?:ba|z|da)?sh-\d+(?:\.\d+)*[$#]"
    r"|PS [A-Za-z]:\\[^<>|\"\n]*>"
    r"|[A-Za-z]:\\[^<>|\"\n]*>"
    r"|\$)")
SHELL_PROMPT = re.compile(_PROMPT + "$")
# A command typed at such a prompt (`user@host:~/proj$ python train.py`): what follows it is
# that command's output.
_COMMAND_LINE = re.compile(_PROMPT + r"\s+\S")
# What a terminal shows when a run was interrupted or suspended by hand before the prompt came
# back (`^C`, `^Z`, bash's `[1]+  Stopped  python train.py`): not an end with nothing said.
_BY_HAND = re.compile(r"^\^[CZ\\]|^\[\d+\][+-]?\s+Stopped\b")


class PromptEnding(NamedTuple):
    """A log that ends at a shell's prompt (`ends_at_shell_prompt`): its class, the prompt's
    line and whether training progress came before it (else only start-up output did)."""

    class_id: str
    lines: tuple[tuple[int, str], ...]
    after_progress: bool


def ends_at_shell_prompt(
    tail: Sequence[tuple[int, str]], series: MetricSeries
) -> PromptEnding | None:
    """The log's last line is a shell's prompt with nothing typed after it (`SHELL_PROMPT`),
    after training progress or, when the metric series counts none, after the output of the
    command run at it (lines that are not a prompt or a command typed at one; `after_progress`
    when that output shows progress the series does not count, else it was start-up output
    only): the process ended and printed nothing about why. A silent exit, with the prompt as
    its line; None when the last line is anything else, when nothing came before it but
    prompts and commands typed at them (a command whose run printed nothing), or when the run
    was interrupted or suspended by hand just before (`^C`, `^Z`). The decision weighs it
    after errors and after the signs of a finished run (a completion line, the target
    reached, a final save), which a prompt after them does not change."""
    lines = [(n, normalize_line(raw).rstrip(), raw) for n, raw in tail if raw.strip()]
    if not lines or not SHELL_PROMPT.match(lines[-1][1]):
        return None
    if len(lines) > 1 and _BY_HAND.search(lines[-2][1]):
        return None
    prompt = ((lines[-1][0], lines[-1][2]),)
    if series.samples:
        if lines[-1][0] <= series.samples[-1].line_no:
            return None
        return PromptEnding("silent_exit", prompt, after_progress=True)
    output = [text for _, text, _ in _after_last_command(lines[:-1])
              if not SHELL_PROMPT.match(text)]
    if not output:
        return None
    return PromptEnding("silent_exit", prompt,
                        after_progress=any(shows_progress(text) for text in output))



def _after_last_command(lines: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The lines after the last command typed at a prompt (`_COMMAND_LINE`), all of them when
    none is: that command's output."""
    for i in range(len(lines) - 1, -1, -1):
        if _COMMAND_LINE.match(lines[i][1]):
            return lines[i + 1:]
    return lines
