"""Lint a Slurm batch script for the launcher bugs that cost the team GPU hours (pure)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.core.findings import Finding, Level
from bot.core.shell_lexer import (
    Memo,
    blank_heredocs,
    has_glob,
    shell_words,
    skip_group,
    skip_quoted,
    split_top_level,
    strip_comments,
    substitutions,
    word_offsets,
)

CHECK_SHEBANG = "shebang"
CHECK_STRICT_MODE = "strict_mode"
CHECK_EMPTY_MATCH = "empty_match_under_errexit"
CHECK_ARITH_ZERO = "arith_zero_under_errexit"
CHECK_NOUNSET = "unset_variable_under_nounset"
CHECK_JIT_CC = "jit_without_cc"
CHECK_POINTER = "pointer_without_check"

#: Deeper nesting than this is not analysed (reported as such); keeps the walk's stack small.
MAX_DEPTH = 40
#: How far after a statement (characters) its empty-result branch is looked for.
BRANCH_WINDOW = 8192
#: At most this many informational (pass) empty-match notes per script.
MAX_NOTES = 5


# --------------------------------------------------------------------------- errexit analysis


@dataclass
class _Opts:
    errexit: bool = False
    pipefail: bool = False
    nounset: bool = False
    nullglob: bool = False
    inherit_errexit: bool = False
    errexit_line: int | None = None


@dataclass(frozen=True)
class _Hit:
    offset: int
    command: str
    name: str  # the command that fails (`ls`, `grep`, …)
    status: int  # its exit status on an empty match
    reason: str
    fix: str
    targets: tuple[str, ...]  # the files / globs it reads ("" for a grep on stdin)
    upstream: str = ""  # for a command reading a pipe: the pipeline before it
    in_substitution: bool = False
    variable: str | None = None  # the variable the statement assigns, if any
    function: str | None = None  # the function whose body it is in, if any
    pipe_only: bool = False  # fails only through `pipefail` (not the pipeline's last command)
    missing_dir: bool = False  # fails only when its directory does not exist (`ls DIR | head`)
    hidden_by: int | None = None  # offset of the `f | tee …` call that hides the stop


@dataclass
class _Arith:
    offset: int
    command: str
    variable: str


@dataclass
class _Unset:
    offset: int
    variable: str
    why: str
    level: Level


_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_PREFIX_WORDS = {"time", "command", "builtin", "exec", "nohup", "nice", "env", "stdbuf"}
_MASKING_WORDS = {"local", "export", "declare", "readonly", "typeset"}
_GREP_WORDS = {"grep", "egrep", "fgrep", "zgrep", "rg", "pgrep", "ag"}
_FILE_WORDS = {"cat", "stat", "readlink", "realpath", "du", "wc", "head", "tail", "sort", "cp",
               "mv", "ls"}
_STATUS = {"ls": 2, "sort": 2, "find": 1}
_CONDITION_KEYWORDS = {"if", "elif", "while", "until"}
_BODY_KEYWORDS = {"then", "do", "else", "fi", "done", "esac", "in"}
_FUNC_RE = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w:-]*)\s*\(\s*\)\s*(\{|\()")
_FUNC_NAME_RE = re.compile(
    r"(?:function\s+([A-Za-z_][\w:-]*)\s*(?:\(\s*\)\s*)?|([A-Za-z_][\w:-]*)\s*\(\s*\)\s*)[{(]"
)
_FUNC_RE2 = re.compile(r"^\s*function\s+([A-Za-z_][\w:-]*)\s*(\{|\()")
_ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--)\s*\)\)$")
_LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)(\+\+|--)[\"']?$")
_ACTIVATE_RE = re.compile(r"^(?:conda|mamba|micromamba)\s+activate\b|^(?:source|\.)\s+activate\b")
_SLURM_VAR_RE = re.compile(r"\$(?:\{(SLURM_\w+)\}|(SLURM_\w+))")
_SQ_RE = re.compile(r"'[^']*'")


#: A list can only matter if it names one of these commands or opens a group / function
#: (`set` and `shopt` are tracked before this filter).
_CANDIDATE_RE = re.compile(
    r"\b(?:ls|e?grep|fgrep|zgrep|rg|pgrep|ag|find|cat|stat|readlink|realpath|du|wc|head|tail|"
    r"sort|cp|mv|let)\b|\(\(|^[{(]|\(\s*\)|\bfunction\b"
)
#: What a list must contain to need a closer look: a candidate command, a group or function,
#: or `set` / `shopt`.
_QUICK_RE = re.compile(_CANDIDATE_RE.pattern + r"|\bset\b|\bshopt\b|\{")
_FIRST_WORD_RE = re.compile(r"[^\s;|&()<>]*")


def _first_word(lst: str) -> str:
    return _FIRST_WORD_RE.match(lst).group()  # type: ignore[union-attr]


def _short(cmd: str, limit: int = 70) -> str:
    flat = " ".join(cmd.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _Analyzer:
    """Follows the script list by list with the options `set` / `shopt` turn on and off, and
    collects the commands whose failure on an empty match decides a statement's status.

    Iterative over lists, recursive only into nested groups, substitutions and function bodies,
    at most MAX_DEPTH deep; one memo of construct ends, so each character is lexed a bounded
    number of times."""

    def __init__(self, text: str, script_text: str) -> None:
        self.text = text
        self.opts = _Opts()
        self.memo: Memo = {}
        self.depth = 0
        self.too_deep_at: int | None = None
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.later_errexit = bool(
            re.search(r"(?m)^\s*(?:then\s+|do\s+|\{\s*)?set\s+(-\w*e|-o\s+errexit)", text)
        )
        self.function_calls, self.piped_calls = _function_calls(text)
        self.function_vars = (
            {name: var for var, name in re.findall(
                r"([A-Za-z_]\w*)=[\"']?\$\(\s*([A-Za-z_][\w:-]*)", text)}
            if self.function_calls else {}
        )
        self.function: str | None = None
        self.guard_greps: set[tuple[str, str]] = set()
        self.arith: list[_Arith] = []
        self.unset: list[_Unset] = []
        self.script_text = script_text  # the original, comments included
        self.nounset_line: int | None = None

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
        if self.depth >= MAX_DEPTH:
            if self.too_deep_at is None:
                self.too_deep_at = base
            return []
        self.depth += 1
        try:
            return self._script(text, base, status_only)
        finally:
            self.depth -= 1

    def _script(self, text: str, base: int, status_only: bool) -> list[_Hit]:
        hits: list[_Hit] = []
        lists = split_top_level(text, base, ("\n", ";", "&", ";;"), self.memo)
        lists = [(t, o, op) for t, o, op in lists if t.strip()]
        last = len(lists) - 1
        quick = _QUICK_RE.search
        for idx, (lst, off, _op) in enumerate(lists):
            is_last = idx == last
            if not self.opts.nounset and not (status_only and is_last) and not quick(lst):
                continue  # nothing here can fail on an empty match or change an option
            lst_off = off + (len(lst) - len(lst.lstrip()))
            lst = lst.strip()
            first = _first_word(lst)
            if first in _CONDITION_KEYWORDS:
                if not status_only:
                    self._note_guards(lst)
                continue  # an if/while condition never triggers errexit
            while first in _BODY_KEYWORDS:
                cut = lst.find(first) + len(first)
                lst_off += cut + (len(lst[cut:]) - len(lst[cut:].lstrip()))
                lst = lst[cut:].strip()
                first = _first_word(lst)
            if not lst or first in _CONDITION_KEYWORDS or first in ("for", "!"):
                if first in _CONDITION_KEYWORDS and not status_only:
                    self._note_guards(lst)
                continue
            defined = _FUNC_NAME_RE.match(lst)
            if defined and not self.function_calls.get(defined.group(1) or defined.group(2)):
                continue  # a function nobody calls: its body never runs
            if not status_only:
                if first in ("set", "shopt"):
                    self._track_options(shell_words(lst, lst_off, self.memo), lst_off)
                elif self.opts.nounset:
                    self._check_nounset(lst, lst_off)
            if status_only and not is_last:
                continue
            if not _CANDIDATE_RE.search(lst):
                continue  # no command that can fail on an empty match, no group, no function
            if not status_only and not self.opts.errexit:
                # Function bodies and groups may run with `set -e` on (set there or later).
                self._outside_errexit(lst, lst_off, hits)
                continue
            hits.extend(self._and_or(lst, lst_off, errexit_mode=not status_only))
        return hits

    def _outside_errexit(self, lst: str, off: int, hits: list[_Hit]) -> None:
        m = _FUNC_RE.match(lst) or _FUNC_RE2.match(lst)
        if m:
            self._function_body(lst, off, m, hits)
        elif lst.startswith("{") and lst[1:2] in (" ", "\t", "\n"):
            end = _group_end(lst, 0, off, self.memo)
            if not lst[end:].strip().startswith(("|", "&&")):
                hits.extend(self.script(lst[1 : end - 1], off + 1))
        elif "&&" in lst or "||" in lst:
            self._note_guards(lst)

    def _note_guards(self, lst: str) -> None:
        """Remember `grep -q PATTERN FILE` tests: a later grep of the same pattern in the same
        file runs only where the test matched."""
        for m in re.finditer(r"\bgrep\s+((?:-\S+\s+)*)(\S+)\s+([^\s;|&)]+)", lst):
            self.guard_greps.add((_unquote(m.group(2)), _unquote(m.group(3))))

    def _function_body(self, lst: str, off: int, m: re.Match[str], hits: list[_Hit]) -> None:
        name = m.group(1)
        calls = self.function_calls.get(name, set())
        if not calls:
            return  # never called: its body never runs
        brace = m.start(2)
        end = _group_end(lst, brace, off, self.memo)
        saved_errexit, saved_function = self.opts.errexit, self.function
        self.function = name
        if "direct" in calls or "piped" in calls:
            # the body runs when called, usually after `set -e` further down
            self.opts.errexit = saved_errexit or self.later_errexit
            body_hits = self.script(lst[brace + 1 : end - 1], off + brace + 1)
            if "direct" not in calls:  # only `name | tee …`: the stop is hidden
                body_hits = [_with(h, hidden_by=self.piped_calls.get(name)) for h in body_hits]
        elif "subst" not in calls:
            body_hits = []  # only called where `set -e` is off: `if name`, `name || …`
        else:
            # only called as `$(name)`: errexit is off inside (no inherit_errexit), and only
            # the body's last command gives the substitution its status
            body_hits = self.script(
                lst[brace + 1 : end - 1], off + brace + 1,
                status_only=not self.opts.inherit_errexit,
            )
            var = self.function_vars.get(name)
            body_hits = [_with(h, in_substitution=True, variable=h.variable or var)
                         for h in body_hits]
        hits.extend(body_hits)
        self.opts.errexit, self.function = saved_errexit, saved_function

    def _track_options(self, words: list[str], off: int) -> None:
        if words[0] == "set":
            i = 1
            while i < len(words):
                w = words[i]
                if w in ("-o", "+o") and i + 1 < len(words):
                    self._set_option(words[i + 1], w == "-o", off)
                    i += 2
                    continue
                if re.fullmatch(r"[-+][A-Za-z]+", w):
                    on = w[0] == "-"
                    if "e" in w:
                        self._set_errexit(on, off)
                    if "u" in w:
                        self._set_nounset(on, off)
                    if "o" in w and i + 1 < len(words):
                        self._set_option(words[i + 1], on, off)
                        i += 1
                i += 1
        elif words[0] == "shopt" and len(words) >= 3 and words[1] in ("-s", "-u"):
            on = words[1] == "-s"
            for name in words[2:]:
                if name == "nullglob":
                    self.opts.nullglob = on
                elif name == "inherit_errexit":
                    self.opts.inherit_errexit = on

    def _set_option(self, name: str, on: bool, off: int) -> None:
        if name == "errexit":
            self._set_errexit(on, off)
        elif name == "pipefail":
            self.opts.pipefail = on
        elif name == "nounset":
            self._set_nounset(on, off)

    def _set_errexit(self, on: bool, off: int) -> None:
        self.opts.errexit = on
        if on and self.opts.errexit_line is None:
            self.opts.errexit_line = self.line_of(off)

    def _set_nounset(self, on: bool, off: int) -> None:
        self.opts.nounset = on
        if on and self.nounset_line is None:
            self.nounset_line = self.line_of(off)

    # -- `set -u`: conda's activate scripts and the Slurm variables a job may not have
    def _check_nounset(self, lst: str, off: int) -> None:
        if "activate" in lst:
            self._check_activate(lst, off)
        if "$SLURM_" in lst or "${SLURM_" in lst:
            self._check_slurm_vars(lst, off)

    def _check_activate(self, lst: str, off: int) -> None:
        for piece, p_off, _op in split_top_level(lst, off, ("&&", "||", "|"), self.memo):
            piece = piece.strip()
            if _ACTIVATE_RE.match(piece):
                self.unset.append(_Unset(
                    p_off, _short(piece),
                    "conda's activate scripts (and the activate.d scripts of packages such as "
                    "the conda compilers) read variables that may be unset", "warn"))

    def _check_slurm_vars(self, lst: str, off: int) -> None:
        for m in _SLURM_VAR_RE.finditer(_SQ_RE.sub(lambda q: " " * len(q.group()), lst)):
            var = m.group(1) or m.group(2)
            rule = _unset_slurm_var(var, self.script_text)
            if rule:
                self.unset.append(_Unset(off + m.start(), var, rule[0], rule[1]))

    # -- an and-or list: `a && b || c`
    def _and_or(self, lst: str, off: int, errexit_mode: bool) -> list[_Hit]:
        hits: list[_Hit] = []
        elements = split_top_level(lst, off, ("&&", "||"), self.memo)
        for i, (pipeline, p_off, op) in enumerate(elements):
            if op == "||":
                continue  # `a || b`: a failing a is handled
            if errexit_mode and op == "&&":
                self._note_guards(pipeline)
                continue  # errexit ignores all but the last command of an && list
            if i > 0 and elements[i - 1][2] == "||" and _is_trivial(pipeline):
                continue
            hits.extend(self._pipeline(pipeline, p_off, errexit_mode))
        return hits

    def _pipeline(self, pipeline: str, off: int, errexit_mode: bool) -> list[_Hit]:
        cmds = split_top_level(pipeline, off, ("|",), self.memo)
        hits: list[_Hit] = []
        last = len(cmds) - 1
        for i, (cmd, c_off, _op) in enumerate(cmds):
            if i != last and not self.opts.pipefail:
                continue  # without pipefail only the last command's status counts
            lead = len(cmd) - len(cmd.lstrip())
            upstream = " | ".join(c.strip() for c, _o, _p in cmds[:i])
            for hit in self._command(
                cmd.strip(), c_off + lead, i == last, len(cmds) > 1, errexit_mode
            ):
                hits.append(_with(hit, upstream=hit.upstream or upstream,
                                  pipe_only=hit.pipe_only or i != last))
        return hits

    def _command(
        self, cmd: str, off: int, is_last: bool, in_pipe: bool, errexit_mode: bool
    ) -> list[_Hit]:
        if not cmd or cmd.startswith("!"):
            return []
        if cmd.startswith("(("):
            m = _ARITH_RE.match(cmd)
            if m and errexit_mode:
                self.arith.append(_Arith(off, cmd, m.group(1)))
            return []
        if cmd.startswith("{") or cmd.startswith("("):
            end = _group_end(cmd, 0, off, self.memo)
            if cmd[0] == "(":
                saved = _Opts(**vars(self.opts))
                inner = self.script(cmd[1 : end - 1], off + 1, status_only=not errexit_mode)
                self.opts = saved  # a subshell's `set` does not leak out
                return inner
            return self.script(cmd[1 : end - 1], off + 1, status_only=not errexit_mode)
        m = _FUNC_RE.match(cmd) or _FUNC_RE2.match(cmd)
        if m:
            hits: list[_Hit] = []
            self._function_body(cmd, off, m, hits)
            return hits
        words = shell_words(cmd, off, self.memo)
        if not words or words[0].startswith("[") or words[0] == "test":
            return []
        if words[0] in _MASKING_WORDS:
            return []  # `local X=$(…)` returns local's status, not the substitution's
        let = _LET_RE.match(cmd)
        if let and errexit_mode:
            self.arith.append(_Arith(off, cmd, let.group(1)))
            return []
        positions = word_offsets(cmd, words)
        k = 0
        while k < len(words) and _ASSIGN_RE.match(words[k]):
            k += 1
        if k == len(words):  # bare assignment: its status is the last substitution's
            for w, pos in zip(reversed(words), reversed(positions), strict=True):
                subs = substitutions(w, off + pos, self.memo)
                if subs:
                    body, s_off = subs[-1]
                    inner = self.script(
                        body, off + pos + s_off, status_only=not self.opts.inherit_errexit
                    )
                    var = w.split("=", 1)[0].split("[", 1)[0].rstrip("+")
                    return [_with(h, in_substitution=True, variable=h.variable or var)
                            for h in inner]
            return []
        while k < len(words) and words[k] in _PREFIX_WORDS:
            k += 1
        if k >= len(words):
            return []
        if k and words[k][:1] in "{(":  # `time { … }`: the group decides the status
            return self._command(cmd[positions[k]:], off + positions[k], is_last, in_pipe,
                                 errexit_mode)
        name = words[k].rsplit("/", 1)[-1]
        args = words[k + 1 :]
        file_args = _file_args(name, args)
        globbed = [a for a in file_args if has_glob(a)]
        short = _short(cmd)
        hit = None
        if name in _GREP_WORDS:
            pattern, files = _grep_args(args)
            if any((pattern, f) in self.guard_greps for f in files):
                return []
            hit = _Hit(off, short, name, 1, f"`{name}` exits 1 when nothing matches",
                       f"guard it: `{{ {short} || true; }}`", tuple(files))
        elif name == "ls" and globbed and not self.opts.nullglob:
            hit = _Hit(off, short, name, 2,
                       f"`ls` exits 2 when `{globbed[0]}` matches nothing"
                       + (" (e.g. no checkpoint yet)"
                          if re.search(r"(?i)ckpt|checkpoint|step|iter", globbed[0]) else ""),
                       f"guard it: `{{ {short} 2>/dev/null || true; }}`", tuple(globbed))
        elif (name == "ls" and in_pipe and not is_last and self.opts.pipefail and file_args
              and not globbed):
            hit = _Hit(off, short, name, 2,
                       f"`ls` exits 2 when `{file_args[0]}` does not exist yet (a first run)",
                       f"guard it: `{{ {short} 2>/dev/null || true; }}`", tuple(file_args),
                       missing_dir=True)
        elif name == "find" and in_pipe and not is_last:
            start = [a for a in args if not a.startswith("-")][:1]
            hit = _Hit(off, short, name, 1,
                       "`find` exits non-zero when its start directory does not exist yet "
                       "(and may die of SIGPIPE when `head` stops reading)",
                       f"guard it: `{{ {short} 2>/dev/null || true; }}`", tuple(start),
                       missing_dir=True)
        elif name in _FILE_WORDS and globbed and not self.opts.nullglob:
            hit = _Hit(off, short, name, _STATUS.get(name, 1),
                       f"`{name}` fails when `{globbed[0]}` matches nothing",
                       f"guard it: `{{ {short} 2>/dev/null || true; }}` or test the files "
                       "exist first", tuple(globbed))
        if hit is None:
            return []
        return [_with(hit, function=self.function)]


def _with(hit: _Hit, **changes: object) -> _Hit:
    values = {**vars(hit), **changes}
    return _Hit(**values)  # type: ignore[arg-type]


def _group_end(text: str, open_at: int, base: int, memo: Memo) -> int:
    """Index just past the group / body that opens at text[open_at] (`{` or `(`)."""
    if text[open_at] == "(":
        return skip_quoted(text, open_at, base, memo)
    return skip_group(text, open_at, base, memo)


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'":
        return word[1:-1]
    return word


_OPTS_WITH_VALUE = {"-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count",
                    "-name", "-iname", "-path", "-type", "-maxdepth", "-mindepth", "-newer",
                    "-t", "-k", "-n", "-c", "--lines", "--bytes", "-S", "-T"}


def _file_args(name: str, args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = name in ("head", "tail") and a in ("-n", "-c")
            continue
        if a.startswith((">", "<", "2>", "&>", "1>")):
            continue
        out.append(a)
    return out


def _grep_args(args: list[str]) -> tuple[str, list[str]]:
    """(pattern, files) of a grep command line."""
    pattern: str | None = None
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--regexp") and i + 1 < len(args):
            pattern = _unquote(args[i + 1])
            i += 2
            continue
        if a.startswith("-") and pattern is None or a.startswith(("-", ">", "<", "2>", "&>")):
            i += 1
            continue
        if pattern is None:
            pattern = _unquote(a)
        else:
            files.append(_unquote(a))
        i += 1
    return pattern or "", files


#: Call sites are classified one by one only up to this many functions (each costs a pass).
MAX_CLASSIFIED_FUNCTIONS = 50


def _function_calls(text: str) -> tuple[dict[str, set[str]], dict[str, int]]:
    """How each function defined in the script is called: a set of "direct" (a plain command:
    `set -e` applies inside), "piped" (a pipeline element before the last: its status is
    hidden), "guarded" (an `if`/`while` condition or before `&&`/`||`: `set -e` is off inside)
    and "subst" (inside `$( … )` / backticks); and the offset of each one's first piped call."""
    names = set(re.findall(
        r"(?m)^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w:-]*)[ \t]*\([ \t]*\)", text))
    if "function" in text:
        names |= set(re.findall(r"(?m)^[ \t]*function\s+([A-Za-z_][\w:-]*)", text))
    if not names:
        return {}, {}
    words = Counter(re.findall(r"(?<![\w$./:-])[A-Za-z_][\w:-]*(?![\w:-])", text))
    in_subst = Counter(re.findall(r"(?:\$\(|`)\s*([A-Za-z_][\w:-]*)(?![\w:-])", text))
    defined = Counter(re.findall(
        r"(?m)^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w:-]*)[ \t]*(?:\([ \t]*\)|(?=[ \t]*\{))",
        text))
    calls: dict[str, set[str]] = {}
    piped: dict[str, int] = {}
    for name in names:
        direct = words[name] - in_subst[name] - max(1, defined[name])
        calls[name] = {"direct"} if direct > 0 else set()
        if in_subst[name]:
            calls[name].add("subst")
    if len(names) <= MAX_CLASSIFIED_FUNCTIONS:
        for name, kinds in calls.items():
            if "direct" in kinds:
                kinds.discard("direct")
                kinds |= _call_kinds(text, name, piped)
    return calls, piped


