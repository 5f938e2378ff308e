"""A connection's DNS lookup counts against its connect_timeout (bot.cluster.dial.connect_within):
a resolver that hangs on the login node's name, or on the jump host's, fails the connection
with an error naming that host's name as not resolved within the deadline, and the name (not the
address it resolved to) is what known_hosts is checked against.

The resolver is injected: socket.getaddrinfo, which paramiko and trainbot both call, stalls on
the names below (or answers them with loopback) and asks the real one for any other name.
"""

from __future__ import annotations

import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
from fakes import present
from support.sftp_peer import Peer, serve_peer

from bot.cluster.errors import ClusterUnavailable, HostKeyRejected
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings
from bot.core.text import render_text
from bot.net import dns
from bot.slack.render import translator

LOGIN = "login.cluster.example"
BASTION = "bastion.cluster.example"
STALL_S = 5.0  # how long the hung resolver holds a lookup (the old code waited all of it)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """socket.getaddrinfo with `names`: a name mapped to "stall" hangs (up to STALL_S, until
    the test ends, then fails as a dead DNS server does), one mapped to "unknown" is not
    known, one mapped to an address answers it, one mapped to ("late", address) hangs as a
    stalled one does, then answers that address; one mapped to ("held", address) hangs until
    its own event, appended to `held` (one per lookup, in the order they began), is set, then
    answers that address (None: fails as a dead DNS server does); `asked` lists the lookups of
    those names, `most` the most of them under way at once."""
    real = socket.getaddrinfo
    release = threading.Event()
    table: dict[str, Any] = {"names": {}, "asked": [], "held": [], "most": 0}
    counting = threading.Lock()
    under_way = [0]

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        answer = table["names"].get(host)
        if answer is None:
            return real(host, port, *args, **kwargs)
        with counting:
            table["asked"].append(host)
            under_way[0] += 1
            table["most"] = max(table["most"], under_way[0])
        try:
            return answering(host, port, answer, *args, **kwargs)
        finally:
            with counting:
                under_way[0] -= 1

    def answering(host: Any, port: Any, answer: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(answer, tuple) and answer[0] == "held":  # its own end, the test's call
            held = threading.Event()
            table["held"].append(held)
            held.wait(STALL_S)
            if answer[1] is None:
                raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
            answer = answer[1]
        if answer == "stall":
            release.wait(STALL_S)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if answer == "unknown":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if isinstance(answer, tuple):  # ("late", address): a slow DNS server's answer
            release.wait(STALL_S)
            answer = answer[1]
        return real(answer, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    table["release"] = release
    try:
        yield table
    finally:
        release.set()
        for held in table["held"]:
            held.set()
        _lookups_end()


def _lookups_end() -> None:
    """Wait for the lookups still under way to end (a stalled one ends once released), so the
    next test's connection never joins one of this test's."""
    ends = time.monotonic() + 5.0
    while dns._lookups and time.monotonic() < ends:
        time.sleep(0.01)
    assert not dns._lookups


def _fails_within(runner: SSHRunner) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(ClusterUnavailable) as err:
        runner.run(["true"])
    return str(err.value), time.monotonic() - started


def test_a_hung_lookup_of_the_login_node_ends_at_connect_timeout(
        resolver: dict[str, Any]) -> None:
    resolver["names"][LOGIN] = "stall"
    runner = SSHRunner(SSHSettings(host=LOGIN, user="u", known_hosts="/nonexistent",
                                   connect_timeout=0.5))
    message, took = _fails_within(runner)
    assert message == _not_resolved(f"u@{LOGIN}:22", LOGIN, "0.5")
    # Each of the two session attempts' connections: 0.5 s each at most. Before, the first
    # waited for the resolver (STALL_S here; a dead DNS server's timeouts and retries).
    assert took < runner.deadlines().connect_at_most_s + 1.0 < STALL_S
    assert resolver["asked"] == [LOGIN]


def test_a_hung_lookup_of_the_jump_host_ends_at_connect_timeout_naming_it(
        resolver: dict[str, Any]) -> None:
    resolver["names"][BASTION] = "stall"
    runner = SSHRunner(SSHSettings(host=LOGIN, user="u", known_hosts="/nonexistent",
                                   proxy_jump=f"jumper@{BASTION}:2222", connect_timeout=0.5))
    message, took = _fails_within(runner)
    assert message == _not_resolved(f"jumper@{BASTION}:2222", BASTION, "0.5")
    assert took < runner.deadlines().connect_at_most_s + 1.0 < STALL_S
    assert resolver["asked"] == [BASTION]  # the jump host looks the login node up


def test_a_name_that_does_not_resolve_still_says_so(resolver: dict[str, Any]) -> None:
    resolver["names"][LOGIN] = "unknown"
    runner = SSHRunner(SSHSettings(host=LOGIN, user="u", known_hosts="/nonexistent",
                                   connect_timeout=5))
    message, took = _fails_within(runner)
    assert message == f"cannot connect to u@{LOGIN}:22: [Errno -2] Name or service not known"
    assert took < 2.0


def _resolvers(host: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"resolve {host}" and t.is_alive()]


def test_a_hung_lookup_is_waited_for_not_started_again_by_each_connection(
        resolver: dict[str, Any]) -> None:
    """Commands to a login node whose name the resolver holds: each connection gives up at
    its deadline; the one after the first failure starts a lookup of its own (the resolver
    may have recovered since the first began), and the ones after it wait for one of the two
    to end (LOOKUPS_PER_NAME), two daemon threads in all. Before 6bab6f6, each connection started a
    lookup of its own, a thread left running per connection."""
    resolver["names"][LOGIN] = "stall"
    runner = SSHRunner(SSHSettings(host=LOGIN, user="u", known_hosts="/nonexistent",
                                   connect_timeout=0.2))
    for _ in range(3):
        message, _took = _fails_within(runner)
        assert message == _not_resolved(f"u@{LOGIN}:22", LOGIN, "0.2")
    threads = _resolvers(LOGIN)
    assert len(threads) == dns.LOOKUPS_PER_NAME == 2
    assert all(t.daemon for t in threads)
    assert resolver["asked"] == [LOGIN, LOGIN]


def test_callers_of_one_lookup_each_get_its_answer_and_the_next_looks_again(
        resolver: dict[str, Any]) -> None:
    resolver["names"][LOGIN] = "stall"
    with pytest.raises(TimeoutError, match=f"{LOGIN} was not resolved in time"):
        dns.resolve_within(LOGIN, 22, time.monotonic() + 0.1)
    answers: list[Any] = []
    waiters = [threading.Thread(target=lambda: answers.append(_resolve_or_error(LOGIN, 5.0)))
               for _ in range(3)]
    for w in waiters:
        w.start()
    time.sleep(0.2)
    # the three began after the first gave up (a failure): they share a lookup of their own
    assert len(_resolvers(LOGIN)) == 2 and answers == []
    assert resolver["asked"] == [LOGIN, LOGIN]
    resolver["names"][LOGIN] = "127.0.0.1"  # the next lookup answers
    resolver["release"].set()  # the hung one fails, as a dead DNS server's does
    for w in waiters:
        w.join(5.0)
    assert [str(a) for a in answers] == ["[Errno -3] Temporary failure in name resolution"] * 3
    assert len({id(a) for a in answers}) == 3  # each raised its own copy
    _lookups_end()
    infos = dns.resolve_within(LOGIN, 22, time.monotonic() + 5.0)  # looked up afresh
    assert {i[4][0] for i in infos} == {"127.0.0.1"}
    assert resolver["asked"] == [LOGIN, LOGIN, LOGIN]


def _resolve_or_error(host: str, within_s: float) -> Any:
    try:
        return dns.resolve_within(host, 22, time.monotonic() + within_s)
    except Exception as exc:  # noqa: BLE001 - the answer the test looks at
        return exc


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5) as p:
        yield p


def _not_resolved(where: str, host: str, timeout: str) -> str:
    """What a person reads when a connection to `where` gave up on the lookup of `host`'s
    name (the login node's, or the jump host's on the way)."""
    return (f"ssh to {where} timed out after {timeout} s: the name {host} was not resolved in "
            "time. Check the DNS servers of the bot's host (/etc/resolv.conf), or give the "
            "host's address instead of its name.")


def _known_hosts(peer: Peer, tmp_path: Path, name: str) -> str:
    """A known_hosts file holding the peer's key under `name` (the peer's own file has it
    under 127.0.0.1)."""
    line = Path(present(peer.settings.known_hosts)).read_text().split(" ", 1)[1]
    path = tmp_path / f"known_hosts-{name}"
    path.write_text(f"[{name}]:{peer.port} {line}")
    return str(path)


def test_the_host_key_is_checked_against_the_name_not_its_address(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    resolver["names"][LOGIN] = "127.0.0.1"
    # known_hosts records the peer's key under its address only: the name is unknown there.
    with peer.runner(host=LOGIN) as runner, pytest.raises(HostKeyRejected) as err:
        runner.connect()
    assert str(err.value).startswith(
        f"host key for [{LOGIN}]:{peer.port} is not in {peer.settings.known_hosts}; verify it "
        f"and add it with ssh-keyscan -p {peer.port} {LOGIN} >> ")
    # Recorded under the name, the same key lets it in.
    with peer.runner(host=LOGIN, known_hosts=_known_hosts(peer, tmp_path, LOGIN)) as runner:
        runner.connect()
        assert runner.is_connected
    assert resolver["asked"] == [LOGIN, LOGIN]


def test_a_changed_key_under_the_name_is_refused(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    resolver["names"][LOGIN] = "127.0.0.1"
    key = paramiko.ECDSAKey.generate()
    changed = tmp_path / "known_hosts-changed"
    changed.write_text(f"[{LOGIN}]:{peer.port} {key.get_name()} {key.get_base64()}\n")
    with peer.runner(host=LOGIN, known_hosts=str(changed)) as runner, \
            pytest.raises(HostKeyRejected, match=rf"host key for \[{LOGIN}\]:{peer.port} CHANGED"):
        runner.connect()


def test_a_reconnect_after_a_hung_lookup_does_not_wait_for_it_once_the_resolver_answers(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """The resolver hangs on the login node's name, then recovers while that first lookup
    still hangs: the connection after the failure looks the name up afresh and connects.
    Before, it waited for the hung lookup and timed out again (and so every connection until
    the resolver's own timeouts ended it)."""
    resolver["names"][LOGIN] = "stall"
    with peer.runner(host=LOGIN, known_hosts=_known_hosts(peer, tmp_path, LOGIN),
                     connect_timeout=0.5) as runner:
        with pytest.raises(ClusterUnavailable) as err:
            runner.connect()
        assert str(err.value) == _not_resolved(f"tester@{LOGIN}:{peer.port}", LOGIN, "0.5")
        ko = render_text(err.value.text, translator("ko").gettext)
        assert LOGIN in ko and "/etc/resolv.conf" in ko and "0.5초" in ko
        resolver["names"][LOGIN] = "127.0.0.1"  # answered again; the first lookup still hangs
        started = time.monotonic()
        runner.connect()
        assert runner.is_connected
        assert time.monotonic() - started < 0.5
    assert resolver["asked"] == [LOGIN, LOGIN]
    assert len(_resolvers(LOGIN)) == 1  # the hung one, left to end by itself


def test_a_dropped_connection_does_not_take_the_answer_of_a_lookup_begun_before_it(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """The login node moved: a lookup of its name (another task's) began before the
    connection to it dropped and will answer its old address (127.0.0.2, where nothing
    listens), slowly; the name now resolves to the new one. The reconnect looks the name up
    itself and connects to the new address at once. Before, it joined that older lookup and
    waited for it until its connect_timeout. The other task, which had joined the older
    lookup before the drop, looks again too and gets the new address at once. Before, it
    waited for the older lookup and took the old address."""
    resolver["names"][LOGIN] = "127.0.0.1"
    with peer.runner(host=LOGIN, known_hosts=_known_hosts(peer, tmp_path, LOGIN),
                     connect_timeout=2) as runner:
        runner.connect()
        resolver["names"][LOGIN] = ("late", "127.0.0.2")
        other: list[Any] = []
        looking = threading.Thread(
            target=lambda: other.append(dns.resolve_within(LOGIN, peer.port,
                                                            time.monotonic() + 10)))
        looking.start()
        ends = time.monotonic() + 5.0
        while len(resolver["asked"]) < 2 and time.monotonic() < ends:
            time.sleep(0.01)
        assert resolver["asked"] == [LOGIN, LOGIN]  # the older lookup is under way
        resolver["names"][LOGIN] = "127.0.0.1"  # and the name resolves to the new address now
        runner.transport.close()  # the connection drops
        started = time.monotonic()
        runner.connect()
        assert runner.is_connected
        assert time.monotonic() - started < 1.0
        looking.join(1.0)
        assert [_addresses(a) for a in other] == [{"127.0.0.1"}]  # the older one still hangs
        assert len(_resolvers(LOGIN)) == 1
        resolver["release"].set()
    assert resolver["most"] == dns.LOOKUPS_PER_NAME == 2


def _until(done: Callable[[], bool]) -> None:
    """Wait for `done()` to hold (a lookup begun, a connection waiting), 5 s at most."""
    ends = time.monotonic() + 5.0
    while not done() and time.monotonic() < ends:
        time.sleep(0.005)
    assert done()


def _waiting_to_resolve(thread: threading.Thread) -> bool:
    """Whether `thread` is blocked in resolve_within, waiting for a lookup or for a slot to
    start one."""
    names: list[tuple[str, str]] = []
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        names.append((frame.f_code.co_name, frame.f_code.co_filename))
        frame = frame.f_back
    return ("wait", threading.__file__) in names and any(
        name == "resolve_within" for name, _file in names)


def _in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """`call()` on a thread of its own, started; its answer (or error) in the list once it
    has ended."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except Exception as exc:  # noqa: BLE001 - the answer the test looks at
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _addresses(answer: Any) -> set[str]:
    assert isinstance(answer, list), answer
    return {i[4][0] for i in answer}


def test_three_connections_across_failures_never_take_the_answer_of_a_stale_lookup(
        resolver: dict[str, Any]) -> None:
    """Three connections to the login node while a slow DNS server answers its old address
    (127.0.0.2): the first looks it up; a connection to it fails, and the first, its lookup
    gone stale, looks it up afresh, the second joining that lookup; another fails; the name
    now resolves to the new address. None of the three waits for the old answers of the two
    stale lookups, and the third starts no third lookup (two are under way:
    LOOKUPS_PER_NAME): they wait for a slot, and once the newer stale lookup ends (its old
    address taken by no one) they look the name up again and get the new address. Before,
    the first and the second waited for the lookups they had joined and took the old
    address."""
    resolver["names"][LOGIN] = ("held", "127.0.0.2")
    first, first_out = _in_thread(lambda: dns.resolve_within(LOGIN, 22, time.monotonic() + 10))
    _until(lambda: len(resolver["held"]) == 1)
    dns.connection_failed(LOGIN, 22)  # e.g. a runner found its connection dropped
    _until(lambda: len(resolver["held"]) == 2)  # the first looks again
    second, second_out = _in_thread(
        lambda: dns.resolve_within(LOGIN, 22, time.monotonic() + 10))
    _until(lambda: _waiting_to_resolve(second))
    dns.connection_failed(LOGIN, 22)
    resolver["names"][LOGIN] = "127.0.0.1"  # the name resolves to the new address now
    third, third_out = _in_thread(lambda: dns.resolve_within(LOGIN, 22, time.monotonic() + 10))
    _until(lambda: all(_waiting_to_resolve(t) for t in (first, second, third)))
    assert resolver["asked"] == [LOGIN, LOGIN]  # no third lookup while two are under way
    resolver["held"][1].set()  # the newer one answers the old address, to no one
    for t in (first, second, third):
        t.join(5.0)
    assert [_addresses(a) for a in first_out + second_out + third_out] == [{"127.0.0.1"}] * 3
    assert len(_resolvers(LOGIN)) == 1  # the older one still hangs; its slot was not needed
    assert resolver["most"] == dns.LOOKUPS_PER_NAME == 2


def test_a_connection_whose_lookup_another_gave_up_looks_again_and_connects_at_once(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """Two connections to the login node share a lookup the resolver holds: a hasty one
    (connect_timeout 0.2 s) and a patient one (5 s); the resolver recovers meanwhile. The
    hasty one gives up at its deadline (a failure of a connection to the name), and the
    patient one, its lookup gone stale, looks the name up again and connects at once, the
    hung lookup still held. Before, it kept waiting on the hung lookup (here until the test
    lets it fail, as a dead DNS server's does; otherwise until its own connect_timeout)."""
    resolver["names"][LOGIN] = ("held", None)
    known_hosts = _known_hosts(peer, tmp_path, LOGIN)
    with peer.runner(host=LOGIN, known_hosts=known_hosts, connect_timeout=5) as patient, \
            peer.runner(host=LOGIN, known_hosts=known_hosts, connect_timeout=0.2) as hasty:
        connecting, out = _in_thread(patient.connect)
        _until(lambda: len(resolver["held"]) == 1 and _waiting_to_resolve(connecting))
        resolver["names"][LOGIN] = "127.0.0.1"  # answered again; the first lookup still hangs
        with pytest.raises(ClusterUnavailable) as err:
            hasty.connect()  # joins the hung lookup, and gives up on it at 0.2 s
        assert str(err.value) == _not_resolved(f"tester@{LOGIN}:{peer.port}", LOGIN, "0.2")
        connecting.join(2.0)
        assert out == [None]
        assert patient.is_connected
        assert len(_resolvers(LOGIN)) == 1  # the hung one, left to end by itself
    assert resolver["asked"] == [LOGIN, LOGIN]


def test_a_connection_whose_lookup_went_stale_waits_for_a_slot_until_its_own_deadline(
        resolver: dict[str, Any]) -> None:
    """A connection's lookup goes stale (a connection to the name failed) while the resolver
    holds it; it looks again, and that lookup goes stale too: both slots are taken by stale
    lookups that still hang. It waits for one to end until its own deadline, not longer,
    then fails naming the host and its hung lookups, with no third lookup."""
    resolver["names"][LOGIN] = ("held", None)
    started = time.monotonic()
    waiting, out = _in_thread(lambda: dns.resolve_within(LOGIN, 22, started + 0.5))
    _until(lambda: len(resolver["held"]) == 1)
    dns.connection_failed(LOGIN, 22)
    _until(lambda: len(resolver["held"]) == 2)  # it looks again
    dns.connection_failed(LOGIN, 22)
    waiting.join(2.0)
    took = time.monotonic() - started
    [error] = out
    assert isinstance(error, TimeoutError)
    assert re.fullmatch(
        rf"{LOGIN} was not resolved in time: its 2 lookups under way, begun [0-9.]+ s and "
        r"[0-9.]+ s ago before its last failed connection, still hang", str(error))
    assert 0.5 <= took < 1.0
    assert resolver["asked"] == [LOGIN, LOGIN]


def test_a_third_connection_after_two_hung_lookups_connects_once_one_of_them_ends(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """The resolver hangs on the login node's name: two connections time out, the second
    having looked the name up afresh, and both lookups still hang when the resolver
    recovers. The third connection waits for a slot (not for the newer hung lookup), and
    connects once the older one ends, as a dead DNS server's do, within its own
    connect_timeout. Before, it waited for the newer one and timed out."""
    resolver["names"][LOGIN] = ("held", None)
    known_hosts = _known_hosts(peer, tmp_path, LOGIN)
    with peer.runner(host=LOGIN, known_hosts=known_hosts, connect_timeout=0.2) as hasty:
        for _ in range(2):
            with pytest.raises(ClusterUnavailable) as err:
                hasty.connect()
            assert str(err.value) == _not_resolved(f"tester@{LOGIN}:{peer.port}", LOGIN, "0.2")
    _until(lambda: len(resolver["held"]) == 2)
    resolver["names"][LOGIN] = "127.0.0.1"  # answered again; the two lookups still hang
    with peer.runner(host=LOGIN, known_hosts=known_hosts, connect_timeout=5) as runner:
        connecting, out = _in_thread(runner.connect)
        _until(lambda: _waiting_to_resolve(connecting))
        assert resolver["asked"] == [LOGIN, LOGIN]
        resolver["held"][0].set()  # the older hung lookup ends, in failure
        connecting.join(5.0)
        assert out == [None]
        assert runner.is_connected
    assert resolver["asked"] == [LOGIN] * 3
    assert len(_resolvers(LOGIN)) == 1  # the newer hung one, left to end by itself


def test_a_connection_waiting_for_a_slot_gives_up_at_its_connect_timeout(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """Both lookups of the login node's name under way began before its last failure and
    still hang: a connection waits for one to end until its own connect_timeout, then fails
    with the name-not-resolved error, its cause naming the host and the hung lookups, and
    without a third lookup. Before, it joined the newer hung lookup."""
    resolver["names"][LOGIN] = ("held", None)
    known_hosts = _known_hosts(peer, tmp_path, LOGIN)
    with peer.runner(host=LOGIN, known_hosts=known_hosts, connect_timeout=0.2) as runner:
        for _ in range(2):
            with pytest.raises(ClusterUnavailable):
                runner.connect()
        _until(lambda: len(resolver["held"]) == 2)
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            runner.connect()
        took = time.monotonic() - started
    assert str(err.value) == _not_resolved(f"tester@{LOGIN}:{peer.port}", LOGIN, "0.2")
    assert 0.2 <= took < 1.0
    assert re.fullmatch(
        rf"{LOGIN} was not resolved in time: its 2 lookups under way, begun [0-9.]+ s and "
        r"[0-9.]+ s ago before its last failed connection, still hang",
        str(err.value.__cause__))
    assert resolver["asked"] == [LOGIN, LOGIN]
    assert len(_resolvers(LOGIN)) == dns.LOOKUPS_PER_NAME == 2


def test_a_reconnect_after_a_drop_waits_out_two_older_lookups_and_gets_the_new_address(
        resolver: dict[str, Any], peer: Peer, tmp_path: Path) -> None:
    """The login node moved. Two lookups of its name by other tasks, one begun before a
    connection to it failed and one after, are under way; a slow DNS server answers them
    its old address (127.0.0.2, where nothing listens), and the name now resolves to the new
    one. The runner's connection drops; its reconnect waits for one of those lookups to
    end, looks the name up itself and connects to the new address. Before, it joined the
    newer of them, took the old address and could not connect. The two other tasks, their
    lookups gone stale with the drop, get the new address as well (before, the old one)."""
    resolver["names"][LOGIN] = "127.0.0.1"
    with peer.runner(host=LOGIN, known_hosts=_known_hosts(peer, tmp_path, LOGIN),
                     connect_timeout=5) as runner:
        runner.connect()
        resolver["names"][LOGIN] = ("held", "127.0.0.2")
        older, older_out = _in_thread(
            lambda: dns.resolve_within(LOGIN, peer.port, time.monotonic() + 10))
        _until(lambda: len(resolver["held"]) == 1)
        with pytest.raises(TimeoutError):  # another task gives up on it: a failure
            dns.resolve_within(LOGIN, peer.port, time.monotonic())
        newer, newer_out = _in_thread(
            lambda: dns.resolve_within(LOGIN, peer.port, time.monotonic() + 10))
        _until(lambda: len(resolver["held"]) == 2)
        resolver["names"][LOGIN] = "127.0.0.1"
        runner.transport.close()  # the connection drops
        reconnecting, out = _in_thread(runner.connect)
        _until(lambda: _waiting_to_resolve(reconnecting))
        assert resolver["asked"] == [LOGIN] * 3  # the two stale lookups take both slots
        resolver["held"][1].set()  # the newer lookup answers the old address, to no one
        for t in (older, newer, reconnecting):
            t.join(5.0)
        assert out == [None]
        assert runner.is_connected
    assert [_addresses(a) for a in older_out + newer_out] == [{"127.0.0.1"}] * 2
    assert resolver["most"] == dns.LOOKUPS_PER_NAME == 2
