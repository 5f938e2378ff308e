"""`sbatch_after_command`: an `#SBATCH` line below the script's first command. sbatch reads
directives only up to the first line that is neither blank nor a comment ("sbatch will stop
processing further #SBATCH directives once the first non-comment non-whitespace line has been
reached in the script", sbatch(1)); the ones after it are comments to everyone, and the job
runs without what they ask for (the partition's default time, memory, GPUs…)."""

from __future__ import annotations

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import CHECK_SBATCH_AFTER_COMMAND
from bot.core.text import N_


def _first_command(lines: list[str]) -> int | None:
    """0-based index of the first line sbatch takes for a command (as sbatch reads it: the
    first non-blank character is not `#`)."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return i
    return None


def check_sbatch_after_command(script_text: str, blanked: str) -> list[Finding]:
    """`blanked` is the script with comments blanked (offsets kept) and heredoc bodies emptied:
    a directive line is blank there unless it sits in a heredoc body (written to another file,
    emptied) or a multi-line string (kept)."""
    lines = script_text.split("\n")
    first = _first_command(lines)
    findings: list[Finding] = []
    if first is not None:
        kept = blanked.split("\n")
        for i in range(first + 1, len(lines)):
            line = lines[i]
            if not line.startswith("#SBATCH"):
                continue
            if i >= len(kept) or kept[i] == "" or kept[i].strip():
                continue  # a heredoc body or a string: another script's text
            directive = short(line, 60)
            findings.append(Finding(
                CHECK_SBATCH_AFTER_COMMAND, "warn", i + 1,
                N_("line %(line)s: `%(directive)s` comes after the script's first command "
                   "(line %(first)s: `%(command)s`); sbatch reads `#SBATCH` lines only up to "
                   "the first command, so this one is ignored and the job runs without it (the "
                   "partition's defaults instead)", line=i + 1, directive=directive,
                   first=first + 1, command=short(lines[first], 40)),
                N_("move it up with the other `#SBATCH` lines, above line %(first)s",
                   first=first + 1),
            ))
    if not findings:
        findings.append(Finding(CHECK_SBATCH_AFTER_COMMAND, "pass", None,
                                N_("every `#SBATCH` line comes before the first command")))
    return findings
