"""The bash syntax the launcher lint's walk (bot.core.launcher_lint.engine) reads a script by:
its lists, the keywords and `case` patterns that start them, a compound command after `&&` /
`||`, the commands there bash may skip (how each function the script defines is called:
call_kinds)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

from bot.core.launcher_lint.model import ChainLink, ChainStatus, Cover
from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    COMMAND_AT,
    Memo,
    skip_group,
    skip_quoted,
    split_top_level,
)

_CONDITION_KEYWORDS = {"if", "elif", "while", "until"}
_BODY_KEYWORDS = {"then", "do", "else", "fi", "done", "esac", "in"}
#: The keywords among _BODY_KEYWORDS that the walk's _Branches (engine) follows.
_BRANCHING_KEYWORDS = {"then", "else", "fi", "esac", "do", "done"}
#: The keywords that open a _Branches, and its kind: a `while` / `until` loop is read as an
#: `if` is (its condition, then its body, which bash may run or not), a `for` / `select` loop
#: as one with no condition.
OPENING_KEYWORDS = {"if": "if", "while": "while", "until": "while", "for": "for",
                    "select": "for"}


_FIRST_WORD_RE = re.compile(r"[^\s;|&()<>]*")
#: One piece of a `case` pattern: a quoted string (`"$(hostname)"`), a command substitution
#: (`$(cmd)`, one level of parentheses inside), an extglob group (`@(a|b)`, `!(*.tmp)`), an
#: escaped character, or any other character but a parenthesis or a line break (none of them
#: spans lines).
_PATTERN_PIECE = (r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\$\((?:[^()\n]|\([^()\n]*\))*\)"""
                  r"|[?*+@!]\([^()\n]*\)|\\.|[^()\n\"'\\])")
#: A list that starts a `case` branch: the `case WORD in` header (on the pattern's line), the
#: patterns and their `)`; the branch's command starts where COMMAND_AT puts one after it, as
#: the trap check finds `a) trap … EXIT ;;`.
_BRANCH_RE = re.compile(r"(?:case\s.*?\sin\s+)?\(?(?P<patterns>" + _PATTERN_PIECE + r"*?)\)"
                        + COMMAND_AT)
#: A list that ends with a `case` header (`case "$x" in`): a branch's pattern comes next.
_CASE_HEADER_END_RE = re.compile(r"(?:^|\s)case\s.*\sin$", re.S)


#: A compound command's keyword after an and-or list's `&&` / `||` (`[ -f x ] && if …`), a `!`
#: before it or none (`[ -f x ] && ! if …`).
_COMPOUND_AFTER_AND_OR_RE = re.compile(
    r"(?:&&|\|\|)\s*(?:!\s+)?(?:if|while|until|for|select|case)\b")


def compound_tail(lst: str, off: int, memo: Memo) -> int | None:
    """Where the compound command (`if`, loop, `case`) that is the last command of and-or list
    `lst` (a stripped list at `off`) starts, as in `[ -f x ] && if …`, `A || while …`, at the
    `!` that negates it (`A && ! if …`: keyword_prefix reads it so); None when there is none.
    Bash runs it after the commands before it, or not."""
    if not _COMPOUND_AFTER_AND_OR_RE.search(lst):
        return None
    return _last_compound(split_top_level(lst, off, ("&&", "||"), memo), off)


#: A compound command's keyword after a pipe (`cat x | if …`, `… | while read l`).
_COMPOUND_AFTER_PIPE_RE = re.compile(r"(?<!\|)\|(?![|&])\s*(?:if|while|until|for|select|case)\b")


def piped_compound(lst: str, off: int, memo: Memo) -> int | None:
    """Where the compound command (`if`, loop, `case`) that is an element after a pipe in `lst`
    (a stripped list at `off`) starts, the first such, as in `cat x | if …`, `… | while read l;
    do`, `a && b | if …`, `echo | if c && d; then`: the rest of the list is its condition or
    words. None when there is none, or a compound after `&&` / `||` opens before it
    (compound_tail's). Bash runs it in a subshell (without `lastpipe`), as it runs one before a
    pipe (`fi | cat`)."""
    if not _COMPOUND_AFTER_PIPE_RE.search(lst):
        return None
    for i, (element, e_off, _op) in enumerate(split_top_level(lst, off, ("&&", "||"), memo)):
        for j, (cmd, c_off, _p) in enumerate(split_top_level(element, e_off, ("|",), memo)):
            lead = len(cmd) - len(cmd.lstrip())
            if first_word(cmd[lead:]) not in (*OPENING_KEYWORDS, "case"):
                continue
            if j:
                return c_off - off + lead
            if i:
                return None  # (`a && if b | if c`: the first compound's condition)
    return None


