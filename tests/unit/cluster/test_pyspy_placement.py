"""bot.cluster.pyspy: trainbot's own py-spy (hash-checked against its wheel's RECORD) copied
to the cluster when absent or different, checked there, never installed damaged."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from fakes import FakeSFTP, LocalTreeSFTP

from bot.cluster import pyspy
from bot.cluster.pyspy import LocalPySpy, PySpyUnavailable, local_pyspy, place_pyspy
from bot.cluster.ssh import CommandResult

HOME = "/home/slurmci"


@pytest.fixture
def local(tmp_path: Path) -> LocalPySpy:
    binary = tmp_path / "py-spy"
    binary.write_bytes(b"\x7fELF static py-spy")
    return LocalPySpy(binary, "0.4.3", hashlib.sha256(binary.read_bytes()).hexdigest())


class Cluster:
    """A login node over the fake SFTP's files: sha256sum hashes them (or lies: `damage`),
    mv moves them; every argv is recorded."""

    def __init__(self, sftp: FakeSFTP, *, damage: bool = False) -> None:
        self.sftp, self.damage = sftp, damage
        self.calls: list[list[str]] = []

    def run(self, argv, **kw) -> CommandResult:  # noqa: ANN001, ANN003
        argv = list(argv)
        self.calls.append(argv)
        if argv[0] == "sha256sum":
            data = self.sftp.files.get(argv[1])
            if data is None:
                return CommandResult(tuple(argv), 1, "", "No such file or directory")
            digest = hashlib.sha256(b"x" if self.damage else bytes(data)).hexdigest()
            return CommandResult(tuple(argv), 0, f"{digest}  {argv[1]}\n", "")
        if argv[0] == "mv":
            self.sftp.files[argv[3]] = self.sftp.files.pop(argv[2])
        if argv[0] == "rm":
            self.sftp.files.pop(argv[2], None)
        return CommandResult(tuple(argv), 0, "", "")

    def changes(self) -> list[list[str]]:
        return [a for a in self.calls if a[0] != "sha256sum"]


def test_an_absent_copy_is_uploaded_checked_and_moved_into_place(local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    node = Cluster(sftp)
    path = place_pyspy(node, sftp, local)  # type: ignore[arg-type]
    assert path == f"{HOME}/.cache/trainbot/py-spy-0.4.3/py-spy"
    assert bytes(sftp.files[path]) == local.path.read_bytes()
    (part,) = [a[2] for a in node.calls if a[0] == "chmod"]
    assert re.fullmatch(re.escape(path) + r"\.\d+\.[0-9a-f]{8}\.part", part)
    assert ["mv", "-f", part, path] in node.calls
    assert set(sftp.files) == {path}  # no part left


def test_a_copy_with_the_right_hash_is_used_as_it_is(local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    path = f"{HOME}/.cache/trainbot/py-spy-0.4.3/py-spy"
    sftp.files[path] = bytearray(local.path.read_bytes())
    node = Cluster(sftp)
    assert place_pyspy(node, sftp, local) == path  # type: ignore[arg-type]
    assert node.changes() == []  # no mkdir, chmod, mv


def test_a_copy_damaged_on_the_way_is_removed_and_never_installed(local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    node = Cluster(sftp, damage=True)
    with pytest.raises(PySpyUnavailable, match="the copy was damaged"):
        place_pyspy(node, sftp, local)  # type: ignore[arg-type]
    assert not any(a[0] == "mv" for a in node.calls)
    (part,) = [a[2] for a in node.calls if a[0] == "chmod"]
    assert ["rm", "-f", part] in node.calls
    assert sftp.files == {}


def test_the_installed_binary_is_checked_against_its_wheel(monkeypatch) -> None:  # noqa: ANN001
    found = local_pyspy()
    assert found.path.name == "py-spy" and found.version == "0.4.3"
    assert found.sha256 == hashlib.sha256(found.path.read_bytes()).hexdigest()
    monkeypatch.setattr(pyspy, "file_sha256", lambda path: "0" * 64)
    with pytest.raises(PySpyUnavailable, match="differs from the py-spy 0.4.3 wheel"):
        local_pyspy()


class LocalNode:
    """A login node whose home is a local directory (`/` is `base`, as LocalTreeSFTP serves
    it): mkdir, find, chmod, sha256sum, mv and rm run here for real, on the argv's paths
    under `base`. `meet`: every sha256sum of a placement's part waits there (a barrier), so
    placements started together check their copies at the same moment."""

    def __init__(self, base: Path, meet: threading.Barrier | None = None) -> None:
        self.base, self.meet = base, meet
        self.calls: list[list[str]] = []

    def run(self, argv, *, check: bool = True, **kw) -> CommandResult:  # noqa: ANN001, ANN003
        argv = list(argv)
        self.calls.append(argv)
        if argv[0] == "sha256sum" and argv[1].endswith(".part") and self.meet is not None:
            self.meet.wait(10)
        local = [str(self.base) + a if a.startswith("/") else a for a in argv]
        done = subprocess.run(local, capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise RuntimeError(f"{argv}: {done.stderr}")
        out = done.stdout.replace(str(self.base), "")
        return CommandResult(tuple(argv), done.returncode, out, done.stderr)


def test_two_placements_at_once_both_install_a_verified_copy(
        local: LocalPySpy, tmp_path: Path) -> None:
    """The bot and a `trainbot stacks` CLI place py-spy at the same moment: each copies to a
    part of its own, checks it and renames it over the binary, so both succeed and what is
    installed is verified, no part left. Before, both wrote `py-spy.part`: the first's mv took
    the part away under the second's check ("the copy was damaged")."""
    home = tmp_path / "home"
    home.mkdir()
    node = LocalNode(home, threading.Barrier(2))
    results: list[str | BaseException] = []

    def place() -> None:
        try:
            results.append(place_pyspy(node, LocalTreeSFTP(home), local))  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - asserted below
            results.append(exc)

    threads = [threading.Thread(target=place) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    path = "/.cache/trainbot/py-spy-0.4.3/py-spy"
    assert results == [path, path]
    installed = home / path.lstrip("/")
    assert installed.read_bytes() == local.path.read_bytes()
    assert os.access(installed, os.X_OK)
    assert sorted(p.name for p in installed.parent.iterdir()) == ["py-spy"]
    parts = {a[2] for a in node.calls if a[0] == "chmod"}
    assert len(parts) == 2  # a part each


def test_a_stale_part_is_removed_and_a_fresh_one_left_alone(
        local: LocalPySpy, tmp_path: Path) -> None:
    """A part a placement that died left an hour and more ago is removed before the copy; a
    part younger than that (another placement's, under way) is left to it."""
    home = tmp_path / "home"
    directory = home / ".cache/trainbot/py-spy-0.4.3"
    directory.mkdir(parents=True)
    stale = directory / "py-spy.4242.0badc0de.part"
    stale.write_bytes(b"half a copy")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    fresh = directory / "py-spy.4343.0000beef.part"
    fresh.write_bytes(b"a copy under way")
    other = directory / "notes.part"
    other.write_bytes(b"not a placement's")
    os.utime(other, (old, old))
    node = LocalNode(home)
    placed = place_pyspy(node, LocalTreeSFTP(home), local)  # type: ignore[arg-type]  # run only
    assert placed == "/.cache/trainbot/py-spy-0.4.3/py-spy"
    assert sorted(p.name for p in directory.iterdir()) == [
        "notes.part", "py-spy", "py-spy.4343.0000beef.part"]


def test_a_copy_that_fails_half_way_leaves_no_part(local: LocalPySpy) -> None:
    """The connection drops during the copy: the placement fails with that error and its
    part is removed (here the removal fails as well: the copy's error is the one raised)."""
    sftp = FakeSFTP()
    node = Cluster(sftp)

    class Dropped(FakeSFTP):
        def open(self, path: str, mode: str = "r", bufsize: int = -1):  # noqa: ANN201
            sftp.files[path] = bytearray(b"half")
            raise ConnectionResetError("connection dropped")

    with pytest.raises(ConnectionResetError):
        place_pyspy(node, Dropped(), local)  # type: ignore[arg-type]
    assert sftp.files == {}
    (rm,) = [a for a in node.calls if a[0] == "rm"]
    assert re.fullmatch(r".*/py-spy\.\d+\.[0-9a-f]{8}\.part", rm[2])

    class Gone(Cluster):
        def run(self, argv, **kw) -> CommandResult:  # noqa: ANN001, ANN003
            if argv[0] == "rm":
                raise ConnectionResetError("no connection for rm either")
            return super().run(argv, **kw)

    with pytest.raises(ConnectionResetError, match="connection dropped"):
        place_pyspy(Gone(sftp), Dropped(), local)  # type: ignore[arg-type]


def test_the_copy_is_written_pipelined_not_a_round_trip_per_request(
        local: LocalPySpy) -> None:
    """8 MB in 32 KiB write requests, each waiting for its reply, took minutes on a far
    link: the writes go out pipelined, their replies read at the close."""
    sftp = FakeSFTP()
    opened = []
    plain_open = sftp.open

    def open_(path, mode="r", bufsize=-1):  # noqa: ANN001, ANN202
        opened.append(plain_open(path, mode, bufsize))
        return opened[-1]

    sftp.open = open_  # type: ignore[method-assign]
    place_pyspy(Cluster(sftp), sftp, local)  # type: ignore[arg-type]
    assert [f.pipelined for f in opened] == [True]


def test_a_remote_file_passes_pipelining_to_paramikos_file() -> None:
    from unittest import mock

    from bot.cluster.sftp import RemoteFile

    f = mock.Mock()
    RemoteFile(mock.Mock(), mock.Mock(), f, "/p").set_pipelined(True)
    f.set_pipelined.assert_called_once_with(True)


class _ShortSFTP(FakeSFTP):
    """The login node's disk fills during the copy: the server refuses the writes past
    `keep` bytes, and paramiko drops a refused pipelined write's error, so the close raises
    nothing (tests/support/sftp_peer showed it)."""

    def __init__(self, keep: int) -> None:
        super().__init__()
        self.keep = keep

    def open(self, path: str, mode: str = "r", bufsize: int = -1):  # noqa: ANN201
        f = super().open(path, mode, bufsize)
        if "w" in mode:
            whole = f._done  # noqa: SLF001
            f._done = lambda data: whole(data[:self.keep])  # noqa: SLF001
        return f


def test_a_short_copy_is_said_to_be_short_not_damaged(local: LocalPySpy) -> None:
    sftp = _ShortSFTP(keep=5)
    node = Cluster(sftp)
    size = len(local.path.read_bytes())
    with pytest.raises(PySpyUnavailable, match=f"has 5 of its {size} bytes: the cluster did "
                                               "not write the rest") as caught:
        place_pyspy(node, sftp, local)  # type: ignore[arg-type]
    assert "damaged" not in str(caught.value)
    assert not any(a[0] == "mv" for a in node.calls)
    assert sftp.files == {}  # the part removed
