"""`interactive_shell_in_batch`: what only works in an interactive terminal, run in a batch job
under strict mode: `clear` (no terminal: exits 1) and shell startup files (`~/.bashrc`,
`/etc/profile`…) sourced under `set -u` (they read variables a batch shell does not have)."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows, under_errexit
from bot.core.launcher_lint.model import CHECK_INTERACTIVE, Interactive, Scan
from bot.core.text import N_

#: `source ~/.bashrc`, `. $HOME/.profile`, `source /etc/bashrc` at the start of a command (an
#: `if` / `while` condition's too).
_STARTUP_RE = re.compile(
    r"(?:^|[;&|{(!]|\b(?:then|do|else|if|elif|while|until))\s*(?P<cmd>(?:source|\.)\s+"
    r"(?:[\"']?(?:~|\$HOME|\$\{HOME\})/\.(?:bashrc|bash_profile|bash_login|profile)\b"
    r"|[\"']?/etc/(?:profile|bashrc|bash\.bashrc)\b)[^\s;&|)]*)"
)


def may_source_startup(text: str) -> bool:
    """False when `startup_sources` finds nothing in any part of `text`."""
    return "bashrc" in text or "profile" in text


def startup_sources(lst: str, off: int) -> list[Interactive]:
    """The shell startup files one and-or list (run under `set -u`) sources."""
    return [Interactive(off + m.start("cmd"), short(m.group("cmd")), "startup")
            for m in _STARTUP_RE.finditer(lst)]


def check_interactive(scan: Scan) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[int] = set()
    for item in scan.interactive:
        line = scan.line_of(item.offset)
        if line in seen:
            continue
        seen.add(line)
        if item.kind == "clear":
            findings.append(Finding(
                # with `set -e` on some paths only, the stop is on the runs that take them
                CHECK_INTERACTIVE, "warn" if item.errexit_partial else "fail", line,
                N_("line %(line)s: `clear` needs a terminal and a batch job has none (its `TERM` "
                   "is unset, or `dumb` over trainbot's SSH), so it exits 1; %(under)s the "
                   "launcher stops right here: %(slurm)s", line=line,
                   under=under_errexit("`set -e`", item.errexit_partial,
                                       scan.opts.errexit_line),
                   slurm=slurm_shows(1)),
                N_("drop it (nothing is on a screen in a batch job), or write `clear || true`"),
            ))
        else:
            findings.append(Finding(
                CHECK_INTERACTIVE, "warn", line,
                N_("line %(line)s: `%(command)s` under `set -u` (line %(nounset)s): shell "
                   "startup files are written for interactive shells and often read variables a "
                   "batch job does not have (RHEL's /etc/bashrc tests `$BASHRCSOURCED`, older "
                   "ones `$PS1`), so bash can stop here with `unbound variable` before training "
                   "starts: %(slurm)s", line=line, command=item.command,
                   nounset=scan.nounset_line, slurm=slurm_shows(1)),
                N_("turn it off around it: `set +u; %(command)s; set -u`, or load only what the "
                   "job needs (`module load …`, `source ENV/bin/activate`)",
                   command=item.command),
            ))
    if not findings:
        findings.append(Finding(CHECK_INTERACTIVE, "pass", None,
                                N_("no `clear` under `set -e`, no shell startup file sourced "
                                   "under `set -u`")))
    return findings