def and_or_compounds(lists: list[tuple[str, int, str]], branches: dict[int, str], memo: Memo
                     ) -> set[tuple[int, int]]:
    """The `case`s / `if`s / loops of `lists` (a text's lists and their `case` branches:
    lists_and_branches) whose closing keyword is followed by `&&` / `||` on its list (`fi ||
    true`, `done | cat && x`), or that a `!` negates (`! if …`): bash ignores `set -e` in all
    of such a compound. Each is named
    as the walk names it (Branches.key: the offset of the part of the list its keyword is on,
    the step), its keyword and its closing keyword matched as the walk matches them
    (keyword_prefix, the compound after `&&` / `||` or a pipe on a part of its own); one pass,
    so the walk knows it before it reads the compound's body."""
    opened: list[tuple[str, tuple[int, int]]] = []
    exempt: set[tuple[int, int]] = set()
    for idx, (raw, off, _op) in enumerate(lists):
        whole = raw.strip()
        at = off + len(raw) - len(raw.lstrip())
        tail = compound_tail(whole, at, memo) if "&&" in whole or "||" in whole else None
        if tail is None and "|" in whole:
            tail = piped_compound(whole, at, memo)
        parts = ((0, len(whole)),) if tail is None else ((0, tail), (tail, len(whole)))
        for part, (start, end) in enumerate(parts):
            lst = whole[start:end]
            cut, steps = keyword_prefix(lst, idx in branches and part == 0)
            for k, (step, _patterns) in enumerate(steps):
                if step == "case" or step in OPENING_KEYWORDS:
                    opened.append((OPENING_KEYWORDS.get(step, step), (at + start, k)))
                    if k and steps[k - 1][0] == "!":  # (`! if …`: as one before `||`)
                        exempt.add(opened[-1][1])
                elif step in _CLOSING_KINDS and opened and opened[-1][0] in _CLOSING_KINDS[step]:
                    rest = lst[cut:]
                    if rest.lstrip().startswith(("&&", "||")) or (
                            "&&" in rest or "||" in rest) and len(split_top_level(
                                rest, at + start + cut, ("&&", "||"), memo)) > 1:
                        exempt.add(opened[-1][1])
                    opened.pop()
    return exempt


#: The kinds of compound (Branches.kind) each closing keyword closes.
_CLOSING_KINDS = {"fi": ("if",), "esac": ("case",), "done": ("while", "for")}


def _last_compound(elements: list[tuple[str, int, str]], off: int) -> int | None:
    """Where the compound command that is the last of `elements` (a list split at its
    operators, each element's text and offset) starts, relative to `off`; None when there is
    one element only or the last is no compound command."""
    if len(elements) < 2:
        return None
    text, at, _op = elements[-1]
    lead = len(text) - len(text.lstrip())
    command = text[lead:]
    command = past_negation(command)[0]  # (`! if …`: from its `!`)
    if first_word(command) not in (*OPENING_KEYWORDS, "case"):
        return None
    return at - off + lead


def past_negation(command: str) -> tuple[str, bool]:
    """`command` (stripped on the left) past the `!` that starts it and the blanks after it,
    and True, where one does (`! ((n++))`, `! if …`: bash negates the pipeline's status): a
    `!` that is a word of its own, a blank or a `(` after it (`!(true)`, `!((n++))`: bash reads
    the `!` alone before `(`, an operator's character); `command` and False otherwise
    (`!false` is a command's name). (Under `shopt -s extglob`, which the lint does not follow,
    `!(…)` is a pattern instead: a command's name, whatever matches it.) Past every such `!`
    (`! ! false`): bash negates once for each, and where they cancel (an even number) `set -e`
    applies to the pipeline as to one without them, so only an odd number negates it."""
    negated = False
    while command[:1] == "!" and (command[1:2].isspace() or command[1:2] == "("):
        command, negated = command[1:].lstrip(), not negated
    return command, negated


def first_word(lst: str) -> str:
    """The first word of `lst`, up to a blank, an operator or a parenthesis (`then`, `set`)."""
    return _FIRST_WORD_RE.match(lst).group()  # type: ignore[union-attr]


