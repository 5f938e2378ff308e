"""`sbatch_after_command` and `sbatch_indented_directive`: `#SBATCH` lines sbatch never reads;
`sbatch_own_error_file`: the script's own `--error`, which trainbot's submit overrides.

sbatch reads directives only up to the first line that is neither blank nor a comment ("sbatch
will stop processing further #SBATCH directives once the first non-comment non-whitespace line
has been reached in the script", sbatch(1)), and only from lines that begin with `#SBATCH` at
the first column: one after a space or a tab is a comment to sbatch (it does not end the
directives either), as submitting both kinds on Slurm 22.05 and 24.11 shows. Either way the
job runs without what the line asks for (the partition's default time, memory, GPUs…).

trainbot submits a recipe's script with `--error` equal to `--output` (its log_path), and a
`submit_command` wrapper with both in `SBATCH_ERROR` / `SBATCH_OUTPUT` (sbatch's input
variables): either wins over a `#SBATCH --error=…`, and slurmstepd opens one file for both, so
the job's stderr is in the log trainbot watches, not in the file the script names (unless a
wrapper passes its own `--error` on sbatch's command line); a pass note says so once, at the
first such directive, and, as every check reports, a pass note without a line when the script
names no stderr file."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import (
    CHECK_SBATCH_AFTER_COMMAND,
    CHECK_SBATCH_INDENTED,
    CHECK_SBATCH_OWN_ERROR,
)
from bot.core.shell_lexer import heredoc_body_lines
from bot.core.text import N_

#: `#SBATCH` after spaces or tabs: a directive as its author meant it, not as sbatch reads it.
_INDENTED = re.compile(r"[ \t]+#SBATCH")
#: sbatch's stderr option in a directive: `--error=F`, `--error F`, `-e F`, `-eF`.
_OWN_ERROR = re.compile(r"\s(?:--error(?:=|\s+)|-e\s*)(?=[^\s=-])")


def _first_command(lines: list[str]) -> int | None:
    """0-based index of the first line sbatch takes for a command (as sbatch reads it: the
    first non-blank character is not `#`)."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return i
    return None


def check_sbatch_directives(script_text: str, blanked: str) -> list[Finding]:
    """`blanked` is the script with comments and heredoc bodies blanked (offsets kept): a
    directive line is blank there unless it sits in a multi-line string (kept); one in a
    heredoc body (written to another file) is another script's text too."""
    lines = script_text.split("\n")
    first = _first_command(lines)
    kept = blanked.split("\n")
    bodies = set(heredoc_body_lines(blanked))
    late: list[Finding] = []
    indented: list[Finding] = []
    own_error: list[Finding] = []
    for i, line in enumerate(lines):
        flush = line.startswith("#SBATCH")
        if not flush and not _INDENTED.match(line):
            continue
        if i >= len(kept) or i in bodies or kept[i].strip():
            continue  # a heredoc body or a string: another script's text
        directive = short(line, 60)
        if first is not None and i > first:
            said = {"line": i + 1, "directive": directive, "first": first + 1}
            late.append(Finding(
                CHECK_SBATCH_AFTER_COMMAND, "warn", i + 1,
                N_("line %(line)s: `%(directive)s` comes after the script's first command "
                   "(line %(first)s: `%(command)s`); sbatch reads `#SBATCH` lines only up to "
                   "the first command, so this one is ignored and the job runs without it (the "
                   "partition's defaults instead)", command=short(lines[first], 40), **said),
                N_("move it up with the other `#SBATCH` lines, above line %(first)s",
                   first=first + 1) if flush else
                N_("move it up with the other `#SBATCH` lines, above line %(first)s, with "
                   "`#SBATCH` at the start of the line (no spaces or tabs before it)",
                   first=first + 1),
            ))
        elif flush and not own_error and _OWN_ERROR.search(line[len("#SBATCH"):]):
            own_error.append(Finding(
                CHECK_SBATCH_OWN_ERROR, "pass", i + 1,
                N_("line %(line)s: `%(directive)s` names the job's own stderr file; trainbot "
                   "submits with the recipe's log_path as the job's stderr (`--error`, or "
                   "`SBATCH_ERROR` for a `submit_command` wrapper), which wins, so stderr "
                   "(tracebacks, Slurm's CANCELLED and TIME LIMIT lines) goes into the log "
                   "trainbot watches, not into that file (unless the wrapper passes its own "
                   "`--error` to sbatch)", line=i + 1, directive=directive)))
        elif not flush:
            indented.append(Finding(
                CHECK_SBATCH_INDENTED, "warn", i + 1,
                N_("line %(line)s: `%(directive)s` has spaces or tabs before `#SBATCH`; sbatch "
                   "reads only lines that start with `#SBATCH`, so this one is a comment to it "
                   "and the job runs without it (the partition's defaults instead)",
                   line=i + 1, directive=directive),
                N_("start line %(line)s with `#SBATCH` (remove the spaces or tabs before it)",
                   line=i + 1),
            ))
    if not late:
        late.append(Finding(CHECK_SBATCH_AFTER_COMMAND, "pass", None,
                            N_("every `#SBATCH` line comes before the first command")))
    if not indented:
        indented.append(Finding(CHECK_SBATCH_INDENTED, "pass", None,
                                N_("every `#SBATCH` line starts at the beginning of its line")))
    if not own_error:
        own_error.append(Finding(
            CHECK_SBATCH_OWN_ERROR, "pass", None,
            N_("no `#SBATCH --error` in force: the job's stderr goes into the log trainbot "
               "watches (the recipe's log_path)")))
    return late + indented + own_error
