"""A WAN link on loopback: an asyncio TCP relay that delays every byte by `delay_s` each way
in front of a server (the dev cluster's sshd), and counts the round trips it carried.

netem is not available on these machines; this is what the tests and bench/watcher_wan.py put
between trainbot and the login node. A *turn* is the client speaking again after the server
answered: each request the client had to wait for (an SSH channel open, an exec, a command's
output, an SFTP request) is one turn, so turns count round trips whatever the payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Self

START_TIMEOUT_S = 10.0
CHUNK = 65536


class LatencyRelay:
    """127.0.0.1:`port` (0: a free one, see `.port` after `start`) → `target`, each direction
    delayed by `delay_s` seconds (RTT = 2 × delay). Runs its own event loop in a daemon
    thread; `stop()` (or leaving the `with` block) closes every connection."""

    def __init__(self, target: tuple[str, int], delay_s: float, *, port: int = 0) -> None:
        self.target, self.delay_s, self.port = target, delay_s, port
        self.turns = 0
        self.bytes_up = 0  # client -> server
        self.bytes_down = 0
        self._last = "down"  # so the client's first bytes are a turn
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    # ---- counting ------------------------------------------------------------------------

    def counts(self) -> tuple[int, int, int]:
        """(turns, bytes up, bytes down) so far."""
        with self._lock:
            return self.turns, self.bytes_up, self.bytes_down

    def _saw(self, direction: str, n: int) -> None:
        with self._lock:
            if direction == "up":
                self.bytes_up += n
                if self._last == "down":
                    self.turns += 1
            else:
                self.bytes_down += n
            self._last = direction

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> LatencyRelay:
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._serve, "127.0.0.1", self.port))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # noqa: BLE001 - handed to start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=main, name="latency relay", daemon=True)
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S):
            raise TimeoutError("the latency relay did not start")
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            for writer in list(self._writers):
                writer.close()
            await asyncio.sleep(0.01)
            loop.stop()

        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(close(), loop)
        if self._thread is not None:
            self._thread.join(timeout=START_TIMEOUT_S)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- relaying ------------------------------------------------------------------------

    async def _serve(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.wait_for(
                asyncio.open_connection(*self.target), START_TIMEOUT_S)
        except (OSError, TimeoutError):
            client_w.close()
            return
        self._writers.update((client_w, server_w))
        pumps = [asyncio.ensure_future(self._pump(client_r, server_w, "up")),
                 asyncio.ensure_future(self._pump(server_r, client_w, "down"))]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
                self._tasks.discard(task)
            for w in (client_w, server_w):
                w.close()
                self._writers.discard(w)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    direction: str) -> None:
        """Forward in order, each chunk `delay_s` after it arrived."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    writer.write_eof() if writer.can_write_eof() else None
                    return
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        self._tasks.add(sender)
        try:
            while True:
                data = await reader.read(CHUNK)
                if data:
                    self._saw(direction, len(data))
                await queue.put((loop.time() + self.delay_s, data))
                if not data:
                    break
            await sender
        finally:
            sender.cancel()
            self._tasks.discard(sender)


def relayed_known_hosts(known_hosts: str, host: str, port: int, relay_port: int,
                        directory: str | None = None) -> str:
    """A copy of `known_hosts` whose `[host]:port` entries also name `[host]:relay_port` (the
    relay serves the same host key); returns its path."""
    src = Path(known_hosts).read_text()
    name, alias = f"[{host}]:{port}" if port != 22 else host, f"[{host}]:{relay_port}"
    lines = [line.replace(name, alias, 1) for line in src.splitlines() if line.startswith(name)]
    out = Path(tempfile.mkdtemp(prefix="relay-known-hosts-", dir=directory)) / "known_hosts"
    out.write_text(src + "\n".join(lines) + "\n")
    return str(out)


def remove_known_hosts(path: str) -> None:
    shutil.rmtree(Path(path).parent, ignore_errors=True)


__all__ = ["LatencyRelay", "relayed_known_hosts", "remove_known_hosts"]