def keyword_prefix(lst: str, at_branch: bool) -> tuple[int, list[tuple[str, str]]]:
    """How far the keywords (`then`, `do`, `esac`, …) and `case` patterns that start `lst` (a
    stripped list) reach: the command after them starts at `lst[cut:]`, as one on a line of
    its own; and the steps of a `case`, `if` or loop among them, in order: ("case", its word
    when it is one literal word: case_word),
    ("branch", its patterns), ("esac", ""); ("if", ""), ("then", ""), ("elif", ""), ("else",
    ""), ("fi", ""); ("while", "") (or `until`, `for`, `select`), ("do", ""), ("done", ""); an
    `if` / `elif` / loop keyword ending the prefix (its condition is `lst[cut:]`); ("!", "")
    before the `case`, `if` or loop a `!` negates (`! if …; fi`: its status negated, `set -e`
    ignored in all of it). `at_branch`: a branch's pattern starts `lst`."""
    cut = 0
    steps: list[tuple[str, str]] = []
    rest = lst
    while True:
        first = first_word(rest)
        if first in _BODY_KEYWORDS:
            if first in _BRANCHING_KEYWORDS:
                steps.append((first, ""))
            end = rest.find(first) + len(first)
        elif (at_branch or first == "case") and (branch := _BRANCH_RE.match(rest)):
            if first == "case":
                steps.append(("case", case_word(rest)))
            steps.append(("branch", branch.group("patterns")))
            end, at_branch = branch.end(), False
        elif (negated := past_negation(rest))[1] and first_word(negated[0]) in (
                *OPENING_KEYWORDS, "case"):
            steps.append(("!", ""))  # (`! if …`: the compound's status negated)
            end = 1
        else:
            if first == "case" and _CASE_HEADER_END_RE.search(rest):
                steps.append(("case", case_word(rest)))  # the first pattern is on the next line
            elif first == "elif" or first in OPENING_KEYWORDS:
                steps.append((first, ""))
            return cut, steps
        end += len(rest[end:]) - len(rest[end:].lstrip())
        cut, rest = cut + end, rest[end:]


def runs_builtin(command: str, name: str) -> bool:
    """Is `command` (one simple command) a run of the builtin `name` (`exit`, `return`), its
    words and redirections whatever they are (`exit`, `exit 3`, `exit "$rc"`, `exit $((rc +
    1))`, `exit "$(cat rc)" >&2`)? Bash's `exit` ends the shell with any of them: a status it
    only knows as it runs, 2 for a word that is no number, 1 for more than one word (`exit
    $X` where X holds a blank); `return` leaves the function alike. Not one piped (`exit 0 |
    cat`: a subshell), nor a longer word (`exit_code=1`)."""
    return first_word(command) == name and len(split_top_level(command, 0, ("|",))) == 1


#: A condition whose status bash's semantics alone decide: `true`, `:`, `false`, and `[ WORD ]`
#: / `test WORD` with one literal word (a test of one argument succeeds when it is not empty).
_CONSTANT_CONDITION_RE = re.compile(
    r"(?P<name>true|:|false)|(?P<test>\[)\s+[\w.,/+-]+\s+\]|(?P<cmd>test)\s+[\w.,/+-]+")


#: A redirection (`>log`, `2>&1`, `&>> out`, `< in`, `3<> f`) and its word.
REDIRECTION_RE = re.compile(r"[0-9]*(?:>>|>&|<&|&>>|&>|>\||<>|>|<)[ \t]*[^\s;&|<>()]+")
#: An `exit` of a literal status (`exit 3`): a subshell that runs it has that status.
_LITERAL_EXIT_RE = re.compile(r"exit[ \t]+(?P<status>[0-9]+)[ \t]*")
#: A word (or a redirection's) that expands to itself: no parameter, command or arithmetic
#: expansion, no glob (a `$X` may be unset under `set -u`, `${X?}` or `$((1/0))` fail: bash
#: then leaves the subshell with their status).
_PLAIN_WORD = r"""(?:[\w./,:+%@=^~-]|"[^"$`\\!]*"|'[^']*')+"""
#: A simple command bash runs to its end in a subshell whatever its status (it can fail, but
#: its failure ends no subshell where `set -e` is ignored, as in a condition), unless the
#: script defines a function of its name: a name and plain words (_PLAIN_WORD) and
#: redirections (`echo "failed" >&2`), no assignment (to a readonly variable it ends the
#: subshell).
_COMPLETING_COMMAND_RE = re.compile(
    r"(?P<name>[A-Za-z_][\w.-]*|:)(?:[ \t]+(?:[0-9]*(?:>>|>&|<&|&>>|&>|>|<)[ \t]*)?"
    + _PLAIN_WORD + r")*[ \t]*")
#: The builtins that may end a subshell, leave it for a loop or a function, or change how the
#: commands after them end (`set -u`, a `trap … EXIT`), and the compound commands' keywords.
_NOT_COMPLETING = frozenset((
    "exit", "exec", "return", "break", "continue", "logout", "set", "shopt", "trap", "eval",
    "source", "builtin", "command", "kill", "enable", "readonly", "declare", "typeset",
    "local", "export", "unset", "shift", "if", "then", "elif", "else", "fi", "for", "while",
    "until", "do", "done", "case", "esac", "select", "function", "time", "coproc"))


#: A simple command whose name is a `!` glued to a word (`!false`, `!true x`): no negation
#: (past_negation), and no command bash finds.
_GLUED_BANG_RE = re.compile(r"(![\w.:/+-]+)(?:[ \t]+[^;&|()\n]*)?")


