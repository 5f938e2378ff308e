"""Prefixes that what runs a process puts before each of its log lines, and ANSI colour codes.

One definition for both readers of a line: the metric parser (bot.core.line_time
`clean_line`) and the catalogue's scanner (bot.core.catalogue.scanner `normalize_line`) strip
them with `LINE_PREFIXES` before they read the message, so a progress line and a failure line
lose the same prefix. Some prefixes carry the line's time (`TIMED_PREFIX`): the metric parser
reads it from them (bot.core.line_time `LogClock.parse_split`).
"""

from __future__ import annotations

import re

#: ANSI escape sequences (colours, cursor moves, OSC titles): regex source.
ANSI_ESCAPE = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"

#: The label a launcher puts before each line of a rank or task: torchrun's `--tee` and log
#: prefixes (`[rank3]:`, `[default0]:`, `[rank 3]`), accelerate's and DeepSpeed's `rank3: `,
#: mpirun --tag-output's `[1,0]<stderr>:`, srun --label's `3: `. Regex source, an alternation.
RANK_PREFIX = (
    r"[ \t]*\[(?:rank|default|RANK)[ \t]*[0-9]+\]:?[ \t]?"
    r"|rank[0-9]+: "
    r"|\[[0-9]+,[0-9]+\]<std(?:out|err)>:[ \t]?"
    r"|[ \t]*[0-9]+:[ \t]"
)

#: The prefix a process's lines get from what runs it, for lines of many processes in one
#: log: Ray's (`(RayTrainWorker pid=4567, ip=10.0.0.3) `, `(raylet) `, its colour codes kept as
#: text when the ESC was lost or escaped: `[36m`, syslog's `#033[36m`) and `kubectl logs
#: --prefix`'s (`[pod/trainer-0/pytorch] `). Regex source, to be joined into an alternation.
PROCESS_PREFIX = (
    r"(?:(?:#033|\^\[)?\[[0-9;]*m)*\((?:raylet|(?:[A-Za-z_][A-Za-z0-9_.-]* )?pid=[0-9]+"
    r"(?:, ip=[0-9a-fA-F.:]+)?[^)\n]*)\)(?:(?:#033|\^\[)?\[0m)?[ \t]?"
    r"|\[pod/[^]/ \t]+(?:/[^] \t]+)?\][ \t]?"
)

#: A prefix that starts with the line's time: torchrun's `[2024-05-01 19:38:57,123][rank1]:`,
#: a CI or task runner's (taskcluster's `[task 2025-01-21T16:30:37.188Z] `, any bracketed name
#: and time) and an RFC 3339 time as GitHub Actions and `kubectl logs --timestamps` write it
#: (`2025-01-21T16:30:37.1234567Z `). Regex source, an alternation.
TIMED_PREFIX = (
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}[^\]\n]*\]\[rank[0-9]+\]:?[ \t]?"
    r"|\[[A-Za-z][A-Za-z0-9_.-]* [0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.,]+(?:Z|[+-][0-9:]+)?\]"
    r"[ \t]?"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2})[ \t]"
)

#: What a logging library puts before a message, after the time and the launcher's prefixes
#: the readers strip (bot.core.line_time `message_after_time`), each a piece of it: a level or a
#: logger's usual name (`INFO`, `WARNING`, `__main__`, `root`), another logger's name between a
#: level's separators (`INFO:transformers.trainer:`, `- INFO - trl.trainer - `, the
#: `%(asctime)s - %(name)s - %(levelname)s - ` format's `- ModelTrainer - INFO - ` once the time
#: is read off, hydra's
#: `[trl.trainer][INFO]`), absl's and glog's level's letter, thread id, file and line (`I1207
#: 11:00:05.123 12345 train.py:88] `, C++'s `solver.cpp:411] `), and any one character not a
#: letter: a separator, a frame, a date the time reader leaves (the Hugging Face examples'
#: `12/07/2026 11:00:05 - INFO - __main__ - `), a symbol (`==> `, `🚀 `).
#: Regex source, an alternation: repeat it at a message's start (`^(?:{LOG_LEAD})*`), with
#: `(?i)` for its level's words in capitals.
LOG_LEAD = (
    r"(?<![^\W\d_])(?:trace|debug|info|notice|warn(?:ing)?|error|critical|fatal|main|root|log)"
    r"(?![^\W\d_])"
    r"|(?<=[:\[])[\w.]+(?=:\S|\]\[)"
    r"|(?:(?<= - )|(?<=^- ))[\w.]+(?= - )"
    r"|[\w.-]+\.[A-Za-z]\w*:\d+\]"
    r"|(?<![^\W\d_])[IWEF](?=\d{4}[ \t])"
    r"|[\W\d_]"
)

#: The prefixes at the start of a line, one or more of any kind (match it: `^` is in it).
LINE_PREFIXES = re.compile(rf"^(?:{RANK_PREFIX}|{PROCESS_PREFIX}|{TIMED_PREFIX})+")
#: A timed prefix among them (search the matched prefixes: the first is the line's time).
TIMED_PREFIXES = re.compile(TIMED_PREFIX)
#: The first character of a line that may start with a prefix (a cheap test before matching).
PREFIX_STARTS = frozenset("[r \t(#^0123456789")

# The rank number in a launcher's label (RANK_PREFIX's forms, torchrun's timed one), after any
# other prefixes before it (a time, a process's), colour codes removed first.
_RANK_LABEL = re.compile(
    rf"^(?:{PROCESS_PREFIX}|\[[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}[^\]\n]*\])*"
    r"(?:[ \t]*\[(?:rank|default|RANK)[ \t]*([0-9]+)\]|rank([0-9]+): "
    r"|\[[0-9]+,([0-9]+)\]<std(?:out|err)>:|[ \t]*([0-9]+):[ \t])")
_ANSI_RE = re.compile(ANSI_ESCAPE)


def labelled_rank(line: str) -> int | None:
    """The rank (or srun task) a launcher's label at the start of a raw log line names
    (`[rank1]:`, `[default1]:`, `rank1: `, mpirun's `[1,1]<stdout>:`, srun --label's `1: `,
    torchrun's `[2024-05-01 19:38:57,123][rank1]:`); None when the line has no such label."""
    m = _RANK_LABEL.match(_ANSI_RE.sub("", line) if "\x1b" in line else line)
    return None if m is None else int(next(g for g in m.groups() if g is not None))
