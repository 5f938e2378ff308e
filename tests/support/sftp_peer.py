"""A login node in this process, for tests of what the bot asks over SSH and SFTP.

A real SSH server (paramiko's server side, on loopback) whose SFTP subsystem serves a
temporary directory, one thread per channel and one request at a time like OpenSSH's
sftp-server. It blocks, without answering, on any path containing "hung" until the test lets
it go (a hung NFS/Lustre mount as the bot sees it), and counts the SFTP requests it answers by
kind (`Peer.requests`). The client is trainbot's own SSHRunner, unchanged.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko
from paramiko.sftp import CMD_NAMES

from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings


@dataclass
class Peer:
    """The fake login node: its files, its port, and the switch that unblocks hung paths."""

    root: Path
    port: int
    settings: SSHSettings
    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    exec_requests: int = 0
    exec_runs: bool = False  # True: every command starts and runs, silent, until closed
    exec_drops: bool = False  # True: an exec request, once received, drops the connection
    # True: every command starts and writes stdout without end until its channel closes
    # (a flood: a site's wrapper gone wild); `flooded` counts what it sent, `flood_ended` is
    # set once its channel closed
    exec_floods: bool = False
    flooded: int = 0
    flood_ended: threading.Event = field(default_factory=threading.Event)
    tunnel_hangs: bool = False  # True: a tunnel's request (direct-tcpip) is never answered
    session_hangs: bool = False  # True: a session's opening is never answered (sshd is hung:
    # the connection reads nothing more, its commands running get no answer either)
    # how a tunnel's request is refused: its RFC 4254 open-failure code (1: administratively
    # prohibited, as an sshd with AllowTcpForwarding no; 2: connect failed, as one that cannot
    # reach the login node)
    tunnel_refusal: int = paramiko.common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
    sftp_start_hangs: bool = False  # True: an SFTP channel's version request is never
    # answered (sftp-server started but stuck, as on a hung home directory)
    sessions: int = 0  # channels opened to it (each SFTP channel is one session)
    received: int = 0  # bytes read from the client, over all its connections
    # once `received` reaches it, a connection reads nothing more until the test ends (the
    # host hung with a command running): the client's sends fill the buffers, then wait for
    # room in a TCP window that stays zero
    stall_after: int | None = None
    read_at_most: int | None = None  # answer a read with at most this many bytes (SFTP allows)
    # the SFTP requests answered, by paramiko's name of their kind: open, read, close,
    # opendir, readdir, stat, realpath, ...
    requests: Counter[str] = field(default_factory=Counter)
    # its SFTP servers' threads (paramiko's SubsystemHandler), joined as the peer stops
    sftp_threads: list[threading.Thread] = field(default_factory=list)

    def runner(self, **changes: Any) -> SSHRunner:
        import dataclasses

        return SSHRunner(dataclasses.replace(self.settings, **changes))


class _Handle(paramiko.SFTPHandle):
    def __init__(self, peer: Peer, path: str, f, *, writing: bool = False) -> None:  # noqa: ANN001
        super().__init__()
        self.peer, self.path, self.readfile = peer, path, f
        if writing:  # an upload (SFTPClient.put): written as sent
            self.writefile = f

    def read(self, offset: int, length: int) -> bytes | int:
        _maybe_hang(self.peer, self.path, "read")
        return super().read(offset, min(length, self.peer.read_at_most or length))

    def stat(self) -> paramiko.SFTPAttributes:
        return paramiko.SFTPAttributes.from_stat(os.fstat(self.readfile.fileno()))


class _Files(paramiko.SFTPServerInterface):
    """Serves peer.root; hung paths (see _maybe_hang) answer only once peer.release is set."""

    def __init__(self, server: paramiko.ServerInterface, peer: Peer) -> None:
        super().__init__(server)
        self.peer = peer

    def _real(self, path: str) -> str:
        return str(self.peer.root / path.lstrip("/"))

    def stat(self, path: str) -> paramiko.SFTPAttributes | int:
        _maybe_hang(self.peer, path, "stat")
        try:
            return paramiko.SFTPAttributes.from_stat(os.stat(self._real(path)))
        except OSError as exc:
            return paramiko.SFTPServer.convert_errno(exc.errno or 0)  # None, 0: SFTP_FAILURE

    lstat = stat

    def open(self, path: str, flags: int, attr: paramiko.SFTPAttributes) -> _Handle | int:
        _maybe_hang(self.peer, path, "open")
        writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
        try:  # closed by paramiko's handle
            f = open(self._real(path), "wb" if writing else "rb")  # noqa: SIM115
        except OSError as exc:
            return paramiko.SFTPServer.convert_errno(exc.errno or 0)  # None, 0: SFTP_FAILURE
        return _Handle(self.peer, path, f, writing=writing)

    def list_folder(self, path: str) -> list[paramiko.SFTPAttributes] | int:
        _maybe_hang(self.peer, path, "listdir")
        try:
            real = self._real(path)
            # lstat, as OpenSSH's sftp-server lists: a symlink is listed as one
            return [paramiko.SFTPAttributes.from_stat(os.lstat(os.path.join(real, name)), name)
                    for name in os.listdir(real)]
        except OSError as exc:
            return paramiko.SFTPServer.convert_errno(exc.errno or 0)  # None, 0: SFTP_FAILURE

    def canonicalize(self, path: str) -> str:
        return "/" + path.lstrip("/") if path not in (".", "") else "/"


def _maybe_hang(peer: Peer, path: str, op: str) -> None:
    """Block (answer nothing) until released: reads of a "hung-read" file, any other request
    on a path containing "hung"."""
    hangs = "hung-read" in path if op == "read" else "hung" in path and "hung-read" not in path
    if hangs:
        peer.entered.release()
        peer.release.wait()


class _CountingSFTPServer(paramiko.SFTPServer):
    """paramiko's SFTP server, counting each request it answers in `Peer.requests`."""

    def __init__(self, channel: paramiko.Channel, name: str, server: paramiko.ServerInterface,
                 sftp_si: type[paramiko.SFTPServerInterface], peer: Peer) -> None:
        super().__init__(channel, name, server, sftp_si, peer)
        self.peer = peer
        peer.sftp_threads.append(self)

    def start_subsystem(self, name: str, transport: paramiko.Transport,
                        channel: paramiko.Channel) -> None:
        if self.peer.sftp_start_hangs:
            self.peer.release.wait()
            return
        super().start_subsystem(name, transport, channel)

    def _process(self, t: int, request_number: int, msg: paramiko.Message) -> None:
        self.peer.requests[CMD_NAMES.get(t, str(t))] += 1
        super()._process(t, request_number, msg)  # type: ignore[misc]  # private


