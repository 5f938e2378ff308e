"""Lint a Slurm batch script for the launcher bugs that cost the team GPU hours (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.core.findings import Finding
from bot.core.shell_lexer import (
    blank_heredocs,
    has_glob,
    shell_words,
    skip_balanced,
    split_top_level,
    strip_comments,
    substitutions,
    word_offsets,
)

CHECK_STRICT_MODE = "strict_mode"
CHECK_EMPTY_MATCH = "empty_match_under_errexit"
CHECK_JIT_CC = "jit_without_cc"
CHECK_POINTER = "pointer_without_check"


# --------------------------------------------------------------------------- errexit analysis


@dataclass
class _Opts:
    errexit: bool = False
    pipefail: bool = False
    nullglob: bool = False
    inherit_errexit: bool = False
    errexit_line: int | None = None


@dataclass(frozen=True)
class _Hit:
    offset: int
    command: str
    reason: str
    fix: str
    in_substitution: bool


_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_PREFIX_WORDS = {"time", "command", "builtin", "exec", "nohup", "nice", "env", "stdbuf"}
_MASKING_WORDS = {"local", "export", "declare", "readonly", "typeset"}
_GREP_WORDS = {"grep", "egrep", "fgrep", "zgrep", "rg", "pgrep", "ag"}
_FILE_WORDS = {"cat", "stat", "readlink", "realpath", "du", "wc", "head", "tail", "sort", "cp",
               "mv", "ls"}
_CONDITION_KEYWORDS = {"if", "elif", "while", "until"}
_BODY_KEYWORDS = {"then", "do", "else", "fi", "done", "esac", "in"}
_FUNC_RE = re.compile(r"^\s*(?:function\s+)?[A-Za-z_][\w:-]*\s*\(\s*\)\s*(\{)")
_FUNC_RE2 = re.compile(r"^\s*function\s+[A-Za-z_][\w:-]*\s*(\{)")


def _short(cmd: str, limit: int = 70) -> str:
    flat = " ".join(cmd.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _Analyzer:
    """Follows the script list by list with the options `set` / `shopt` turn on and off, and
    collects the commands whose failure on an empty match decides a statement's status."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.opts = _Opts()
        self.hits: list[_Hit] = []
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    # -- top level: every and-or list in order, tracking `set` / `shopt`
    def script(self, text: str, base: int, status_only: bool = False) -> list[_Hit]:
        hits: list[_Hit] = []
        lists = split_top_level(text, base, ("\n", ";", "&", ";;"))
        lists = [(t, o, op) for t, o, op in lists if t.strip()]
        for idx, (lst, off, _op) in enumerate(lists):
            is_last = idx == len(lists) - 1
            lst_off = off + (len(lst) - len(lst.lstrip()))
            lst = lst.strip()
            if not status_only:
                self._track_options(lst, lst_off)
            words = shell_words(lst)
            if not words:
                continue
            if words[0] in _CONDITION_KEYWORDS:
                continue  # an if/while condition never triggers errexit
            while words and words[0] in _BODY_KEYWORDS:
                cut = lst.find(words[0]) + len(words[0])
                lst_off += cut + (len(lst[cut:]) - len(lst[cut:].lstrip()))
                lst = lst[cut:].strip()
                words = words[1:]
            if not lst or words[0] in _CONDITION_KEYWORDS or words[0] == "for":
                continue
            if status_only and not is_last:
                continue
            if not status_only and not self.opts.errexit:
                # Function bodies may run after `set -e`; look inside them anyway.
                self._function_body(lst, lst_off, hits)
                continue
            hits.extend(self._and_or(lst, lst_off, errexit_mode=not status_only))
        return hits

    def _function_body(self, lst: str, off: int, hits: list[_Hit]) -> None:
        m = _FUNC_RE.match(lst) or _FUNC_RE2.match(lst)
        if m:
            brace = m.start(1)
            end = skip_balanced(lst, brace + 1, "{", "}")
            saved = self.opts.errexit
            # the body runs when called, usually after `set -e` further down
            self.opts.errexit = saved or self._later_errexit
            hits.extend(self.script(lst[brace + 1 : end - 1], off + brace + 1))
            self.opts.errexit = saved

    @property
    def _later_errexit(self) -> bool:
        return bool(re.search(r"^\s*set\s+(-\w*e|-o\s+errexit)", self.text, re.M))

    def _track_options(self, lst: str, off: int) -> None:
        words = shell_words(lst)
        if not words:
            return
        if words[0] == "set":
            i = 1
            while i < len(words):
                w = words[i]
                if w in ("-o", "+o") and i + 1 < len(words):
                    on = w == "-o"
                    name = words[i + 1]
                    if name == "errexit":
                        self._set_errexit(on, off)
                    elif name == "pipefail":
                        self.opts.pipefail = on
                    i += 2
                    continue
                if re.fullmatch(r"[-+][A-Za-z]+", w):
                    on = w[0] == "-"
                    if "e" in w:
                        self._set_errexit(on, off)
                    if "o" in w and i + 1 < len(words):
                        if words[i + 1] == "pipefail":
                            self.opts.pipefail = on
                        elif words[i + 1] == "errexit":
                            self._set_errexit(on, off)
                        i += 1
                i += 1
        elif words[0] == "shopt" and len(words) >= 3 and words[1] in ("-s", "-u"):
            on = words[1] == "-s"
            for name in words[2:]:
                if name == "nullglob":
                    self.opts.nullglob = on
                elif name == "inherit_errexit":
                    self.opts.inherit_errexit = on

    def _set_errexit(self, on: bool, off: int) -> None:
        self.opts.errexit = on
        if on and self.opts.errexit_line is None:
            self.opts.errexit_line = self.line_of(off)

    # -- an and-or list: `a && b || c`
    def _and_or(self, lst: str, off: int, errexit_mode: bool) -> list[_Hit]:
        hits: list[_Hit] = []
        elements = split_top_level(lst, off, ("&&", "||"))
        for i, (pipeline, p_off, op) in enumerate(elements):
            if op == "||":
                continue  # `a || b`: a failing a is handled
            if errexit_mode and op == "&&":
                continue  # errexit ignores all but the last command of an && list
            if i > 0 and elements[i - 1][2] == "||" and _is_trivial(pipeline):
                continue
            hits.extend(self._pipeline(pipeline, p_off, errexit_mode))
        return hits

    def _pipeline(self, pipeline: str, off: int, errexit_mode: bool) -> list[_Hit]:
        cmds = split_top_level(pipeline, off, ("|",))
        hits: list[_Hit] = []
        last = len(cmds) - 1
        for i, (cmd, c_off, _op) in enumerate(cmds):
            if i != last and not self.opts.pipefail:
                continue  # without pipefail only the last command's status counts
            lead = len(cmd) - len(cmd.lstrip())
            hits.extend(
                self._command(cmd.strip(), c_off + lead, i == last, len(cmds) > 1, errexit_mode)
            )
        return hits

    def _command(
        self, cmd: str, off: int, is_last: bool, in_pipe: bool, errexit_mode: bool
    ) -> list[_Hit]:
        if not cmd or cmd.startswith("!"):
            return []
        if cmd.startswith("{") or cmd.startswith("("):
            open_, close = ("{", "}") if cmd[0] == "{" else ("(", ")")
            end = skip_balanced(cmd, 1, open_, close)
            return self.script(cmd[1 : end - 1], off + 1, status_only=not errexit_mode)
        m = _FUNC_RE.match(cmd) or _FUNC_RE2.match(cmd)
        if m:
            hits: list[_Hit] = []
            self._function_body(cmd, off, hits)
            return hits
        words = shell_words(cmd)
        if not words or words[0].startswith("[") or words[0] == "test":
            return []
        if words[0] in _MASKING_WORDS:
            return []  # `local X=$(…)` returns local's status, not the substitution's
        positions = word_offsets(cmd, words)
        k = 0
        while k < len(words) and _ASSIGN_RE.match(words[k]):
            k += 1
        if k == len(words):  # bare assignment: its status is the last substitution's
            for w, pos in zip(reversed(words), reversed(positions), strict=True):
                subs = substitutions(w)
                if subs:
                    body, s_off = subs[-1]
                    inner = self.script(
                        body, off + pos + s_off, status_only=not self.opts.inherit_errexit
                    )
                    return [
                        _Hit(h.offset, h.command, h.reason, h.fix, True) for h in inner
                    ]
            return []
        while k < len(words) and words[k] in _PREFIX_WORDS:
            k += 1
        if k >= len(words):
            return []
        name = words[k].rsplit("/", 1)[-1]
        args = words[k + 1 :]
        file_args = [a for a in args if not a.startswith("-")]
        globbed = [a for a in file_args if has_glob(a)]
        short = _short(cmd)
        if name in _GREP_WORDS:
            return [_Hit(off, short, f"`{name}` exits 1 when nothing matches",
                         f"guard it: `{{ {short} || true; }}`", False)]
        if name == "ls" and globbed and not self.opts.nullglob:
            return [_Hit(off, short,
                         f"`ls` exits 2 when `{globbed[0]}` matches nothing (e.g. no checkpoint "
                         "yet)",
                         f"guard it: `{{ {short} 2>/dev/null || true; }}`", False)]
        if name == "find" and in_pipe and not is_last:
            return [_Hit(off, short,
                         "`find` exits non-zero when its start directory does not exist yet "
                         "(and may die of SIGPIPE when `head` stops reading)",
                         f"guard it: `{{ {short} 2>/dev/null || true; }}`", False)]
        if name in _FILE_WORDS and globbed and not self.opts.nullglob:
            return [_Hit(off, short, f"`{name}` fails when `{globbed[0]}` matches nothing",
                         f"guard it: `{{ {short} 2>/dev/null || true; }}` or test the files "
                         "exist first", False)]
        return []


