"""Lint a Slurm batch script for the launcher bugs that cost the team GPU hours (pure).

`engine` walks the script once (`model.Scan`); each check is a module of its own."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.core.findings import Finding
from bot.core.launcher_lint.arith import check_arith
from bot.core.launcher_lint.directives import check_sbatch_directives
from bot.core.launcher_lint.empty_match import check_empty_match
from bot.core.launcher_lint.engine import scan
from bot.core.launcher_lint.interactive import check_interactive
from bot.core.launcher_lint.jit import (
    after_toolchain_probe,
    check_jit,
    python_scripts_in,
)
from bot.core.launcher_lint.messages import crashed
from bot.core.launcher_lint.model import (
    CHECK_ARITH_ERROR,
    CHECK_ARITH_UNSET,
    CHECK_ARITH_ZERO,
    CHECK_EMPTY_MATCH,
    CHECK_EXIT_TRAP,
    CHECK_INTERACTIVE,
    CHECK_JIT_CC,
    CHECK_NOUNSET,
    CHECK_POINTER,
    CHECK_POSITIONAL,
    CHECK_SBATCH_AFTER_COMMAND,
    CHECK_SBATCH_INDENTED,
    CHECK_SBATCH_OWN_ERROR,
    CHECK_SHEBANG,
    CHECK_STRICT_MODE,
    CHECK_TEE_HIDES_STATUS,
    MAX_DEPTH,
    Opts,
    Scan,
)
from bot.core.launcher_lint.nounset import check_nounset
from bot.core.launcher_lint.paths import assignments
from bot.core.launcher_lint.pointer import check_pointer
from bot.core.launcher_lint.positional import ArgOverrides, check_positional
from bot.core.launcher_lint.shebang import check_shebang
from bot.core.launcher_lint.tee import check_tee
from bot.core.launcher_lint.trap import check_exit_trap
from bot.core.shell_lexer import blank_heredocs, strip_comments
from bot.core.text import N_, Text


def lint_launcher(
    script_text: str,
    python_sources: Mapping[str, str] | None = None,
    script_args: Sequence[str] | None = None,
    arg_overrides: ArgOverrides | None = None,
) -> list[Finding]:
    """All findings for a batch script; `python_sources` maps the .py files it runs to their text,
    `script_args` are the arguments the recipe passes it (None: not known), `arg_overrides` the
    recipe's overrides that a run may append to them.

    Every check reports at least one finding (a `pass` when it found nothing), so a report
    shows what was checked. A check that raises becomes a `warn` finding saying so; the
    others still run.
    """
    findings = check_shebang(script_text)
    try:
        code = strip_comments(script_text)
        blanked = blank_heredocs(code)
        assigns = assignments(code)
    except Exception as exc:  # noqa: BLE001 (the lexer failing is reported, not raised)
        findings.append(Finding(CHECK_STRICT_MODE, "pass", None, N_("not checked")))
        return findings + [crashed(check, exc) for check in (
            CHECK_EMPTY_MATCH, CHECK_ARITH_ZERO, CHECK_ARITH_UNSET, CHECK_ARITH_ERROR,
            CHECK_NOUNSET, CHECK_INTERACTIVE, CHECK_JIT_CC, CHECK_POINTER,
            CHECK_SBATCH_AFTER_COMMAND, CHECK_SBATCH_INDENTED, CHECK_SBATCH_OWN_ERROR,
            CHECK_TEE_HIDES_STATUS,
            CHECK_EXIT_TRAP, CHECK_POSITIONAL)]
    walked: Scan | None = None
    try:
        walked = scan(script_text, blanked)
        empty = check_empty_match(script_text, blanked, walked, assigns)
    except Exception as exc:  # noqa: BLE001 (any crash is reported as a finding)
        empty = [crashed(CHECK_EMPTY_MATCH, exc)]
    if walked is not None and walked.opts.errexit_line:
        findings.append(_strict_mode_note(walked.opts, code))
    else:
        findings.append(Finding(CHECK_STRICT_MODE, "pass", None,
                                N_("no `set -e`: failing commands do not stop the launcher")))
    findings.extend(empty)
    checks: tuple[str, ...]  # the ids a check reports under, each crashed when it raises
    if walked is not None:
        done = walked
        for checks, run in (
                ((CHECK_ARITH_ZERO, CHECK_ARITH_UNSET, CHECK_ARITH_ERROR),
                 lambda: check_arith(done, blanked)),
                ((CHECK_NOUNSET,), lambda: check_nounset(done)),
                ((CHECK_INTERACTIVE,), lambda: check_interactive(done)),
                ((CHECK_TEE_HIDES_STATUS,), lambda: check_tee(done)),
                ((CHECK_EXIT_TRAP,), lambda: check_exit_trap(done, blanked, {})),
                ((CHECK_POSITIONAL,), lambda: check_positional(done, script_args,
                                                              arg_overrides))):
            try:
                findings.extend(run())
            except Exception as exc:  # noqa: BLE001
                findings.extend(crashed(check, exc) for check in checks)
    for checks, run in (((CHECK_JIT_CC,), lambda: check_jit(code, python_sources or {})),
                        ((CHECK_SBATCH_AFTER_COMMAND, CHECK_SBATCH_INDENTED,
                          CHECK_SBATCH_OWN_ERROR),
                         lambda: check_sbatch_directives(script_text, blanked)),
                        ((CHECK_POINTER,), lambda: check_pointer(code, assigns))):
        try:
            findings.extend(run())
        except Exception as exc:  # noqa: BLE001
            findings.extend(crashed(check, exc) for check in checks)
    return findings


def _strict_mode_note(opts: Opts, code: str) -> Finding:
    """The `strict_mode` note of a script that turns `set -e` on (`opts`: as the script ends;
    `code`: its text without comments):
    on throughout, on in some branches or loop passes only, on but turned off by a `set +e`
    somewhere (back on by the end), or on until a `set +e` that leaves it off to the end;
    `pipefail` named as it is where `set -e` is on (_note_mode)."""
    mode = _note_mode(opts, code)
    said = {"mode": mode, "on": opts.errexit_line, "off": opts.errexit_off_line}
    if opts.errexit_partial:
        text = N_("strict mode on only in some branches or loop passes (%(mode)s): unguarded "
                  "failures stop the launcher where `set -e` is on", mode=mode)
    elif opts.errexit_off_line is None:
        text = N_("strict mode on (%(mode)s): unguarded failures stop the launcher", mode=mode)
    elif opts.errexit:
        # the mode may name a line of its own ("pipefail from line N on"): the lines where
        # `set -e` comes on and goes off are said apart from it
        text = N_("strict mode on in some lines only (%(mode)s; on from line %(on)s, off from "
                  "`set +e` on line %(off)s until a later `set -e`): unguarded failures stop "
                  "the launcher where `set -e` is on", **said)
    else:
        text = N_("strict mode on from line %(on)s (%(mode)s), off after `set +e` on line "
                  "%(off)s: unguarded failures stop the launcher before that line, not after "
                  "it", **said)
    return Finding(CHECK_STRICT_MODE, "pass", opts.errexit_line, text)


def _note_mode(opts: Opts, code: str) -> Text:
    """The options the `strict_mode` note names: Opts.strict_mode as the script ends, but with
    `pipefail` as it is at the pipelines where `set -e` is on: "from line N on" when a `set -o
    pipefail` comes after `set -e` and a pipeline between them runs without it, "before line
    N only" when a `set +o pipefail` after `set -e` turns it off for good and a pipeline after
    it runs without it."""
    on, off, errexit_line = opts.pipefail_line, opts.pipefail_off_line, opts.errexit_line
    if errexit_line is not None and opts.pipefail_sure and on is not None and on > errexit_line:
        if _has_pipeline(code, errexit_line, on):
            return N_("set -e, pipefail from line %(line)s on", line=on)
    elif errexit_line is not None and not opts.pipefail and off is not None and off > errexit_line:
        if _has_pipeline(code, off + 1, None):
            return N_("set -e, pipefail before line %(line)s only", line=off)
        return N_("set -e + pipefail")
    return N_("set -e + pipefail") if "pipefail" in opts.strict_mode() else N_("set -e")


#: A pipe between two commands (`a | b`, `a |& b`), not an `||`.
_PIPE_RE = re.compile(r"(?<!\|)\|(?!\|)")


def _has_pipeline(code: str, first: int, last: int | None) -> bool:
    """Is there a pipe on lines `first` to `last` - 1 of `code` (to its end when None)?"""
    lines = code.split("\n")[first - 1 : None if last is None else last - 1]
    return any(_PIPE_RE.search(line) for line in lines)


__all__ = [
    "after_toolchain_probe",
    "ArgOverrides",
    "CHECK_ARITH_ERROR",
    "CHECK_ARITH_UNSET",
    "CHECK_ARITH_ZERO",
    "CHECK_EMPTY_MATCH",
    "CHECK_EXIT_TRAP",
    "CHECK_INTERACTIVE",
    "CHECK_JIT_CC",
    "CHECK_NOUNSET",
    "CHECK_POINTER",
    "CHECK_POSITIONAL",
    "CHECK_SBATCH_AFTER_COMMAND",
    "CHECK_SBATCH_INDENTED",
    "CHECK_SHEBANG",
    "CHECK_STRICT_MODE",
    "CHECK_TEE_HIDES_STATUS",
    "MAX_DEPTH",
    "lint_launcher",
    "python_scripts_in",
]
