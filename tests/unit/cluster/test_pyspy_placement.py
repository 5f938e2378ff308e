"""bot.cluster.pyspy: trainbot's own py-spy (hash-checked against its wheel's RECORD) copied
to the cluster when absent or different, checked there, never installed damaged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fakes import FakeSFTP

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
        return CommandResult(tuple(argv), 0, "", "")

    def changes(self) -> list[list[str]]:
        return [a for a in self.calls if a[0] != "sha256sum"]


def test_an_absent_copy_is_uploaded_checked_and_moved_into_place(local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    node = Cluster(sftp)
    path = place_pyspy(node, sftp, local)  # type: ignore[arg-type]
    assert path == f"{HOME}/.cache/trainbot/py-spy-0.4.3/py-spy"
    assert bytes(sftp.files[path]) == local.path.read_bytes()
    assert f"{path}.part" not in sftp.files
    assert ["chmod", "0755", f"{path}.part"] in node.calls


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
    assert ["rm", "-f", f"{HOME}/.cache/trainbot/py-spy-0.4.3/py-spy.part"] in \
        node.calls


def test_the_installed_binary_is_checked_against_its_wheel(monkeypatch) -> None:  # noqa: ANN001
    found = local_pyspy()
    assert found.path.name == "py-spy" and found.version == "0.4.3"
    assert found.sha256 == hashlib.sha256(found.path.read_bytes()).hexdigest()
    monkeypatch.setattr(pyspy, "file_sha256", lambda path: "0" * 64)
    with pytest.raises(PySpyUnavailable, match="differs from the py-spy 0.4.3 wheel"):
        local_pyspy()