def _is_trivial(pipeline: str) -> bool:
    return pipeline.strip() in {"true", ":", "exit 0", "return 0"}


# --------------------------------------------------------------------------- the checks


def _shebang_errexit(text: str) -> bool:
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and bool(re.search(r"\s-\w*e", first))


def _check_empty_match(text: str, code: str) -> tuple[list[Finding], _Opts]:
    analyzer = _Analyzer(code)
    if _shebang_errexit(text):
        analyzer.opts.errexit = True
        analyzer.opts.errexit_line = 1
    hits = analyzer.script(code, 0)
    findings: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    mode = "`set -e` + `pipefail`" if analyzer.opts.pipefail else "`set -e`"
    for hit in hits:
        line = analyzer.line_of(hit.offset)
        if (line, hit.command) in seen:
            continue
        seen.add((line, hit.command))
        where = "in a command substitution assigned to a variable, " if hit.in_substitution else ""
        findings.append(Finding(
            CHECK_EMPTY_MATCH, "fail", line,
            f"line {line}: {where}{hit.reason}; under {mode} the launcher exits right here "
            "before training starts (job 108687 ended COMPLETED 0:0 ten seconds in): "
            f"`{hit.command}`",
            hit.fix,
        ))
    if not findings:
        state = "errexit on" if analyzer.opts.errexit_line else "errexit off"
        findings.append(Finding(
            CHECK_EMPTY_MATCH, "pass", None,
            f"no unguarded empty-match command decides a statement's status ({state})",
        ))
    return findings, analyzer.opts