def _call_kinds(text: str, name: str, piped: dict[str, int]) -> set[str]:
    kinds: set[str] = set()
    rx = re.compile(r"(?m)^(?P<pre>[^\n]*?)(?<![\w$./:-])" + re.escape(name)
                    + r"(?![\w:-])(?P<post>[^\n]*)$")
    for m in rx.finditer(text):
        pre, post = m.group("pre"), m.group("post")
        head = pre.strip()
        if post.lstrip().startswith("(") or head.endswith("function") or head.endswith(
            ("$(", "`", "=", "echo", "printf")
        ):
            continue  # its definition, a substitution, an assignment or text
        if head and not re.search(
            r"(?:^|[;&|({]|\b(?:then|do|else|time|exec|if|elif|while|until)|!)$", head
        ):
            continue  # an argument of another command
        rest = _SQ_RE.sub("", post)
        if re.match(r"(?:if|elif|while|until|!)\b", head) or "&&" in rest or "||" in rest:
            kinds.add("guarded")
        elif re.search(r"(?<![|>])\|(?!\|)", rest):
            kinds.add("piped")
            piped.setdefault(name, m.start("post"))
        else:
            kinds.add("direct")
    return kinds or {"direct"}


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


def _unset_slurm_var(var: str, script_text: str) -> tuple[str, Level] | None:
    rule = _CONDITIONAL_SLURM.get(var)
    if rule is None:
        return None
    pattern, why, level = rule
    return None if re.search(pattern, script_text) else (why, level)


