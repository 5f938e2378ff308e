"""`unset_variable_under_nounset`: under `set -u`, conda's activate scripts and the Slurm
variables a job may not have."""

from __future__ import annotations

import re

from bot.core.findings import Finding, Level
from bot.core.launcher_lint.messages import short, slurm_shows
from bot.core.launcher_lint.model import CHECK_NOUNSET, Scan, Unset
from bot.core.shell_lexer import Memo, split_top_level
from bot.core.text import N_, Text

_ACTIVATE_RE = re.compile(r"^(?:conda|mamba|micromamba)\s+activate\b|^(?:source|\.)\s+activate\b")
_SLURM_VAR_RE = re.compile(r"\$(?:\{(SLURM_\w+)\}|(SLURM_\w+))")
_SQ_RE = re.compile(r"'[^']*'")

#: Slurm variables that exist only with the sbatch option that requests them (or, for the
#: restart count, only after a requeue): the option's pattern, why the variable may be unset,
#: and the level. The option is looked for anywhere in the script's text, comments included,
#: since it may be given on the sbatch command line (`# Usage: sbatch --array=1-4 run.sh`).
_IN_ARRAYS = N_("is set only in array jobs")
_CONDITIONAL_SLURM: dict[str, tuple[str, Text, Level]] = {
    "SLURM_RESTART_COUNT": (r"(?!)", N_("is unset on a job's first run (set only after a "
                                        "requeue)"), "fail"),
    "SLURM_ARRAY_TASK_ID": (r"--array\b|\s-a\s*\d", _IN_ARRAYS, "warn"),
    "SLURM_ARRAY_JOB_ID": (r"--array\b|\s-a\s*\d", _IN_ARRAYS, "warn"),
    "SLURM_ARRAY_TASK_COUNT": (r"--array\b|\s-a\s*\d", _IN_ARRAYS, "warn"),
    **{f"SLURM_{option.upper().replace('-', '_')}": (
        pattern, N_("is set only when `--%(option)s` is requested", option=option), "warn")
       for option, pattern in (("cpus-per-task", r"--cpus-per-task|\s-c\s*\d"),
                               ("gpus-per-node", r"--gpus-per-node"),
                               ("gpus-per-task", r"--gpus-per-task"),
                               ("ntasks-per-node", r"--ntasks-per-node"),
                               ("mem-per-gpu", r"--mem-per-gpu"),
                               ("mem-per-cpu", r"--mem-per-cpu"))},
}


def unset_reads(lst: str, off: int, script_text: str, memo: Memo) -> list[Unset]:
    """The reads in one and-or list (run under `set -u`) of variables that may be unset."""
    found: list[Unset] = []
    if "activate" in lst:
        for piece, p_off, _op in split_top_level(lst, off, ("&&", "||", "|"), memo):
            piece = piece.strip()
            if _ACTIVATE_RE.match(piece):
                found.append(Unset(
                    p_off, short(piece),
                    N_("conda's activate scripts (and the activate.d scripts of packages such "
                       "as the conda compilers) may read variables that are unset; whether this "
                       "env's do is not in the script"), "pass"))
    if "$SLURM_" in lst or "${SLURM_" in lst:
        for m in _SLURM_VAR_RE.finditer(_SQ_RE.sub(lambda q: " " * len(q.group()), lst)):
            var = m.group(1) or m.group(2)
            rule = _unset_slurm_var(var, script_text)
            if rule:
                found.append(Unset(off + m.start(), var, rule[0], rule[1]))
    return found


def may_read_unset(text: str) -> bool:
    """False when `unset_reads` finds nothing in any part of `text` (lets the walk skip it)."""
    return "activate" in text or "SLURM_" in text


def _unset_slurm_var(var: str, script_text: str) -> tuple[Text, Level] | None:
    rule = _CONDITIONAL_SLURM.get(var)
    if rule is None:
        return None
    pattern, why, level = rule
    return None if re.search(pattern, script_text) else (why, level)


def check_nounset(scan: Scan) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for u in scan.unset:
        line = scan.line_of(u.offset)
        if (line, u.variable) in seen:
            continue
        seen.add((line, u.variable))
        if u.variable.startswith("SLURM_"):
            findings.append(Finding(
                CHECK_NOUNSET, u.level, line,
                N_("line %(line)s: `$%(var)s` %(why)s; under `set -u` (line %(nounset)s) bash "
                   "stops with `%(var)s: unbound variable`: %(slurm)s", line=line,
                   var=u.variable, why=u.why, nounset=scan.nounset_line, slurm=slurm_shows(1)),
                N_("use `${%(var)s:-0}` (or the default you mean)", var=u.variable),
            ))
        else:
            findings.append(Finding(
                CHECK_NOUNSET, u.level, line,
                N_("line %(line)s: note: `%(command)s` under `set -u` (line %(nounset)s): "
                   "%(why)s, so bash can stop with `unbound variable` before training starts: "
                   "%(slurm)s", line=line, command=u.variable, nounset=scan.nounset_line,
                   why=u.why, slurm=slurm_shows(1)),
                N_("turn it off around the activation: `set +u; conda activate ENV; set -u`"),
            ))
    if not findings:
        findings.append(Finding(CHECK_NOUNSET, "pass", None,
                                N_("no conditional variable read under `set -u`")))
    return findings