def constant_status(condition: str, text: str, outside_function: bool = False,
                    pipefail: bool | None = None) -> bool | None:
    """Whether the condition list `condition` (an `if`'s, without the keyword) always succeeds
    (True) or always fails (False), by bash's semantics alone (_CONSTANT_CONDITION_RE, a `( … )`
    subshell whose last command bash always runs is `exit N` (_subshell_status), redirections
    after it or none (a redirection that fails gives it status 1: `( exit 3 ) > log` always
    fails, `( exit 0 ) > log` is not known), a `return`
    `outside_function`, which bash refuses with status 2, a pipeline as `pipefail` (True: on,
    False: off, None: not known) says (_pipeline_status), or `!` before one, a `{ …; }` group
    (_group_status)), a command named `!` glued to a word (`!false`: no such command, it
    fails: _GLUED_BANG_RE); None for
    anything else, or when the script `text` defines a function of that name (bash would call
    it)."""
    cond = condition.strip().rstrip(";").strip()
    cond, negated = past_negation(cond)
    if outside_function and runs_builtin(cond, "return"):
        return None if "return" in _defined_names(text) else negated
    if "|" in cond and len(piped := split_top_level(cond, 0, ("|",))) > 1:
        pipeline = _pipeline_status([p for p, _o, _op in piped], text, outside_function,
                                    pipefail)
        return None if pipeline is None else pipeline != negated
    if cond.startswith("{") and cond[1:2].isspace():
        group = _group_status(cond, text, outside_function, pipefail)
        return None if group is None else group != negated
    if cond.startswith("(") and not cond.startswith("(("):
        end = skip_quoted(cond, 0)
        if REDIRECTION_RE.sub("", cond[end:]).strip():
            return None  # (`( … ) & x`: not the subshell alone)
        status = _subshell_status(cond[1 : end - 1], text)
        if status is None or status == 0 and end != len(cond):
            # (`( exit 0 ) > log` fails when the redirection does: only a failure is sure)
            return None
        return (status == 0) != negated
    if not negated and (glued := _GLUED_BANG_RE.fullmatch(cond)):
        # `!false`: a command's name bash finds nowhere (127), with or without extglob, no
        # history expansion in a script
        return None if glued.group(1) in _defined_names(text) else False
    m = _CONSTANT_CONDITION_RE.fullmatch(cond)
    if m is None:
        return None
    name = m.group("name") or m.group("test") or m.group("cmd")
    if name in _defined_names(text):
        return None
    return (name != "false") != negated


#: What may end a group's body before its last list, or the shell, or leave a loop or a
#: function from it (a word of its own): the group's status is then not its last list's.
_GROUP_LEAVES_RE = re.compile(r"(?<![\w$./:-])(?:break|continue|return|exit|exec|eval|source"
                              r"|logout)(?![\w:-])|(?:^|[\s;&|(])\.[ \t]")


def _pipeline_status(commands: list[str], text: str, outside_function: bool,
                     pipefail: bool | None) -> bool | None:
    """The status of the pipeline of `commands` (each run in a subshell: an `exit` there ends
    that one only): its last command's, or, under `pipefail`, the last failing one's (0 when
    none fails). It fails when its last command always does (`… | ( exit 3 )`), or, `pipefail`
    on, any command does; it succeeds when every command always does, or, `pipefail` off,
    its last one does (`false | true`); None otherwise, or where `pipefail` is not known
    (None) and that decides it."""
    last = constant_status(commands[-1], text, outside_function)
    if last is False:
        return False
    if last is True and pipefail is False:
        return True
    others = [constant_status(c, text, outside_function) for c in commands[:-1]]
    if pipefail and False in others:
        return False
    return True if last is True and all(others) else None


def _group_status(group: str, text: str, outside_function: bool,
                  pipefail: bool | None = None) -> bool | None:
    """The status of the `{ …; }` group `group` (redirections after it or none: one that
    fails gives it status 1, so only a failure is sure there) where `set -e` is ignored (a
    condition, before `&&` / `||`): that of its body's last list (constant_status), bash
    running every list before it, none of which may leave the group (_GROUP_LEAVES_RE: no
    `break`, `return`, `exit`, … in the body); None when not known, or the last list runs in
    the background."""
    end = skip_group(group, 0)
    if end > len(group) or group[end - 1] != "}":
        return None
    after = REDIRECTION_RE.sub("", group[end:]).strip()
    body = group[1 : end - 1]
    if after or _GROUP_LEAVES_RE.search(body):
        return None
    lists = [(lst, op) for lst, _off, op in split_top_level(body, 0, ("\n", ";", "&"))
             if lst.strip()]
    if not lists or lists[-1][1] == "&":
        return None
    status = constant_status(lists[-1][0], text, outside_function, pipefail)
    return None if status is None or status and end != len(group) else status


