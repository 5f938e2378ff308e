"""The Prometheus metrics of `trainbot run` (prometheus_client, one registry a process): ticks,
Slurm commands, SSH round trips and bytes, incidents, resubmits, Slack calls and 429 waits,
and, read from the store at each scrape, pending approvals and the holder of each lease."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bot.core.holders import holder_label

log = logging.getLogger(__name__)

# Ticks take from milliseconds (nothing to watch) to minutes (a hung login node).
TICK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class ServiceMetrics:
    """The metrics of one process; `registry` is what /metrics serves."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.tick_seconds = Histogram(
            "trainbot_tick_duration_seconds", "Wall time of a watcher tick, per cluster.",
            ["cluster"], buckets=TICK_BUCKETS, registry=r)
        self.ticks = Counter("trainbot_ticks", "Watcher ticks by result (ok, failed: the "
                             "cluster did not answer).", ["cluster", "result"], registry=r)
        self.last_ok_tick = Gauge(
            "trainbot_last_successful_tick_timestamp_seconds",
            "When the cluster's last successful tick started (epoch s).", ["cluster"],
            registry=r)
        self.slurm_commands = Counter(
            "trainbot_slurm_commands", "Slurm commands (jobs = one squeue + one sacct, memory "
            "= sstat, submit, hold, release, cancel, …) by result.",
            ["cluster", "kind", "result"], registry=r)
        self.log_bytes = Counter("trainbot_log_bytes_read", "New log bytes the watcher "
                                 "consumed.", ["cluster"], registry=r)
        self.round_trips = Counter("trainbot_ssh_round_trips", "Remote requests the watcher "
                                   "waited on (Slurm commands and file reads).", ["cluster"],
                                   registry=r)
        self.bytes_moved = Counter("trainbot_ssh_bytes_moved", "Bytes the watcher's file "
                                   "reads sent and received over SSH.", ["cluster"], registry=r)
        self.incidents = Counter("trainbot_incidents", "Incidents posted, by failure class.",
                                 ["cluster", "class_id"], registry=r)
        self.resubmits = Counter("trainbot_resubmits", "Automatic resubmits by outcome.",
                                 ["cluster", "outcome"], registry=r)
        self.slack_calls = Counter("trainbot_slack_api_calls", "Slack Web API calls, by "
                                   "method.", ["method"], registry=r)
        self.slack_429_waits = Counter("trainbot_slack_rate_limit_waits", "429 answers "
                                       "waited out (Retry-After).", registry=r)
        self.slack_429_seconds = Counter("trainbot_slack_rate_limit_wait_seconds",
                                         "Seconds spent waiting out 429s.", registry=r)

    def rate_limit_waited(self, seconds: float) -> None:
        self.slack_429_waits.inc()
        self.slack_429_seconds.inc(seconds)

    def watch_store(self, pending_approvals: Callable[[], int],
                    lease_holders: Callable[[], Iterable[tuple[str, str]]]) -> None:
        """Read at each scrape: the approvals waiting for a person, and (lease, holder) of
        each lease held (which replica runs which cluster's watcher)."""
        self.registry.register(_StoreCollector(pending_approvals, lease_holders))


class _StoreCollector(Collector):
    def __init__(self, pending: Callable[[], int],
                 holders: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._pending, self._holders = pending, holders

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            pending = self._pending()
            holders = list(self._holders())
        except Exception as exc:  # noqa: BLE001 - a store outage leaves these out of a scrape
            log.warning("metrics: cannot read the store: %s", exc)
            return
        yield GaugeMetricFamily("trainbot_approvals_pending", "Approval prompts waiting for "
                                "a person (not expired).", value=pending)
        held = GaugeMetricFamily("trainbot_lease_holder", "1 for the replica holding each "
                                 "scheduled job's lease (watch:<cluster>, holds).",
                                 labels=["lease", "holder"])
        for lease, holder in holders:  # the holder's short form (the store has its whole id)
            held.add_metric([lease, holder_label(holder)], 1)
        yield held


class CountingSlurm:
    """A Slurm port (bot.services.ports.Slurm) counting each command by kind and result."""

    def __init__(self, inner: Any, cluster: str, metrics: ServiceMetrics) -> None:
        self._inner, self._cluster, self._metrics = inner, cluster, metrics

    def __getattr__(self, kind: str) -> Any:
        call = getattr(self._inner, kind)
        if not callable(call):
            return call

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = "error"
            try:
                value = call(*args, **kwargs)
                result = "ok"
                return value
            finally:
                self._metrics.slurm_commands.labels(self._cluster, kind, result).inc()

        return counted


class CountingSessions:
    """Cluster sessions (bot.services.ports.ClusterSessions) whose Slurm clients count their
    commands."""

    def __init__(self, inner: Any, metrics: ServiceMetrics) -> None:
        self._inner, self._metrics = inner, metrics

    def slurm(self, cluster: str) -> Any:
        return CountingSlurm(self._inner.slurm(cluster), cluster, self._metrics)

    def runner(self, cluster: str) -> Any:
        return self._inner.runner(cluster)

    def sftp(self, cluster: str) -> Any:
        return self._inner.sftp(cluster)

    def tail_reader(self, cluster: str) -> Any:
        return self._inner.tail_reader(cluster)

    def close(self) -> None:
        self._inner.close()
