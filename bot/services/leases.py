"""Which replica runs which scheduled job: several `trainbot run` replicas on one database
each schedule every job, and a job runs only in the replica holding its lease (named after
the job id: `watch:<cluster>`, `holds`). The holder renews the lease at the start of each
run; when it dies the lease lapses after `lease_ttl` and another replica takes the job over,
so no watch is lost. A clean shutdown releases the leases at once.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import socket

from bot.store.repos import LeasesRepo

log = logging.getLogger(__name__)

MIN_LEASE_TTL_S = 30.0


@functools.cache
def process_holder() -> str:
    """This process's holder name, `<hostname>:<pid>:<random>`: made once per process, so a
    restarted replica is a new holder (it waits for its old leases to lapse unless they were
    released on a clean shutdown)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def lease_ttl(every_s: float) -> float:
    """How long a lease on a job run every `every_s` seconds lasts without renewal: three
    runs (one slow or failed run does not hand the job over), at least 30 s."""
    return max(3 * every_s, MIN_LEASE_TTL_S)


class LeaseKeeper:
    """One replica's leases on its scheduled jobs: the single place that decides whether a
    job runs here. Logs at info when this replica gains or loses a job (or first sees another
    replica running it), at debug on each skipped run."""

    def __init__(self, repo: LeasesRepo, holder: str | None = None):
        self.repo = repo
        self.holder = holder or process_holder()
        self._held: dict[str, bool] = {}  # lease name -> held at its last check

    def holds(self, name: str, now: float, every_s: float) -> bool:
        """Take or renew lease `name` at `now` for a job run every `every_s` seconds; True
        when this replica holds it (run the job), False while another replica does (skip)."""
        held = self.repo.acquire(name, self.holder, now, lease_ttl(every_s))
        if self._held.get(name) != held:
            if held:
                log.info("%s: this replica (%s) runs it now", name, self.holder)
            else:
                log.info("%s: run by replica %s; this one (%s) stands by", name,
                         self.repo.holder(name), self.holder)
        elif not held:
            log.debug("%s: skipped, another replica holds the lease", name)
        self._held[name] = held
        return held

    def release_all(self) -> None:
        """Release every lease this replica holds (clean shutdown), so another replica takes
        the jobs over on its next run instead of after the TTL. A failure is logged: the
        leases then lapse on their own."""
        for name in [n for n, held in self._held.items() if held]:
            try:
                self.repo.release(name, self.holder)
            except Exception:  # noqa: BLE001 - shutting down; the lease lapses after its TTL
                log.exception("%s: could not release the lease", name)
            self._held[name] = False