def _subshell_status(body: str, text: str) -> int | None:
    """The status of a `( … )` subshell whose `body` (its lists, one a line or after `;`) bash
    leaves by an `exit` of a literal status (_LITERAL_EXIT_RE) it always runs: the first, or
    one after commands it runs to their end (_COMPLETING_COMMAND_RE, none of _NOT_COMPLETING
    nor a function of the script `text`: `echo "failed" >&2; exit 1`). None for any other
    body: one whose first `exit` has a status bash only knows as it runs (`exit "$rc"`, which
    ends the subshell all the same: no `exit` after it runs), or that runs a command which may
    end it first, or none. A body bash runs to its end without an `exit` has its last
    command's status, where that is a constant (`( true )`, `( echo a; false )`: 0, 1). The
    status is bash's (mod 256). Asked where `set -e` is ignored (a condition, a command before
    `&&` / `||`): a command that fails does not end the subshell."""
    last = ""
    for lst, _off, op in split_top_level(body, 0, ("\n", ";", "&")):
        command = lst.strip()
        if not command:
            continue
        if first_word(command) == "exit":
            exits = _LITERAL_EXIT_RE.fullmatch(command)
            if exits is None or "exit" in _defined_names(text):
                return None
            return int(exits.group("status")) % 256
        completes = _COMPLETING_COMMAND_RE.fullmatch(command)
        if op == "&" or completes is None or completes.group("name") in _NOT_COMPLETING or (
                completes.group("name") in _defined_names(text)):
            return None
        last = command
    constant = _CONSTANT_CONDITION_RE.fullmatch(last)
    if constant is None or constant.group("name") is None or (
            constant.group("name") in _defined_names(text)):
        return None
    return 1 if constant.group("name") == "false" else 0


#: A function definition (`name() {`, `function name`): its name (a constant condition's,
#: `true`, `[`, or a command a constant subshell runs, `exit`, `echo`, is then the function's).
_DEFINED_RE = re.compile(
    r"(?:^|[\s;&|({])(?:function\s+([^\s;&|<>()=$`'\"]+)|([^\s;&|<>()=$`'\"]+)\s*\(\s*\))")


def runs_after(heads: list[tuple[str, int, str]], text: str,
               pipefail: bool | None = None) -> bool | None:
    """Whether bash runs the command of an and-or list after `heads` (its elements before it,
    each with the `&&` / `||` after it), as the statuses bash's semantics decide
    (constant_status, the script `text`'s functions taken into account) say: always (`false
    ||`, `true &&`, none), never (`true ||`, `false &&`), or None when a status it needs is
    not known (`[ -n "$X" ] &&`); `pipefail` as constant_status's."""
    runs, status = True, True
    for element, _off, op in heads:
        if runs:
            known = constant_status(element, text, pipefail=pipefail)
            if known is None:
                return None
            status = known
        runs = status if op == "&&" else not status
    return runs


def always_run(elements: list[tuple[str, int, str]], text: str
               ) -> Iterator[tuple[str, int]]:
    """The elements of an and-or list (split_top_level: each with its offset and the `&&` /
    `||` after it) bash runs whenever it reaches the list, in order, with their offsets: the
    first, and each one after it that runs_after says always runs, up to the first element bash
    runs whose status is not known (constant_status; `[ -n "$X" ]`), past which none is
    certain. `exit 0 || n=1`: `exit 0`; `true && { exit 0; } || n=1`: `true`, the group."""
    runs, status = True, True
    for element, off, op in elements:
        if runs:
            yield element, off
            known = constant_status(element, text)
            if known is None:
                return
            status = known
        runs = status if op == "&&" else not status


#: An and-or list's command that sets and counts nothing: a constant status, or one that leaves
#: a loop, a function or the shell (`[ … ] && break`, `|| true`, `&& exit 0`), which the walk
#: reads as a command bash may skip of its own (script_exits, loop_exits).
_INERT_ELEMENT_RE = re.compile(r"(?:true|:|false|break|continue|exit|return)"
                               r"(?:[ \t]+[^\s;&|<>()]+)?")


class AndOrBranches(NamedTuple):
    """The commands of an and-or list bash may skip (and_or_branches): where the operator
    before the first is (the construct's key; None when there is none), their spans, the Cover
    of the list, and the spans of those bash never runs, and of the commands that set and
    count nothing it never runs (`true || return`)."""

    at: int | None
    spans: tuple[tuple[int, int], ...]
    cover: Cover
    never: tuple[tuple[int, int], ...]


