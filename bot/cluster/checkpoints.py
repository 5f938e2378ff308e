"""Find the latest complete checkpoint of a recipe on the cluster (SFTP listing + pure rules)."""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bot.cluster.sftp import each_request
from bot.core.checkpoints import (
    DEFAULT_GLOBS,
    DEFAULT_POINTER,
    Checkpoint,
    CheckpointDecision,
    CompletenessRule,
    FileSizes,
    LookupBound,
    LookupBoundReached,
    RequestCount,
    choose_checkpoint,
    matches,
    resolve_pointer,
)
from bot.core.text import N_
from bot.services.ports import SFTP, SFTPCalls

MAX_POINTER_BYTES = 4096


def probe_checkpoints(
    sftp: SFTPCalls,
    root: str,
    rule: CompletenessRule | str = "dcp",
    *,
    pointer_name: str | None = DEFAULT_POINTER,
    globs: Iterable[str] = DEFAULT_GLOBS,
    at_most: int | None = None,
) -> CheckpointDecision:
    """The decision with all skip reasons; a missing root is "no checkpoint yet".

    `root` may be absolute, relative to the login user's home, or start with `~/`.
    `pointer_name=None` means the recipe has no pointer file. `at_most`: the newest complete
    one at or below that iteration (bot.core.checkpoints.choose_checkpoint).
    At most CHECKPOINT_REQUESTS SFTP requests, each counted as trainbot's SFTP client sends
    it (bot.cluster.sftp.each_request: a listing's opendir, readdirs and close, a file's
    reads, a symlink's stat): the decision's `requests`, its `bound` when they ran out. All
    on one channel: a pool's lookup channel (opening it is no request; see _one_channel).
    """
    if isinstance(rule, str):
        rule = CompletenessRule.parse(rule)
    requests = RequestCount()
    with _one_channel(sftp) as on, each_request(requests.send, requests.failed):
        return _probe(on, root, rule, pointer_name, tuple(globs), at_most, requests)


@contextmanager
def _one_channel(sftp: SFTPCalls) -> Iterator[SFTPCalls]:
    """`sftp`'s lookup channel when it is a cluster's SFTP (the port SFTP:
    bot.cluster.sftp.SFTPPool.lookup_channel), else `sftp` itself (one channel already: a
    lookup lease's, a local tree): every request of the lookup goes on one channel, opened at
    most once (when the pool keeps none) and never waited for behind the pool's other work,
    so the lookup's worst case is that one opening and its requests, each at the SFTP
    deadline (bot.core.takeover.settle_takeover_s)."""
    if not isinstance(sftp, SFTP):
        yield sftp
        return
    with sftp.lookup_channel() as lease:
        yield lease.sftp


def _probe(sftp: Any, root: str, rule: CompletenessRule, pointer_name: str | None,
           globs: tuple[str, ...], at_most: int | None,
           requests: RequestCount) -> CheckpointDecision:
    abs_root, linked = root, set[str]()
    try:
        abs_root = _absolute(sftp, root)
        try:
            entries = sftp.listdir_attr(abs_root)
        except FileNotFoundError:
            return CheckpointDecision(None, (N_("%(path)s: does not exist yet",
                                                path=root),), requests=requests.made)
        names = {e.filename: e for e in entries}

        pointer: str | None = None
        if pointer_name and pointer_name in names:
            with sftp.open(posixpath.join(abs_root, pointer_name), "rb") as f:
                pointer = f.read(MAX_POINTER_BYTES).decode("utf-8", errors="replace")
        target = resolve_pointer(abs_root, pointer) if pointer is not None else None
        in_root = posixpath.basename(target) if isinstance(target, str) and \
            posixpath.dirname(target) == abs_root else None

        # a symlink is a candidate if its target is a dir: a stat, asked only of the names
        # the lookup could take (a checkpoint's, the pointer's), not of the root's others
        linked = {n for n, e in names.items() if stat.S_ISLNK(e.st_mode or 0)
                  and (matches(n, globs) or n == in_root)}
        dir_names = [n for n, e in names.items()
                     if (n in linked or not stat.S_ISLNK(e.st_mode or 0))
                     and _is_dir(sftp, abs_root, e)]
    except LookupBoundReached:  # reading the root itself took every request
        bound = LookupBound(posixpath.normpath(abs_root), 0, 0, requests.made, len(linked))
        return CheckpointDecision(None, (), bound, requests.made)
    extra: list[str] = []
    if isinstance(target, str) and in_root is None:
        extra.append(target)  # a pointer to a checkpoint kept elsewhere
    listing = _LazyListing(sftp, abs_root, dir_names, extra)
    return choose_checkpoint(
        abs_root,
        listing,
        rule,
        pointer=pointer,
        pointer_name=pointer_name or DEFAULT_POINTER,
        globs=globs,
        at_most=at_most,
        requests=requests,
    )


