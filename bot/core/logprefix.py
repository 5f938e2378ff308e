"""Prefixes that what runs a process puts before each of its log lines, as regex source.

One definition for both readers of a line: the metric parser (bot.core.metrics `clean_line`)
and the catalogue's scanner (bot.core.catalogue.scanner `normalize_line`) strip them before
they read the message, so a progress line and a failure line lose the same prefix.
"""

from __future__ import annotations

#: The prefix a process's lines get from what runs it, for lines of many processes in one
#: log: Ray's (`(RayTrainWorker pid=4567, ip=10.0.0.3) `, `(raylet) `, its colour codes kept as
#: text when the ESC was lost or escaped: `[36m`, syslog's `#033[36m`) and `kubectl logs
#: --prefix`'s (`[pod/trainer-0/pytorch] `). Regex source, to be joined into an alternation.
PROCESS_PREFIX = (
    r"(?:(?:#033|\^\[)?\[[0-9;]*m)*\((?:raylet|(?:[A-Za-z_][A-Za-z0-9_.-]* )?pid=[0-9]+"
    r"(?:, ip=[0-9a-fA-F.:]+)?[^)\n]*)\)(?:(?:#033|\^\[)?\[0m)?[ \t]?"
    r"|\[pod/[^]/ \t]+(?:/[^] \t]+)?\][ \t]?"
)
