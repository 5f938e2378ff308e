"""Which `break` / `continue` of a script leave which loop of its shell, as the launcher lint's
walk (bot.core.launcher_lint.engine) reads them (LoopExits, mixed into the walk): one bash always
runs leaves its loop (the rest of the body never runs: branches.Branches.leave), or the branch
it is in whenever that runs; one in a subshell (`( break )`, a pipeline's element, `break &`, a
piped or background `if` / `case`) or one bash never runs (`true || break`) leaves none
(branches.Branches.inert)."""

from __future__ import annotations

import re
from typing import Protocol

from bot.core.launcher_lint.branches import Branches, BranchWalk
from bot.core.launcher_lint.model import MAX_DEPTH, Hit
from bot.core.launcher_lint.syntax import constant_status, keyword_prefix, loop_runs, runs_after
from bot.core.shell_lexer import CASE_BRANCH_ENDS, Memo, group_end, split_top_level

#: A `break` / `continue` on a list of its own (`break 2` too: it leaves this loop as well, and
#: as many loops around it as its number says, all of them when there are fewer; `break $n`
#: too: whatever its count bash leaves this loop, or stops on a count out of range, and it
#: may leave each loop around it, branches._leaves_past).
LEAVE_LOOP_RE = re.compile(r"(?:break|continue)(?:[ \t]+([^\s;&|<>()]+))?")


def leaves_with_0(command: str) -> bool:
    """Is `command` a `break` / `continue` of no count or a count written out of 1 or more
    (`break 2`), which leaves its loop (or goes on to its next pass) with status 0? (`break 0`
    / `break $n` may be out of range: status 1, no loop left.)"""
    leave = LEAVE_LOOP_RE.fullmatch(command)
    count = leave.group(1) or "1" if leave else ""
    return count.isdigit() and int(count) > 0


#: What a `break`, `continue` or `return` may be in (syntax.loop_leaves_at's words).
MAY_LEAVE_RE = re.compile(r"break|continue|return")
#: Redirections after a group (`{ …; } > f 2>&1`): bash still runs it in this shell.
REDIRECTS_RE = re.compile(r"(?:\s*[0-9]*(?:>>|>&|<&|<<<|&>>|&>|>\||>|<)\s*[^\s|&;<>()]+)*\s*")


class _Walk(BranchWalk, Protocol):
    """What LoopExits uses of the walk it is mixed into (engine._Analyzer): the lexer's memo,
    the original text (syntax.constant_status reads the script's own definitions), the group
    of a loop's body it reads next and the one it reads (engine._Analyzer.script)."""

    memo: Memo
    script_text: str
    text: str
    group_of: tuple[int, Branches, int, list[tuple[Branches, int]]] | None
    group_loop: tuple[Branches, int] | None
    group_around: list[tuple[Branches, int]]

    def _leaving_loop(self, frames: list[Branches]) -> tuple[Branches, int] | None: ...

    def _certainly_leaves(self, command: str, off: int) -> bool: ...

    def _inner_loop(self, frames: list[Branches]) -> Branches | None: ...

    def _loops_around(self, frames: list[Branches], loop: Branches, count: int
                      ) -> list[tuple[Branches, int]]: ...

    def _crosses(self, loop: Branches) -> bool: ...

    def _never_leaving(self, command: str, off: int, depth: int = 0
                       ) -> list[tuple[int, int]]: ...

    def _loops_of_shell(self, frames: list[Branches]) -> list[Branches]: ...

    def _lastpipe(self) -> str: ...

    def _in_subshell(self, frames: list[Branches], hits_from: int, end: int,
                     maybe: bool = False) -> None: ...