def _is_trivial(pipeline: str) -> bool:
    return pipeline.strip() in {"true", ":", "exit 0", "return 0"}


# --------------------------------------------------------------------------- what a hit means

_JOB_NAME_RE = re.compile(
    r"(?i)(ckpt|checkpoint|step_|step-|iter_|iter-|global_step|latest|epoch|\.log\b|\.out\b|"
    r"\.err\b|(^|/)logs?(/|$)|slurm-|output|results?(/|$)|\.pt\b|\.pth\b|\.safetensors\b)"
)
_SYSTEM_PATH_RE = re.compile(r"^/(usr|lib|lib64|etc|opt|proc|sys|bin|sbin|dev)/")
_WRITE_ARG = r"\s*(\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&)<>]+)"
#: Where a script says it writes a path: redirections, tee, mkdir, touch, `-o`/`-e`, and the
#: output / save / log / checkpoint options of the programs it runs. One literal-led pattern
#: each, so that the regex engine can skip ahead.
_MKDIR_RE = re.compile(r"\bmkdir\s+(?:-\S+\s+)*" + _WRITE_ARG)
_WRITE_RES = [_MKDIR_RE] + [re.compile(p + _WRITE_ARG) for p in (
    r">>?",
    r"\btee\s+(?:-a\s+)?",
    r"\btouch\s+",
    r"\s-[oe]\s+",
    r"--(?:output|error|save|log|ckpt|checkpoint)[\w-]*[= ]",
)]
_TRAIN_RE = re.compile(
    r"(?m)^[^\n#]*?(?:\btorchrun\b|\bdeepspeed\s|\baccelerate\s+launch\b|\bpython[\d.]*\s+"
    r"(?:-\S+\s+)*(?:-m\s+\S+|\S+\.py)\b|\bmpirun\b|\bsrun\b[^\n]*\.py\b)"
)


