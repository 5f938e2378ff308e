"""Errors raised by the cluster adapters; each message says what happened and what to do."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


class ClusterError(Exception):
    """Base class for everything that goes wrong talking to a cluster."""


class ClusterUnavailable(ClusterError):
    """The login node or the Slurm controller did not answer. Never means 'job not found'."""


class HostKeyRejected(ClusterError):
    """The SSH host key is unknown or changed; the connection was refused, not trusted."""


class CommandFailed(ClusterError):
    """A remote command exited non-zero. Carries the command, its exit code and stderr tail."""

    def __init__(self, argv: Sequence[str], exit_code: int, stderr: str, stdout: str = ""):
        self.argv = list(argv)
        self.exit_code = exit_code
        self.stderr = stderr
        self.stdout = stdout
        tail = "\n".join(stderr.strip().splitlines()[-10:])
        super().__init__(
            f"`{shlex.join(self.argv)}` exited {exit_code}" + (f": {tail}" if tail else "")
        )


class CommandTimedOut(ClusterError):
    """A remote command ran longer than its timeout and was abandoned."""

    def __init__(self, argv: Sequence[str], timeout: float):
        self.argv = list(argv)
        self.timeout = timeout
        super().__init__(f"`{shlex.join(self.argv)}` did not finish within {timeout:g} s")