class LoopExits:
    """The walk's reading of what leaves a loop, mixed into engine._Analyzer."""

    #: the group of a loop's body the walk reads next (its text's offset), that loop and the
    #: hits its walk had before (_leaving_list sets it, engine._Analyzer.script reads it)
    group_of: tuple[int, Branches, int, list[tuple[Branches, int]]] | None

    def _leaving_loop(self: _Walk, frames: list[Branches]) -> tuple[Branches, int] | None:
        """The loop a `break` / `continue` on a list of its own here would certainly leave:
        this walk's innermost, in its body, through `if`s whose branch bash runs whenever
        it reaches them (`if true; then`), or the one this walk is a group of the body of
        (`{ …; break; }`); with the number of hits its walk had before this one's. None: in
        a branch bash may skip, a condition, a `case`."""
        for frame in reversed(frames):
            if frame.kind in ("while", "for"):
                return (frame, 0) if frame.in_branch else None
            if not (frame.kind in ("if", "case") and frame.certain and frame.in_branch
                    and frame.skipped is None):  # (not `[ … ] && if true; then`)
                return None
        return self.group_loop

    def _certainly_leaves(self: _Walk, command: str, off: int) -> bool:
        """Is `command` (an and-or list) a `break` / `continue` bash always runs: alone, or
        after `&&` / `||` of commands whose status bash's semantics decide (`true && break`,
        `false || continue`)?"""
        *heads, (last, _o, _op) = split_top_level(command, off, ("&&", "||"), self.memo)
        return bool(LEAVE_LOOP_RE.fullmatch(last.strip())) and runs_after(
            heads, self.script_text) is True

    def _leaving_list(self: _Walk, frames: list[Branches], hits: list[Hit], lst: str, off: int,
                      closed_left: bool, end: int) -> None:
        """Note what the list `lst` (at `off`, ending at `end`; after the keywords of the
        constructs it closes, `closed_left`: one of them leaves its loop whenever it runs)
        does to the loop it is in: leave it (the rest of the body never runs), leave it
        whenever the branch it is in runs (an `if`'s / `case`'s branch_left), or not at all
        (Branches.inert); a group of the body's own is read knowing its loop (group_of)."""
        command = lst.strip()
        leaving = self._leaving_loop(frames)
        certain = (closed_left and len(split_top_level(command, off, ("|",), self.memo)) == 1
                   or ("break" in command or "continue" in command)
                   and self._certainly_leaves(command, off))
        if certain and leaving is not None:
            # the rest of the body never runs (not after `[ … ] && break`, or in an `if`
            # bash may skip)
            loop, before = leaving
            loop.leave(self, hits, end, before)
            # `break 2` / `continue 2`: the loops around it it leaves too (their bodies' rest
            # never runs either), where it runs whenever they reach it
            last = split_top_level(command, off, ("&&", "||"), self.memo)[-1][0].strip()
            count = LEAVE_LOOP_RE.fullmatch(last) if certain and not closed_left else None
            if count is not None and (count.group(1) or "").isdigit() and int(
                    count.group(1)) > 1:
                for outer, o_before in self._loops_around(frames, loop, int(count.group(1)) - 1):
                    outer.leave(self, hits, end, o_before)
            return
        if certain and frames and frames[-1].kind in ("if", "case") and frames[-1].in_branch:
            frames[-1].branch_left = True  # (the branch it is in leaves whenever it runs)
            return
        if leaving is not None and command.startswith("{") and command[1:2].isspace():
            at = off + len(lst) - len(lst.lstrip())
            if REDIRECTS_RE.fullmatch(command, group_end(command, 0, at, self.memo)):
                # a group of the body's own (redirected or not: bash runs it in this
                # shell): its `break` leaves this loop too
                # (and the frames around it, so that its `break 2` leaves the loops around)
                around = [(f, b + len(hits)) for f, b in self.group_around] + [
                    (f, len(hits)) for f in frames]
                self.group_of = (at + 1, leaving[0], leaving[1] + len(hits), around)
                return
        if not MAY_LEAVE_RE.search(command):
            return
        if self._inner_loop(frames) is not None:
            spans = self._never_leaving(lst, off)
            for loop in self._loops_of_shell(frames):
                loop.inert.extend(spans)

    def _inner_loop(self: _Walk, frames: list[Branches]) -> Branches | None:
        """The innermost loop of this shell the walk is in the body of (this walk's, or the
        one it reads a group of the body of), or None."""
        inner = next((f for f in reversed(frames) if f.kind in ("while", "for")), None)
        if inner is None and self.group_loop is not None:
            inner = self.group_loop[0]  # (through the `if`s / `case`s of the group)
        return inner if inner is not None and inner.in_branch else None

    def _loops_around(self: _Walk, frames: list[Branches], loop: Branches, count: int
                      ) -> list[tuple[Branches, int]]:
        """The `count` loops around `loop` (one of `frames`, or of the walks this walk reads a
        group of the body of: group_around, crossed as this walk's frames are, so that a
        `break 2` in `{ …; }` leaves the loop around too) that a `break N` / `continue N`
        leaving `loop` leaves too, as
        _leaving_loop's: each with the number of hits its walk had before this one's. Bash
        leaves them (all there are, when `count` is more) when every loop it crosses makes a
        pass whenever reached (`while true`, `for i in 1 2`, syntax.loop_runs) and runs in
        this shell, and each `if` / `case` on the way runs the branch whenever reached; where
        one may not, the loops past it are not taken as left (they may be, on some runs)."""
        found: list[tuple[Branches, int]] = []
        crossing = loop
        # (this walk's frames, after those of the walks it reads a group of the body of)
        chain = self.group_around + [(f, 0) for f in frames]
        index = next((k for k, (f, _b) in enumerate(chain) if f is loop), None)
        for frame, before in reversed(chain[:index] if index is not None else []):
            if frame.kind in ("while", "for"):
                if not (self._crosses(crossing) and frame.in_branch):
                    return found  # (not one whose condition it is in: `while …; do`)
                found.append((frame, before))
                if len(found) == count:
                    return found
                crossing = frame
            elif not (frame.certain and frame.in_branch and frame.skipped is None
                      and not frame.piped and not frame.never and frame.dead is None):
                return found
        return found

    def _crosses(self: _Walk, loop: Branches) -> bool:
        """Does a `break N` in `loop`'s body bash runs whenever it reaches it get past `loop`
        to the loop around it: its body, in this shell, runs whenever its keyword is reached?"""
        return (loop.in_branch and loop.skipped is None and not loop.piped and not loop.never
                and loop.dead is None and loop_runs(self.text, loop.key[0], loop.key[0]))

    def _in_subshell(self: _Walk, frames: list[Branches], hits_from: int, end: int,
                     maybe: bool = False) -> None:
        """The text from `hits_from` to `end` (a background list, `break &`, or an `if` /
        `case` that is piped or run in the background, `fi | cat`, `esac &`) runs in a
        subshell: its `break` / `continue` leave no loop of this shell (Branches.inert), and
        one read as leaving the loop it is in (Branches.left, set in it) did not. `maybe`: on
        some paths only (a pipeline's last element where `lastpipe` is on on some): they
        may leave it (branches._leaving reads them so), not always."""
        if self._inner_loop(frames) is None:
            return
        for loop in self._loops_of_shell(frames):
            if not maybe:
                loop.inert.append((hits_from, end))
            # (a `break 2` in it that was read as leaving loops around it left none of them)
            if loop.left is not None and loop.left[1] > hits_from:
                loop.left = None

    def _loops_of_shell(self: _Walk, frames: list[Branches]) -> list[Branches]:
        """The loops of this shell the walk is in: this walk's, and those of the walks it reads
        a group of the body of (group_around). A `break N` / `continue N` a span of their
        `inert` holds leaves none of them (branches._leaving), whatever its N."""
        return [f for f, _b in self.group_around if f.kind in ("while", "for")] + [
            f for f in frames if f.kind in ("while", "for")]

    def _never_leaving(self: _Walk, command: str, off: int,
                       depth: int = 0) -> list[tuple[int, int]]:
        """The spans of `command` (an and-or list) whose `break` / `continue` / `return`
        leave no loop of this shell: a subshell (`( break )`) or a pipeline's elements, each
        in a subshell of its own (`{ break; } | cat`; all but the last where `lastpipe` is on,
        none where it may be), and a `break` / `continue` bash never runs, after `&&` / `||`
        of commands whose status bash's semantics decide (`true || break`); in a group (`{ (
        break ); }`, its lists read alike, a background one whole: `{ break & }`), at most
        MAX_DEPTH groups deep."""
        spans = []
        runs: bool | None = True
        status = True
        lastpipe = self._lastpipe()
        for element, e_off, op in split_top_level(command, off, ("&&", "||"), self.memo):
            body = element.strip()
            pipes = split_top_level(element, e_off, ("|",), self.memo) if (
                lastpipe != "maybe") else []
            if (body.startswith("(") and not body.startswith("((")
                    or lastpipe == "off" and len(pipes) > 1
                    or runs is False and LEAVE_LOOP_RE.fullmatch(body)):
                spans.append((e_off, e_off + len(element)))
            elif lastpipe == "on" and len(pipes) > 1:  # (all but the last, in this shell)
                spans.extend((p_off, p_off + len(p)) for p, p_off, _op in pipes[:-1])
            elif body.startswith("{") and body[1:2].isspace() and depth < MAX_DEPTH:
                b_off = e_off + len(element) - len(element.lstrip())
                close = group_end(body, 0, b_off, self.memo)
                for inner, i_off, i_op in split_top_level(
                        body[1:close - 1], b_off + 1, ("\n", ";", "&", *CASE_BRANCH_ENDS),
                        self.memo):
                    cut, _steps = keyword_prefix(inner.strip(), False)
                    i_off += len(inner) - len(inner.lstrip()) + cut
                    inner = inner.strip()[cut:]
                    if i_op == "&":
                        spans.append((i_off, i_off + len(inner)))
                    elif MAY_LEAVE_RE.search(inner):
                        spans.extend(self._never_leaving(inner, i_off, depth + 1))
            if runs:
                known = constant_status(element, self.script_text)
                if known is None:
                    runs = None
                    continue
                status = known
            if runs is not None:
                runs = status if op == "&&" else not status
        return spans
