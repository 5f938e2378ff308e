"""The one way trainbot runs anything on a cluster: argv lists over one reused paramiko transport.

Why this shape:
- The remote command string is built only by bot.cluster.command_line.build_command: the argv,
  quoted for /bin/sh, travels base64-encoded inside a string that every login shell passes on
  untouched; environment values (tokens) travel on the channel's stdin, never on a command
  line, so a process list on the login node or an error quoting the command shows names only.
- Where and as whom to connect (the settings, bot.core.ssh_settings; the ssh config file and
  the jump host, bot.cluster.endpoint) is resolved before; connecting is here.
- Host keys are checked against a known_hosts file with a reject policy: an unknown or changed
  key is refused with a message saying what to verify, never trusted automatically.
- One transport per runner (per cluster) is reused for every command and for SFTP; it is opened
  lazily and reopened once, transparently, when it was dropped *before* a command started.
  A command that may already have run is never re-run.
- Every wait is bounded: connecting (connect_timeout, the host name's DNS lookup included:
  bot.cluster.dial), opening a session channel (connect_timeout; a connection that could not
  open one in time is retired: bot.cluster.in_flight), starting a command and its run
  (command_timeout; one that cannot end by then, its signal and its channel's close stuck
  behind a send that cannot leave, retires its connection too), starting an SFTP channel's
  subsystem (sftp_timeout, in flight as a command is: `_session`), each SFTP reply
  (sftp_timeout, on a pool of channels so that one hung path blocks no other read:
  bot.cluster.sftp), and each SFTP send (sftp_timeout: one stuck retires its connection as a
  command does).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import paramiko

from bot.cluster.channels import (
    BoundedOutput,
    NotSent,
    close_channel,
    describe_error,
    open_session_within,
    request_exec,
    within,
)
from bot.cluster.command_line import build_command, env_stdin
from bot.cluster.dial import connect_within
from bot.cluster.endpoint import resolve_endpoint
from bot.cluster.errors import (
    CONNECTION_CLOSED,
    ChannelClosed,
    ClusterError,
    ClusterUnavailable,
    CommandFailed,
    CommandTimedOut,
    HostKeyRejected,
    ReadCutOff,
    brief_command,
    said,
    stuck_connection,
)
from bot.cluster.in_flight import CommandsInFlight
from bot.cluster.sftp import ConnectionStuck, DeadlineSFTPClient, SFTPPool
from bot.core.ssh_settings import Endpoint, SSHSettings, host_key_name, parse_proxy_jump
from bot.core.takeover import RemoteDeadlines
from bot.core.text import N_, Text
from bot.net.dns import NameNotResolved, connection_failed

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class CommandResult:
    """What a finished remote command produced (stdout/stderr decoded as UTF-8, errors replaced)."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class Exchange:
    """A remote command's raw output; `exit_code` None: it did not end in time."""

    stdout: bytes
    stderr: bytes
    exit_code: int | None


class _RejectUnknownHost(paramiko.MissingHostKeyPolicy):
    """Refuse a host whose key is not in known_hosts, saying how to fix it."""

    def __init__(self, known_hosts: str):
        self.known_hosts = known_hosts

    def missing_host_key(self, client: Any, hostname: str, key: paramiko.PKey) -> None:
        host = hostname
        port = "22"
        m = re.match(r"\[(.*)\]:(\d+)\Z", hostname)
        if m:
            host, port = m.group(1), m.group(2)
        values = {"host": hostname, "file": self.known_hosts, "port": port, "name": host,
                  "key": f"{key.get_name()} {key.fingerprint}"}
        raise HostKeyRejected(
            N_("host key for %(host)s is not in %(file)s; verify it and add it with "
               "ssh-keyscan -p %(port)s %(name)s >> %(file)s (offered %(key)s)", **values)
            if os.path.exists(self.known_hosts) else
            N_("host key for %(host)s is not in %(file)s (the file does not exist); verify it "
               "and add it with ssh-keyscan -p %(port)s %(name)s >> %(file)s (offered %(key)s)",
               **values))


