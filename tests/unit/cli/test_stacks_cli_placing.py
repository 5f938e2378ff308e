"""`trainbot stacks` says it is placing trainbot's py-spy (about 8 MB) only when a copy is
placed: when the copy on the cluster is already there, only its checksum is checked, and
the collection does not wait for any copy."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from fakes import FakeSFTP, make_config

import bot.cli.stacks as stacks_cli
import bot.cluster.pyspy as pyspy
import bot.cluster.sessions as sessions_module
from bot.cluster.pyspy import LocalPySpy, remote_path
from bot.cluster.ssh import CommandResult
from bot.core.stacks import MARKER

HOME = "/home/slurmci"
PLACING = "placing trainbot's py-spy"


class LoginNode:
    """sha256sum hashes the fake SFTP's files, mv moves them, srun (the collection) finds
    the job's node with no process."""

    def __init__(self, sftp: FakeSFTP) -> None:
        self.sftp = sftp
        self.calls: list[str] = []

    def run(self, argv, **kw) -> CommandResult:  # noqa: ANN001, ANN003
        argv = list(argv)
        self.calls.append(argv[0])
        if argv[0] == "sha256sum":
            data = self.sftp.files.get(argv[1])
            if data is None:
                return CommandResult(tuple(argv), 1, "", "No such file or directory")
            return CommandResult(tuple(argv), 0,
                                 f"{hashlib.sha256(bytes(data)).hexdigest()}  {argv[1]}\n", "")
        if argv[0] == "mv":
            self.sftp.files[argv[3]] = self.sftp.files.pop(argv[2])
            return CommandResult(tuple(argv), 0, "", "")
        if argv[0] in ("mkdir", "find", "chmod", "rm"):
            return CommandResult(tuple(argv), 0, "", "")
        line = json.dumps({"host": "gpu1", "procs": []})
        return CommandResult(tuple(argv), 0, MARKER + line + "\n", "")


class Sessions:
    def __init__(self, node: LoginNode, sftp: FakeSFTP) -> None:
        self.node, self._sftp = node, sftp

    def __enter__(self) -> Sessions:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def runner(self, cluster: str) -> LoginNode:
        return self.node

    def sftp(self, cluster: str) -> FakeSFTP:
        return self._sftp

    def slurm(self, cluster: str) -> SimpleNamespace:
        return SimpleNamespace(job=lambda j: SimpleNamespace(is_running=True, state="RUNNING"))


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalPySpy:
    binary = tmp_path / "py-spy"
    binary.write_bytes(b"\x7fELF static py-spy")
    found = LocalPySpy(binary, "0.4.3", hashlib.sha256(binary.read_bytes()).hexdigest())
    monkeypatch.setattr(pyspy, "local_pyspy", lambda: found)
    return found


def _stacks(monkeypatch: pytest.MonkeyPatch, sftp: FakeSFTP) -> LoginNode:
    node = LoginNode(sftp)
    monkeypatch.setattr(stacks_cli, "load_config_arg", lambda args: make_config())
    monkeypatch.setattr(sessions_module, "ClusterSessions", lambda config: Sessions(node, sftp))
    stacks_cli.run(argparse.Namespace(job="42", cluster="dev", summary=True, json=True,
                                      config=None))
    return node


def test_a_copy_already_there_is_checked_without_saying_it_is_placed(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    sftp.files[remote_path(HOME, local.version)] = bytearray(local.path.read_bytes())
    node = _stacks(monkeypatch, sftp)
    assert node.calls[0] == "sha256sum" and "mv" not in node.calls  # checked, not copied
    assert PLACING not in capsys.readouterr().err


def test_an_absent_copy_is_said_to_be_placed_once(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        local: LocalPySpy) -> None:
    sftp = FakeSFTP()
    node = _stacks(monkeypatch, sftp)
    assert "mv" in node.calls
    assert capsys.readouterr().err.count(PLACING) == 1


class BlindNodes(LoginNode):
    """The nodes do not see the login node's home (not shared, noexec): srun finds no py-spy."""

    def run(self, argv, **kw) -> CommandResult:  # noqa: ANN001, ANN003
        if list(argv)[0] in ("sha256sum", "mv", "mkdir", "find", "chmod", "rm"):
            return super().run(argv, **kw)
        self.calls.append(list(argv)[0])
        line = json.dumps({"host": "gpu1", "procs": [], "error": "pyspy_absent",
                           "detail": "py-spy: not an executable file on gpu1"})
        return CommandResult(tuple(argv), 0, MARKER + line + "\n", "")


@pytest.mark.parametrize("already_there", [True, False])
def test_nodes_that_do_not_see_the_copy_are_explained_by_the_one_shot_command(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        local: LocalPySpy, already_there: bool) -> None:
    """Its one collection checks (or copies) the copy on the login node: a miss on the nodes
    is theirs, said as the watcher says it (`pyspy_unseen`), asking for a `py_spy` path the
    nodes can run, never to let trainbot copy its own again."""
    sftp = FakeSFTP()
    if already_there:
        sftp.files[remote_path(HOME, local.version)] = bytearray(local.path.read_bytes())
    node = BlindNodes(sftp)
    monkeypatch.setattr(stacks_cli, "load_config_arg", lambda args: make_config())
    monkeypatch.setattr(sessions_module, "ClusterSessions", lambda config: Sessions(node, sftp))
    code = stacks_cli.run(argparse.Namespace(job="42", cluster="dev", summary=True,
                                             json=False, config=None))
    out = capsys.readouterr().out
    assert code != 0
    assert "set the cluster's `py_spy` path to a py-spy the nodes can see and run" in out
    assert "is on the login node, but the nodes do not find it" in out
    assert "let trainbot copy" not in out
    # the placement's own check (and its copy's) explains the miss: nothing checked again
    assert node.calls.count("sha256sum") == (1 if already_there else 2)
    assert node.calls.count("mv") == (0 if already_there else 1)
