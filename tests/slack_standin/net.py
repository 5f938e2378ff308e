"""The Slack stand-in's network parts: a local server in a thread of its own (`_LocalServer`),
its loopback TLS certificate, a trickling response writer (`_Trickle`) and the HTTP proxy
in front of it (`ConnectProxy`, a CONNECT tunnel for HTTPS)."""

from __future__ import annotations

import datetime
import ipaddress
import select
import socket
import socketserver
import ssl
import tempfile
import threading
import time
from typing import Any, Self
from urllib.parse import urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class _LocalServer:
    """A server on 127.0.0.1 serving in a thread of its own: `with X() as x:` or
    `start()`/`stop()`."""

    _server: socketserver.TCPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _serve(self, server: socketserver.TCPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                                        daemon=True, name=name)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()




def _loopback_certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM), valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _server_ssl(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain reads files only
        cert, key = f"{tmp}/cert.pem", f"{tmp}/key.pem"
        with open(cert, "wb") as f:
            f.write(cert_pem)
        with open(key, "wb") as f:
            f.write(key_pem)
        context.load_cert_chain(cert, key)
    return context


class _Trickle:
    """A response's writer sending one byte every `every_s` seconds (trickle_next)."""

    def __init__(self, raw: Any, every_s: float) -> None:
        self.raw = raw
        self.every_s = every_s

    def write(self, data: bytes) -> int:
        for i in range(len(data)):
            self.raw.write(data[i:i + 1])
            self.raw.flush()
            time.sleep(self.every_s)
        return len(data)

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        self.raw.close()

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)




class ConnectProxy(_LocalServer):
    """A local HTTP proxy, as an institution's network puts in front of Slack: an https URL's
    request goes through a CONNECT tunnel (`CONNECT host:port`, answered 200, then the bytes
    relayed both ways as they come, a trickle too), an http URL's is forwarded (its absolute
    URL's request sent on to its host). `routed` lists the `host:port` of each request it
    carried, in order.

        with SlackStandIn(tls=True) as slack, ConnectProxy() as proxy:
            client = WebClient(token=slack.token, base_url=slack.api_url, proxy=proxy.url)
    """

    def __init__(self) -> None:
        self.routed: list[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        assert self._server is not None, "ConnectProxy not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ConnectProxy:
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._serve(server, "connect-proxy")
        return self

    def carried(self, hostport: str) -> None:
        with self._lock:
            self.routed.append(hostport)


class _ProxyHandler(socketserver.StreamRequestHandler):
    owner: ConnectProxy
    rbufsize = 0  # the request's head only: the bytes after it are relayed as they are

    def handle(self) -> None:
        parts = self.rfile.readline(65537).decode("latin-1").split()
        if len(parts) != 3:
            return
        verb, target, version = parts
        head = b""
        while (line := self.rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
            head += line
        if verb == "CONNECT":
            hostport = target
        else:
            url = urlparse(target)
            hostport = url.netloc
            path = url.path + (f"?{url.query}" if url.query else "")
            head = f"{verb} {path} {version}\r\n".encode("latin-1") + head + b"\r\n"
        host, _, port = hostport.rpartition(":")
        self.owner.carried(hostport)
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with upstream:
            if verb == "CONNECT":
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(head)
            _relay(self.connection, upstream)


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Relay bytes between `a` and `b` until either ends its side (or fails)."""
    other = {a: b, b: a}
    while True:
        ready, _, _ = select.select([a, b], [], [], 1.0)
        for sock in ready:
            try:
                data = sock.recv(65536)
                if not data:
                    return
                other[sock].sendall(data)
            except OSError:
                return