@dataclass
class _Context:
    """What the whole script says about a hit: which paths the job writes, which variables have
    an empty-result branch, where training starts."""

    assigns: dict[str, str]
    written: set[str]
    train_line: int | None
    code: str
    made_dirs: list[tuple[int, str]] = field(default_factory=list)  # (offset, path) of mkdir


def _context(code: str, sbatch_options: str, analyzer: _Analyzer,
             assigns: dict[str, str]) -> _Context:
    written: set[str] = set()
    for rx in _WRITE_RES:
        for text in (code, sbatch_options):
            for m in rx.finditer(text):
                path = _resolve(_norm(m.group(1)), assigns).rstrip("/")
                if path:
                    written.add(path)
    made_dirs = [(m.start(), _resolve(_norm(m.group(1)), assigns).rstrip("/"))
                 for m in _MKDIR_RE.finditer(code)]
    train = _TRAIN_RE.search(code)
    train_line = analyzer.line_of(train.start()) if train else None
    return _Context(assigns, written, train_line, code, made_dirs)


def _made_before(hit: _Hit, ctx: _Context) -> str | None:
    """The directory a `missing_dir` hit reads, when `mkdir` created it earlier in the script."""
    if not hit.missing_dir:
        return None
    for raw in hit.targets:
        target = _resolve(_norm(raw), ctx.assigns).rstrip("/")
        if any(pos < hit.offset and path == target for pos, path in ctx.made_dirs):
            return target
    return None


