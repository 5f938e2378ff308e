"""The test relay (tests/support/latency_relay.py): bytes delayed each way, in order, and the
round trips it carried counted as turns."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

from support.latency_relay import LatencyRelay


class _Echo(socketserver.BaseRequestHandler):
    """Answers each piece it receives, upper-cased."""

    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data.upper())


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True


def test_each_exchange_waits_a_round_trip_and_counts_as_one_turn() -> None:
    with _Server(("127.0.0.1", 0), _Echo) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            host, port = server.server_address[:2]
            assert isinstance(host, str)  # an AF_INET server's address
            with LatencyRelay((host, port), delay_s=0.05) as relay, \
                    socket.create_connection(("127.0.0.1", relay.port), timeout=10) as sock:
                for word in (b"one", b"two", b"three" * 50):
                    start = time.monotonic()
                    sock.sendall(word)
                    got = b""
                    while len(got) < len(word):
                        got += sock.recv(65536)
                    assert got == word.upper()
                    assert time.monotonic() - start >= 0.1  # there and back, 50 ms each
                assert relay.counts() == (3, 6 + 250, 6 + 250)
        finally:
            server.shutdown()
