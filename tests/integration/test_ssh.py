"""SSHRunner against the dev cluster's real sshd (127.0.0.1:2222)."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import paramiko
import pytest
from support.procs import exited
from support.sshd import bastion_sshd, keygen

from bot.cluster.errors import (
    ChannelClosed,
    ClusterUnavailable,
    CommandFailed,
    CommandTimedOut,
    HostKeyRejected,
)
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings
from bot.services.ports import Runner

pytestmark = pytest.mark.integration


@pytest.fixture
def settings(dev_cluster) -> SSHSettings:
    return dev_cluster.ssh_settings()


@pytest.fixture
def runner(settings: SSHSettings):
    with SSHRunner(settings) as r:
        yield r


def test_many_commands_and_sftp_share_one_lazily_opened_transport(runner: SSHRunner) -> None:
    assert isinstance(runner, Runner)
    assert not runner.is_connected  # lazy: nothing until first use
    first = runner.run(["whoami"])
    assert first.stdout.strip() == runner.endpoint().user and first.exit_code == 0
    transport = runner.transport
    for i in range(10):
        assert runner.run(["echo", str(i)]).stdout == f"{i}\n"
    assert runner.transport is transport
    sftp = runner.sftp()
    assert (sftp.stat(".profile").st_size or 0) > 0
    assert [channel.get_transport() for channel in sftp.channels] == [transport]
    assert runner.sftp() is sftp
    runner.close()
    runner.close()  # idempotent
    assert not runner.is_connected


def test_concurrent_commands_from_several_threads(runner: SSHRunner) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = runner.run(["sh", "-c", "sleep 0.2; echo $0", str(i)]).stdout
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {i: f"{i}\n" for i in range(6)}


def test_shared_sftp_client_is_safe_across_threads(runner: SSHRunner) -> None:
    # paramiko's own SFTPClient loses replies when threads share it; ours must not (and a
    # lost reply fails the test with SFTPTimedOut instead of hanging it).
    sftp = runner.sftp()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                assert (sftp.stat(".profile").st_size or 0) > 0
                with sftp.open(".profile", "rb") as f:
                    f.seek(5)
                    assert len(f.read(20)) == 20
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # Threads borrowed channels of their own, never more than the pool's cap.
    assert 1 <= len(sftp.channels) <= runner.settings.sftp_channels


def test_stdin_bytes_and_str_reach_the_command(runner: SSHRunner) -> None:
    assert runner.run(["cat"], stdin="héllo\nwörld\n").stdout == "héllo\nwörld\n"
    blob = os.urandom(3 * 1024 * 1024)  # larger than the SSH window: no deadlock
    out = runner.run(["wc", "-c"], stdin=blob).stdout
    assert out.strip() == str(len(blob))
    assert runner.run(["cat"]).stdout == ""  # no stdin: EOF at once, does not hang


def test_env_values_pass_literally(runner: SSHRunner) -> None:
    env = {"TRAINBOT_A": "x y $(id) `id` 'q' \"dq\"", "TRAINBOT_B": "line1\nline2"}
    out = runner.run(["sh", "-c", 'printf "%s|%s" "$TRAINBOT_A" "$TRAINBOT_B"'], env=env)
    assert out.stdout == f"{env['TRAINBOT_A']}|{env['TRAINBOT_B']}"
    with pytest.raises(ValueError, match="not a valid shell name"):
        runner.run(["true"], env={"A B": "1"})


def test_hostile_arguments_arrive_literally_and_never_execute(runner: SSHRunner) -> None:
    canary = f"/tmp/pwned-{uuid.uuid4().hex}"
    hostile = [
        f"a'; touch {canary} #",
        f'a"; touch {canary} #',
        f"$(touch {canary})",
        f"`touch {canary}`",
        f"x\ntouch {canary}\n",
        f"; touch {canary}",
        f"| touch {canary}",
        f"&& touch {canary}",
        "ünïcödé 学習 🚀",
        "*",
        "~",
        "-n",
        "",
        "back\\slash",
    ]
    for arg in hostile:
        assert runner.run(["printf", "%s", arg]).stdout == arg
    # All at once, as separate argv entries, and as environment values.
    out = runner.run(["sh", "-c", 'printf "%s\\0" "$@"', "sh", *hostile])
    assert out.stdout.split("\0")[:-1] == hostile
    runner.run(["printenv", "X"], env={"X": hostile[0]})
    assert runner.run(["test", "-e", canary], check=False).exit_code == 1
    assert not os.path.exists(canary)


def test_timeout_raises_and_runner_stays_usable(runner: SSHRunner) -> None:
    transport = runner.transport
    start = time.monotonic()
    with pytest.raises(CommandTimedOut) as info:
        runner.run(["sleep", "30"], timeout=1)
    assert time.monotonic() - start < 10
    assert info.value.argv == ["sleep", "30"]
    assert "did not finish within 1 s" in str(info.value)
    assert runner.run(["echo", "still here"]).stdout == "still here\n"
    assert runner.transport is transport


def test_timeout_terminates_the_remote_process(runner: SSHRunner) -> None:
    pidfile = f"/tmp/trainbot-timeout-{uuid.uuid4().hex}"
    try:
        with pytest.raises(CommandTimedOut):
            runner.run(["sh", "-c", 'echo $$ > "$0"; exec sleep 300', pidfile], timeout=1)
        pid = int(Path(pidfile).read_text())
        _wait_gone(pid)  # the dev cluster runs on this machine: its processes are visible
    finally:
        Path(pidfile).unlink(missing_ok=True)


def test_nonzero_exit_raises_with_exit_code_and_stderr_tail(runner: SSHRunner) -> None:
    script = "for i in $(seq 1 30); do echo err$i >&2; done; echo out; exit 3"
    with pytest.raises(CommandFailed) as info:
        runner.run(["sh", "-c", script])
    exc = info.value
    assert exc.exit_code == 3
    assert exc.argv == ["sh", "-c", script]
    assert exc.stdout == "out\n"
    assert "exited 3" in str(exc) and "err30" in str(exc) and "err1\n" not in str(exc)
    result = runner.run(["sh", "-c", script], check=False)
    assert result.exit_code == 3 and result.stderr.startswith("err1\n")


def test_unknown_host_key_is_refused(settings: SSHSettings, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with SSHRunner(dataclasses.replace(settings, known_hosts=str(empty))) as r:
        with pytest.raises(HostKeyRejected) as info:
            r.run(["true"])
        assert not r.is_connected
    msg = str(info.value)
    assert f"host key for [{settings.host}]:{settings.port} is not in {empty}" in msg
    assert "ssh-keyscan" in msg


def test_missing_known_hosts_file_is_refused(settings: SSHSettings, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "known_hosts"
    with SSHRunner(dataclasses.replace(settings, known_hosts=str(missing))) as r:
        with pytest.raises(HostKeyRejected, match="does not exist"):
            r.run(["true"])
    assert not missing.exists()  # never written


def test_changed_host_key_is_refused(settings: SSHSettings, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_host_key")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[{settings.host}]:{settings.port} ssh-ed25519 {other}\n")
    before = kh.read_text()
    with SSHRunner(dataclasses.replace(settings, known_hosts=str(kh))) as r:
        with pytest.raises(HostKeyRejected) as info:
            r.run(["true"])
    assert "CHANGED" in str(info.value) and "man-in-the-middle" in str(info.value)
    assert kh.read_text() == before  # never auto-added or replaced


def test_wrong_key_is_an_auth_failure_naming_user_and_key(
    settings: SSHSettings, tmp_path: Path
) -> None:
    key = tmp_path / "id_wrong"
    keygen(key)
    with SSHRunner(dataclasses.replace(settings, key_file=str(key))) as r:
        with pytest.raises(ClusterUnavailable) as info:
            r.run(["true"])
    assert "authentication failed" in str(info.value)
    assert repr(settings.user) in str(info.value) and str(key) in str(info.value)


def test_missing_key_file_is_named(settings: SSHSettings, tmp_path: Path) -> None:
    key = tmp_path / "no_such_key"
    with SSHRunner(dataclasses.replace(settings, key_file=str(key))) as r:
        with pytest.raises(ClusterUnavailable, match=f"ssh key file {key} .* does not exist"):
            r.run(["true"])


def test_connection_refused_is_cluster_unavailable(settings: SSHSettings) -> None:
    s = dataclasses.replace(settings, port=1, connect_timeout=5)
    with SSHRunner(s) as r, pytest.raises(ClusterUnavailable, match="cannot connect"):
        r.run(["true"])


def test_reconnects_once_after_the_transport_is_closed(runner: SSHRunner) -> None:
    old = runner.transport
    old.close()
    assert runner.run(["echo", "back"]).stdout == "back\n"
    assert runner.transport is not old and runner.is_connected


def test_reconnects_after_the_server_kills_the_session(runner: SSHRunner) -> None:
    # $PPID of the remote shell is this connection's sshd process; kill it from outside.
    pid = int(runner.run(["sh", "-c", "echo $PPID"]).stdout)
    old = runner.transport
    os.kill(pid, signal.SIGTERM)
    _wait_gone(pid)
    assert runner.run(["echo", "again"]).stdout == "again\n"
    assert runner.transport is not old
    assert (runner.sftp().stat(".profile").st_size or 0) > 0
    assert [channel.get_transport() for channel in runner.sftp().channels] == [runner.transport]


def test_a_command_that_may_have_run_is_never_rerun(runner: SSHRunner, tmp_path: Path) -> None:
    marker = f"/tmp/trainbot-once-{uuid.uuid4().hex}"
    try:
        with pytest.raises(ClusterUnavailable, match="may have run"):
            # Appends a line, then kills its own connection mid-command.
            runner.run(["sh", "-c", 'echo ran >> "$0"; kill $PPID; sleep 5', marker])
        time.sleep(0.5)
        assert Path(marker).read_text() == "ran\n"
        assert runner.run(["echo", "ok"]).stdout == "ok\n"  # and the next one reconnects
    finally:
        Path(marker).unlink(missing_ok=True)


def test_a_command_whose_channel_another_thread_closes_is_channel_closed_not_its_failure(
        runner: SSHRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A running command whose channel another thread closes (the connection lives on) gets
    no exit status from sshd: ChannelClosed, a ClusterUnavailable saying it may or may not
    have run, never CommandFailed(-1); it ran once, is not run again, and the runner goes on."""
    marker = f"/tmp/trainbot-closed-{uuid.uuid4().hex}"
    open_session = runner._open_session  # noqa: SLF001
    channels: list[paramiko.Channel] = []

    def opened() -> paramiko.Channel:
        channels.append(open_session())
        return channels[-1]

    def close_once_it_ran() -> None:
        deadline = time.monotonic() + 10
        while not Path(marker).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        channels[0].close()

    monkeypatch.setattr(runner, "_open_session", opened)
    closer = threading.Thread(target=close_once_it_ran)
    closer.start()
    try:
        with pytest.raises(ChannelClosed, match="it may or may not have run") as info:
            runner.run(["sh", "-c", 'echo ran >> "$0"; sleep 30', marker], timeout=20)
        closer.join()
        assert not isinstance(info.value, CommandFailed) and not info.value.connection_lost
        assert isinstance(info.value, ClusterUnavailable)
        assert Path(marker).read_text() == "ran\n"
        assert runner.run(["echo", "ok"]).stdout == "ok\n"
    finally:
        Path(marker).unlink(missing_ok=True)