def and_or_branches(lst: str, off: int, memo: Memo, text: str,
                    ends_shell: Callable[[str, int], bool],
                    returns: Callable[[str], bool] | None = None,
                    closed_status: bool | None = None,
                    pipefail: bool | None = None) -> AndOrBranches | None:
    """The commands of the and-or list `lst` (at `off`, after its keywords) that bash may skip
    (`[ -f x ] && n=1`, `test … || ((n++))`), as it skips an `if` branch with no `else`: the
    branches of one construct (model.Construct), keyed where the operator before the first of
    them is, whose Cover reads the whole list by its grammar (`[ … ] && n=1 || n=2`: one of the
    two runs on every way); with those bash never runs (`true || n=5`). Which statuses may
    reach each command is read as bash runs the list: `&&` and `||` have equal precedence and
    group to the left, a command after `&&` runs on a status of 0, one after `||` on any
    other, and the list goes on with the status of the last command that ran; bash's semantics
    decide some (constant_status: `true`, `false`), any other may be 0 or not. Not a compound
    that opens there (`[ … ] && if …`: the walk reads its branches), nor a command that sets
    and counts nothing (_INERT_ELEMENT_RE); the Cover still reads how each leaves the status,
    and the ways that end the shell (`ends_shell` of a command and its offset: `[ … ] && exit 0
    || n=1` runs `n=1` on every way that goes on). In a function's body (`returns`: is a
    command a `return` of it), one bash always runs leaves nothing after it in the list to run
    (`return || n=1`); its way goes on past the call, so it covers nothing. Outside one
    (`returns` None), bash refuses a `return` with status 2 and goes on (`return || n=1` runs
    `n=1`). A list that starts with `&&` / `||` (after the `done` that closes a loop: `done &&
    n=1`) starts from `closed_status`, the compound's status when known (loop_status).
    `pipefail`: on, off, or not known (None) where the list runs (a pipeline's status). None:
    no command bash may skip, and none it never runs."""
    if "&&" not in lst and "||" not in lst:
        return None
    spans: list[tuple[int, int]] = []
    never: list[tuple[int, int]] = []
    chain: list[ChainLink] = []
    at: int | None = None  # where the operator before the first branch is
    reaching: set[int] = set()  # the statuses a way may have before the element (0, 1)
    op_before = ""  # the operator before the element
    chain_end = off  # where the element before ends
    for element, e_off, op in split_top_level(lst, off, ("&&", "||"), memo):
        cmd = element.strip()
        start = e_off + len(element) - len(element.lstrip())
        known = constant_status(element, text, outside_function=returns is None,
                                pipefail=pipefail) if cmd or op_before else closed_status
        leaves: ChainStatus = "free" if known is None else "true" if known else "false"
        statuses = {0, 1} if known is None else {0 if known else 1}
        if ends_shell(cmd, start):
            leaves, statuses = "exit", set()
        runs_on = 1 if op_before == "||" else 0  # the status it runs after
        runs = not op_before or runs_on in reaching
        if returns is not None and (not op_before or reaching == {runs_on}) and returns(cmd):
            statuses = set()
        branch: int | None = None
        if op_before and (not runs or 1 - runs_on in reaching) and cmd and not (  # (a way
                first_word(cmd) in (*OPENING_KEYWORDS, "case")  # skips it)
                or _INERT_ELEMENT_RE.fullmatch(cmd)):
            branch = len(spans)
            spans.append((start, start + len(cmd)))
            if not runs:
                never.append(spans[-1])
            if at is None:
                at = chain_end
        elif op_before and not runs and _INERT_ELEMENT_RE.fullmatch(cmd):
            never.append((start, start + len(cmd)))  # (`true || return`: no way leaves there)
        chain.append(ChainLink(op_before, leaves, branch))
        if not op_before:
            reaching = statuses
        elif runs:
            reaching = (reaching - {runs_on}) | statuses
        chain_end = e_off + len(element)
        op_before = op
    if at is None and not never:
        return None
    return AndOrBranches(at, tuple(spans), Cover(chain=tuple(chain)), tuple(never))


@functools.lru_cache(maxsize=8)
def _defined_names(text: str) -> frozenset[str]:
    """The names the script `text` defines a function of (_DEFINED_RE), read once per script
    (constant_status is asked at each `if` and loop)."""
    return frozenset(a or b for a, b in _DEFINED_RE.findall(text))


#: An extglob group (`@(…)`, `*(…)`, `+(…)`, `?(…)`) of `case` patterns.
_EXTGLOB_GROUP_RE = re.compile(r"[@*+?]\((.*)\)", re.S)


def split_alternatives(patterns: str) -> list[str]:
    """A branch's `patterns` (`a|@(b|c)`) split at their top-level `|`."""
    depth, start, alternatives = 0, 0, []
    for i, c in enumerate(patterns):
        depth += (c == "(") - (c == ")")
        if c == "|" and depth == 0:
            alternatives.append(patterns[start:i])
            start = i + 1
    alternatives.append(patterns[start:])
    return alternatives


