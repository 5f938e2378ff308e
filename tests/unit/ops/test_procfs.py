"""The /proc reads that judge a lease holder (bot.ops.procfs): on this machine's real /proc, a
process killed is seen exited, then gone once reaped; a read that fails says "unknown"."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.core.holders import ProcStat, holder_death, parse_holder
from bot.ops.procfs import ProcFS
from bot.services.leases import process_holder

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="no /proc")


def test_this_process_is_seen_running_with_the_start_its_holder_id_records() -> None:
    procs = ProcFS()
    here = procs.machine()
    assert here is not None and here.host == socket.gethostname()
    assert here.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    holder = parse_holder(process_holder())
    assert holder is not None and holder.machine == here and holder.pid == os.getpid()
    found = procs.pid_now(os.getpid())
    assert isinstance(found, ProcStat) and found.start == holder.start == procs.own_start()
    assert holder_death(process_holder(), here, found) is None


def test_a_killed_process_is_exited_until_reaped_then_gone() -> None:
    procs = ProcFS()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = procs.pid_now(child.pid)
        assert isinstance(alive, ProcStat) and alive.state != "Z"
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (found := procs.pid_now(child.pid)) != "gone" and (
                not isinstance(found, ProcStat) or found.state != "Z"):
            assert time.monotonic() < deadline, found
            time.sleep(0.01)
        assert found == ProcStat("Z", alive.start)  # a zombie: runs nothing any more
    finally:
        child.kill()
        child.wait()
    assert procs.pid_now(child.pid) == "gone"


def test_what_cannot_be_read_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "stat").write_text("garbage")
    fake = ProcFS(str(tmp_path))
    assert fake.pid_now(77) == "unknown"  # not of stat's shape
    assert fake.pid_now(os.getpid()) == "unknown"  # hidden from this /proc, yet it exists
    assert fake.pid_now(0) == "unknown"
    assert fake.machine() is None  # no self, no boot id
    assert fake.own_start() is None


def test_a_pid_no_process_has_is_gone() -> None:
    assert ProcFS().pid_now(2**22 + 1) == "gone"  # above any pid_max