def _branch_for(var: str | None, ctx: _Context, after: int) -> tuple[str, bool] | None:
    """The first test of `var` for an empty result after `after`: (its text, does the branch
    go on rather than just exit?); None when there is no such test."""
    if not var:
        return None
    v = re.escape(var)
    rx = re.compile(
        r"(?:-[zn]\s+\"?\$\{?" + v + r"\b|\"?\$\{?" + v + r"\}?\"?\s*!?==?\s*(?:\"\"|'')"
        r"|(?:\"\"|'')\s*!?==?\s*\"?\$\{?" + v + r"\b|\[\[?\s+\"?\$\{?" + v + r"\}?\"?\s+\]"
        r"|\$\{" + v + r":?[-=+]|-[defs]\s+\"?\$\{?" + v + r"\b"
        r"|\$\{?" + v + r"\}?\"?\s+-(?:eq|ne|gt|lt|ge|le)\s)"
    )
    for m in rx.finditer(ctx.code, after, after + BRANCH_WINDOW):
        line_end = ctx.code.find("\n", m.end())
        block_end = ctx.code.find("\nfi", m.end(), after + BRANCH_WINDOW)
        block = ctx.code[m.start(): block_end if block_end >= 0 else line_end]
        text = _short(ctx.code[m.start(): line_end if line_end >= 0 else len(ctx.code)], 40)
        # an empty side that is an error exit: stopping earlier loses nothing
        exits = re.search(r"\bexit\s+(?:[1-9]|\$)|\breturn\s+[1-9]|\bexit\s*$", block, re.M)
        return text, not exits
    return None


