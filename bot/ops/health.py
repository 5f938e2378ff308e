"""The HTTP endpoints of `trainbot run --metrics-port`: /healthz (alive), /readyz (ready to
watch) and /metrics (Prometheus text), on a threaded WSGI server in a daemon thread."""

from __future__ import annotations

import logging
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

log = logging.getLogger(__name__)

# (ok, text): a probe's answer; the text says what is wrong (or "ok").
Probe = Callable[[], tuple[bool, str]]


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper never holds the process at exit


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        log.debug("%s " + format, self.address_string(), *args)


class HealthServer:
    """Serves `alive` at /healthz, `ready` at /readyz (200 or 503, the text in the body) and
    `registry` at /metrics on host:port (port 0: any free port, see `port`)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry, *,
                 alive: Probe, ready: Probe) -> None:
        metrics = make_wsgi_app(registry)
        probes = {"/healthz": alive, "/readyz": ready}

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            if path == "/metrics":
                return metrics(environ, start_response)
            probe = probes.get(path)
            if probe is None:
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"not found: /healthz, /readyz, /metrics\n"]
            try:
                ok, text = probe()
            except Exception as exc:  # noqa: BLE001 - a failing probe is an unhealthy answer
                ok, text = False, f"probe failed: {exc}"
            start_response("200 OK" if ok else "503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8")])
            return [(text + "\n").encode()]

        self._server = make_server(host, port, app, server_class=_Server,
                                   handler_class=_QuietHandler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2},
                                        name="trainbot health server", daemon=True)

    def start(self) -> None:
        self._thread.start()
        log.info("serving /healthz, /readyz and /metrics on port %d", self.port)

    def stop(self) -> None:
        """Stop serving and close the socket (returns within the poll interval)."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