class _PeerSocket:
    """The peer's end of a connection, counting what it reads (Peer.received) and reading
    nothing more once Peer.stall_after is reached, until the test ends."""

    def __init__(self, sock: socket.socket, peer: Peer) -> None:
        self.sock, self.peer = sock, peer
        self.capped = False

    def recv(self, n: int) -> bytes:
        stall = self.peer.stall_after
        if stall is not None:
            if not self.capped:  # not autotuned up to 32 MiB: the client's sends soon fill it
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
                self.capped = True
            if self.peer.received >= stall:
                self.peer.release.wait()
            else:
                n = min(n, stall - self.peer.received)
        data = self.sock.recv(n)
        self.peer.received += len(data)
        return data

    def __getattr__(self, name: str) -> Any:  # the rest is the socket's
        return getattr(self.sock, name)


class _Server(paramiko.ServerInterface):
    def __init__(self, peer: Peer, client_key: paramiko.PKey) -> None:
        self.peer, self.client_key = peer, client_key

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = key == self.client_key
        return paramiko.common.AUTH_SUCCESSFUL if ok else paramiko.common.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            if self.peer.session_hangs:
                self.peer.release.wait()
            self.peer.sessions += 1
            return paramiko.common.OPEN_SUCCEEDED
        return paramiko.common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple[str, int],
                                           destination: tuple[str, int]) -> int:
        if self.peer.tunnel_hangs:  # a jump host that never answers: its sshd is stuck (and
            self.peer.release.wait()  # so reads nothing more), or it cannot reach the host
        return self.peer.tunnel_refusal

    def _flood(self, channel: paramiko.Channel) -> None:
        chunk = b"y\n" * 32768
        try:
            while not channel.closed and not self.peer.release.is_set():
                self.peer.flooded += channel.send(chunk)
        except (OSError, EOFError, paramiko.SSHException):
            pass  # the channel or its connection closed
        self.peer.flood_ended.set()

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.peer.exec_requests += 1
        if self.peer.exec_drops:  # the login node goes away with the request unanswered
            channel.get_transport().sock.shutdown(socket.SHUT_RDWR)
            return False
        if self.peer.exec_runs:
            return True
        if self.peer.exec_floods:
            threading.Thread(target=self._flood, args=(channel,), daemon=True).start()
            return True
        self.peer.release.wait()  # sshd waiting on something (a hung home directory) forever
        return False


@contextmanager
def serve_peer(tmp_path: Path, *, sftp_timeout: float) -> Iterator[Peer]:
    """A peer serving `tmp_path`/files on loopback until the block ends (its client key and
    known_hosts in `tmp_path`); `sftp_timeout` is the runner's reply deadline."""
    root = tmp_path / "files"
    root.mkdir()
    host_key = paramiko.ECDSAKey.generate()
    client_key = paramiko.ECDSAKey.generate()
    key_file = tmp_path / "id_ecdsa"
    client_key.write_private_key_file(str(key_file))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_key.get_name()} {host_key.get_base64()}\n")
    settings = SSHSettings(host="127.0.0.1", port=port, user="tester", key_file=str(key_file),
                           known_hosts=str(known_hosts), connect_timeout=5,
                           sftp_timeout=sftp_timeout, sftp_channels=4)
    p = Peer(root, port, settings)
    transports: list[paramiko.Transport] = []

    def serve() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            # socket-like, as paramiko documents it takes (its stubs say socket)
            t = paramiko.Transport(_PeerSocket(sock, p))  # type: ignore[arg-type]
            t.add_server_key(host_key)
            t.set_subsystem_handler("sftp", _CountingSFTPServer, _Files, p)
            transports.append(t)
            try:
                t.start_server(server=_Server(p, client_key))
            except (paramiko.SSHException, OSError, EOFError):  # a client that went away
                t.close()  # (one refusing this host's key): the next one is served

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield p
    finally:
        p.release.set()
        # Closing alone leaves serve() blocked in accept(), which Linux does not wake, and
        # the listener's fd number free: a later socket given it (another test's server) then
        # had its connections taken by this accept when the call was retried, and answered
        # with an SSH banner. shutdown() ends the accept first.
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        server.join(5)
        listener.close()
        for t in transports:
            t.close()
        # Each thread ended before the next test: one still going logged its end (an SFTP
        # server's EOFError, its traceback built with ast.parse by Python 3.11) while the next
        # test compiled (pytest rewriting hypothesis' regex module as it was imported), and
        # that compile failed "SystemError: AST constructor recursion depth mismatch", a
        # CPython bug of ASTs built in two threads at once, fixed in 3.11.8 (python/cpython#113035,
        # pytest-dev/pytest#10874); the venv runs 3.11.7.
        for thread in [*transports, *p.sftp_threads]:
            if thread.ident is not None:  # started
                thread.join(5)
