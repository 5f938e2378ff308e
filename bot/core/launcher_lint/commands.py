"""How the launcher lint's walk (bot.core.launcher_lint.engine) reads an and-or list where `set -e`
may stop on it (CommandWalk, mixed into the walk): which of its pipelines' commands decide its
status (`a || b`: not a; `a && b`: b only; without pipefail a pipeline's last command), and in
each the command that may fail on an empty match (empty_match.command_hit), the counters
(`((n++))`, `let`), a group's or subshell's body, a substitution's in a bare assignment, and
`clear` (interactive)."""

from __future__ import annotations

import re
from copy import copy
from typing import Protocol

from bot.core.launcher_lint.arith_commands import ARITH_RE, LET_RE
from bot.core.launcher_lint.empty_match import command_hit
from bot.core.launcher_lint.functions import FUNC_RE, FUNC_RE2
from bot.core.launcher_lint.model import Arith, Hit, Interactive, Opts, either, with_
from bot.core.launcher_lint.nounset import may_read_unset
from bot.core.launcher_lint.syntax import past_negation
from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    Memo,
    group_end,
    shell_words,
    split_top_level,
    substitutions,
    word_offsets,
)

_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_PREFIX_WORDS = {"time", "command", "builtin", "exec", "nohup", "nice", "env", "stdbuf"}
_MASKING_WORDS = {"local", "export", "declare", "readonly", "typeset"}
#: A list can only matter if it names one of these commands or opens a group / function
#: (`set` and `shopt` are tracked before this filter).
_CANDIDATE_RE = re.compile(
    r"\b(?:ls|e?grep|fgrep|zgrep|rg|pgrep|ag|find|cat|stat|readlink|realpath|du|wc|head|tail|"
    r"sort|cp|mv|let|clear)\b|\(\(|^[{(]|\(\s*\)|\bfunction\b"
)
#: What a list must contain to need a closer look: a candidate command, a group or function,
#: or `set` / `shopt`.
_QUICK_RE = re.compile(_CANDIDATE_RE.pattern + r"|\bset\b|\bshopt\b|\{")
#: Substrings one of which a word of _CANDIDATE_RE / _QUICK_RE contains; `re` tries those
#: patterns at every position, so a long text without any of these is decided without them.
_CANDIDATE_WORDS = ("ls", "grep", "rg", "ag", "find", "cat", "stat", "readlink", "realpath",
                    "du", "wc", "head", "tail", "sort", "cp", "mv", "let", "function", "clear")
_QUICK_WORDS = (*_CANDIDATE_WORDS, "set", "shopt")
_EMPTY_PARENS_RE = re.compile(r"\((?=\s*\))")
#: Texts shorter than this go straight to the pattern.
_LONG = 2048


def has_candidate(text: str, quick: bool = False) -> bool:
    """Does _QUICK_RE (`quick`) or _CANDIDATE_RE match in `text`? Same answer, faster on long
    texts: the non-word alternatives are looked for directly, the pattern runs only when one
    of the words is there."""
    rx = _QUICK_RE if quick else _CANDIDATE_RE
    if len(text) < _LONG:
        return rx.search(text) is not None
    if text[:1] in ("{", "(") or "((" in text or _EMPTY_PARENS_RE.search(text):
        return True
    if quick and "{" in text:
        return True
    words = _QUICK_WORDS if quick else _CANDIDATE_WORDS
    return any(w in text for w in words) and rx.search(text) is not None


class _Walk(Protocol):
    """What CommandWalk uses of the walk it is mixed into (engine._Analyzer): the options
    where it is, the lexer's memo, the function whose body it reads, the greps a guard tests,
    what it collects (counters, `clear`s), how many subshells are around it, where the loop
    read again as its later passes starts, and the walk of a nested text (a group's body, a
    substitution's)."""

    opts: Opts
    memo: Memo
    function: str | None
    guard_greps: set[tuple[str, str]]
    arith: list[Arith]
    interactive: list[Interactive]
    in_subshell: int
    later_pass_of: int | None

    def script(self, text: str, base: int, status_only: bool = False) -> list[Hit]: ...

    def _note_guards(self, lst: str) -> None: ...

    def _function_body(self, lst: str, off: int, m: re.Match[str], hits: list[Hit]) -> None: ...

    def _partial_stops(self, arith_from: int, pipefail: bool = False) -> None: ...

    def _and_or(self, lst: str, off: int, errexit_mode: bool) -> list[Hit]: ...

    def _pipeline(self, pipeline: str, off: int, errexit_mode: bool) -> list[Hit]: ...

    def _command(self, cmd: str, off: int, is_last: bool, in_pipe: bool, errexit_mode: bool
                 ) -> list[Hit]: ...