class SSHRunner:
    """Runs argv lists on one cluster over a single lazily opened, reused SSH transport.

    Safe to share between the scheduler thread and Slack handler threads: connecting is
    serialized by a lock and paramiko multiplexes channels on one transport.
    """

    def __init__(self, settings: SSHSettings):
        self.settings = settings
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._jump: paramiko.SSHClient | None = None
        self._sftp: SFTPPool | None = None  # kept across reconnects: it asks for channels
        self._endpoint: Endpoint | None = None
        self._dialled: tuple[str, int] | None = None  # the name and port looked up, dialled
        self._in_flight = CommandsInFlight(self._overstayed)  # and the connections retired
        self._closed = False  # set by close(): no connection is kept after it

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> SSHRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_connected(self) -> bool:
        t = self._client.get_transport() if self._client is not None else None
        return t is not None and t.is_active()

    @property
    def transport(self) -> paramiko.Transport:
        """The live transport (connecting if needed); exposed so tests can check reuse."""
        return self._ensure_transport()

    def connect(self) -> None:
        """Connect now instead of on first use (e.g. for `trainbot doctor`)."""
        self._ensure_transport()

    def close(self) -> None:
        """Close the transport, any jump host connection and SFTP; safe to call twice. The
        connections first: their SFTP channels' closes then need no send, which on a
        connection that cannot send would wait until something closed it. The clock of the
        commands in flight (bot.cluster.in_flight) is stopped last, what it was doing ended. The
        runner's own connection before the retired ones: one retired without the lock may
        still be it, and its jump host's connection is closed first (`_close_connection`).

        The runner's lock is waited for as `_locked` allows (RemoteDeadlines.lock_wait_s,
        each holder's bound). A holder past it (a task stuck closing a connection) does not
        keep the close waiting: the same connections are closed without the lock, which ends
        what the holder waits on there, and logged; the runner's are closed, not let go (the
        holder may be using them). A closed runner connects no more (`_ensure_transport`):
        a connection the holder makes after that is closed by the holder as it finds the
        runner closed, and the next command is refused, saying so."""
        self._closed = True  # before the connection is read: a holder's later one sees it
        try:
            wait = self.deadlines().lock_wait_s
        except ClusterError:  # its ssh_config unreadable: no connection was made with it
            wait = RemoteDeadlines(connect_s=self.settings.connect_timeout).lock_wait_s
        had = self._lock.acquire(timeout=wait)
        if not had:
            log.warning("ssh connection to %s closed without the runner's lock (another task "
                        "held it past %g s)", self.settings.host, wait)
        try:
            if had:
                self._drop()
            else:
                _close_connection(self._client, self._jump)
            self._in_flight.close_retired()
            if self._sftp is not None:
                self._sftp.close()
        finally:
            if had:
                self._lock.release()
        self._in_flight.stop_clock()  # the lock released: what it is doing may take it

    def _drop(self) -> None:
        _close_connection(self._client, self._jump)
        self._client = self._jump = None

    def _retire(self, transport: object, why: str, *, wait: bool = True) -> None:
        """`transport`'s sends do not leave (`why`: how that showed): no new command goes to it
        (the next one connects afresh), and it is closed, with its jump host's connection,
        once the commands in flight on it have ended, at the latest just after the last of
        their deadlines (bot.cluster.in_flight). Said as a failed connection, as `_lost` does. A
        transport that is no longer the runner's (retired or dropped by another thread) is
        left as it is. The runner's lock is waited for at most RemoteDeadlines.lock_wait_s,
        which every holder ends within (connecting is bounded), or not at all without `wait`
        (the deadlines thread, bot.net.deadlines, whose waiting would delay every other
        deadline of the process): not had, the runner is left as it is and the transport is
        retired alone, its sends still cut at the latest deadline of its commands."""
        if wait:
            had = self._lock.acquire(timeout=self.deadlines().lock_wait_s)
        else:
            had = self._lock.acquire(blocking=False)
        if not had:
            log.warning("ssh connection to %s %s: retired without the runner's lock (another "
                        "task held it)", self.settings.host, why)
            if isinstance(transport, paramiko.Transport):
                self._in_flight.retire(transport, transport.close)
            return
        try:
            if self._client is None or self._client.get_transport() is not transport:
                return
            client, jump = self._take_connection()
        finally:
            self._lock.release()
        log.warning("ssh connection to %s %s: retired", self.settings.host, why)
        self._in_flight.retire(transport, lambda: _close_connection(client, jump))

    def _overstayed(self, transport: object) -> None:
        """A command on `transport` is still in flight END_GRACE_S after its deadline: its
        signal or its channel's close (or a send before them) did not leave, and with no new
        command on the connection nothing else would retire it. Retired: it is closed now, or
        just after the last deadline of its other commands, which cuts the sends waiting; the
        command ends timed out (`_collect`). Called on the deadlines thread, so the
        runner's lock is not waited for (`_retire`); a transport retired already is left to
        its close, due already."""
        if self._in_flight.retired(transport):
            return
        self._retire(transport, "could not end a command by its deadline", wait=False)

    def _lost(self) -> None:
        """The connection found dead (dropped, not closed here): dropped, and its failure
        said (bot.net.dns.connection_failed), so the reconnect does not take the answer
        of a lookup of the name it dialled begun before (an address since changed)."""
        _close_connection(*self._take_connection())

    def _take_connection(self) -> tuple[paramiko.SSHClient | None, paramiko.SSHClient | None]:
        """The runner's connection (its client and jump host's), no longer the runner's (the
        next command connects afresh), its failure said (`_lost`); the lock held."""
        client, jump = self._client, self._jump
        self._client = self._jump = None
        if self._dialled is not None:
            connection_failed(*self._dialled)
        return client, jump

    # ---- connecting ------------------------------------------------------------------------

    def endpoint(self) -> Endpoint:
        """Settings merged with the ssh config file (if any), defaults applied."""
        if self._endpoint is None:
            self._endpoint = resolve_endpoint(self.settings)
        return self._endpoint

    def deadlines(self) -> RemoteDeadlines:
        """This runner's deadlines as bot.core.takeover counts them (a jump host when the
        endpoint, ssh_config included, names one)."""
        return RemoteDeadlines(connect_s=self.settings.connect_timeout,
                               command_s=self.settings.command_timeout,
                               sftp_s=self.settings.sftp_timeout,
                               jump=bool(self.endpoint().proxy_jump))

    def _ensure_transport(self) -> paramiko.Transport:
        """The live transport, connecting when there is none. Another thread's connection in
        the making is waited for at most the time one connection may take
        (RemoteDeadlines.connect_at_most_s), then ClusterUnavailable (`_locked`). A
        connection retired without the lock (`_retire`) takes no new command: let go, not
        closed (that would cut the commands in flight on it), the in-flight tracker closing it
        and its jump host's connection, jump first, at its due time.

        A closed runner (`close`) connects no more: ClusterUnavailable saying so, and a
        connection made while it was closed (without the lock: its holder was past its bound)
        is closed at once, by this thread, as its connecting ends."""
        with self._locked():
            if self._client is not None:
                t = self._client.get_transport()
                if t is not None and self._in_flight.close_instead(
                        t, functools.partial(_close_connection, self._client, self._jump)):
                    log.info("ssh transport to %s was retired; reconnecting", self.settings.host)
                    self._take_connection()
                elif t is not None and t.is_active():
                    return t
                else:
                    log.info("ssh transport to %s was dropped; reconnecting",
                             self.settings.host)
                    self._lost()
            if self._closed:
                raise self._runner_closed()
            self._client, self._jump = self._open_client()
            if self._closed:  # read after the connection is the runner's, close() before:
                # one of the two closes it, whichever reads the other's write second
                self._drop()
                raise self._runner_closed()
            t = self._client.get_transport()
            assert t is not None
            t.set_keepalive(30)
            return t

    def _runner_closed(self) -> ClusterUnavailable:
        """A connection refused because the runner was closed (`close`): the bot, or the
        command that made the runner, is ending."""
        return ClusterUnavailable(N_(
            "not connecting to %(where)s: the runner was closed (trainbot is stopping)",
            where=self.settings.host))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The runner's lock, held for the block, waited for at most the time one connection
        may take (RemoteDeadlines.lock_wait_s): each holder keeps it no longer, its
        connecting bounded. A holder past that (none should be) leaves the caller a
        ClusterUnavailable saying another task was still connecting or closing a connection
        (the holders: `_ensure_transport`, `close`, `_retire`, `_forget_if_dead`, `sftp`)."""
        wait = self.deadlines().lock_wait_s
        if not self._lock.acquire(timeout=wait):
            raise ClusterUnavailable(N_(
                "another task was still connecting to %(where)s or closing its connection "
                "after %(timeout)s s", where=self.settings.host, timeout=f"{wait:g}"))
        try:
            yield
        finally:
            self._lock.release()

    def _open_client(self) -> tuple[paramiko.SSHClient, paramiko.SSHClient | None]:
        ep = self.endpoint()
        jump: paramiko.SSHClient | None = None
        sock = None
        self._dialled = (ep.host, ep.port)
        if ep.proxy_jump:
            jhost, jport, juser = parse_proxy_jump(ep.proxy_jump, ep.user)
            self._dialled = (jhost, jport)  # the login node is looked up by the jump host
            jump = self._connect_client(jhost, jport, juser, ep, sock=None, via=None)
            jt = jump.get_transport()
            assert jt is not None
            timeout = self.settings.connect_timeout
            try:
                # paramiko's own `timeout` bounds only the wait for the jump host's answer,
                # once the request has left; the send before it waits for a key exchange in
                # progress (up to its clear_to_send_timeout, 30 s) and for room in the TCP
                # window (Packetizer.write_all: without end until the transport closes). So
                # the deadline here bounds it all, closing the jump host's connection; paramiko's
                # is not used (math.inf), so one deadline ends it, said by one message.
                sock = within(timeout, jump.close, lambda: jt.open_channel(
                    "direct-tcpip", (ep.host, ep.port), ("127.0.0.1", 0), timeout=math.inf))
            except TimeoutError as exc:
                jump.close()
                raise ClusterUnavailable(N_(
                    "ssh to %(where)s timed out after %(timeout)s s; is the host up and "
                    "reachable?", where=N_("%(host)s via %(jump)s",
                                           host=f"{ep.user}@{ep.host}:{ep.port}",
                                           jump=ep.proxy_jump),
                    timeout=f"{timeout:g}")) from exc
            except (paramiko.SSHException, OSError, EOFError) as exc:
                jump.close()
                raise ClusterUnavailable(tunnel_failed(f"{jhost}:{jport}",
                                                       f"{ep.host}:{ep.port}", exc)) from exc
        try:
            client = self._connect_client(
                ep.host,
                ep.port,
                ep.user,
                ep,
                sock=sock,
                via=ep.proxy_jump if jump else None,
            )
        except BaseException:
            if jump is not None:
                jump.close()
            raise
        return client, jump

    def _connect_client(
        self, host: str, port: int, user: str, ep: Endpoint, *, sock: Any, via: str | None
    ) -> paramiko.SSHClient:
        """A client connected to `user@host:port` (through `sock`, a channel of the jump host
        `via`, when given); ClusterUnavailable or HostKeyRejected with a sentence naming it."""
        for key in ep.key_files:
            if not os.path.isfile(key):
                raise ClusterUnavailable(N_(
                    "ssh key file %(key)s for %(where)s does not exist or is not a file",
                    key=key, where=f"{user}@{host}:{port}"))
        client = paramiko.SSHClient()
        try:
            # Load into the *non-system* key set without remembering the file name, so nothing
            # is ever written back to it.
            client.get_host_keys().load(ep.known_hosts)
        except FileNotFoundError:
            pass  # every host is then unknown; the policy says which file to fix
        except OSError as exc:
            raise ClusterUnavailable(N_("cannot read known_hosts %(file)s: %(error)s",
                                        file=ep.known_hosts, error=str(exc))) from exc
        client.set_missing_host_key_policy(_RejectUnknownHost(ep.known_hosts))
        timeout = self.settings.connect_timeout
        where: str | Text = f"{user}@{host}:{port}"
        if via:
            where = N_("%(host)s via %(jump)s", host=where, jump=via)
        try:
            connect_within(
                client,
                timeout,
                hostname=host,
                port=port,
                username=user,
                key_filename=list(ep.key_files) or None,  # a list: paramiko's docs allow it
                allow_agent=self.settings.use_agent,
                look_for_keys=False,
                sock=sock,
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                channel_timeout=timeout,
            )
        except HostKeyRejected:
            client.close()
            raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyRejected(N_(
                "host key for %(host)s CHANGED (possible man-in-the-middle attack): the server "
                "offered %(offered)s but %(file)s has %(expected)s. Connection refused. If the "
                "host was really reinstalled, verify the new key out of band and replace its "
                "line in %(file)s.", host=host_key_name(host, port),
                offered=f"{exc.key.get_name()} {exc.key.fingerprint}", file=ep.known_hosts,
                expected=f"{exc.expected_key.get_name()} {exc.expected_key.fingerprint}")
            ) from exc
        except paramiko.AuthenticationException as exc:
            client.close()
            keys = ", ".join(ep.key_files)
            tried = (N_("%(keys)s and the ssh agent", keys=keys) if keys else
                     N_("no key file and the ssh agent")) if self.settings.use_agent else (
                keys or N_("no key file"))
            raise ClusterUnavailable(N_(
                "ssh authentication failed for user %(user)r at %(where)s with %(tried)s: "
                "%(error)s. Check that the public key is in that user's authorized_keys.",
                user=user, where=where, tried=tried, error=str(exc))) from exc
        except NameNotResolved as exc:
            client.close()
            raise ClusterUnavailable(N_(
                "ssh to %(where)s timed out after %(timeout)s s: the name %(host)s was not "
                "resolved in time. Check the DNS servers of the bot's host (/etc/resolv.conf), "
                "or give the host's address instead of its name.",
                where=where, timeout=f"{timeout:g}", host=exc.host)) from exc
        except TimeoutError as exc:
            client.close()
            raise ClusterUnavailable(N_(
                "ssh to %(where)s timed out after %(timeout)s s; is the host up and reachable?",
                where=where, timeout=f"{timeout:g}")) from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            client.close()
            raise ClusterUnavailable(N_("cannot connect to %(where)s: %(error)s", where=where,
                                        error=describe_error(exc))) from exc
        return client

    # ---- commands --------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run argv remotely and wait for it; raise CommandFailed on non-zero exit if `check`.

        Raises CommandTimedOut after `timeout` (default settings.command_timeout) seconds, after
        asking sshd to send SIGTERM to the remote process (RFC 4254 "signal"; a shell's own
        children may outlive it) and closing the channel. Raises ChannelClosed (a
        ClusterUnavailable, whatever `check` says) when the channel closed before the exit
        status came (the connection dropped or was closed, or another thread closed the
        channel): the command may or may not have run, so it is not its failure and is never
        re-run here. `env` values go on stdin, ahead of `stdin` (see `build_command`): errors
        and results carry the argv, never a value.
        """
        args = tuple(str(a) for a in argv)
        command = build_command(args, env)
        header = env_stdin(env)
        if header:
            body = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
            stdin = header + body
        limit = self.settings.command_timeout if timeout is None else timeout
        with self._session(limit) as (chan, deadline):  # the exec request and the run, in all
            try:
                self._start(chan, args, command, limit)
            except TimeoutError as exc:
                raise CommandTimedOut(args, limit) from exc  # it may or may not have started
            out, err, code = self._collect(chan, args, stdin, deadline - time.monotonic())
        if code is None:
            raise CommandTimedOut(args, limit)
        if code == -1:  # paramiko's "no exit status" (a real one is unsigned)
            raise ChannelClosed(args, self.settings.host, connection_lost=False)
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        result = CommandResult(args, code, stdout, stderr)
        if check and code != 0:
            raise CommandFailed(args, code, stderr, stdout)
        return result

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        """Run argv with `stdin` and return its raw output, also when it does not end within
        `timeout` seconds: then `exit_code` is None, the output is what came until then, and
        the remote process was asked to stop (for reads whose partial answer is worth
        keeping: bot.cluster.tail). Raises ReadCutOff (a ClusterUnavailable saying nothing
        changed) when the channel closed before the exit status came: what came then is not
        known to be whole, and the read is safe to ask again."""
        args = tuple(str(a) for a in argv)
        with self._session(timeout) as (chan, deadline):  # the exec request and the run
            try:
                try:
                    self._start(chan, args, build_command(args), timeout)
                except TimeoutError:
                    return Exchange(b"", b"", None)
                out, err, code = self._collect(chan, args, stdin, deadline - time.monotonic())
            except ChannelClosed as exc:
                raise exc.as_read() from exc
        if code == -1:  # paramiko's "no exit status" (a real one is unsigned)
            raise ReadCutOff(args, self.settings.host, connection_lost=False)
        return Exchange(out, err, code)

    def _start(self, chan: paramiko.Channel, args: tuple[str, ...], command: str,
               limit: float) -> None:
        """Send "exec"; TimeoutError when sshd does not answer within `limit` seconds.

        Where it fails decides what the caller may conclude. Before the request left (the
        channel or its connection already gone, or the send itself failing, so sshd got no
        whole request): ClusterUnavailable, the command did not run. After it left (the
        connection lost or the channel closed while waiting for sshd's answer, or sshd
        refusing it, which paramiko reports as a closed channel): ChannelClosed, it may or may
        not have run. Never retried here."""
        try:
            # paramiko waits for sshd's answer to "exec" without a timeout.
            within(limit, lambda: close_channel(chan), lambda: request_exec(chan, command))
        except TimeoutError:
            raise
        except NotSent as exc:
            self._forget_if_dead()
            raise ClusterUnavailable(N_(
                "could not start `%(command)s` on %(where)s: %(why)s; its request never "
                "reached sshd, so it did not run", command=brief_command(args),
                where=self.settings.host, why=said(exc))) from (exc.__cause__ or exc)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ChannelClosed(args, self.settings.host, connection_lost=self._lost_under(chan),
                                starting=True) from exc

    @contextmanager
    def _session(self, limit: float, *, keep: bool = False
                 ) -> Iterator[tuple[paramiko.Channel, float]]:
        """A fresh session channel (`_open_session`) and its deadline, `limit` seconds after
        its opening: what the block sends on it (a command's request and run, the SFTP
        subsystem's request) is in flight on its connection until the block ends
        (bot.cluster.in_flight: a send that cannot leave by the deadline retires the
        connection, whose close cuts it: `_overstayed`). The channel is closed as the block
        ends, its close in flight too; with `keep`, only when the block raises (the caller
        keeps it)."""
        chan = self._open_session()
        deadline = time.monotonic() + limit
        kept = False
        with self._in_flight.command(chan.get_transport(), deadline):
            try:
                yield chan, deadline
                kept = keep
            finally:
                if not kept:
                    close_channel(chan)

    def _open_session(self) -> paramiko.Channel:
        """A fresh session channel; reconnects once if the transport turns out to be dead.
        One not opened within connect_timeout (the request could not leave, or no answer
        came) retires the transport (`_retire`) and raises ClusterUnavailable saying so.

        Opening a channel executes nothing, so retrying here can never run a command twice.
        """
        timeout = self.settings.connect_timeout
        for attempt in (1, 2):
            t = self._ensure_transport()
            try:
                return open_session_within(t, timeout)
            except TimeoutError as exc:
                self._retire(t, "opened no session in time")
                raise ClusterUnavailable(stuck_connection(
                    N_("cannot open an ssh session on %(where)s: the connection did not open "
                       "one within %(timeout)s s", where=self.settings.host,
                       timeout=f"{timeout:g}"),
                    N_("That connection takes no new commands: the next command opens a new "
                       "one, and the commands running on it end by their own deadlines."),
                    self.settings.host)) from exc
            except (paramiko.SSHException, OSError, EOFError) as exc:
                alive = t.is_active()  # a dead one is dropped by the next _ensure_transport
                if attempt == 2 or alive:  # a live transport refusing a session: do not retry
                    raise ClusterUnavailable(N_(
                        "cannot open an ssh session on %(where)s: %(error)s",
                        where=self.settings.host, error=describe_error(exc))) from exc
                log.info("ssh session open failed (%s); reconnecting once", exc)
        raise AssertionError("unreachable")

    def _forget_if_dead(self) -> None:
        """Forget the runner's connection when it is dead (`_lost`), the runner's lock waited
        for at most as long as `_locked` allows. Not had by then, the connection is left to
        the next command's `_ensure_transport`, which finds it dead itself: the caller's own
        error (a command that did not run, a channel closed under one that may have) is
        what the person reads, never replaced by the wait's."""
        try:
            with self._locked():
                if self._client is not None and not self.is_connected:
                    self._lost()
        except ClusterUnavailable as exc:
            log.warning("ssh connection to %s not checked: %s", self.settings.host, exc)

    def _lost_under(self, chan: paramiko.Channel) -> bool:
        """Whether `chan`'s own connection is gone: checked on the channel's transport, not
        the runner's, which another thread may have reconnected. When it is, the runner's
        connection is forgotten if it is dead too (`_forget_if_dead`)."""
        transport = chan.get_transport()
        if transport is not None and transport.is_active():
            return False
        self._forget_if_dead()
        return True

    def _collect(
        self,
        chan: paramiko.Channel,
        args: tuple[str, ...],
        stdin: bytes | str | None,
        limit: float,
    ) -> tuple[bytes, bytes, int | None]:
        """Send stdin, read stdout and stderr until the exit status, together at most
        settings.max_output_bytes (bot.cluster.channels.BoundedOutput: past it
        OutputTooLarge, the remote process sent SIGTERM and the channel closed); exit code
        None when `limit` seconds passed first (the remote process is then sent SIGTERM),
        also when, past `limit`, a send was cut by the connection's close (a command that
        could not end by its deadline retires its connection: `_overstayed`), -1 when the
        channel closed first (paramiko's `recv_exit_status()` then). ChannelClosed
        (`connection_lost`) when the channel's own connection is gone by then: checked on the
        channel's transport, not the runner's, which another thread may have reconnected."""
        deadline = time.monotonic() + limit
        output = BoundedOutput(chan, args, self.settings.max_output_bytes)
        try:
            ended = output.read_until_exit(stdin, deadline)
        except TimeoutError:  # stdin write blocked past the deadline
            return output.stdout, output.stderr, None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            # a send cut by the connection's close (one retired: bot.cluster.in_flight)
            if not self._lost_under(chan):
                raise
            if time.monotonic() >= deadline:  # it had not ended by its deadline: timed out
                return output.stdout, output.stderr, None
            raise ChannelClosed(args, self.settings.host, connection_lost=True) from exc
        if not ended:
            return output.stdout, output.stderr, None
        exit_code = chan.recv_exit_status()
        if exit_code == -1 and self._lost_under(chan):
            raise ChannelClosed(args, self.settings.host, connection_lost=True)
        return output.stdout, output.stderr, exit_code

    # ---- sftp ------------------------------------------------------------------------------

    def sftp(self) -> SFTPPool:
        """The cluster's SFTP: one object for the runner's life, on channels of the current
        transport; every reply waits at most settings.sftp_timeout (see bot.cluster.sftp). The
        runner's lock is waited for as `_locked` allows, then ClusterUnavailable."""
        with self._locked():
            if self._sftp is None:
                self._sftp = SFTPPool(
                    self._open_sftp_client,
                    where=self.settings.host,
                    timeout=self.settings.sftp_timeout,
                    max_channels=self.settings.sftp_channels,
                )
            return self._sftp

    def _open_sftp_client(self, timeout: float) -> DeadlineSFTPClient:
        """A new SFTP channel on the live transport, ready within `timeout` or refused: the
        subsystem's request in flight as a command's (`_session`: one that cannot leave
        retires the connection), then the SFTP version exchange, each of whose sends and
        reply DeadlineSFTPClient bounds itself."""
        try:
            with self._session(timeout, keep=True) as (chan, _deadline):
                try:
                    # paramiko waits for sshd's answer to "subsystem" without a timeout
                    within(timeout, lambda: close_channel(chan),
                           lambda: chan.invoke_subsystem("sftp"))
                except TimeoutError as exc:  # a request that could not leave: cut with its
                    # connection (`_session`)
                    raise self._sftp_not_started(timeout, cut=self._lost_under(chan)) from exc
            try:
                return DeadlineSFTPClient(chan, timeout, in_flight=self._in_flight)
            except BaseException:
                # the channel's close is a send: in flight, as `_session`'s (one that cannot
                # leave retires the connection, whose close cuts it)
                with self._in_flight.command(chan.get_transport(), time.monotonic() + timeout):
                    close_channel(chan)
                raise
        except (TimeoutError, ConnectionStuck) as exc:  # the version exchange's
            raise self._sftp_not_started(
                timeout, cut=isinstance(exc, ConnectionStuck)) from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._forget_if_dead()
            raise ClusterUnavailable(N_("cannot open SFTP on %(where)s: %(error)s",
                                        where=self.settings.host,
                                        error=describe_error(exc))) from exc

    def _sftp_not_started(self, timeout: float, *, cut: bool) -> ClusterUnavailable:
        """An SFTP channel not ready within `timeout`; `cut`: a send of it could not leave,
        and its connection was closed (said with what to check)."""
        late = N_("the SFTP server on %(where)s did not start within %(timeout)s s",
                  where=self.settings.host, timeout=f"{timeout:g}")
        if not cut:
            return ClusterUnavailable(late)
        return ClusterUnavailable(stuck_connection(late, CONNECTION_CLOSED, self.settings.host))


