"""Whether a local process has exited, read from /proc without racing its exit."""
from __future__ import annotations

from pathlib import Path


def exited(pid: int) -> bool:
    """True once `pid` is gone or a zombie (exited, not yet reaped).

    The process may end between opening /proc/PID/stat and reading it: Linux then raises
    ESRCH (ProcessLookupError) from the read, not FileNotFoundError from the open. Any
    OSError means the process is gone.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # comm may hold spaces and parentheses: the state is the first field after the LAST ')'.
    return stat[stat.rfind(")") + 2 :].startswith("Z")