_JIT_RE = re.compile(
    r"(?i)(torch\.compile|flex_?attention|flex-attention|\btriton\b|--(?:torch[-_])?compile\b"
    r"|\bcompile=(?:true|1|yes)\b|attn[-_]?impl(?:ementation)?=['\"]?flex)"
)
_CC_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CC=|^\s*export\s+(\w+\s+)*CC(\s|$)")
_CXX_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CXX=|^\s*export\s+(\w+\s+)*CXX(\s|$)")
_MODULE_GCC_RE = re.compile(r"(?m)^\s*module\s+(load|add)\s+.*\b(gcc|gnu|compiler|llvm|clang)")
_PY_ARG_RE = re.compile(r"(?:^|\s)(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*([\w./${}-]+\.py)\b")


def python_scripts_in(script_text: str) -> list[str]:
    """The `.py` files the launcher runs (`python train.py`, `torchrun … train.py`), in order."""
    code = strip_comments(script_text)
    found = _PY_ARG_RE.findall(code)
    found += re.findall(r"(?:torchrun|accelerate launch|srun)\s[^\n]*?\s([\w./${}-]+\.py)\b", code)
    out: list[str] = []
    for p in found:
        if p not in out:
            out.append(p)
    return out


def _check_jit(code: str, python_sources: Mapping[str, str]) -> list[Finding]:
    where: str | None = None
    line: int | None = None
    matches = list(_JIT_RE.finditer(code))
    if matches:
        where = f"the launcher uses {_names(matches)}"
        line = code.count("\n", 0, matches[0].start()) + 1
    else:
        for name, src in python_sources.items():
            py_matches = list(_JIT_RE.finditer(_strip_py_comments(src)))
            if py_matches:
                where = f"`{name}` uses {_names(py_matches)}"
                break
    if where is None:
        return [Finding(CHECK_JIT_CC, "pass", None,
                        "no torch.compile / FlexAttention / Triton use found")]
    fix = ("install conda-forge `gcc_linux-64 gxx_linux-64` in the env and add "
           "`export CC=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-gcc "
           "CXX=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-g++` before the python command")
    if not _CC_SET_RE.search(code):
        if _MODULE_GCC_RE.search(code):
            return [Finding(CHECK_JIT_CC, "warn", line,
                            f"{where} (JIT-compiles kernels at run time); a compiler module is "
                            "loaded but `CC` is never set, so Triton depends on what is on PATH",
                            fix)]
        return [Finding(CHECK_JIT_CC, "fail", line,
                        f"{where} (JIT-compiles kernels at run time) but `CC` is never set: a "
                        "worker image without gcc dies at start with `Failed to find C "
                        "compiler` (job 108903)", fix)]
    if not _CXX_SET_RE.search(code):
        return [Finding(CHECK_JIT_CC, "warn", line,
                        f"{where}; `CC` is set but `CXX` is not (Inductor's C++ kernels use it)",
                        fix)]
    return [Finding(CHECK_JIT_CC, "pass", line, f"{where} and sets `CC` and `CXX`")]


