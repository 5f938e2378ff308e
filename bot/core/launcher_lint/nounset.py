"""`unset_variable_under_nounset`: under `set -u`, conda's activate scripts and the Slurm
variables a job may not have."""

from __future__ import annotations

import re

from bot.core.findings import Finding, Level
from bot.core.launcher_lint.messages import short, slurm_shows
from bot.core.launcher_lint.model import CHECK_NOUNSET, Scan, Unset
from bot.core.shell_lexer import Memo, split_top_level

_ACTIVATE_RE = re.compile(r"^(?:conda|mamba|micromamba)\s+activate\b|^(?:source|\.)\s+activate\b")
_SLURM_VAR_RE = re.compile(r"\$(?:\{(SLURM_\w+)\}|(SLURM_\w+))")
_SQ_RE = re.compile(r"'[^']*'")

#: Slurm variables that exist only with the sbatch option that requests them (or, for the
#: restart count, only after a requeue): the option's pattern, why the variable may be unset,
#: and the level. The option is looked for anywhere in the script's text, comments included,
#: since it may be given on the sbatch command line (`# Usage: sbatch --array=1-4 run.sh`).
_CONDITIONAL_SLURM: dict[str, tuple[str, str, Level]] = {
    "SLURM_RESTART_COUNT": (r"(?!)", "is unset on a job's first run (set only after a requeue)",
                            "fail"),
    "SLURM_ARRAY_TASK_ID": (r"--array\b|\s-a\s*\d", "is set only in array jobs", "warn"),
    "SLURM_ARRAY_JOB_ID": (r"--array\b|\s-a\s*\d", "is set only in array jobs", "warn"),
    "SLURM_ARRAY_TASK_COUNT": (r"--array\b|\s-a\s*\d", "is set only in array jobs", "warn"),
    "SLURM_CPUS_PER_TASK": (r"--cpus-per-task|\s-c\s*\d",
                            "is set only when `--cpus-per-task` is requested", "warn"),
    "SLURM_GPUS_PER_NODE": (r"--gpus-per-node",
                            "is set only when `--gpus-per-node` is requested", "warn"),
    "SLURM_GPUS_PER_TASK": (r"--gpus-per-task",
                            "is set only when `--gpus-per-task` is requested", "warn"),
    "SLURM_NTASKS_PER_NODE": (r"--ntasks-per-node",
                              "is set only when `--ntasks-per-node` is requested", "warn"),
    "SLURM_MEM_PER_GPU": (r"--mem-per-gpu", "is set only when `--mem-per-gpu` is requested",
                          "warn"),
    "SLURM_MEM_PER_CPU": (r"--mem-per-cpu", "is set only when `--mem-per-cpu` is requested",
                          "warn"),
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
                    "conda's activate scripts (and the activate.d scripts of packages such as "
                    "the conda compilers) may read variables that are unset; whether this env's "
                    "do is not in the script", "pass"))
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


def _unset_slurm_var(var: str, script_text: str) -> tuple[str, Level] | None:
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
                f"line {line}: `${u.variable}` {u.why}; under `set -u` (line "
                f"{scan.nounset_line}) bash stops with `{u.variable}: unbound variable`: "
                f"{slurm_shows(1)}",
                f"use `${{{u.variable}:-0}}` (or the default you mean)",
            ))
        else:
            findings.append(Finding(
                CHECK_NOUNSET, u.level, line,
                f"line {line}: note: `{u.variable}` under `set -u` (line {scan.nounset_line}): "
                f"{u.why}, so bash can stop with `unbound variable` before training starts: "
                f"{slurm_shows(1)}",
                "turn it off around the activation: `set +u; conda activate ENV; set -u`",
            ))
    if not findings:
        findings.append(Finding(CHECK_NOUNSET, "pass", None,
                                "no conditional variable read under `set -u`"))
    return findings
