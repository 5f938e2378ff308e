"""Which checkpoint may a run resume from? Pure rules over a directory listing: only a
complete one."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from bot.core.text import N_, Text, join_text

DEFAULT_GLOBS: tuple[str, ...] = ("iter_*", "checkpoint_step_*")
DEFAULT_POINTER = "latest_checkpoint.txt"

# Files of one checkpoint dir: path relative to the dir ("model/.metadata") -> size in bytes.
# Listings go one level deep: top-level files and the files of each direct subdirectory.
FileSizes = Mapping[str, int]

CHECKPOINT_REQUESTS = 80
"""SFTP requests one checkpoint lookup may send, each a round trip at its own deadline (the
cluster's sftp_s), counted as the client sends them (bot.cluster.sftp.each_request): a
relative root's realpath; each listing's opendir, its readdirs (one per batch of entries the
server answers with, OpenSSH's up to 100, and the one answering that the directory has
ended) and its close, so 4 for a directory of a few entries; a symlink's stat (one named like
a checkpoint in the root, any in a candidate's directory); a file's open, each of its reads
(the one answering its end too) and its close, so 4 for a short pointer file. A request is
sent only while room for the closes of the handles open after it is left: every directory or
file opened is closed within the bound. The lookup stops there (LookupBound).

80 finds what 20 did when a listing was counted as one request (its opendir) though it took
four: the root, the pointer file and the newest candidates down to the ninth, each a
directory with one subdirectory (4 + 4 + 9 * 8 = 80). Its worst case is 80 SFTP deadlines,
on one channel whose opening has deadlines of its own, what
bot.core.takeover.settle_takeover_s allows the lookup of a resume (20 minutes at the default
15 s, and the channel's opening): a bound on the lookup's time, not only on its requests."""


class LookupBoundReached(Exception):
    """Raised before an SFTP request that would take the lookup past its bound (not sent)."""


class RequestCount:
    """The SFTP requests a lookup sent so far, against its bound: `send` raises
    LookupBoundReached instead of letting one more go past it, or leaving no room to close a
    handle it opened."""

    def __init__(self, bound: int = CHECKPOINT_REQUESTS) -> None:
        self.bound = bound
        self.made = 0
        self._handles = 0  # opened (open, opendir) and not closed yet: each needs its close

    def send(self, kind: str) -> None:
        """A request of `kind` (paramiko's name: "opendir", "readdir", "open", "read",
        "close", "stat", "realpath") is about to be sent: counted, or refused
        (LookupBoundReached) unless room for the closes of the handles open after it is left.
        An open's close is kept in reserve until it is sent, or `failed` says the open was
        answered with an error."""
        if kind == "close":
            self._handles = max(0, self._handles - 1)
        elif kind in ("open", "opendir"):
            self._handles += 1
        if self.made + 1 + self._handles > self.bound:
            if kind in ("open", "opendir"):
                self._handles -= 1  # not sent
            raise LookupBoundReached
        self.made += 1

    def failed(self, kind: str) -> None:
        """An `open` or `opendir` sent was answered with an error (no such file, permission
        denied): no handle came of it, so the room kept for its close is free again."""
        if kind in ("open", "opendir"):
            self._handles = max(0, self._handles - 1)


@dataclass(frozen=True)
class LookupBound:
    """A lookup stopped at its request bound before finding a complete checkpoint: the
    `checked` newest candidates of `root` (normalized) are incomplete, the `unchecked` older
    ones were not looked at, so none of them may be resumed from (nor may the run start from
    scratch). `symlinks` is not None when it stopped while reading `root` itself (resolving
    it, listing it, its pointer file, the stats of its symlinks), before any candidate was
    known: telling whether each of the `symlinks` entries of it named like a checkpoint is a
    directory takes a request (a stat) each; 0 when it stopped before any such stat (a root
    of many thousand entries, listed a batch a request)."""

    root: str
    checked: int
    unchecked: int
    requests: int
    symlinks: int | None = None

    def __str__(self) -> str:
        if self.symlinks == 0:
            return f"{self.root}: stopped while listing it, after {self.requests} SFTP requests"
        if self.symlinks is not None:
            return (f"{self.root}: stopped while listing it, after {self.requests} SFTP "
                    f"requests ({self.symlinks} symlinks named like checkpoints)")
        return (f"{self.root}: stopped after {self.requests} SFTP requests: the "
                f"{self.checked} newest candidates checked are incomplete, the {self.unchecked} "
                "older ones were not checked")


@dataclass(frozen=True)
class CompletenessRule:
    """How to tell a finished checkpoint: `dcp`, `marker:<file>` or `any` (config syntax)."""

    kind: Literal["dcp", "marker", "any"]
    marker: str = ""

    @classmethod
    def parse(cls, text: str) -> CompletenessRule:
        t = text.strip()
        if t == "dcp":
            return cls("dcp")
        if t == "any":
            return cls("any")
        if t.startswith("marker:") and t[len("marker:") :].strip():
            return cls("marker", t[len("marker:") :].strip().strip("/"))
        raise ValueError(
            f"checkpoint completeness rule {text!r} is not one of 'dcp', 'marker:<file name>', "
            "'any'"
        )

    def __str__(self) -> str:
        return f"marker:{self.marker}" if self.kind == "marker" else self.kind


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint to resume from; `skipped` says which newer candidates were refused, why."""

    path: str
    iteration: int | None
    source: Literal["pointer", "scan"]
    skipped: tuple[Text, ...] = field(default=())

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


@dataclass(frozen=True)
class CheckpointDecision:
    """The answer plus every skip reason, also when there is no checkpoint at all."""

    checkpoint: Checkpoint | None
    skipped: tuple[Text, ...]  # "<candidate>: <why>", sentences to translate (str(): English)
    bound: LookupBound | None = None  # stopped at the request bound: no checkpoint decided
    requests: int = 0  # the SFTP requests the lookup sent (RequestCount.made), 0 uncounted

    def explain(self) -> str:
        """One line for a message, e.g. "iter_000001000 (skipped iter_000002000: no .metadata)"."""
        head = self.checkpoint.name if self.checkpoint else "no complete checkpoint"
        if self.bound is not None:
            head = f"no checkpoint decided ({self.bound})"
        said = "; ".join(str(s) for s in self.skipped)
        return head + (f" (skipped {said})" if self.skipped else "")


def lookup_stopped(path: str, decision: CheckpointDecision) -> Text:
    """What a lookup that stopped at its request bound (`decision.bound`) found in `path` (the
    directory as the recipe names it): the clause the refused resume and the preflight say.
    One that stopped while listing the directory names it as listed (`bound.root`): the
    symlinks to replace are there."""
    bound = decision.bound
    assert bound is not None, "the lookup did not stop at its bound"
    if bound.symlinks == 0:  # no candidate known and no symlink stat'ed: the root's own
        return N_("the checkpoint lookup in %(path)s stopped while listing the directory, "
                  "after %(made)s SFTP requests (its bound is %(requests)s), before it checked "
                  "any checkpoint: the directory holds too many entries to list within the "
                  "bound (a request for each batch of them the server sends)",
                  path=bound.root, made=bound.requests, requests=CHECKPOINT_REQUESTS)
    if bound.symlinks is not None:  # no candidate known: the counts below would be zeros
        return N_("the checkpoint lookup in %(path)s stopped while listing the directory, "
                  "after %(made)s SFTP requests (its bound is %(requests)s), before it checked "
                  "any checkpoint: each of the %(symlinks)s symlinks there named like a "
                  "checkpoint takes a request to tell whether it is a directory",
                  path=bound.root, made=bound.requests, requests=CHECKPOINT_REQUESTS,
                  symlinks=bound.symlinks)
    return N_("the checkpoint lookup in %(path)s stopped at its bound of %(requests)s SFTP "
              "requests; the %(checked)s newest checkpoints it checked are incomplete "
              "(%(skipped)s) and the %(unchecked)s older ones were not checked",
              path=path, requests=CHECKPOINT_REQUESTS, checked=bound.checked,
              skipped=join_text(list(decision.skipped)) or "-", unchecked=bound.unchecked)


def iteration_of(name: str) -> int | None:
    """The iteration number in a checkpoint dir name: its last run of digits."""
    nums = re.findall(r"\d+", name)
    return int(nums[-1]) if nums else None


def matches(name: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def incomplete_reason(files: FileSizes | None, rule: CompletenessRule) -> Text | None:
    """None if the listing satisfies `rule`, else why not (for the skip message)."""
    if files is None:
        return N_("does not exist")
    if rule.kind == "any":
        return None if files else N_("empty")
    if rule.kind == "marker":
        return None if rule.marker in files else N_("no %(file)s", file=rule.marker)
    # dcp: `.metadata` is written last by torch.distributed.checkpoint, after every shard.
    metas = [p for p in files if p == ".metadata" or p.endswith("/.metadata")]
    metas = [p for p in metas if p.count("/") <= 1]
    if not metas:
        return N_("no .metadata")
    if all(files[p] == 0 for p in metas):
        return N_(".metadata is empty")
    return None


def resolve_pointer(root: str, content: str) -> str | int | None:
    """What a pointer file names: a normalized path, an iteration number, or None if empty."""
    text = content.strip().splitlines()[0].strip() if content.strip() else ""
    if not text:
        return None
    if text.isdigit():
        return int(text)
    path = text if text.startswith("/") else posixpath.join(root, text)
    return posixpath.normpath(path)


def choose_checkpoint(
    root: str,
    dirs: Mapping[str, FileSizes | None],
    rule: CompletenessRule,
    *,
    pointer: str | None = None,
    pointer_name: str = DEFAULT_POINTER,
    globs: Iterable[str] = DEFAULT_GLOBS,
    at_most: int | None = None,
    requests: RequestCount | None = None,
) -> CheckpointDecision:
    """Decide the checkpoint to resume from.

    `dirs` maps each directory *name* under `root` to its file listing (None if it vanished).
    A pointer target outside `root` may be given under its normalized absolute path. The
    mapping may load listings lazily: only the pointer target and the candidates down to the
    first complete one are looked up. `pointer` is the pointer file's content (None: absent).

    `at_most`: the newest complete checkpoint at or below that iteration, i.e. the one a
    submit made when that iteration was the latest resumed from (checkpoints its job saved
    since are passed over without a skip reason: they are no refused candidates).

    `requests`: the lookup's SFTP requests, counted as `dirs` lists (the decision's
    `requests`); when a listing raises LookupBoundReached, the decision has no checkpoint and
    says how far it got (`bound`).
    """
    try:
        decision = _choose(root, dirs, rule, pointer, pointer_name, globs, at_most)
    except _Stopped as stop:
        bound = LookupBound(posixpath.normpath(root), stop.checked, stop.unchecked,
                            _sent(requests))
        return CheckpointDecision(None, stop.skipped, bound, _sent(requests))
    return replace(decision, requests=_sent(requests))


def _sent(requests: RequestCount | None) -> int:
    return requests.made if requests is not None else 0


class _Stopped(Exception):
    def __init__(self, skipped: list[Text], checked: int, unchecked: int) -> None:
        self.skipped, self.checked, self.unchecked = tuple(skipped), checked, unchecked


def _choose(
    root: str,
    dirs: Mapping[str, FileSizes | None],
    rule: CompletenessRule,
    pointer: str | None,
    pointer_name: str,
    globs: Iterable[str],
    at_most: int | None,
) -> CheckpointDecision:
    root = posixpath.normpath(root)
    globs = tuple(globs)
    skipped: list[Text] = []

    candidates = sorted(
        ((iteration_of(n), n) for n in dirs if "/" not in n and matches(n, globs)),
        key=lambda t: (t[0] is not None, t[0] or 0, t[1]),
        reverse=True,
    )

    if pointer is not None:
        target = resolve_pointer(root, pointer)
        if target is None:
            skipped.append(_skip(pointer_name, N_("empty")))
        else:
            key, shown = _pointer_key(root, target, candidates, dirs)
            it = target if isinstance(target, int) else \
                (iteration_of(key) if key is not None else None)
            if key is not None and at_most is not None and (it is None or it > at_most):
                pass  # saved after the submit: the scan below finds the one it chose
            elif key is None:
                skipped.append(_skip(pointer_name, N_("no such checkpoint directory"), shown))
            else:
                try:
                    files = dirs.get(key)
                except LookupBoundReached:
                    raise _Stopped(skipped, 0, len(candidates)) from None
                why = incomplete_reason(files, rule)
                if why is None:
                    path = key if key.startswith("/") else posixpath.join(root, key)
                    return CheckpointDecision(
                        Checkpoint(path, it, "pointer", tuple(skipped)), tuple(skipped)
                    )
                skipped.append(_skip(pointer_name, why, shown))

    checked = 0
    for i, (it, name) in enumerate(candidates):
        if it is None:
            skipped.append(_skip(name, N_("no iteration number in the name")))
            continue
        if at_most is not None and it > at_most:
            continue
        try:
            files = dirs.get(name)
        except LookupBoundReached:
            left = [c for c, _ in candidates[i:]
                    if c is not None and (at_most is None or c <= at_most)]
            raise _Stopped(skipped, checked, len(left)) from None
        checked += 1
        why = incomplete_reason(files, rule)
        if why is None:
            cp = Checkpoint(posixpath.join(root, name), it, "scan", tuple(skipped))
            return CheckpointDecision(cp, tuple(skipped))
        skipped.append(_skip(name, why))
    return CheckpointDecision(None, tuple(skipped))


def _skip(name: str, why: Text, target: Text | str | None = None) -> Text:
    """A refused candidate and why: `iter_000002000: no .metadata`, or a pointer file's
    `latest_checkpoint.txt -> iter_000002000: no .metadata`."""
    if target is None:
        return N_("%(candidate)s: %(why)s", candidate=name, why=why)
    return N_("%(pointer)s -> %(target)s: %(why)s", pointer=name, target=target, why=why)


def _pointer_key(
    root: str,
    target: str | int,
    candidates: list[tuple[int | None, str]],
    dirs: Mapping[str, FileSizes | None],
) -> tuple[str | None, Text | str]:
    """The `dirs` key a pointer target refers to, and how to show the target in a message."""
    if isinstance(target, int):
        for it, name in candidates:
            if it == target:
                return name, name
        return None, N_("iteration %(iter)s", iter=target)
    if posixpath.dirname(target) == root:
        name = posixpath.basename(target)
        return (name if name in dirs else None), name
    return (target if target in dirs else None), target


__all__ = [
    "CHECKPOINT_REQUESTS",
    "DEFAULT_GLOBS",
    "DEFAULT_POINTER",
    "Checkpoint",
    "CheckpointDecision",
    "CompletenessRule",
    "FileSizes",
    "LookupBound",
    "LookupBoundReached",
    "RequestCount",
    "choose_checkpoint",
    "incomplete_reason",
    "iteration_of",
    "lookup_stopped",
    "matches",
    "resolve_pointer",
]
