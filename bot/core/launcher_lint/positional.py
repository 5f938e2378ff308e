"""`positional_under_nounset`: `$1` / `${2}` read under `set -u` when the recipe passes fewer
arguments: bash stops with `$2: unbound variable` (a non-interactive shell exits on it wherever
it is read, in an `if` condition too). The recipe's `args` are what sbatch gives the script;
where they are not known (a site `submit_command` wrapper) the reads are only noted."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows
from bot.core.launcher_lint.model import CHECK_POSITIONAL, Positional, Scan
from bot.core.text import N_

#: `$1`…`$9`, `${1}`, `${12}` (not `${1:-x}`, `${1-x}`, `${1:+x}`, `\$1`).
_POSITIONAL_RE = re.compile(r"(?<!\\)\$(?:([1-9])|\{([1-9][0-9]*)\})")
_SQ_RE = re.compile(r"'[^']*'")


def may_read_positional(text: str) -> bool:
    """False when `positional_reads` need not run: no `$N` at all, or the script looks at its
    argument count (`$#`), parses options (`getopts`) or sets its own (`set --`): a read then
    follows a check the lint does not follow."""
    return bool(_POSITIONAL_RE.search(text)) and not (
        "$#" in text or "${#}" in text or "getopts" in text
        or re.search(r"\bset\s+--", text)
    )


def positional_reads(lst: str, off: int, shifted: int) -> list[Positional]:
    """The positional parameters one list (run under `set -u`, outside any function) reads;
    `shifted`: how many `shift`s ran before it."""
    masked = _SQ_RE.sub(lambda q: " " * len(q.group()), lst)
    return [Positional(off + m.start(), m.group(), int(m.group(1) or m.group(2)) + shifted)
            for m in _POSITIONAL_RE.finditer(masked)]


def check_positional(scan: Scan, script_args: Sequence[str] | None) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for p in scan.positional:
        line = scan.line_of(p.offset)
        if (line, p.text) in seen:
            continue
        seen.add((line, p.text))
        if script_args is None:
            findings.append(Finding(
                CHECK_POSITIONAL, "pass", line,
                N_("line %(line)s: note: `%(read)s` under `set -u` (line %(nounset)s): the "
                   "arguments the job gets are not known here (a submit wrapper passes them), "
                   "so whether bash stops with `$%(index)s: unbound variable` is not checked",
                   line=line, read=p.text, nounset=scan.nounset_line, index=p.index),
            ))
            continue
        if p.index <= len(script_args):
            continue
        n = len(script_args)
        args = short(" ".join(script_args), 40)
        given = (N_("passes 1 argument (`args`: %(args)s)", args=args) if n == 1 else
                 N_("passes %(n)s arguments (`args`: %(args)s)", n=n, args=args) if n else
                 N_("passes none (`args` is empty)"))
        findings.append(Finding(
            CHECK_POSITIONAL, "warn", line,
            N_("line %(line)s: `%(read)s` under `set -u` (line %(nounset)s) needs argument "
               "%(index)s, and the recipe %(given)s: bash stops here with `$%(index)s: unbound "
               "variable`: %(slurm)s", line=line, read=p.text, nounset=scan.nounset_line,
               index=p.index, given=given, slurm=slurm_shows(1)),
            N_("add it to the recipe's `args`, or give it a default: `${%(index)s:-VALUE}`",
               index=p.index),
        ))
    if not findings:
        findings.append(Finding(CHECK_POSITIONAL, "pass", None,
                                N_("no positional parameter past the recipe's args read "
                                   "under `set -u`")))
    return findings
