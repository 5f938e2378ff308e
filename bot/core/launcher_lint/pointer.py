"""`pointer_without_check`: resume logic reads a checkpoint pointer file with no existence test
before it (the first run, or a run after a partial checkpoint, has none)."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.model import CHECK_POINTER
from bot.core.launcher_lint.paths import ARG, norm, resolve
from bot.core.text import N_

_POINTER_NAME_RE = re.compile(r"(?i)(latest|pointer|last[_-]?(ckpt|checkpoint)|"
                              r"(ckpt|checkpoint)[^/]*\.txt$)")
_READ_RES = [
    re.compile(r"(?:^|[\s;(|&`])(?:cat|head|tail)\s+(?:-\S+\s+)*" + ARG),
    re.compile(r"\$\(\s*<\s*" + ARG + r"\s*\)"),
    re.compile(r"(?:^|[\s;(|&])(?:read|mapfile|readarray)\b[^\n;|&]*<\s*" + ARG),
]
_EXIST_RE = re.compile(r"(?:\[\[?|test(?<!\wtest))\s+(?:!\s+)?-[efsr]\s+" + ARG)
#: An earlier command told to write there: an output / save directory option, a redirect, tee.
_WRITER_RES = [
    re.compile(r"--(?:output|out|save|checkpoint|ckpt)(?:[_-]?(?:dir|path|folder))?[= ]\s*" + ARG),
    re.compile(r">(?<![<>&\d]>)>?\s*" + ARG),  # literal-led: see empty_match._WRITE_RES
    re.compile(r"tee(?<!\wtee)\s+(?:-a\s+)?" + ARG),
]


def _written_before(target: str, before: int, code: str,
                    assigns: dict[str, str]) -> int | None:
    """The offset of an earlier command that writes `target` or the directory it is in."""
    for rx in _WRITER_RES:
        for m in rx.finditer(code, 0, before):
            out = resolve(norm(m.group(1)), assigns).rstrip("/")
            if out and (target == out or target.startswith(out + "/")):
                return m.start()
    return None


def check_pointer(code: str, assigns: dict[str, str]) -> list[Finding]:
    exist_checks: list[tuple[int, str]] = [
        (m.start(), resolve(norm(m.group(1)), assigns)) for m in _EXIST_RE.finditer(code)
    ]
    findings: list[Finding] = []
    notes: list[Finding] = []
    for rx in _READ_RES:
        for m in rx.finditer(code):
            raw = norm(m.group(1)).rstrip("`")
            target = resolve(raw, assigns)
            if not _POINTER_NAME_RE.search(target.rsplit("/", 1)[-1]):
                continue
            checked = any(pos < m.start() and t == target for pos, t in exist_checks)
            line_end = code.find("\n", m.end())
            rest = code[m.end(): len(code) if line_end < 0 else line_end]
            guarded = "||" in rest
            if checked or guarded:
                continue
            line = code.count("\n", 0, m.start()) + 1
            writer = _written_before(target, m.start(), code, assigns)
            if writer is not None:
                notes.append(Finding(
                    CHECK_POINTER, "pass", line,
                    N_("line %(line)s: note: reads the checkpoint pointer `%(path)s` without "
                       "checking it exists, but the command on line %(writer)s writes it (or its "
                       "directory) just before", line=line, path=raw,
                       writer=code.count(chr(10), 0, writer) + 1),
                ))
                continue
            findings.append(Finding(
                CHECK_POINTER, "fail", line,
                N_("line %(line)s: reads the checkpoint pointer `%(path)s` without checking it "
                   "exists; on the first run, or after a save that died before writing it (job "
                   "87870), the launcher fails or resumes from an empty path", line=line,
                   path=raw),
                N_('test it first: `if [ -f "%(path)s" ]; then RESUME=$(cat "%(path)s"); fi`',
                   path=raw),
            ))
    if not findings and not notes:
        findings.append(Finding(CHECK_POINTER, "pass", None,
                                N_("no checkpoint pointer file read without an existence "
                                   "check")))
    findings.extend(notes)
    findings.sort(key=lambda f: f.line or 0)
    return findings
