"""Which branches of a script's `case`s, `if`s and loops (model.Scan.constructs) hold an
offset, and whether some of its commands run on every way bash goes from one offset to
another: the paths the launcher lint's counter checks (calls, counter_values, counts_between,
arith) ask about."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable

from bot.core.launcher_lint.model import Construct, CoveredBranches

#: A branch the walk read: its construct's key in model.Scan.constructs, and its index there.
Step = tuple[tuple[int, int], int]


def branch_path(offset: int, constructs: dict[tuple[int, int], Construct]) -> tuple[Step, ...]:
    """The branches of `constructs` that hold `offset` (a branch of an `if` / `case`, a loop's
    body), outermost first."""
    held = [(spans[i][0], key, i) for key, (spans, _cover) in constructs.items()
            for i in range(len(spans)) if spans[i][0] <= offset < spans[i][1]]
    return tuple((key, i) for _start, key, i in sorted(held))


def path_index(constructs: dict[tuple[int, int], Construct]
               ) -> tuple[Callable[[int], tuple[Step, ...]], bool]:
    """branch_path of any offset in `constructs`, from one index of their branches' spans built
    once (sorted, each with the span around it), so that it costs the depth of the branches
    around the offset, not the number of branches in the script; and whether the spans nest
    (a branch lies inside the branch around its construct, as in every script bash parses).
    If some did not, each offset is read as branch_path reads it, over every span."""
    ordered = sorted((start, end, key, i) for key, (spans, _cover) in constructs.items()
                     for i, (start, end) in enumerate(spans))
    parent: list[int] = []  # the index in `ordered` of the span around each (-1: none)
    stack: list[int] = []
    for k, (start, end, _key, _i) in enumerate(ordered):
        while stack and ordered[stack[-1]][1] <= start:
            stack.pop()
        if stack and ordered[stack[-1]][1] < end:
            return (lambda offset: branch_path(offset, constructs)), False  # spans that cross
        parent.append(stack[-1] if stack else -1)
        stack.append(k)
    starts = [start for start, _end, _key, _i in ordered]

    def path_of(offset: int) -> tuple[Step, ...]:
        # the last span to start at or before `offset`; the spans around it that hold `offset`
        # are all that do, as each span starting before it and holding it holds it
        k = bisect.bisect_right(starts, offset) - 1
        while k >= 0 and ordered[k][1] <= offset:
            k = parent[k]
        held: list[Step] = []
        while k >= 0:
            held.append((ordered[k][2], ordered[k][3]))
            k = parent[k]
        return tuple(reversed(held))

    return path_of, True


def on_every_path(offsets: list[int], since: int, target: int,
                  constructs: dict[tuple[int, int], Construct],
                  path_of: Callable[[int], tuple[Step, ...]] | None = None) -> bool:
    """Does one of the commands at `offsets` (between `since` and `target`, in one shell) run
    on every way bash goes from `since` to `target`? One in no branch that `since` or `target`
    is not in does; else the branches of a construct, one always running (an `else`, a `*`,
    a loop over words written out), each holding one that does (`if c; then n=1; else n=2;
    fi`); one in a branch bash may skip (an `if` with no `else`, a loop that may make no
    pass) does not. `path_of`: branch_path of an offset in `constructs` (a memo of it)."""
    if not constructs:
        return bool(offsets)
    path_of = path_of or (lambda offset: branch_path(offset, constructs))
    known = set(path_of(since)) | set(path_of(target))
    paths = []
    for offset in offsets:
        path = tuple(step for step in path_of(offset) if step not in known)
        if not path:
            return True  # (the common case, decided without the others)
        paths.append(path)
    return _covered(paths, constructs, dict(path_of(target)))


def _covered(paths: list[tuple[Step, ...]], constructs: dict[tuple[int, int], Construct],
             reached: dict[tuple[int, int], int]) -> bool:
    """Does every way through the branches hold one of `paths` (each: the branches a command
    is in, outermost first) to its end? `reached`: the branch of each construct the way's end
    is in (model.Cover.holds's `before`: only what runs before it counts)."""
    if any(not path for path in paths):
        return True
    by_construct: dict[tuple[int, int], dict[int, list[tuple[Step, ...]]]] = {}
    for path in paths:
        (key, i), rest = path[0], path[1:]
        by_construct.setdefault(key, {}).setdefault(i, []).append(rest)
    for key, branches in by_construct.items():
        spans, cover = constructs[key]
        if cover.holds({i for i, inner in branches.items()
                        if _covered(inner, constructs, reached)}, len(spans), reached.get(key)):
            return True
    return False


class Coverage:
    """Whether every way through the branches holds one of a set of paths (each: the branches
    a count is in that the assignment it follows is not in, outermost first), with the
    branches a counter is in taken as run (branch_paths.on_every_path's question for the counts
    between an assignment and a counter), kept as paths are added and taken back: a trie of
    them, where a node is covered when a path ends there or a construct that always runs one
    of its branches (an `else`, a `*`, a loop over words written out) is complete there, each
    of its branches covered below it. Adding a path costs its length, taking it back (`log`:
    how to undo each change, latest last) as much; a question, the counter's depth."""

    def __init__(self, constructs: dict[tuple[int, int], Construct],
                 log: list[Callable[[], object]],
                 reached: dict[tuple[int, int], int] | None = None) -> None:
        self.constructs, self.log = constructs, log
        # the branch of each construct the way's end is in, where it is known (model.Cover.
        # holds's `before`: only what runs before it counts; `covers` reads those of the
        # branches it is given as it goes)
        self.reached = reached or {}
        self.root = CoverageNode()

    def add(self, path: tuple[Step, ...]) -> None:
        node, way = self.root, []
        for step in path:
            way.append((node, step))
            if step not in node.children:
                node.children[step] = CoverageNode()
                self.log.append(functools.partial(node.children.pop, step))
            node = node.children[step]
        if not node.ends:
            node.ends = True
            self.log.append(functools.partial(setattr, node, "ends", False))
        if node.covered:
            return
        self._cover(node)
        for parent, (key, i) in reversed(way):
            covered = parent.branches.get(key)
            if covered is None:
                spans, cover = self.constructs[key]
                covered = parent.branches[key] = cover.tracker(len(spans), self.reached.get(key))
            covered.add(i)
            self.log.append(functools.partial(covered.discard, i))
            if key in parent.complete or not covered.holds():
                return
            parent.complete.add(key)
            self.log.append(functools.partial(parent.complete.discard, key))
            if parent.covered:
                return
            self._cover(parent)

    def _cover(self, node: CoverageNode) -> None:
        node.covered = True
        self.log.append(functools.partial(setattr, node, "covered", False))

    def covers(self, taken: tuple[Step, ...]) -> bool:
        """Do the paths cover every way, with the branches `taken` (a chain, outermost first:
        those the counter is in) as run? A path through them reads as the rest of it after
        them, so a node along `taken` gains what is below the next one, and the construct of
        the next one, one of whose branches is taken as run, is complete only as that one."""
        node = self.root
        for key, i in taken:
            if node.ends or node.complete - {key}:
                return True
            below = node.children.get((key, i))
            if below is None:
                return False
            node = below
        return node.covered


class CoverageNode:
    """A node of Coverage's trie: the paths below it by their next step, whether one ends
    here, whether every way from here holds one of them, and of each construct below, its
    branches that do and whether all of them do (with one always run: complete)."""

    def __init__(self) -> None:
        self.children: dict[Step, CoverageNode] = {}
        self.ends = False
        self.covered = False
        self.branches: dict[tuple[int, int], CoveredBranches] = {}
        self.complete: set[tuple[int, int]] = set()


def last_to_run(assigned: list[tuple[int, str | None]], since: int, target: int,
                constructs: dict[tuple[int, int], Construct],
                path_of: Callable[[int], tuple[Step, ...]] | None = None,
                ) -> tuple[list[tuple[int, str | None]], bool]:
    """Of `assigned` (offset, value; in order, between `since` and `target`), those one of
    which is the last to run on a way from `since` to `target`, and whether one of them runs on
    every way (else what held at `since` may hold at `target` too): from the last that runs on
    every way on (`m=0; if c; then m=5; fi`: `m=0` or `m=5`), all of them when none does.

    The suffixes of `assigned` are read from the last one, each adding one assignment's
    branches (those `since` and `target` are not in, as on_every_path reads them) to one
    Coverage, whose answer at its root is on_every_path's for that suffix: a suffix that
    holds one on every way is found in time linear in the number of assignments after it."""
    path_of = path_of or (lambda offset: branch_path(offset, constructs))
    known = set(path_of(since)) | set(path_of(target))
    coverage = Coverage(constructs, [], dict(path_of(target)))
    for k in range(len(assigned) - 1, -1, -1):
        coverage.add(tuple(step for step in path_of(assigned[k][0]) if step not in known))
        if coverage.root.covered:
            return assigned[k:], True
    return assigned, False
