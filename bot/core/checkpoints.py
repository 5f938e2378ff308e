"""Which checkpoint may a run resume from? Pure rules over a directory listing: only a
complete one."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

DEFAULT_GLOBS: tuple[str, ...] = ("iter_*", "checkpoint_step_*")
DEFAULT_POINTER = "latest_checkpoint.txt"

# Files of one checkpoint dir: path relative to the dir ("model/.metadata") -> size in bytes.
# Listings go one level deep: top-level files and the files of each direct subdirectory.
FileSizes = Mapping[str, int]


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
    skipped: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


@dataclass(frozen=True)
class CheckpointDecision:
    """The answer plus every skip reason, also when there is no checkpoint at all."""

    checkpoint: Checkpoint | None
    skipped: tuple[str, ...]

    def explain(self) -> str:
        """One line for a message, e.g. "iter_000001000 (skipped iter_000002000: no .metadata)"."""
        head = self.checkpoint.name if self.checkpoint else "no complete checkpoint"
        return head + (f" (skipped {'; '.join(self.skipped)})" if self.skipped else "")


def iteration_of(name: str) -> int | None:
    """The iteration number in a checkpoint dir name: its last run of digits."""
    nums = re.findall(r"\d+", name)
    return int(nums[-1]) if nums else None


def matches(name: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def incomplete_reason(files: FileSizes | None, rule: CompletenessRule) -> str | None:
    """None if the listing satisfies `rule`, else why not (for the skip message)."""
    if files is None:
        return "does not exist"
    if rule.kind == "any":
        return None if files else "empty"
    if rule.kind == "marker":
        return None if rule.marker in files else f"no {rule.marker}"
    # dcp: `.metadata` is written last by torch.distributed.checkpoint, after every shard.
    metas = [p for p in files if p == ".metadata" or p.endswith("/.metadata")]
    metas = [p for p in metas if p.count("/") <= 1]
    if not metas:
        return "no .metadata"
    if all(files[p] == 0 for p in metas):
        return ".metadata is empty"
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
) -> CheckpointDecision:
    """Decide the checkpoint to resume from.

    `dirs` maps each directory *name* under `root` to its file listing (None if it vanished).
    A pointer target outside `root` may be given under its normalized absolute path. The
    mapping may load listings lazily: only the pointer target and the candidates down to the
    first complete one are looked up. `pointer` is the pointer file's content (None: absent).

    `at_most`: the newest complete checkpoint at or below that iteration, i.e. the one a
    submit made when that iteration was the latest resumed from (checkpoints its job saved
    since are passed over without a skip reason: they are no refused candidates).
    """
    root = posixpath.normpath(root)
    globs = tuple(globs)
    skipped: list[str] = []

    candidates = sorted(
        ((iteration_of(n), n) for n in dirs if "/" not in n and matches(n, globs)),
        key=lambda t: (t[0] is not None, t[0] or 0, t[1]),
        reverse=True,
    )

    if pointer is not None:
        target = resolve_pointer(root, pointer)
        if target is None:
            skipped.append(f"{pointer_name}: empty")
        else:
            key, shown = _pointer_key(root, target, candidates, dirs)
            it = target if isinstance(target, int) else \
                (iteration_of(key) if key is not None else None)
            if key is not None and at_most is not None and (it is None or it > at_most):
                pass  # saved after the submit: the scan below finds the one it chose
            elif key is None:
                skipped.append(f"{pointer_name} -> {shown}: no such checkpoint directory")
            else:
                why = incomplete_reason(dirs.get(key), rule)
                if why is None:
                    path = key if key.startswith("/") else posixpath.join(root, key)
                    return CheckpointDecision(
                        Checkpoint(path, it, "pointer", tuple(skipped)), tuple(skipped)
                    )
                skipped.append(f"{pointer_name} -> {shown}: {why}")

    for it, name in candidates:
        if it is None:
            skipped.append(f"{name}: no iteration number in the name")
            continue
        if at_most is not None and it > at_most:
            continue
        why = incomplete_reason(dirs.get(name), rule)
        if why is None:
            cp = Checkpoint(posixpath.join(root, name), it, "scan", tuple(skipped))
            return CheckpointDecision(cp, tuple(skipped))
        skipped.append(f"{name}: {why}")
    return CheckpointDecision(None, tuple(skipped))


def _pointer_key(
    root: str,
    target: str | int,
    candidates: list[tuple[int | None, str]],
    dirs: Mapping[str, FileSizes | None],
) -> tuple[str | None, str]:
    """The `dirs` key a pointer target refers to, and how to show the target in a message."""
    if isinstance(target, int):
        for it, name in candidates:
            if it == target:
                return name, name
        return None, f"iteration {target}"
    if posixpath.dirname(target) == root:
        name = posixpath.basename(target)
        return (name if name in dirs else None), name
    return (target if target in dirs else None), target


__all__ = [
    "DEFAULT_GLOBS",
    "DEFAULT_POINTER",
    "Checkpoint",
    "CheckpointDecision",
    "CompletenessRule",
    "FileSizes",
    "choose_checkpoint",
    "incomplete_reason",
    "iteration_of",
    "resolve_pointer",
]