def _job_produced(hit: _Hit, ctx: _Context) -> str | None:
    """Why the target is something the job itself produces (None if it is not / unknown)."""
    targets = list(hit.targets)
    if not targets and hit.upstream:
        m = re.search(r"\b(?:cat|tail|head|ls|find)\s+(?:-\S+\s+)*(\S+)", hit.upstream)
        if not m:
            return None  # a grep on another command's output (`scontrol … | grep`)
        targets = [_unquote(m.group(1))]
    for raw in targets:
        target = _resolve(_norm(raw), ctx.assigns)
        if _SYSTEM_PATH_RE.match(target):
            continue
        base = target.split("*", 1)[0].rstrip("/")
        for path in (target, *_ancestors(base)):
            if path in ctx.written:
                return f"`{path}` is written by this script"
        name_m = _JOB_NAME_RE.search(target)
        if name_m:
            return f"`{raw}` names a checkpoint or log the job writes"
    return None


def _ancestors(path: str) -> list[str]:
    """`a/b/c` -> [`a/b/c`, `a/b`, `a`] (the path itself and the directories above it)."""
    out = []
    while path:
        out.append(path)
        cut = path.rfind("/")
        if cut <= 0:
            break
        path = path[:cut]
    return out


def _when(line: int, ctx: _Context) -> str:
    if ctx.train_line is None:
        return "before anything after it runs"
    if line < ctx.train_line:
        return f"before training starts (training runs on line {ctx.train_line})"
    if line > ctx.train_line:
        return (f"after the training command (line {ctx.train_line}) has returned, so the job's "
                "state, not its work, is what is lost")
    return "on the training line itself"


def _slurm_shows(status: int) -> str:
    return (f"Slurm shows FAILED {status}:0 (COMPLETED 0:0 only when a wrapper ignores the "
            "script's status, as for job 108687)")


# --------------------------------------------------------------------------- the checks


def _shebang_errexit(text: str) -> bool:
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and bool(re.search(r"\s-\w*e", first))


def _sbatch_options(text: str) -> str:
    return "\n".join(m.group(1) for m in re.finditer(r"(?m)^#SBATCH\s+(.*)$", text))


def _check_empty_match(
    text: str, code: str, assigns: dict[str, str]
) -> tuple[list[Finding], _Analyzer]:
    sbatch = _sbatch_options(text)
    analyzer = _Analyzer(code, text)
    if _shebang_errexit(text):
        analyzer.opts.errexit = True
        analyzer.opts.errexit_line = 1
    hits = analyzer.script(code, 0)
    ctx = _context(code, sbatch, analyzer, assigns) if hits else None
    findings: list[Finding] = []
    notes: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    mode = "`set -e` + `pipefail`" if analyzer.opts.pipefail else "`set -e`"
    for hit in hits:
        line = analyzer.line_of(hit.offset)
        if (line, hit.command) in seen:
            continue
        seen.add((line, hit.command))
        where = "in a command substitution assigned to a variable, " if hit.in_substitution else ""
        if hit.function:
            where += f"in function `{hit.function}`, "
        assert ctx is not None
        produced = _job_produced(hit, ctx)
        branch_test = _branch_for(hit.variable, ctx, hit.offset)
        branch = branch_test[0] if branch_test and branch_test[1] else None
        if branch_test and not branch_test[1]:
            produced = None  # the script stops on an empty result anyway
        made = _made_before(hit, ctx)
        if made:
            produced = None  # the directory exists: nothing to miss
        if hit.hidden_by is not None:
            call_line = analyzer.line_of(hit.hidden_by)
            stop = (f"under {mode} the function stops right here, {_when(line, ctx)}, but its "
                    f"call on line {call_line} pipes it into another command, whose status "
                    "the pipeline returns: the launcher goes on past the skipped work and, "
                    "unless something later fails, Slurm shows COMPLETED 0:0 (the silent exit "
                    "of job 108687)")
        else:
            stop = (f"under {mode} the launcher stops right here {_when(line, ctx)}: "
                    f"{_slurm_shows(hit.status)}")
        if produced and branch:
            findings.append(Finding(
                CHECK_EMPTY_MATCH, "fail", line,
                f"line {line}: {where}{hit.reason}; {produced}, and the script expects an "
                f"empty result (`{branch}`) but never gets there: {stop}: `{hit.command}`",
                hit.fix,
            ))
        elif produced:
            findings.append(Finding(
                CHECK_EMPTY_MATCH, "warn", line,
                f"line {line}: {where}{hit.reason}; {produced}, so on a run where it is "
                f"missing or empty {stop}: `{hit.command}`",
                hit.fix,
            ))
        else:
            notes.append(Finding(
                CHECK_EMPTY_MATCH, "pass", line,
                f"line {line}: note: {where}{hit.reason} and {mode} would stop the launcher; "
                + (f"but `{made}` is created earlier in the script, so it exists" if made
                   else f"the script exits on an empty result anyway (`{branch_test[0]}`)"
                   if branch_test else
                   "its input does not look like something the job produces")
                + f": `{hit.command}`",
                hit.fix,
            ))
    if len(notes) > MAX_NOTES:
        more = len(notes) - MAX_NOTES
        notes = notes[:MAX_NOTES]
        notes.append(Finding(CHECK_EMPTY_MATCH, "pass", None,
                             f"{more} more such notes left out"))
    findings.extend(notes)
    if analyzer.too_deep_at is not None:
        line = analyzer.line_of(analyzer.too_deep_at)
        findings.append(Finding(
            CHECK_EMPTY_MATCH, "pass", line,
            f"line {line}: nesting deeper than {MAX_DEPTH} levels; what is inside was not "
            "checked",
        ))
    if not findings:
        state = "errexit on" if analyzer.opts.errexit_line else "errexit off"
        findings.append(Finding(
            CHECK_EMPTY_MATCH, "pass", None,
            f"no unguarded empty-match command decides a statement's status ({state})",
        ))
    return findings, analyzer