def test_a_command_running_when_the_runner_closes_is_a_lost_connection(
        runner: SSHRunner) -> None:
    """The bot shutting down closes the runner under a running command: ChannelClosed with
    `connection_lost`, never CommandFailed(-1)."""
    runner.run(["true"])
    closing = threading.Timer(1.0, runner.close)
    closing.start()
    with pytest.raises(ChannelClosed, match="lost while `sleep 30` was running") as info:
        runner.run(["sleep", "30"], timeout=20)
    closing.join()
    assert info.value.connection_lost


def test_ssh_config_alias_resolves_host_port_user_and_key(
    settings: SSHSettings, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host devbox\n"
        f"  HostName {settings.host}\n  Port {settings.port}\n  User {settings.user}\n"
        f"  IdentityFile {settings.key_file}\n"
    )
    s = SSHSettings(host="devbox", ssh_config=str(cfg), known_hosts=settings.known_hosts)
    with SSHRunner(s) as r:
        assert r.run(["whoami"]).stdout.strip() == settings.user


def test_proxy_jump_failure_says_the_tunnel_could_not_open(settings: SSHSettings) -> None:
    # The dev sshd has AllowTcpForwarding no, so the jump connects but the tunnel is refused.
    jump = f"{settings.user}@{settings.host}:{settings.port}"
    with SSHRunner(dataclasses.replace(settings, proxy_jump=jump)) as r:
        with pytest.raises(ClusterUnavailable, match="could not open a tunnel to .*: "
                           "administratively prohibited .*AllowTcpForwarding yes"):
            r.run(["true"])