def find_latest_checkpoint(
    sftp: SFTPCalls,
    root: str,
    rule: CompletenessRule | str = "dcp",
    *,
    pointer_name: str | None = DEFAULT_POINTER,
    globs: Iterable[str] = DEFAULT_GLOBS,
    at_most: int | None = None,
) -> Checkpoint | None:
    """The checkpoint to resume from (with `at_most`, the newest at or below that iteration),
    or None when there is no complete one (yet); LookupStopped when the lookup reached its
    request bound before finding one (then nothing may be resumed from, nor started afresh).

    The returned `Checkpoint.skipped` lists newer candidates that were refused and why.
    """
    decision = probe_checkpoints(sftp, root, rule, pointer_name=pointer_name, globs=globs,
                                 at_most=at_most)
    if decision.bound is not None:
        raise LookupStopped(decision)
    return decision.checkpoint


class LookupStopped(Exception):
    """A checkpoint lookup reached its SFTP request bound before a complete checkpoint."""

    def __init__(self, decision: CheckpointDecision) -> None:
        super().__init__(decision.explain())
        self.decision = decision
        assert decision.bound is not None
        self.bound: LookupBound = decision.bound


def probe_recipe_checkpoints(sftp: SFTPCalls, cfg: Any) -> CheckpointDecision:
    """`probe_checkpoints` for a recipe's `checkpoint:` config (bot.config.CheckpointConfig)."""
    return probe_checkpoints(
        sftp, cfg.dir, cfg.complete_rule, pointer_name=cfg.pointer_file or None, globs=cfg.globs()
    )


def _absolute(sftp: Any, root: str) -> str:
    """`root` as an absolute path; SFTP's working directory is the user's home."""
    if root == "~" or root.startswith("~/"):
        root = root[2:] or "."
    if root.startswith("/"):
        return posixpath.normpath(root)
    home = sftp.normalize(".")
    return posixpath.normpath(posixpath.join(home, root))


def _is_dir(sftp: Any, parent: str, entry: Any) -> bool:
    mode = entry.st_mode or 0
    if stat.S_ISLNK(mode):  # a symlinked checkpoint dir counts if its target is a dir
        try:
            mode = sftp.stat(posixpath.join(parent, entry.filename)).st_mode or 0
        except FileNotFoundError:
            return False
    return stat.S_ISDIR(mode)


class _LazyListing(Mapping[str, FileSizes | None]):
    """Directory name -> files (one level deep), listed over SFTP on first access."""

    def __init__(self, sftp: Any, root: str, names: list[str], extra: list[str]):
        self._sftp = sftp
        self._root = root
        self._keys = [*names, *extra]
        self._cache: dict[str, FileSizes | None] = {}

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __getitem__(self, key: str) -> FileSizes | None:
        if key not in self._keys:
            raise KeyError(key)
        if key not in self._cache:
            path = key if key.startswith("/") else posixpath.join(self._root, key)
            self._cache[key] = _list_files(self._sftp, path)
        return self._cache[key]


def _list_files(sftp: Any, path: str) -> dict[str, int] | None:
    """Files directly in `path` and in its direct subdirectories, with sizes; None if absent."""
    try:
        entries = sftp.listdir_attr(path)
    except FileNotFoundError:
        return None
    files: dict[str, int] = {}
    for e in entries:
        if _is_dir(sftp, path, e):
            try:
                for sub in sftp.listdir_attr(posixpath.join(path, e.filename)):
                    if not stat.S_ISDIR(sub.st_mode or 0):
                        files[f"{e.filename}/{sub.filename}"] = int(sub.st_size or 0)
            except FileNotFoundError:
                continue
        else:
            files[e.filename] = int(e.st_size or 0)
    return files


__all__ = [
    "LookupStopped",
    "find_latest_checkpoint",
    "probe_checkpoints",
    "probe_recipe_checkpoints",
]
