"""`jit_without_cc`: torch.compile / FlexAttention / Triton / DeepSpeed ops compiled at run
time with no compiler in sight; the worker toolchain probe gives the verdict."""

from __future__ import annotations

import re
from collections.abc import Mapping

from bot.core.findings import Finding
from bot.core.launcher_lint.model import CHECK_JIT_CC
from bot.core.shell_lexer import strip_comments
from bot.core.text import N_, Text

_JIT_RE = re.compile(
    r"(?i)(torch\.compile|flex_?attention|flex-attention|(?<![\w/.$-])triton(?![\w/.-])"
    r"|--(?:torch[-_])?compile\b(?![=\s]+[\"']?(?:false|0|no|none|off)\b)"
    r"|\bcompile=[\"']?(?:true|1|yes)\b|attn[-_]?impl(?:ementation)?=['\"]?flex)"
)
_DEEPSPEED_RE = re.compile(r"(?m)(?:^|[\s;&|(/])(deepspeed)(?:\s|$)|(--deepspeed)\b|"
                           r"(import deepspeed|deepspeed\.initialize)")
_NO_JIT_RE = re.compile(r"(?i)TORCH_COMPILE_DISABLE=[\"']?1|TORCHDYNAMO_DISABLE=[\"']?1")
_DS_PREBUILT_RE = re.compile(r"DS_BUILD_\w+=[\"']?1")
#: `CC=` / `CXX=` naming a compiler (not a flag such as `CC=true`), or exporting one already set
#: (the blanks before `export` stop at a line end: `^\s*` read every blank line below each line
#: start, quadratic in a script of blank lines)
_NOT_A_COMPILER = r"(?![\"']?(?:true|false|yes|no|0|1)?[\"']?(?:\s|;|$))"
_CC_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CC=" + _NOT_A_COMPILER
                        + r"|^[^\S\n]*export\s+(\w+\s+)*CC(\s|$)")
_CXX_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CXX=" + _NOT_A_COMPILER
                         + r"|^[^\S\n]*export\s+(\w+\s+)*CXX(\s|$)")
_MODULE_GCC_RE = re.compile(
    r"(?m)^[ \t]*(?:module|ml)\s+(?:load|add)?\s*.*\b(gcc|gnu|compiler|llvm|clang|intel|nvhpc|"
    r"foss|gompi|PrgEnv)"
)
_CONTAINER_RE = re.compile(
    r"(?i)(--container-image|\bsingularity\s+(?:exec|run)|\bapptainer\s+(?:exec|run)|"
    r"\benroot\s+start|\bdocker\s+run|\bpodman\s+run|\bshifter\b|\bcharliecloud\b|\bch-run\b)"
)
_PY_ARG_RE = re.compile(r"(?:^|\s)(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*([\w./${}-]+\.py)\b")


def python_scripts_in(script_text: str) -> list[str]:
    """The `.py` files the launcher runs (`python train.py`, `torchrun … train.py`), in order."""
    try:
        code = strip_comments(script_text)
    except Exception:  # noqa: BLE001 (lint_launcher reports the lexer failing)
        code = script_text
    found = _PY_ARG_RE.findall(code)
    found += re.findall(r"(?:torchrun|accelerate launch|srun)\s[^\n]*?\s([\w./${}-]+\.py)\b", code)
    out: list[str] = []
    for p in found:
        if p not in out:
            out.append(p)
    return out


#: A JIT use with no compiler in sight, from the script alone (it cannot tell whether the
#: worker has gcc); after_toolchain_probe rewords it once the probe has spoken.
JIT_NOTE = N_("note: %(where)s (%(what)s) but the launcher sets no `CC`, loads no compiler "
              "module and uses no container image: a worker without gcc dies at start with "
              "`Failed to find C compiler` (job 108903); whether the worker has one is not in "
              "the script: the worker toolchain probe gives the verdict")
_JIT_WORDS = ("compile", "flex", "triton", "deepspeed")


def _jit_uses(code: str) -> list[tuple[str, int]]:
    """(what, offset) of each JIT use in launcher code, skipping echo text. Only the lines that
    contain one of _JIT_WORDS are matched against the patterns."""
    lowered = code.lower()
    lines: set[int] = set()
    for word in _JIT_WORDS:
        i = lowered.find(word)
        while i >= 0:
            start = lowered.rfind("\n", 0, i) + 1
            lines.add(start)
            end = lowered.find("\n", i)
            i = -1 if end < 0 else lowered.find(word, end)
    out: list[tuple[str, int]] = []
    for start in sorted(lines):
        end = code.find("\n", start)
        line = code[start: len(code) if end < 0 else end]
        if re.match(r"\s*(?:echo|printf)\b", line):
            continue
        for m in _JIT_RE.finditer(line):
            out.append((m.group(1), start + m.start()))
        if re.match(r"\s*pip\b", line):
            continue
        for m in _DEEPSPEED_RE.finditer(line):
            out.append(("DeepSpeed", start + m.start()))
    return out