def matches_everything(patterns: str) -> bool:
    """Does a branch's `patterns` (`a|*`) match every word: an alternative of only `*`, or an
    extglob group with one (`@(/no|*)`)? Other patterns may match none."""
    for alternative in (a.strip() for a in split_alternatives(patterns)):
        group = _EXTGLOB_GROUP_RE.fullmatch(alternative)
        if (alternative and not alternative.strip("*")) or (
                group and matches_everything(group.group(1))):
            return True
    return False


def case_word(header: str) -> str:
    """The word of `header` (a list from its `case` keyword: `case x in`) when it is the same
    whatever the environment (_FIXED_WORD_RE: no expansion, no glob), without its quotes;
    "" for any other."""
    word = _CASE_WORD_RE.match(header)
    return word.group(1).replace('"', "").replace("'", "") if word else ""


def branch_matches(patterns: str, word: str) -> bool | None:
    """Does a `case` branch's `patterns` match its `case`'s word whenever tested: True when
    they match every word (matches_everything) or one alternative is the `case`'s literal
    `word` itself (case_word, "": none; `x)`, `a|"x")`: quotes removed, no glob); False when
    every alternative is a literal word that differs from it even ignoring ASCII case (as
    `shopt -s nocasematch` compares); None when it depends on what runs."""
    if matches_everything(patterns):
        return True
    if not word:
        return None
    literals = [a.replace('"', "").replace("'", "") if _FIXED_WORD_RE.fullmatch(a) else None
                for a in (a.strip() for a in split_alternatives(patterns))]
    if word in literals:
        return True
    if None in literals or not word.isascii():
        return None
    return False if all(a.isascii() and a.lower() != word.lower() for a in literals
                        if a is not None) else None


def lists_and_branches(
    pieces: list[tuple[str, int, str]],
) -> tuple[list[tuple[str, int, str]], dict[int, str]]:
    """The lists among `pieces` that are not blank, and the indexes of those a `case` branch's
    pattern starts: the first after a `case … in` header (with "") or a branch's `;;` / `;&` /
    `;;&` (with that operator: the walk's _Branches reads what ran before the branch from it)."""
    lists: list[tuple[str, int, str]] = []
    branches: dict[int, str] = {}
    pattern_next = False
    ended_by = ""
    for piece in pieces:
        text, _off, op = piece
        if text.strip():
            if pattern_next:
                branches[len(lists)] = ended_by
            lists.append(piece)
            tail = text.rstrip()
            pattern_next = tail.endswith("in") and _CASE_HEADER_END_RE.search(tail) is not None
            ended_by = ""
        if op in CASE_BRANCH_ENDS:
            pattern_next, ended_by = True, op
    return lists, branches


def next_text(lists: list[tuple[str, int, str]], idx: int) -> str:
    """The text of the list after lists[idx] ("" at the end)."""
    return lists[idx + 1][0] if idx + 1 < len(lists) else ""


def condition_command(lst: str, off: int) -> tuple[str, int]:
    """The and-or list a condition list `lst` (at `off`) runs, and where: without its `if` /
    `elif` / `while` / `until` keyword and a `!` after it (`if ! set -e`: bash negates the
    status, the option is set all the same)."""
    command = lst
    keyword = first_word(command)
    if keyword in _CONDITION_KEYWORDS:
        command = command[len(keyword):].lstrip()
    command = past_negation(command)[0]
    return command, off + len(lst) - len(command)


#: A loop's keyword after the keywords that may start its list (`then while …`, `do for …`).
_LOOP_KEYWORD_RE = re.compile(r"(?:(?:then|do|else)\s+)*(?:!\s+)?(for|while|until|select)\b")
#: A `for` loop over words written out (`for i in 1 2; do`): the words, up to `;` / a line end.
_FOR_WORDS_RE = re.compile(r"\s+[A-Za-z_]\w*\s+in\b([^;\n]*)[;\n]")
#: A word of a `for` list that is one word whatever the environment: no expansion, no glob
#: (`*`, `?`, `[`), no brace expansion, quotes without a blank or an expansion inside.
_FIXED_WORD_RE = re.compile(r"(?:[\w.,:/+@%=-]|\"[\w.,:/+@%=-]*\"|'[\w.,:/+@%=-]*')+")
#: A `case` header whose word is one such word (`case x in`, `case "gpu" in`).
_CASE_WORD_RE = re.compile(r"case\s+(" + _FIXED_WORD_RE.pattern + r")\s+in\b")
#: A `while` condition bash never gets past: `false`, or a `read` (after assignments: `IFS=
#: read -r line`) from a loop whose input is `/dev/null` (`done < /dev/null`).
_WHILE_NEVER_RE = re.compile(r"\s+(?:false|(?P<read>(?:[A-Za-z_]\w*=\S*\s+)*read\b[^;\n|&]*))"
                             r"\s*(?:;|\n)\s*do\b")