def _check_arith(analyzer: _Analyzer, code: str) -> list[Finding]:
    findings: list[Finding] = []
    values: dict[str, list[tuple[int, str]]] = {}
    if analyzer.arith:
        wanted = {a.variable for a in analyzer.arith}
        for m in re.finditer(r"(?<![\w$])([A-Za-z_]\w*)=(\S*)", code):
            if m.group(1) in wanted:
                values.setdefault(m.group(1), []).append((m.start(), m.group(2).strip("\"'")))
    for a in analyzer.arith:
        before = [v for pos, v in values.get(a.variable, []) if pos < a.offset]
        if not before or before[-1] != "0":
            continue
        line = analyzer.line_of(a.offset)
        findings.append(Finding(
            CHECK_ARITH_ZERO, "fail", line,
            f"line {line}: `{_short(a.command)}` with `{a.variable}` at 0 evaluates to 0, so its "
            "status is 1: under `set -e` the launcher stops right here the first time: "
            f"{_slurm_shows(1)}",
            f"use `(( ++{a.variable} ))` or `{a.variable}=$(( {a.variable} + 1 ))`",
        ))
    if not findings:
        findings.append(Finding(CHECK_ARITH_ZERO, "pass", None,
                                "no `((n++))` from 0 under `set -e`"))
    return findings


def _check_nounset(analyzer: _Analyzer) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for u in analyzer.unset:
        line = analyzer.line_of(u.offset)
        if (line, u.variable) in seen:
            continue
        seen.add((line, u.variable))
        if u.variable.startswith("SLURM_"):
            findings.append(Finding(
                CHECK_NOUNSET, u.level, line,
                f"line {line}: `${u.variable}` {u.why}; under `set -u` (line "
                f"{analyzer.nounset_line}) bash stops with `{u.variable}: unbound variable`: "
                f"{_slurm_shows(1)}",
                f"use `${{{u.variable}:-0}}` (or the default you mean)",
            ))
        else:
            findings.append(Finding(
                CHECK_NOUNSET, u.level, line,
                f"line {line}: `{u.variable}` under `set -u` (line {analyzer.nounset_line}): "
                f"{u.why}, so bash can stop with `unbound variable` before training starts: "
                f"{_slurm_shows(1)}",
                "turn it off around the activation: `set +u; conda activate ENV; set -u`",
            ))
    if not findings:
        findings.append(Finding(CHECK_NOUNSET, "pass", None,
                                "no conditional variable read under `set -u`"))
    return findings


def _check_shebang(text: str) -> list[Finding]:
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        return [Finding(CHECK_SHEBANG, "pass", 1, f"starts with `{_short(first, 40)}`")]
    return [Finding(
        CHECK_SHEBANG, "fail", 1,
        "line 1 does not start with `#!`: sbatch refuses the script (\"This does not look like "
        "a batch script. The first line must start with #! followed by the path to an "
        "interpreter.\"), so nothing is submitted",
        "make line 1 `#!/bin/bash` (no blank line or comment before it)",
    )]


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
_NOT_A_COMPILER = r"(?![\"']?(?:true|false|yes|no|0|1)?[\"']?(?:\s|;|$))"
_CC_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CC=" + _NOT_A_COMPILER
                        + r"|^\s*export\s+(\w+\s+)*CC(\s|$)")
_CXX_SET_RE = re.compile(r"(?m)(^|[\s;&|(])(export\s+)?CXX=" + _NOT_A_COMPILER
                         + r"|^\s*export\s+(\w+\s+)*CXX(\s|$)")