def tunnel_failed(jump: str, host: str, exc: BaseException) -> Text:
    """The sentence for jump host `jump` (host:port) failing to open the tunnel to `host`
    (host:port) with `exc`: a refusal (paramiko's ChannelException) says its RFC 4254 reason
    and the fix that fits it; anything else says the error."""
    code = exc.code if isinstance(exc, paramiko.ChannelException) else None
    if code == 1:  # OpenSSH: AllowTcpForwarding no/remote, PermitOpen, a Match block
        return N_("jump host %(jump)s could not open a tunnel to %(host)s: administratively "
                  "prohibited (its sshd does not allow this forwarding). Allow it in the jump "
                  "host's sshd_config: AllowTcpForwarding yes and a PermitOpen that lets "
                  "%(host)s through, in any Match block that applies to this user too.",
                  jump=jump, host=host)
    if code == 2:  # the jump host's own TCP connect to the login node failed
        return N_("jump host %(jump)s could not open a tunnel to %(host)s: connect failed (the "
                  "jump host could not reach it). Check the login node's address and port as "
                  "seen from the jump host: the name is looked up there, not here.",
                  jump=jump, host=host)
    if code == 3:
        return N_("jump host %(jump)s could not open a tunnel to %(host)s: unknown channel "
                  "type (its SSH server offers no TCP forwarding, direct-tcpip). Use a jump "
                  "host whose sshd allows TCP forwarding.", jump=jump, host=host)
    if code == 4:
        return N_("jump host %(jump)s could not open a tunnel to %(host)s: resource shortage "
                  "(it is out of sessions or resources). Retry later, or raise MaxSessions in "
                  "the jump host's sshd_config.", jump=jump, host=host)
    return N_("jump host %(jump)s could not open a tunnel to %(host)s: %(error)s (is "
              "AllowTcpForwarding enabled there?)", jump=jump, host=host,
              error=describe_error(exc))


def _close_connection(client: paramiko.SSHClient | None,
                      jump: paramiko.SSHClient | None) -> None:
    """Close a connection: its jump host's client (if any) first, then its login node's,
    whatever closing a dead connection raises. In that order because the login node's
    transport runs over a channel of the jump host's: closing it first closes that channel,
    whose close sends on the jump host's connection, and waits without end when that
    connection cannot send; closed first, the jump host's connection takes its channels
    with it, and the login node's close sends nothing there."""
    for each in (jump, client):
        if each is not None:
            try:
                each.close()
            except Exception:  # noqa: BLE001 - closing a dead connection may raise anything
                log.debug("ignored error while closing %r", each, exc_info=True)


__all__ = ["CommandResult", "Exchange", "SSHRunner"]
