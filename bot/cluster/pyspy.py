"""py-spy on the cluster without a manual install: the static binary of the py-spy wheel
trainbot depends on, checked against the wheel's RECORD hash, copied by SFTP under the bot
user's home (`~/.cache/trainbot/py-spy-<version>/py-spy`) when it is absent or differs, and
checked there by `sha256sum`. A site that installs py-spy itself configures its path instead.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import posixpath
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cluster.errors import ClusterError
from bot.core.text import N_

if TYPE_CHECKING:
    from bot.services.ports import SFTP, Runner

log = logging.getLogger(__name__)

DIST = "py-spy"
REMOTE_DIR = ".cache/trainbot"
PART_GLOB = "py-spy.*.part"  # a placement's copy before it is checked (place_pyspy)
STALE_PART_MINUTES = 60  # a part this old was left by a placement that died


class PySpyUnavailable(ClusterError):
    """py-spy cannot be placed on the cluster; the message says why and what to do."""


@dataclass(frozen=True)
class LocalPySpy:
    """The py-spy binary installed with trainbot, its version and verified sha256 (hex)."""

    path: Path
    version: str
    sha256: str


def _record_sha256(value: str) -> str:
    """RECORD's `sha256=<urlsafe base64, unpadded>` as hex."""
    algo, _, digest = value.partition("=")
    if algo != "sha256":
        raise PySpyUnavailable(N_("the py-spy wheel records a %(algo)s hash, not sha256",
                                  algo=algo))
    raw = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4))
    return raw.hex()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def local_pyspy() -> LocalPySpy:
    """The py-spy binary of the installed wheel, its hash checked against the wheel's RECORD
    (a binary changed since it was installed is refused)."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise PySpyUnavailable(N_("the py-spy package is not installed with trainbot: pip "
                                  "install 'trainbot' (py-spy is one of its dependencies), "
                                  "or set the cluster's `py_spy` path")) from None
    for f in dist.files or ():
        if f.name != "py-spy" or f.hash is None:
            continue
        path = Path(str(dist.locate_file(f))).resolve()
        if not path.is_file():
            continue
        expected = _record_sha256(f"{f.hash.mode}={f.hash.value}")
        actual = file_sha256(path)
        if actual != expected:
            raise PySpyUnavailable(N_("%(path)s: sha256 %(actual)s differs from the py-spy "
                                      "%(version)s wheel's %(expected)s; reinstall py-spy",
                                      path=str(path), actual=actual, version=dist.version,
                                      expected=expected))
        return LocalPySpy(path, dist.version, expected)
    raise PySpyUnavailable(N_("the py-spy %(version)s wheel installed no py-spy binary here",
                              version=dist.version))


def remote_path(home: str, version: str) -> str:
    return posixpath.join(home, REMOTE_DIR, f"py-spy-{version}", "py-spy")


def remote_sha256(runner: Runner, path: str) -> str | None:
    """`sha256sum PATH` on the login node; None when the file is absent or unreadable."""
    out = runner.run(["sha256sum", path], check=False, timeout=60)
    if out.exit_code != 0:
        return None
    first = out.stdout.split()
    return first[0] if first else None


def place_pyspy(runner: Runner, sftp: SFTP, local: LocalPySpy | None = None, *,
                on_copy: Callable[[str], None] | None = None) -> str:
    """The path of a verified py-spy on the cluster, copied there first when absent or
    different (`on_copy(path)` is called then, before the copy: a copy is being placed, not
    only the one there checked). Nodes see it when the home is shared (as on every Slurm
    site trainbot knows); a site without a shared home configures `py_spy`.

    The copy goes to a part file of this placement's own (`py-spy.<pid>.<random>.part`
    beside it), checked, then renamed over the binary (`mv -f` in one directory: rename(2),
    atomic): placements at the same moment (the bot's and a `trainbot stacks` CLI's, two
    replicas) each copy and check their own part and each installs a verified binary. A
    placement's part is removed when it fails; parts older than STALE_PART_MINUTES, left by
    one that died, are removed before the copy."""
    local = local or local_pyspy()
    home = sftp.normalize(".")
    path = remote_path(home, local.version)
    if remote_sha256(runner, path) == local.sha256:
        return path
    if on_copy is not None:
        on_copy(path)
    directory = posixpath.dirname(path)
    runner.run(["mkdir", "-p", directory], timeout=60)
    runner.run(["find", directory, "-maxdepth", "1", "-name", PART_GLOB, "-mmin",
                f"+{STALE_PART_MINUTES}", "-delete"], check=False, timeout=60)
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.part"
    try:
        sent = 0
        with local.path.open("rb") as src, sftp.open(tmp, "wb") as dst:
            # 8 MB in 32 KiB requests: waiting for each reply made it one round trip per
            # request, minutes on a far link; the replies are read at the file's close
            dst.set_pipelined(True)
            for chunk in iter(lambda: src.read(1 << 20), b""):
                dst.write(chunk)
                sent += len(chunk)
        # paramiko drops a refused pipelined write's error (SSH_FX_FAILURE on a full disk or
        # quota): the part's size says whether all of it arrived
        arrived = getattr(sftp.stat(tmp), "st_size", None)
        if arrived is not None and arrived != sent:
            raise PySpyUnavailable(N_(
                "py-spy copied to %(tmp)s has %(arrived)s of its %(sent)s bytes: the cluster "
                "did not write the rest (a full disk or a quota there? check `df -h ~` and "
                "`quota -s`); nothing was installed", tmp=tmp, arrived=arrived, sent=sent))
        runner.run(["chmod", "0755", tmp], timeout=60)
        got = remote_sha256(runner, tmp)
        if got != local.sha256:
            raise PySpyUnavailable(N_("py-spy copied to %(tmp)s has sha256 %(got)s, expected "
                                      "%(expected)s: the copy was damaged; nothing was "
                                      "installed", tmp=tmp, got=got, expected=local.sha256))
        runner.run(["mv", "-f", tmp, path], timeout=60)
    except BaseException:
        _remove_quietly(runner, tmp)
        raise
    return path


def _remove_quietly(runner: Runner, path: str) -> None:
    """`rm -f path`, its own failure (the connection that failed the placement) only logged:
    the placement's error is the one to tell."""
    try:
        runner.run(["rm", "-f", path], check=False, timeout=60)
    except Exception:  # noqa: BLE001 - the caller raises the error that brought it here
        log.debug("could not remove %s", path, exc_info=True)
