"""What of a script the launcher lint's walk (bot.core.launcher_lint.engine) reads bash runs in a
subshell, and what follows from it (PipeSubshells, mixed into the walk): a pipeline's elements,
each in a subshell but the last under `shopt -s lastpipe` without job control (_lastpipe: on every
path, none or some); an `if` / `case` / loop piped (`fi | cat`, `echo | if …`) or run in the
background (`esac &`), whose assignments do not hold past it (model.Scan.piped) and whose stops
stop the script only as its status does (pipefail, on every path or some)."""

from __future__ import annotations

from typing import Protocol

from bot.core.launcher_lint.branches import Branches, Marks
from bot.core.launcher_lint.model import Arith, Construct, Cover, Opts
from bot.core.shell_lexer import Memo, split_top_level


class _Walk(Protocol):
    """What PipeSubshells uses of the walk it is mixed into (engine._Analyzer): the options
    where it is, whether job control may be on (`set -m`), the lexer's memo, and what it
    collects (the counters, the branches bash may skip, the compounds run in a subshell)."""

    opts: Opts
    may_monitor: bool
    memo: Memo
    arith: list[Arith]
    constructs: dict[tuple[int, int], Construct]
    piped: list[tuple[int, int]]

    def _lastpipe(self) -> str: ...

    def _lastpipe_partial(self) -> bool: ...

    def _subshell_stops(self, marks: Marks) -> None: ...

    def _partial_stops(self, arith_from: int, pipefail: bool = False) -> None: ...


class PipeSubshells:
    """The walk's reading of pipelines and subshells, mixed into engine._Analyzer."""

    def _lastpipe(self: _Walk) -> str:
        """Where the walk is, does bash run a pipeline's last element in the script's shell
        (`shopt -s lastpipe`, no job control: a script's default)? "on" on every path, "off"
        on every path, or "maybe" (on some paths, or `set -m` may be on)."""
        if not self.opts.lastpipe:
            return "off"
        return "maybe" if self.opts.lastpipe_partial or self.may_monitor else "on"

    def _lastpipe_partial(self: _Walk) -> bool:
        """Is `lastpipe` on on some paths only (job control off: no `set -m` in the script)?
        A pipeline's last element then runs in the script's shell on those paths only."""
        return self._lastpipe() == "maybe" and not self.may_monitor

    def _and_or_after(self: _Walk, rest: str, off: int) -> bool:
        """Is `rest` (what follows a compound's closing keyword, at `off`) a pipeline followed
        by `&&` / `||` (`| cat || true`)?"""
        return ("&&" in rest or "||" in rest) and len(
            split_top_level(rest, off, ("&&", "||"), self.memo)) > 1

    def _piped(self: _Walk, rest: str, off: int) -> bool:
        """Is `rest` (what follows a compound's closing keyword, at `off`) a pipe to its next
        element (`| cat`, `2>&1 | tee log`), not after `&&` / `||`?"""
        if "|" not in rest:
            return False
        first = split_top_level(rest, off, ("&&", "||"), self.memo)[0][0]
        return len(split_top_level(first, off, ("|",), self.memo)) > 1

    def _pipe_elements(self: _Walk, lst: str, off: int) -> None:
        """The elements of the pipelines of `lst` (an and-or list at `off`) that may set a
        variable (`{ n=5; } | cat`, `echo | n=5`): bash runs each in a subshell (the last in
        this shell under `lastpipe`), model.Scan.piped."""
        for element, e_off, _op in split_top_level(lst, off, ("&&", "||"), self.memo):
            cmds = split_top_level(element, e_off, ("|",), self.memo)
            if len(cmds) < 2:
                continue
            lastpipe = self._lastpipe()
            for k, (cmd, c_off, _p) in enumerate(cmds if lastpipe != "on" else cmds[:-1]):
                if "=" in cmd and cmd.strip():
                    lead = len(cmd) - len(cmd.lstrip())
                    span = (c_off + lead, c_off + len(cmd.rstrip()))
                    if k == len(cmds) - 1 and self._lastpipe_partial():  # (in this shell on some
                        self.constructs[(span[0], -2)] = ((span,), Cover())  # paths only)
                    else:
                        self.piped.append(span)

    def _subshell_stops(self: _Walk, marks: Marks) -> None:
        """What the walk collected since `marks`, in a compound bash runs in a subshell whose
        status stops nothing (`fi | cat` without pipefail, `fi &`, `fi | cat || true`, or where
        `set -e` is off): an unbound counter under `set -u` ends that subshell only, so it is
        no stop of the script (those `set -e` stops on are dropped where the compound closes:
        branches.branch_step's `exempt`)."""
        self.arith[marks.arith:] = [a for a in self.arith[marks.arith:] if a.errexit]

    def _subshell(self: _Walk, closing: Branches, end: int, maybe: bool, goes_on: bool,
                  pipefail_partial: bool) -> None:
        """The compound `closing` (to `end`) runs in a subshell: what it sets does not hold
        past it (model.Scan.piped), and what stops it stops the script only as its status does
        (`goes_on`: it stops nothing, _subshell_stops; `pipefail_partial`: through pipefail
        on some paths only, _partial_stops). `maybe`: on some paths only (`lastpipe` on some:
        a pipeline's last element): what it sets holds on some runs (a branch bash may skip,
        keyed (start, -2)), and a stop where it goes on stops it on some runs."""
        start = closing.key[0]
        if maybe:
            self.constructs[(start, -2)] = (((start, end),), Cover())
            if goes_on:
                self._partial_stops(closing.marks.arith)
            return
        self.piped.append((start, end))
        if goes_on:
            self._subshell_stops(closing.marks)
        elif pipefail_partial:
            self._partial_stops(closing.marks.arith, pipefail=True)

    def _partial_stops(self: _Walk, arith_from: int, pipefail: bool = False) -> None:
        """The counters collected from `arith_from` on, in a pipeline's element whose status
        stops bash on some paths only: through `pipefail` (`pipefail`: `[ … ] && set -o
        pipefail`), or as the last element where `lastpipe` is on on some (it runs in the
        script's shell there): they stop it on those runs only (a warning, which names
        pipefail, model.Arith.pipefail_partial, or says `set -e` applies there on some; an
        unbound counter under `set -u` through pipefail says `set -e` too where that is on on
        some paths only)."""
        for a in self.arith[arith_from:]:
            if pipefail:
                a.pipefail_partial = True
                if a.nounset and not a.errexit:  # (an unbound counter under `set -u`, collected
                    # whatever `set -e`: the element's end stops bash where `set -e` is on too)
                    a.errexit_partial = self.opts.errexit_partial
            else:
                a.errexit_partial = True
