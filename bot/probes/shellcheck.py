"""Run `shellcheck -f json` on a launcher, when it is installed, and turn its output into findings.

Thin adapter around the Debian `shellcheck` binary: the parsing is pure (`parse_shellcheck_json`)
so it is testable without the binary.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from bot.core.findings import Finding, Level
from bot.core.text import N_

# shellcheck severity -> finding level; `info` and `style` are left out by default (noise in a
# preflight report), `error` means the script does not parse or is clearly broken.
_LEVELS: dict[str, Level] = {"error": "fail", "warning": "warn", "info": "pass", "style": "pass"}
_RANK = {"style": 0, "info": 1, "warning": 2, "error": 3}


def parse_shellcheck_json(output: str, min_severity: str = "warning") -> list[Finding]:
    """Findings from `shellcheck -f json` output, keeping those at or above `min_severity`."""
    items = json.loads(output or "[]")
    findings: list[Finding] = []
    for item in items:
        severity = str(item.get("level", "warning"))
        if _RANK.get(severity, 2) < _RANK[min_severity]:
            continue
        code = f"SC{item.get('code')}"
        findings.append(
            Finding(
                check=f"shellcheck:{code}",
                level=_LEVELS.get(severity, "warn"),
                line=item.get("line"),
                text=N_("line %(line)s: `%(message)s` (%(code)s, %(severity)s)",
                        line=item.get("line"), message=item.get("message", ""), code=code,
                        severity=severity),
                fix_text=N_("see %(url)s", url=f"https://www.shellcheck.net/wiki/{code}"),
            )
        )
    return findings


def run_shellcheck(
    script_text: str,
    *,
    binary: str | None = None,
    min_severity: str = "warning",
    timeout: float = 30.0,
) -> list[Finding] | None:
    """shellcheck's findings for the script, or None when shellcheck is not installed."""
    exe = binary or shutil.which("shellcheck")
    if exe is None:
        return None
    shell = "sh" if script_text.startswith("#!/bin/sh") else "bash"
    proc = subprocess.run(
        [exe, "-f", "json", "-s", shell, "-"],
        input=script_text,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    # exit 1 just means "found something"; anything else is shellcheck itself failing
    if proc.returncode not in (0, 1):
        return [Finding("shellcheck", "warn", None,
                        N_("shellcheck exited %(code)s: %(error)s", code=proc.returncode,
                           error=proc.stderr.strip()[:200]))]
    return parse_shellcheck_json(proc.stdout, min_severity)
