"""Per-cluster adapters opened on demand (bot.services.ports.ClusterSessions): one SSH runner
and one Slurm client per cluster.

The CLI builds one `ClusterSessions` per command; the bot keeps one for its lifetime, so each
cluster has exactly one reused SSH transport. Bolt runs lazy listeners on a thread pool, so the
first uses may race: creation is under a lock, and two threads never open two connections.
After `close()` (the bot stopping) no session is created again: a listener still under way gets
a ClusterUnavailable, not a new SSH connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from bot.cluster.errors import ClusterUnavailable
from bot.config import ClusterConfig, Config
from bot.core.text import N_
from bot.services.ports import SFTP, Runner, Slurm, TailReader


def _ssh_runner(cluster: ClusterConfig) -> Runner:
    from bot.cluster.ssh import SSHRunner

    return SSHRunner(cluster.ssh_settings())


class ClusterSessions:
    """Lazily created runner / Slurm client per cluster name; `close()` closes them all.

    Thread-safe: each cluster's runner and Slurm client are created once, whichever threads
    ask first (SSHRunner connects lazily, so the lock is never held across a connect; the
    runner serialises its own connecting).
    """

    def __init__(
        self,
        config: Config,
        runner_factory: Callable[[ClusterConfig], Runner] | None = None,
        slurm_factory: Callable[[Runner], Slurm] | None = None,
    ):
        self._config = config
        self._runner_factory = runner_factory or _ssh_runner
        self._slurm_factory = slurm_factory
        self._runners: dict[str, Runner] = {}
        self._slurms: dict[str, Slurm] = {}
        self._readers: dict[str, TailReader] = {}
        # Re-entrant: slurm() creates the runner it needs while holding the lock.
        self._lock = threading.RLock()
        self._closed = False

    def _open(self, cluster: str) -> None:
        """Refuses a new session after `close()` (under the lock)."""
        if self._closed:
            raise ClusterUnavailable(N_(
                "not connecting to %(where)s: its connections were closed (trainbot is "
                "stopping)", where=cluster))

    def runner(self, cluster: str) -> Runner:
        with self._lock:
            if cluster not in self._runners:
                self._open(cluster)
                self._runners[cluster] = self._runner_factory(self._config.clusters[cluster])
            return self._runners[cluster]

    def slurm(self, cluster: str) -> Slurm:
        with self._lock:
            if cluster not in self._slurms:
                self._open(cluster)
                if self._slurm_factory is not None:
                    self._slurms[cluster] = self._slurm_factory(self.runner(cluster))
                else:
                    from bot.cluster.slurm import SlurmClient

                    use_json = self._config.clusters[cluster].use_json
                    self._slurms[cluster] = SlurmClient(
                        self.runner(cluster), use_json=use_json, sacct_json=use_json,
                        check_json=use_json)
            return self._slurms[cluster]

    def sftp(self, cluster: str) -> SFTP:
        return self.runner(cluster).sftp()

    def tail_reader(self, cluster: str) -> TailReader:
        """The cluster's batched file reader (one per cluster: it remembers hung paths)."""
        with self._lock:
            if cluster not in self._readers:
                self._open(cluster)
                from bot.cluster.tail import ShellTailReader

                runner = self.runner(cluster)
                cfg = self._config.clusters[cluster]
                self._readers[cluster] = ShellTailReader(runner, where=cluster,  # type: ignore[arg-type]
                                                         timeout=cfg.sftp_timeout,
                                                         max_output=cfg.max_output_mib << 20)
            return self._readers[cluster]

    def close(self) -> None:
        """Close every connection; none is opened again (ClusterUnavailable)."""
        with self._lock:
            self._closed = True
            runners = list(self._runners.values())
            self._runners.clear()
            self._slurms.clear()
            self._readers.clear()
        for runner in runners:
            runner.close()

    def __enter__(self) -> ClusterSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