class CommandWalk:
    """The walk's reading of an and-or list's commands, mixed into engine._Analyzer."""

    # -- an and-or list: `a && b || c`
    def _and_or(self: _Walk, lst: str, off: int, errexit_mode: bool) -> list[Hit]:
        hits: list[Hit] = []
        elements = split_top_level(lst, off, ("&&", "||"), self.memo)
        for i, (pipeline, p_off, op) in enumerate(elements):
            if op == "||":
                continue  # `a || b`: a failing a is handled
            if errexit_mode and op == "&&":
                self._note_guards(pipeline)
                continue  # errexit ignores all but the last command of an && list
            if i > 0 and elements[i - 1][2] == "||" and _is_trivial(pipeline):
                continue
            # `[ -f x ] && { set +e; … }`: bash runs the group or not
            before = copy(self.opts) if i > 0 and pipeline.lstrip().startswith("{") else None
            hits.extend(self._pipeline(pipeline, p_off, errexit_mode))
            if before is not None:
                self.opts = either([before, self.opts])
        return hits

    def _pipeline(self: _Walk, pipeline: str, off: int, errexit_mode: bool) -> list[Hit]:
        cmds = split_top_level(pipeline, off, ("|",), self.memo)
        hits: list[Hit] = []
        last = len(cmds) - 1
        for i, (cmd, c_off, _op) in enumerate(cmds):
            if i != last and not self.opts.pipefail:
                continue  # without pipefail only the last command's status counts
            lead = len(cmd) - len(cmd.lstrip())
            arith_from = len(self.arith)
            self.in_subshell += last > 0
            found = self._command(cmd.strip(), c_off + lead, i == last, len(cmds) > 1,
                                  errexit_mode)
            self.in_subshell -= last > 0
            if i != last and self.opts.pipefail_partial:
                self._partial_stops(arith_from, pipefail=True)
            if found:
                upstream = " | ".join(c.strip() for c, _o, _p in cmds[:i])
                hits.extend(with_(hit, upstream=hit.upstream or upstream,
                                  pipe_only=hit.pipe_only or i != last) for hit in found)
        return hits

    def _command(
        self: _Walk, cmd: str, off: int, is_last: bool, in_pipe: bool, errexit_mode: bool
    ) -> list[Hit]:
        if not cmd or past_negation(cmd)[1]:
            return []
        if not has_candidate(cmd, quick=True) and not (self.opts.nounset and may_read_unset(cmd)):
            return []  # no candidate command, group, function or option inside
        if cmd.startswith("(("):
            m = ARITH_RE.match(cmd)
            if m and errexit_mode:
                self.arith.append(Arith(off, cmd, m.group(1), self.opts.errexit_partial,
                                        self.later_pass_of, m.group(2).startswith("="),
                                        self.opts.nounset,
                                        errexit_in_body=self.opts.errexit_in_body,
                                        errexit_in_body_partial=self.opts.errexit_in_body_partial))
            return []
        if cmd.startswith("{") or cmd.startswith("("):
            end = group_end(cmd, 0, off, self.memo)
            if cmd[0] == "(":
                saved = Opts(**vars(self.opts))
                first = len(self.arith)
                self.in_subshell += 1
                inner = self.script(cmd[1 : end - 1], off + 1, status_only=not errexit_mode)
                self.in_subshell -= 1
                self.opts = saved  # a subshell's `set` does not leak out
                for a in self.arith[first:]:  # … nor its `set -e` to the function's body: the
                    a.errexit_in_body &= saved.errexit_in_body  # subshell's status is the call's
                    a.errexit_in_body_partial = saved.errexit_in_body_partial
                return inner
            return self.script(cmd[1 : end - 1], off + 1, status_only=not errexit_mode)
        m = FUNC_RE.match(cmd) or FUNC_RE2.match(cmd)
        if m:
            hits: list[Hit] = []
            self._function_body(cmd, off, m, hits)
            return hits
        words = shell_words(cmd, off, self.memo)
        if not words or words[0].startswith("[") or words[0] == "test":
            return []
        if words[0] in _MASKING_WORDS:
            return []  # `local X=$(…)` returns local's status, not the substitution's
        let = LET_RE.match(cmd)
        if let and errexit_mode:
            self.arith.append(Arith(off, cmd, let.group(1), self.opts.errexit_partial,
                                    self.later_pass_of, let.group(2).startswith("="),
                                    self.opts.nounset,
                                    errexit_in_body=self.opts.errexit_in_body,
                                    errexit_in_body_partial=self.opts.errexit_in_body_partial))
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
                    self.in_subshell += 1
                    inner = self.script(
                        body, off + pos + s_off, status_only=not self.opts.inherit_errexit
                    )
                    self.in_subshell -= 1
                    var = w.split("=", 1)[0].split("[", 1)[0].rstrip("+")
                    return [with_(h, in_substitution=True, variable=h.variable or var)
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
        if name == "clear" and errexit_mode:
            self.interactive.append(Interactive(off, cmd, "clear", self.opts.errexit_partial))
            return []
        hit = command_hit(name, words[k + 1 :], cmd, off, is_last, in_pipe, self.opts,
                          self.guard_greps)
        if hit is None:
            return []
        return [with_(hit, function=self.function, errexit_partial=self.opts.errexit_partial,
                      pipefail=self.opts.pipefail, pipefail_partial=self.opts.pipefail_partial)]


def substituted_counters(lst: str, off: int, bodies: dict[str, tuple[int, int]], code: str,
                         opts: Opts, memo: Memo, *, later_pass_of: int | None) -> list[Arith]:
    """The counter that gives a bare assignment's status through a call in its substitution
    (`x=$(f)`, `x=$(echo; f)`, with `f() { …; ((n++)); }`), where `set -e` stops on that status:
    the and-or list `lst` (at `off`; not a condition) ends in a bare assignment whose last
    substitution ends in a plain call of a function defined before (`bodies`, in `code`),
    whose body ends in a counter (`((n++))`, `let n++`, `((n=0))`) of a variable it names
    nowhere else. Bash runs the body in the substitution's subshell with `set -e` off there
    (no `inherit_errexit`: else the counter stops that subshell, with the same status), so the
    counter's status is the substitution's, the assignment's: read at the call, on the
    assignment's line, with the variable as it holds there."""
    if not opts.errexit or "$(" not in lst and "`" not in lst:
        return []
    elements = split_top_level(lst, off, ("&&", "||"), memo)
    element, e_off, _op = elements[-1]
    cmd = element.strip()
    if past_negation(cmd)[1] or len(split_top_level(cmd, 0, ("|",), memo)) > 1:
        return []
    at = e_off + len(element) - len(element.lstrip())
    words = shell_words(cmd, at, memo)
    if not words or not all(_ASSIGN_RE.match(w) for w in words):
        return []
    for w, pos in zip(reversed(words), reversed(word_offsets(cmd, words)), strict=True):
        subs = substitutions(w, at + pos, memo)
        if subs:
            body, s_off = subs[-1]
            # (after `&&` / `||`: bash runs it on some runs only, `[ -n "$X" ] && x=$(f)`)
            return _counter_ending_call(body, at + pos + s_off, bodies, code, opts, memo,
                                        later_pass_of, partly=len(elements) > 1)
    return []


def _counter_ending_call(body: str, off: int, bodies: dict[str, tuple[int, int]], code: str,
                         opts: Opts, memo: Memo, later_pass_of: int | None, *, partly: bool
                         ) -> list[Arith]:
    """substituted_counters's counter, of the substitution `body` (at `off`); `partly`: the
    assignment runs on some runs only (set -e stopping there on those: model.Arith's
    errexit_partial). None where the body may leave before its end (a `return` or `exit`
    command in it)."""
    lists = [piece for piece in split_top_level(body, off, ("\n", ";", "&"), memo)
             if piece[0].strip()]
    if not lists or lists[-1][2] == "&":
        return []
    last, l_off, _op = lists[-1]
    call = last.strip()
    words = shell_words(call, 0, memo)
    if not words or words[0] not in bodies or bodies[words[0]][1] > off or len(
            split_top_level(call, 0, ("&&", "||", "|"), memo)) > 1:
        return []
    start, end = bodies[words[0]]
    ends = [piece for piece in split_top_level(code[start:end], start,
                                               ("\n", ";", "&", *CASE_BRANCH_ENDS), memo)
            if piece[0].strip()]
    if not ends or ends[-1][2] == "&" or _LEAVES_RE.search(code, start, end):
        return []
    counter = ends[-1][0].strip()
    counter_at = ends[-1][1] + len(ends[-1][0]) - len(ends[-1][0].lstrip())
    m = ARITH_RE.match(counter) or LET_RE.match(counter)
    if m is None or len(re.findall(r"(?<![\w$])" + re.escape(m.group(1)) + r"(?!\w)",
                                   code[start:end])) != 1:
        return []
    return [Arith(l_off + len(last) - len(last.lstrip()), counter, m.group(1),
                  opts.errexit_partial or partly, later_pass_of, m.group(2).startswith("="),
                  opts.nounset, errexit_in_body=opts.errexit_in_body,
                  errexit_in_body_partial=opts.errexit_in_body_partial, substituted=True,
                  body_counter=counter_at)]


#: A `return` / `exit` command word (`return 0`; not `return_code=0`).
_LEAVES_RE = re.compile(r"(?<![\w$./-])(?:return|exit)(?![\w=./-])")


def _is_trivial(pipeline: str) -> bool:
    return pipeline.strip() in {"true", ":", "exit 0", "return 0"}
