"""What the launcher lint's one walk over a script yields: the check ids, the options in force,
and the statements each check turns into findings."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from bot.core.findings import Level
from bot.core.text import Text

CHECK_SHEBANG = "shebang"
CHECK_STRICT_MODE = "strict_mode"
CHECK_EMPTY_MATCH = "empty_match_under_errexit"
CHECK_ARITH_ZERO = "arith_zero_under_errexit"
CHECK_ARITH_UNSET = "arith_unset_under_nounset"
CHECK_ARITH_ERROR = "arith_error_without_errexit"
CHECK_NOUNSET = "unset_variable_under_nounset"
CHECK_JIT_CC = "jit_without_cc"
CHECK_POINTER = "pointer_without_check"
CHECK_INTERACTIVE = "interactive_shell_in_batch"
CHECK_SBATCH_AFTER_COMMAND = "sbatch_after_command"
CHECK_SBATCH_INDENTED = "sbatch_indented_directive"
CHECK_SBATCH_OWN_ERROR = "sbatch_own_error_file"
CHECK_TEE_HIDES_STATUS = "tee_hides_status"
CHECK_EXIT_TRAP = "exit_trap_overrides_status"
CHECK_POSITIONAL = "positional_under_nounset"

#: Deeper nesting than this is not analysed (reported as such); keeps the walk's stack small.
MAX_DEPTH = 40


@dataclass
class Opts:
    """The shell options in force where the walk is (`errexit_line`: where `set -e` first
    came on; `errexit_off_line`: where a `set +e` last turned it off, None when none did).
    Past a `case` or `if`, of whose branches bash runs one or none, and in or past a loop,
    whose body bash runs any number of times, a reading that may hold on some paths only
    (`either`)."""

    errexit: bool = False
    pipefail: bool = False
    nounset: bool = False
    nullglob: bool = False
    inherit_errexit: bool = False
    errexit_line: int | None = None
    errexit_off_line: int | None = None
    # pipefail is on on some of the paths only (`pipefail` says it may be on): a check that
    # warns where it is off reads it as off
    pipefail_partial: bool = False
    # `set -e` is on on some of the paths only (`errexit` says it may be on): a check reports
    # what stops the launcher there, and its message says when it does (messages.errexit_mode)
    errexit_partial: bool = False
    # where a `set -o pipefail` last turned pipefail on, where a `set +o pipefail` last turned
    # it off (None: none did): the strict_mode note says pipefail as it is where `set -e` is on
    pipefail_line: int | None = None
    pipefail_off_line: int | None = None
    # a `set -e` ran in the function body being read, before here (not in a subshell of it):
    # `set -e` applies from here on at each call whose status is not tested, whatever the
    # options at the call; `errexit_in_body_partial`: on some paths only (`if …; then set -e;
    # fi`), where it applies on the runs that take them
    errexit_in_body: bool = False
    errexit_in_body_partial: bool = False
    # `shopt -s lastpipe` may be on (`lastpipe`), on some of the paths only (`lastpipe_partial`):
    # a pipeline's last element runs in the script's shell where it is on
    lastpipe: bool = False
    lastpipe_partial: bool = False

    @property
    def pipefail_sure(self) -> bool:
        """pipefail is on on every path that reaches here."""
        return self.pipefail and not self.pipefail_partial

    @property
    def pipefail_known(self) -> bool | None:
        """pipefail on (True) or off (False) on every path that reaches here; None: on on
        some only."""
        return True if self.pipefail_sure else None if self.pipefail else False

    def strict_mode(self, needs_pipefail: bool = False) -> tuple[str, ...]:
        """The options a message says the launcher runs with: `set -e`, and `pipefail` when it
        is on on every path, or may be on and what the message describes fails only through it
        (`needs_pipefail`: "under set -e + pipefail it stops" holds then). Past a `case` / `if`
        whose branches may leave pipefail off, a message does not claim it is on."""
        if self.pipefail_sure or (needs_pipefail and self.pipefail):
            return ("set -e", "pipefail")
        return ("set -e",)


def either(paths: list[Opts]) -> Opts:
    """The options after one of `paths` ran, bash not saying which (the branches of a `case`
    or `if`, a loop's passes), each read the way that finds more, so no check misses a path:
    errexit, pipefail (for the empty-match check), nounset and inherit_errexit on if on any
    path (errexit_partial, pipefail_partial when not on every path); pipefail off for the tee
    check (`pipefail_sure`) and nullglob off if off on any path; lastpipe on if on any path
    (lastpipe_partial when not on every path); errexit_line the earliest, errexit_off_line,
    pipefail_line and pipefail_off_line the latest."""
    lines = [p.errexit_line for p in paths if p.errexit_line is not None]
    off_lines = [p.errexit_off_line for p in paths if p.errexit_off_line is not None]
    pipefail_lines = [p.pipefail_line for p in paths if p.pipefail_line is not None]
    pipefail_off_lines = [p.pipefail_off_line for p in paths if p.pipefail_off_line is not None]
    pipefail = any(p.pipefail for p in paths)
    lastpipe = any(p.lastpipe for p in paths)
    errexit = any(p.errexit for p in paths)
    in_body = any(p.errexit_in_body for p in paths)
    return Opts(
        errexit=errexit,
        pipefail=pipefail,
        nounset=any(p.nounset for p in paths),
        nullglob=all(p.nullglob for p in paths),
        inherit_errexit=any(p.inherit_errexit for p in paths),
        errexit_line=min(lines) if lines else None,
        errexit_off_line=max(off_lines) if off_lines else None,
        pipefail_partial=pipefail and not all(p.pipefail_sure for p in paths),
        errexit_partial=errexit and not all(p.errexit and not p.errexit_partial for p in paths),
        pipefail_line=max(pipefail_lines) if pipefail_lines else None,
        pipefail_off_line=max(pipefail_off_lines) if pipefail_off_lines else None,
        errexit_in_body=in_body,
        errexit_in_body_partial=in_body and not all(
            p.errexit_in_body and not p.errexit_in_body_partial for p in paths),
        lastpipe=lastpipe,
        lastpipe_partial=lastpipe and not all(
            p.lastpipe and not p.lastpipe_partial for p in paths),
    )


@dataclass(frozen=True)
class Hit:
    """A command whose failure on an empty match decides a statement's status."""

    offset: int
    command: str
    name: str  # the command that fails (`ls`, `grep`, …)
    status: int  # its exit status on an empty match
    reason: Text
    fix: Text
    targets: tuple[str, ...]  # the files / globs it reads ("" for a grep on stdin)
    upstream: str = ""  # for a command reading a pipe: the pipeline before it
    in_substitution: bool = False
    variable: str | None = None  # the variable the statement assigns, if any
    function: str | None = None  # the function whose body it is in, if any
    pipe_only: bool = False  # fails only through `pipefail` (not the pipeline's last command)
    missing_dir: bool = False  # fails only when its directory does not exist (`ls DIR | head`)
    hidden_by: int | None = None  # offset of the `f | tee …` call that hides the stop
    errexit_partial: bool = False  # `set -e` is on on some paths to it only
    pipefail: bool = False  # `pipefail` may be on where it runs
    pipefail_partial: bool = False  # … on some paths to it only

    def strict_mode(self) -> tuple[str, ...]:
        """The options a message says the command runs with: Opts.strict_mode of the options
        where it runs (not where the script ends: a `set +o pipefail` after it changes
        nothing here)."""
        return Opts(pipefail=self.pipefail, pipefail_partial=self.pipefail_partial).strict_mode(
            needs_pipefail=self.pipe_only)


def with_(hit: Hit, **changes: Any) -> Hit:
    """`hit` with some fields changed."""
    return replace(hit, **changes)


@dataclass
class Arith:
    """`((n++))` / `let n++` run where `set -e` is on and its status is not tested
    (`errexit`), or, where it is off or the status is tested, under `set -u` (only an unbound
    `n` stops bash there); `zero_after`: read as a loop's passes after the first, which start
    from 0 only when the loop (from this offset on) sets it so; `assigns_zero`: `((n=0))` /
    `let n=0`, whose value is 0 whatever `n` was; `nounset`: `set -u` may be on there (an
    unset `n` is then an unbound variable, not 0); `errexit_off`: `set -e` is off there (an
    arithmetic error stops nothing: `n` stays as it was); `tested_by`: what tests its status,
    so that `set -e` does not stop on it and an arithmetic error ("08") goes by: the `&&` /
    `||` after it, the `!` that negates it (`! ((n++))`), the `if` / `elif` / `while` /
    `until` whose condition it ends, or "condition" (another command of a condition, or one
    after `!` there); "" when nothing does."""

    offset: int
    command: str
    variable: str
    errexit_partial: bool = False  # `set -e` is on on some paths to it only
    zero_after: int | None = None
    assigns_zero: bool = False
    nounset: bool = False
    errexit: bool = True
    errexit_off: bool = False
    tested_by: str = ""
    called_at: int | None = None  # read again at this call of its function (under `set -u`)
    errexit_in_body: bool = False  # after a `set -e` in its function's body (Opts's)
    errexit_in_body_partial: bool = False  # … run on some paths to it only
    # it stops bash only through `pipefail`, which is on on some paths to it only (a
    # pipeline's element before the last: pipe_subshells._partial_stops)
    pipefail_partial: bool = False
    # the counter that ends the body of a function called at `offset`, at the end of a bare
    # assignment's substitution (`x=$(f)`: commands.substituted_counters), giving its status
    substituted: bool = False
    body_counter: int | None = None  # … where that counter is in the body (substituted only)


@dataclass
class Call:
    """A call of a function the script defines, in the script's shell (not piped, not in
    `$( … )`), as the walk reaches it: `errexit`, whether `set -e` stops on a status in its
    body there (on, and its status not tested); `in_function`, made from another function's
    body (recorded where the walk reads that body; calls.outermost_calls places it at the
    script's calls that run it); `loop_from`, on a loop's later pass
    read again, where that loop starts (model.Arith.zero_after); `chain`, for a call made in
    another function's body and placed at the script-level call that runs that body
    (calls.outermost_calls): the bodies it is made through, outermost first, each as (its
    start, its end, the offset of the call made in it)."""

    offset: int
    name: str
    errexit: bool
    in_function: bool = False
    loop_from: int | None = None
    chain: tuple[tuple[int, int, int], ...] = ()
    tested: bool = False  # its status is tested (`f || true`, `if f`): no `set -e` applies in it
    errexit_in_body: bool = False  # made in a body after a `set -e` there (Opts's)
    errexit_in_body_partial: bool = False  # … run on some paths to it only
    # `errexit` holds on some paths only: through a `set -e` in a branch of a body it is made
    # through (calls.outermost_calls), or a pipeline's command where pipefail may be off
    errexit_partial: bool = False
    # run in a subshell: a pipeline's command (`f | cat`), a call in a `( … )` of a body read
    # for its calls only (functions.note_body_calls), or made through one: its counts and
    # assignments hold there only
    in_subshell: bool = False


@dataclass
class Unset:
    """A variable read under `set -u` that may be unset."""

    offset: int
    variable: str
    why: Text
    level: Level


@dataclass
class Interactive:
    """A command meant for an interactive shell, run where strict mode makes it stop the job:
    `clear` under `set -e` ("clear"), a shell startup file sourced under `set -u` ("startup")."""

    offset: int
    command: str
    kind: str
    errexit_partial: bool = False  # "clear": `set -e` is on on some paths to it only


#: Where a `TRAINER | tee` pipeline's status (tee's) is taken for the trainer's.
TeeContext = Literal["errexit", "last", "condition"]


@dataclass
class Tee:
    """A training command piped to `tee` without `pipefail`, where its status would matter:
    under `set -e` ("errexit"), as the script's last command ("last"), or as what an `if` /
    `elif` / `while` / `until` condition (`keyword`) tests ("condition")."""

    offset: int
    command: str
    why: TeeContext
    keyword: str = ""
    errexit_partial: bool = False  # "errexit": `set -e` is on on some paths to it only


@dataclass
class Positional:
    """`$N` read under `set -u` outside functions; `index` counts the `shift`s before it."""

    offset: int
    text: str
    index: int


#: How a command of an and-or list after its first leaves the list's status, as Cover reads
#: it: "free" (bash's semantics do not decide it), "true" / "false" (they do: `true`, `[ 1 ]`),
#: "exit" (it ends the shell: `exit 0`, an `exec` of a command; nothing after it runs).
ChainStatus = Literal["free", "true", "false", "exit"]


@dataclass(frozen=True)
class ChainLink:
    """A command of an and-or list (Cover.chain): the operator before it ("" for the first),
    how it leaves the status (ChainStatus), and the branch of the list's construct it is
    (None: it sets and counts nothing, or bash runs it whenever it reaches the list)."""

    op: str
    status: ChainStatus
    branch: int | None = None


@dataclass(frozen=True)
class Cover:
    """Which of a construct's branches bash runs one of on every way through it (Construct):
    of an `if` / `case` / loop, every branch where one of them always runs (`exhaustive`: an
    `else`, a `*` pattern, a loop over words written out), none otherwise; of an and-or list
    (`chain`: its commands, in order), the sets the list's grammar says: `&&` and `||` have
    equal precedence and group to the left (`a && b || c && d` is `((a && b) || c) && d`),
    and bash runs a command after `&&` when the status of the last command it ran is 0, after
    `||` when it is not (so every way runs `b` or `c`, and every way runs `c` or `d`). A way
    that ends the shell (`ends`: the branches of an `if` / `case` that end it whenever they
    run; an `exit` of the list) goes past nothing: it counts as running one of them, but where
    the command asked about is in the construct (`before`) and it ends the shell after it."""

    exhaustive: bool = False
    chain: tuple[ChainLink, ...] = ()
    ends: frozenset[int] = frozenset()

    def holds(self, covered: Collection[int], branches: int, before: int | None = None
              ) -> bool:
        """Does every way through the construct (of `branches` branches) run one of the
        branches `covered`, counting only those before branch `before` (where the command
        asked about is: a way to it runs them before it), all when None?"""
        def hit(branch: int | None) -> bool:
            return branch is not None and (branch in covered or branch in self.ends) and (
                before is None or branch < before)

        if not self.chain:
            return self.exhaustive and all(hit(i) for i in range(branches))
        state = _EVERY_WAY
        for link, counting in zip(self.chain, self._counting(before), strict=True):
            state = _link_map(link.op, link.status, hit(link.branch), counting)[state]
        return state == _EVERY_WAY

    def _counting(self, before: int | None) -> list[bool]:
        """Of each link of the chain, is it before the branch `before` (every one when None):
        an `exit` past it counts as running none of them?"""
        counting, flags = True, []
        for link in self.chain:
            counting &= before is None or link.branch is None or link.branch < before
            flags.append(counting)
        return flags

    def tracker(self, branches: int, before: int | None = None) -> CoveredBranches:
        """An empty set of the construct's branches (of `branches`), whose `holds` says what
        holds(it, branches, before) would, kept as branches are added and taken back."""
        return CoveredBranches(self, branches, before)


#: Cover.holds's reading of an and-or list, link by link: whether every way that left a
#: status of 0 (bit 1), of 1 (bit 2), and every way that ended the shell (bit 4) ran one of
#: the branches counted; each bit set before the first link (no way ran one nor needed to).
_EVERY_WAY = 7


@functools.cache
def _link_map(op: str, status: ChainStatus, hit: bool, counting: bool) -> tuple[int, ...]:
    """The state (_EVERY_WAY's bits) after bash runs a link of an and-or list (its operator
    before it, `op`, and its `status`, ChainLink's), from each state before it (the map's
    index): `hit` (the link is a branch counted), `counting` (it is before the branch asked
    about: an `exit` there counts as running one)."""
    after_each = []
    for state in range(8):
        ways = [bool(state & 1), bool(state & 2)]
        ended = bool(state & 4)
        if op:
            runs = 0 if op == "&&" else 1  # the status the ways that run it have
            reached, ways[runs] = ways[runs], True
        else:
            reached = False  # (the first command: every way runs it, none ran one yet)
        if status == "exit":
            ended = ended and (reached or counting)
        else:
            after = reached or hit
            for left in (0, 1) if status == "free" else (int(status == "false"),):
                ways[left] = ways[left] and after
        after_each.append(ways[0] | ways[1] << 1 | ended << 2)
    return tuple(after_each)


#: A map of the eight states of _link_map to themselves (a link that changes nothing).
_IDENTITY = tuple(range(8))


class CoveredBranches:
    """A set of a construct's branches (add, discard) and whether Cover.holds of it with
    `branches` and `before` (holds), kept as it changes. Of an and-or list, each link is
    read as the map of the eight states it makes (_link_map) (one where its branch is in
    the set, one where not) and the list as their composition, held in a tree of partial
    compositions: a change recomposes the links above it only, so that a set changed one
    branch at a time, asked after each (branch_paths.Coverage), costs the log of the list's
    length a change, not the list's length."""

    def __init__(self, cover: Cover, branches: int, before: int | None) -> None:
        self.cover, self.branches, self.before = cover, branches, before
        self.members: set[int] = set()
        self.leaf: dict[int, int] = {}  # each branch's link's leaf index
        if not cover.chain:
            return
        self.size = 1 << max(0, (len(cover.chain) - 1).bit_length())
        self.maps: list[tuple[tuple[int, ...], tuple[int, ...]]] = []  # (not hit, hit)
        for k, (link, counting) in enumerate(zip(cover.chain, cover._counting(before),
                                                  strict=True)):
            self.maps.append((_link_map(link.op, link.status, False, counting),
                              _link_map(link.op, link.status, True, counting)))
            if link.branch is not None:
                self.leaf[link.branch] = k
        self.tree = [_IDENTITY] * (2 * self.size)
        for k, (link, (missed, hit_map)) in enumerate(zip(cover.chain, self.maps,
                                                          strict=True)):
            self.tree[self.size + k] = hit_map if self._hit(link.branch) else missed
        for node in range(self.size - 1, 0, -1):
            self.tree[node] = _compose(self.tree[2 * node], self.tree[2 * node + 1])

    def _hit(self, branch: int | None) -> bool:
        return branch is not None and (branch in self.members or branch in self.cover.ends) and (
            self.before is None or branch < self.before)

    def add(self, branch: int) -> None:
        if branch not in self.members:
            self.members.add(branch)
            self._changed(branch)

    def discard(self, branch: int) -> None:
        if branch in self.members:
            self.members.discard(branch)
            self._changed(branch)

    def _changed(self, branch: int) -> None:
        k = self.leaf.get(branch)
        if k is None:
            return
        node = self.size + k
        self.tree[node] = self.maps[k][self._hit(branch)]
        node //= 2
        while node:
            self.tree[node] = _compose(self.tree[2 * node], self.tree[2 * node + 1])
            node //= 2

    def holds(self) -> bool:
        if not self.cover.chain:
            return self.cover.holds(self.members, self.branches, self.before)
        return self.tree[1][_EVERY_WAY] == _EVERY_WAY


def _compose(first: tuple[int, ...], then: tuple[int, ...]) -> tuple[int, ...]:
    """The map of the states (_link_map's) of `first` followed by `then`."""
    return tuple(then[s] for s in first)


#: A `case`, `if` or loop as the walk read it (Scan.constructs): the spans of its branches (a
#: loop's: its body), and which of them bash runs one of on every way through it (Cover); or
#: the commands of an and-or list bash may skip (syntax.and_or_branches).
Construct = tuple[tuple[tuple[int, int], ...], Cover]


@dataclass
class Scan:
    """The result of the walk (bot.core.launcher_lint.engine): options as they end, the hits of
    each check, where `set -u` was turned on and nesting got too deep, and the script's
    subshells when the walk needed them (shell_lexer.subshell_spans, None when it did not: no
    `case` in the script), which the trap check scopes EXIT traps to as the walk did `set`."""

    opts: Opts
    hits: list[Hit]
    arith: list[Arith]
    unset: list[Unset]
    nounset_line: int | None
    too_deep_at: int | None
    line_starts: list[int] = field(default_factory=lambda: [0])
    interactive: list[Interactive] = field(default_factory=list)
    tees: list[Tee] = field(default_factory=list)
    positional: list[Positional] = field(default_factory=list)
    subshells: list[tuple[int, int]] | None = None
    calls: list[Call] = field(default_factory=list)
    #: each called function's body, by name: its start and end offsets
    bodies: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: each loop's start (its keyword) and its `done`, by offset
    loops: dict[int, int] = field(default_factory=dict)
    #: each `case`, `if` and loop, by where it starts (its list's offset, its step there), and
    #: the commands after `&&` / `||` bash may skip (the operator's offset, -2)
    constructs: dict[tuple[int, int], Construct] = field(default_factory=dict)
    #: the branches bash never runs (`if false; then …; fi`), their spans
    never_run: list[tuple[int, int]] = field(default_factory=list)
    #: the constructs of `constructs` a pass through which runs one of its branches at most,
    #: by key: each `if`, each `case` none of whose branches ends with `;&` or `;;&` ("if",
    #: "case")
    exclusive: dict[tuple[int, int], str] = field(default_factory=dict)
    #: the `if`s, `case`s and loops bash runs in a subshell (piped, `fi | cat`, `cat x | if
    #: …`, or in the background, `fi &`), their spans: what they set does not hold past them
    piped: list[tuple[int, int]] = field(default_factory=list)
    #: what may end a loop before its next pass on some runs: the loops (their starts) whose
    #: body has a `break` / `return` that leaves them (branches._leaving), and where each
    #: `exit` bash may run or skip in the script's shell ends (`[ … ] && exit 0`, `if …; then
    #: exit 0; fi`): a loop's next pass follows on the runs that do not take them only
    left_loops: set[int] = field(default_factory=set)
    maybe_exits: list[int] = field(default_factory=list)
    #: the loops (their starts) whose first pass ends the shell whenever it runs (an `exit`
    #: in their body bash always runs: branches.Branches.exit_at): no next pass
    one_pass: set[int] = field(default_factory=set)
    #: the spans from where a branch (or a group's, a function's body) starts to an `exit` bash
    #: always runs there, with no `break` / `continue` / `return` between: what is assigned or
    #: counted in one holds nowhere past it, as in a subshell (the shell ends there)
    dead_ends: list[tuple[int, int]] = field(default_factory=list)
    #: the bodies of the functions whose name the script has nowhere but in their definitions
    #: (call_kinds.function_calls: no call), which the walk does not read: they never run
    uncalled_bodies: list[tuple[int, int]] = field(default_factory=list)

    def line_of(self, offset: int) -> int:
        """The 1-based line of a character offset."""
        return bisect.bisect_right(self.line_starts, offset)