_MODULE_GCC_RE = re.compile(
    r"(?m)^\s*(?:module|ml)\s+(?:load|add)?\s*.*\b(gcc|gnu|compiler|llvm|clang|intel|nvhpc|"
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


NO_COMPILER = "the launcher sets no `CC`, loads no compiler module and uses no container image"
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


def _check_jit(code: str, python_sources: Mapping[str, str]) -> list[Finding]:
    where: str | None = None
    line: int | None = None
    uses = [] if _NO_JIT_RE.search(code) else _jit_uses(code)
    if uses:
        uses.sort(key=lambda u: u[1])
        where = f"the launcher uses {_names([u[0] for u in uses])}"
        line = code.count("\n", 0, uses[0][1]) + 1
    else:
        for name, src in python_sources.items():
            py_uses = _jit_uses(_strip_py_comments(src))
            if py_uses:
                where = f"`{name}` uses {_names([u[0] for u in py_uses])}"
                uses = py_uses
                break
    if where is None:
        return [Finding(CHECK_JIT_CC, "pass", None,
                        "no torch.compile / FlexAttention / Triton / DeepSpeed use found")]
    deepspeed_only = all(u[0] == "DeepSpeed" for u in uses)
    what = ("builds its fused ops with ninja, a C++ compiler and nvcc the first time they "
            "are used, at start" if deepspeed_only else "JIT-compiles kernels at run time")
    if deepspeed_only and _DS_PREBUILT_RE.search(code):
        return [Finding(CHECK_JIT_CC, "pass", line, f"{where}; its ops are prebuilt (DS_BUILD_*)")]
    fix = ("install conda-forge `gcc_linux-64 gxx_linux-64` in the env and add "
           "`export CC=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-gcc "
           "CXX=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-g++` before the python command")
    if _CC_SET_RE.search(code):
        if not _CXX_SET_RE.search(code):
            return [Finding(CHECK_JIT_CC, "warn", line,
                            f"{where}; `CC` is set but `CXX` is not (Inductor's C++ kernels "
                            "and DeepSpeed's ops use it)", fix)]
        return [Finding(CHECK_JIT_CC, "pass", line, f"{where} and sets `CC` and `CXX`")]
    module = _MODULE_GCC_RE.search(code)
    if module:
        return [Finding(CHECK_JIT_CC, "pass", line,
                        f"{where} ({what}); a compiler module is loaded (`{module.group(1)}`), "
                        "the worker toolchain probe checks it really compiles")]
    container = _CONTAINER_RE.search(code)
    if container:
        return [Finding(CHECK_JIT_CC, "pass", line,
                        f"{where} ({what}); it runs in a container image "
                        f"(`{container.group(1)}`) whose compiler the worker toolchain probe "
                        "cannot see: check the image has gcc")]
    return [Finding(CHECK_JIT_CC, "warn", line,
                    f"{where} ({what}) but {NO_COMPILER}: a worker without gcc dies at start "
                    "with `Failed to find C compiler` (job 108903); the worker toolchain probe "
                    "gives the verdict", fix)]


def after_toolchain_probe(findings: list[Finding], compiler_works: bool | None) -> list[Finding]:
    """The lint's findings once the worker toolchain probe has spoken: a JIT use with no
    compiler in sight passes when the probe compiled and ran a C program on the worker
    (`compiler_works`), stays a warning beside the probe's own failure when it did not, and
    fails when no probe ran (`None`), since nothing else checks the worker."""
    out: list[Finding] = []
    for f in findings:
        if f.check == CHECK_JIT_CC and f.level == "warn" and NO_COMPILER in f.message:
            if compiler_works is None:
                f = Finding(f.check, "fail", f.line,
                            f.message.replace("the worker toolchain probe gives the verdict",
                                              "and the worker toolchain probe was skipped"),
                            f.fix)
            elif compiler_works:
                f = Finding(f.check, "pass", f.line,
                            f.message.split(" but ", 1)[0] + "; the worker toolchain probe "
                            "compiled and ran a C program on the partition's node")
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
    arg = arg.replace('"', "").replace("'", "")
    return re.sub(r"\$\{(\w+)\}", r"$\1", arg) if "${" in arg else arg


def _resolve(arg: str, assigns: Mapping[str, str]) -> str:
    if "$" not in arg:
        return arg
    for _ in range(3):
        new = re.sub(r"\$(\w+)", lambda m: assigns.get(m.group(1), m.group(0)), arg)
        if new == arg:
            break
        arg = new
    return arg


def _assignments(code: str) -> dict[str, str]:
    """The last plain `NAME=value` of each variable (quotes and `${}` braces dropped)."""
    return {m.group(1): _norm(m.group(2)) for m in _SIMPLE_ASSIGN_RE.finditer(code)}


def _check_pointer(code: str, assigns: dict[str, str]) -> list[Finding]:
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


def _crashed(check: str, exc: Exception) -> Finding:
    return Finding(
        check, "warn", None,
        f"this check could not read the script ({type(exc).__name__}: {_short(str(exc), 80)}); "
        "it was skipped, the other checks ran",
        "report it with the script attached",
    )


def lint_launcher(
    script_text: str, python_sources: Mapping[str, str] | None = None
) -> list[Finding]:
    """All findings for a batch script; `python_sources` maps the .py files it runs to their text.

    Every check reports at least one finding (a `pass` when it found nothing), so a report
    shows what was checked. A check that raises becomes a `warn` finding saying so; the
    others still run.
    """
    findings = _check_shebang(script_text)
    try:
        code = strip_comments(script_text)
        blanked = blank_heredocs(code)
        assigns = _assignments(code)
    except Exception as exc:  # noqa: BLE001 (the lexer failing is reported, not raised)
        findings.append(Finding(CHECK_STRICT_MODE, "pass", None, "not checked"))
        return findings + [_crashed(check, exc) for check in (
            CHECK_EMPTY_MATCH, CHECK_ARITH_ZERO, CHECK_NOUNSET, CHECK_JIT_CC, CHECK_POINTER)]
    analyzer: _Analyzer | None = None
    try:
        empty, analyzer = _check_empty_match(script_text, blanked, assigns)
    except Exception as exc:  # noqa: BLE001 (any crash is reported as a finding)
        empty = [_crashed(CHECK_EMPTY_MATCH, exc)]
    if analyzer is not None and analyzer.opts.errexit_line:
        opts = analyzer.opts
        mode = "set -e" + (" + pipefail" if opts.pipefail else "")
        findings.append(Finding(CHECK_STRICT_MODE, "pass", opts.errexit_line,
                                f"strict mode on ({mode}): unguarded failures stop the launcher"))
    else:
        findings.append(Finding(CHECK_STRICT_MODE, "pass", None,
                                "no `set -e`: failing commands do not stop the launcher"))
    findings.extend(empty)
    if analyzer is not None:
        for check, run in ((CHECK_ARITH_ZERO, lambda: _check_arith(analyzer, code)),
                           (CHECK_NOUNSET, lambda: _check_nounset(analyzer))):
            try:
                findings.extend(run())
            except Exception as exc:  # noqa: BLE001
                findings.append(_crashed(check, exc))
    for check, run in ((CHECK_JIT_CC, lambda: _check_jit(code, python_sources or {})),
                       (CHECK_POINTER, lambda: _check_pointer(code, assigns))):
        try:
            findings.extend(run())
        except Exception as exc:  # noqa: BLE001
            findings.append(_crashed(check, exc))
    return findings


__all__ = [
    "after_toolchain_probe",
    "CHECK_ARITH_ZERO",
    "CHECK_EMPTY_MATCH",
    "CHECK_JIT_CC",
    "CHECK_NOUNSET",
    "CHECK_POINTER",
    "CHECK_SHEBANG",
    "CHECK_STRICT_MODE",
    "MAX_DEPTH",
    "NO_COMPILER",
    "lint_launcher",
    "python_scripts_in",
]
