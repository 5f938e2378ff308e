"""The watcher across a slow link (a LatencyRelay adding 5 ms each way in front of the dev
cluster's sshd): a tick reads every log and sampler file in one remote command, so the round
trips the relay carries per tick are one command's, for 4 jobs as for 60 (counted, not timed).
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from support.latency_relay import LatencyRelay
from support.wan import WanJobs, relayed_settings, wan_watcher

from bot.cluster.ssh import SSHRunner
from bot.cluster.tail import ShellTailReader
from bot.store import Store

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_round_trips_per_tick_do_not_grow_with_the_number_of_jobs(dev_cluster, tmp_path):
    connection = dataclasses.asdict(dev_cluster)
    with LatencyRelay((dev_cluster.host, dev_cluster.port), delay_s=0.005) as relay:
        settings = relayed_settings(dev_cluster.ssh_settings(), relay, str(tmp_path))
        with SSHRunner(settings) as runner:
            runner.run(["true"])  # connected and authenticated: from here on, only commands
            before = relay.counts()[0]
            runner.exchange(["cat"], stdin=b"x", timeout=30)
            one_command = relay.counts()[0] - before
            per_tick: dict[int, list[tuple[int, int]]] = {}
            for n in (4, 60):
                jobs = WanJobs(runner, f"{dev_cluster.home}/wan-{uuid.uuid4().hex[:8]}", n)
                jobs.create()
                store = Store.open(f"sqlite:///{tmp_path / f'state-{n}.db'}")
                try:
                    watcher = wan_watcher(jobs, connection, store, ShellTailReader(runner))
                    per_tick[n] = []
                    for step in ("every file new", "every file grew", "nothing changed"):
                        if step == "every file grew":
                            jobs.grow()
                        turns = relay.counts()[0]
                        report = watcher.tick(1_800_000_000.0)
                        per_tick[n].append((relay.counts()[0] - turns,
                                            report.read_round_trips))
                        assert report.ok and report.jobs == n, step
                        assert report.round_trips == 2 + report.read_round_trips
                        if step != "nothing changed":
                            assert report.bytes_read > 0
                finally:
                    store.close()
                    jobs.remove()
    # One remote command per tick, whatever the number of jobs: its round trips on the wire
    # are those of one command (give or take the turn SSH's channel close may add), where
    # per-file reads would take at least two per file (120 for 60 jobs).
    for n, ticks in per_tick.items():
        assert [rt for _, rt in ticks] == [1, 1, 1], (n, ticks)
        assert all(turns <= one_command + 1 for turns, _ in ticks), (n, ticks, one_command)