def _names(matches: list[re.Match[str]]) -> str:
    names: list[str] = []
    for m in matches:
        if m.group(1) not in names:
            names.append(m.group(1))
    return ", ".join(f"`{n}`" for n in names[:3])


def _strip_py_comments(src: str) -> str:
    return re.sub(r"(?m)#.*$", "", src)


_POINTER_NAME_RE = re.compile(r"(?i)(latest|pointer|last[_-]?(ckpt|checkpoint)|"
                              r"(ckpt|checkpoint)[^/]*\.txt$)")
_ARG = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&)<>]+)"
_READ_RES = [
    re.compile(r"(?:^|[\s;(|&`])(?:cat|head|tail)\s+(?:-\S+\s+)*" + _ARG),
    re.compile(r"\$\(\s*<\s*" + _ARG + r"\s*\)"),
    re.compile(r"(?:^|[\s;(|&])(?:read|mapfile|readarray)\b[^\n;|&]*<\s*" + _ARG),
]
_EXIST_RE = re.compile(r"(?:\[\[?|\btest)\s+(?:!\s+)?-[efsr]\s+" + _ARG)
_SIMPLE_ASSIGN_RE = re.compile(r"(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=" + _ARG)


def _norm(arg: str) -> str:
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'":
        arg = arg[1:-1]
    return re.sub(r"\$\{(\w+)\}", r"$\1", arg)


def _resolve(arg: str, assigns: Mapping[str, str]) -> str:
    for _ in range(3):
        new = re.sub(r"\$(\w+)", lambda m: assigns.get(m.group(1), m.group(0)), arg)
        if new == arg:
            break
        arg = new
    return arg


def _check_pointer(code: str) -> list[Finding]:
    assigns = {m.group(1): _norm(m.group(2)) for m in _SIMPLE_ASSIGN_RE.finditer(code)}
    exist_checks: list[tuple[int, str]] = [
        (m.start(), _resolve(_norm(m.group(1)), assigns)) for m in _EXIST_RE.finditer(code)
    ]
    findings: list[Finding] = []
    for rx in _READ_RES:
        for m in rx.finditer(code):
            raw = _norm(m.group(1))
            target = _resolve(raw, assigns)
            if not _POINTER_NAME_RE.search(target.rsplit("/", 1)[-1]):
                continue
            checked = any(pos < m.start() and t == target for pos, t in exist_checks)
            line_end = code.find("\n", m.end())
            rest = code[m.end(): len(code) if line_end < 0 else line_end]
            guarded = "||" in rest
            if checked or guarded:
                continue
            line = code.count("\n", 0, m.start()) + 1
            findings.append(Finding(
                CHECK_POINTER, "fail", line,
                f"line {line}: reads the checkpoint pointer `{raw}` without checking it exists; "
                "on the first run, or after a save that died before writing it (job 87870), "
                "the launcher fails or resumes from an empty path",
                f'test it first: `if [ -f "{raw}" ]; then RESUME=$(cat "{raw}"); fi`',
            ))
    if not findings:
        findings.append(Finding(CHECK_POINTER, "pass", None,
                                "no checkpoint pointer file read without an existence check"))
    findings.sort(key=lambda f: f.line or 0)
    return findings


def lint_launcher(
    script_text: str, python_sources: Mapping[str, str] | None = None
) -> list[Finding]:
    """All findings for a batch script; `python_sources` maps the .py files it runs to their text.

    Every check reports at least one finding (a `pass` when it found nothing), so a report
    shows what was checked.
    """
    code = strip_comments(script_text)
    empty, opts = _check_empty_match(script_text, blank_heredocs(code))
    if opts.errexit_line:
        mode = "set -e" + (" + pipefail" if opts.pipefail else "")
        strict = Finding(CHECK_STRICT_MODE, "pass", opts.errexit_line,
                         f"strict mode on ({mode}): unguarded failures stop the launcher")
    else:
        strict = Finding(CHECK_STRICT_MODE, "pass", None,
                         "no `set -e`: failing commands do not stop the launcher")
    findings = [strict, *empty, *_check_jit(code, python_sources or {}), *_check_pointer(code)]
    return findings


__all__ = [
    "CHECK_EMPTY_MATCH",
    "CHECK_JIT_CC",
    "CHECK_POINTER",
    "CHECK_STRICT_MODE",
    "lint_launcher",
    "python_scripts_in",
]