@pytest.fixture
def jump_sshd(dev_cluster, tmp_path: Path):
    """A bastion (tests/support/sshd.py), started by this test."""
    with bastion_sshd(dev_cluster, tmp_path) as bastion:
        yield bastion


def test_proxy_jump_reaches_the_cluster_through_a_bastion(
    settings: SSHSettings, jump_sshd: tuple[int, str, Path]
) -> None:
    port, known, log = jump_sshd
    jump = f"{settings.user}@127.0.0.1:{port}"
    s = dataclasses.replace(settings, proxy_jump=jump, known_hosts=known)
    with SSHRunner(s) as r:
        assert r.run(["echo", "via bastion"]).stdout == "via bastion\n"
        assert (r.sftp().stat(".profile").st_size or 0) > 0
        # The cluster transport runs inside a direct-tcpip channel of the bastion connection.
        assert isinstance(r.transport.sock, paramiko.Channel)
        assert r.transport.sock.get_transport().getpeername()[1] == port
    assert f"Accepted publickey for {settings.user}" in log.read_text()


def test_a_cluster_refusing_through_a_bastion_names_the_bastion(
    settings: SSHSettings, jump_sshd: tuple[int, str, Path]
) -> None:
    port, known, _log = jump_sshd
    jump = f"{settings.user}@127.0.0.1:{port}"
    s = dataclasses.replace(settings, user="nobody", proxy_jump=jump, known_hosts=known)
    with SSHRunner(s) as r, pytest.raises(ClusterUnavailable) as err:
        r.run(["true"])
    assert f"at nobody@{settings.host}:{settings.port} via {jump} with " in str(err.value)


def test_proxy_jump_host_key_is_checked_too(
    settings: SSHSettings, jump_sshd: tuple[int, str, Path]
) -> None:
    port, _known, _log = jump_sshd
    s = dataclasses.replace(settings, proxy_jump=f"{settings.user}@127.0.0.1:{port}")
    with SSHRunner(s) as r, pytest.raises(HostKeyRejected, match=f"\\[127.0.0.1\\]:{port}"):
        r.run(["true"])


def _wait_gone(pid: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exited(pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"sshd session process {pid} did not exit")