def check_jit(code: str, python_sources: Mapping[str, str]) -> list[Finding]:
    where: Text | None = None
    line: int | None = None
    uses = [] if _NO_JIT_RE.search(code) else _jit_uses(code)
    if uses:
        uses.sort(key=lambda u: u[1])
        where = N_("the launcher uses %(names)s", names=_names([u[0] for u in uses]))
        line = code.count("\n", 0, uses[0][1]) + 1
    else:
        for name, src in python_sources.items():
            py_uses = _jit_uses(_strip_py_comments(src))
            if py_uses:
                where = N_("`%(file)s` uses %(names)s", file=name,
                           names=_names([u[0] for u in py_uses]))
                uses = py_uses
                break
    if where is None:
        return [Finding(CHECK_JIT_CC, "pass", None,
                        N_("no torch.compile / FlexAttention / Triton / DeepSpeed use found"))]
    deepspeed_only = all(u[0] == "DeepSpeed" for u in uses)
    what = (N_("builds its fused ops with ninja, a C++ compiler and nvcc the first time they "
               "are used, at start") if deepspeed_only else N_("JIT-compiles kernels at run time"))
    if deepspeed_only and _DS_PREBUILT_RE.search(code):
        return [Finding(CHECK_JIT_CC, "pass", line,
                        N_("%(where)s; its ops are prebuilt (DS_BUILD_*)", where=where))]
    fix = N_("install conda-forge `gcc_linux-64 gxx_linux-64` in the env and add `%(export)s` "
             "before the python command", export="export CC=$CONDA_PREFIX/bin/"
             "x86_64-conda-linux-gnu-gcc CXX=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-g++")
    if _CC_SET_RE.search(code):
        if not _CXX_SET_RE.search(code):
            return [Finding(CHECK_JIT_CC, "warn", line,
                            N_("%(where)s; `CC` is set but `CXX` is not (Inductor's C++ "
                               "kernels and DeepSpeed's ops use it)", where=where), fix)]
        return [Finding(CHECK_JIT_CC, "pass", line,
                        N_("%(where)s and sets `CC` and `CXX`", where=where))]
    module = _MODULE_GCC_RE.search(code)
    if module:
        return [Finding(CHECK_JIT_CC, "pass", line,
                        N_("%(where)s (%(what)s); a compiler module is loaded (`%(module)s`), "
                           "the worker toolchain probe checks it really compiles", where=where,
                           what=what, module=module.group(1)))]
    container = _CONTAINER_RE.search(code)
    if container:
        return [Finding(CHECK_JIT_CC, "pass", line,
                        N_("%(where)s (%(what)s); it runs in a container image (`%(image)s`) "
                           "whose compiler the worker toolchain probe cannot see: check the "
                           "image has gcc", where=where, what=what, image=container.group(1)))]
    return [Finding(CHECK_JIT_CC, "pass", line,
                    Text(JIT_NOTE.msgid, (("where", where), ("what", what))), fix)]


def after_toolchain_probe(findings: list[Finding], compiler_works: bool | None) -> list[Finding]:
    """The lint's findings once the worker toolchain probe has spoken. A JIT use with no
    compiler in sight is only a note from the script alone (it cannot tell whether the worker
    has gcc); it passes when the probe compiled and ran a C program on the worker
    (`compiler_works`), is a warning beside the probe's own failure when it did not, and fails
    when no probe ran (`None`), since nothing else checks the worker."""
    out: list[Finding] = []
    for f in findings:
        if (f.check == CHECK_JIT_CC and f.level != "fail" and isinstance(f.text, Text)
                and f.text.msgid == JIT_NOTE.msgid):
            said = dict(f.text.values)
            if compiler_works is None:
                f = Finding(f.check, "fail", f.line, N_(
                    "%(where)s (%(what)s) but the launcher sets no `CC`, loads no compiler "
                    "module and uses no container image: a worker without gcc dies at start "
                    "with `Failed to find C compiler` (job 108903); the worker toolchain probe "
                    "was skipped, so nothing checked the worker", **said), f.fix_text)
            elif compiler_works:
                f = Finding(f.check, "pass", f.line, N_(
                    "%(where)s (%(what)s); the worker toolchain probe compiled and ran a C "
                    "program on the partition's node", **said))
            else:
                f = Finding(f.check, "warn", f.line, N_(
                    "%(where)s (%(what)s) but the launcher sets no `CC`, loads no compiler "
                    "module and uses no container image: a worker without gcc dies at start "
                    "with `Failed to find C compiler` (job 108903); the worker toolchain probe "
                    "found no working one", **said), f.fix_text)
        out.append(f)
    return out


def _names(found: list[str]) -> str:
    names: list[str] = []
    for n in found:
        if n not in names:
            names.append(n)
    return ", ".join(f"`{n}`" for n in names[:3])


def _strip_py_comments(src: str) -> str:
    return re.sub(r"(?m)#.*$", "", src)