_UNTIL_NEVER_RE = re.compile(r"\s+(?:true|:)\s*(?:;|\n)\s*do\b")
_DEV_NULL_INPUT_RE = re.compile(r"done\s*(?:[0-9]*>\S+\s*)*<\s*/dev/null\b")


def loop_passes(code: str, start: int, done: int) -> int | None:
    """How many passes bash makes through the body of the loop whose list starts at `start`
    of `code` and whose `done` is at `done`, where the script says: a `for` over words written
    out makes one a word (`for i in 1` one, `for i in` none), a `while false` / `until true`
    and a `while read …` whose input is `/dev/null` none; None when it depends on what the
    script reads or runs (`for f in $files`, `while read` from a file, `for ((…))`)."""
    head = _LOOP_KEYWORD_RE.match(code, start)
    if head is None:
        return None
    keyword, at = head.group(1), head.end()
    if keyword == "for":
        words = _FOR_WORDS_RE.match(code, at)
        if words is None:
            return None  # `for x; do` (the positional parameters), `for ((…))`
        listed = words.group(1).split()
        return len(listed) if all(_FIXED_WORD_RE.fullmatch(w) for w in listed) else None
    if keyword == "while":
        never = _WHILE_NEVER_RE.match(code, at)
        if never is None or never.group("read") is not None and not _DEV_NULL_INPUT_RE.match(
                code, done):
            return None
        return 0
    if keyword == "until" and _UNTIL_NEVER_RE.match(code, at):
        return 0
    return None


def loop_status(code: str, start: int, done: int, body_status: bool | None) -> bool | None:
    """The status of the loop (loop_passes's `start` and `done`) as bash leaves it, that of
    the last command its body ran, 0 when it ran none: success when bash makes no pass
    (loop_passes) or the body's last list always succeeds (`body_status`, its constant_status;
    a `break` / `continue` leaves with status 0 too, so none changes that), failure when bash
    makes a pass and that list always fails (`for i in a; do false; done`); None when either
    is not known, or, for a failure, a `break`, `continue` or `return` (loop_leaves_at) may
    end a pass elsewhere."""
    passes = loop_passes(code, start, done)
    if passes == 0 or body_status:
        return True
    if body_status is None or loop_leaves_at(code, start, done) is not None:
        return None
    return False if passes else None


#: A `while` / `until` condition on its keyword's line, up to `do`.
_LOOP_CONDITION_RE = re.compile(r"\s+([^;\n]*?)\s*(?:;|\n)\s*do\b")
#: What may end a pass through a loop's body before its end: `break`, `continue`, `return`.
_LOOP_LEAVE_RE = re.compile(r"(?<![\w$./:-])(?:break|continue|return)(?![\w:-])")


def loop_leaves_at(code: str, body: int, done: int) -> int | None:
    """Where the first `break`, `continue` or `return` of the loop body from `body` to `done`
    is (what comes after it in the text may be skipped on a pass); None when there is none."""
    leave = _LOOP_LEAVE_RE.search(code, body, done)
    return leave.start() if leave else None


@functools.lru_cache(maxsize=8)
def _mentions_nullglob(code: str) -> bool:
    """Does the script `code` name `nullglob`? Read once per script (loop_runs is asked at each
    loop's `done`: a search of the script each time was quadratic in the number of loops)."""
    return "nullglob" in code


#: A word of a `for` list that stays a word when its glob matches nothing (no `$`, no `` ` ``).
_GLOB_WORD_RE = re.compile(r"[^\s$`;&|<>()]+")


def loop_runs(code: str, start: int, done: int) -> bool:
    """Does bash make at least one pass through the loop (loop_passes's `start` and `done`):
    over words written out, at least one; or over globs, which stay as they are when nothing
    matches where the script never turns `nullglob` on (`for f in ck/*.pt`: one pass at
    least); `while true` / `while :` / `until false` (constant_status), whose condition never
    ends the loop."""
    passes = loop_passes(code, start, done)
    if passes is not None:
        return passes > 0
    head = _LOOP_KEYWORD_RE.match(code, start)
    if head is not None and head.group(1) in ("while", "until"):
        condition = _LOOP_CONDITION_RE.match(code, head.end())
        status = constant_status(condition.group(1), code) if condition else None
        return status is not None and status == (head.group(1) == "while")
    words = _FOR_WORDS_RE.match(code, head.end()) if head and head.group(1) == "for" else None
    if words is None or _mentions_nullglob(code):
        return False
    listed = words.group(1).split()
    return bool(listed) and all(_GLOB_WORD_RE.fullmatch(w) for w in listed)
