"""A bot kill -9'd and started again on the same host acts at once: its new process proves the
old one dead (its pid gone, bot.core.holders) and takes its leases over under a new epoch,
instead of waiting for them to lapse (three ticks, at least 30 s); while the old replica
lives, a second one on the same host takes nothing over.

The bot is a real process (tests/crash_driver.py --job all: every job `trainbot run`
schedules, bot.app.build_scheduler, on the production services, over the dev cluster and a
Slack stand-in), killed with SIGKILL; its leases are read from its SQLite store.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from slack_standin import SlackStandIn

from bot.core.holders import holder_label
from bot.services.leases import lease_ttl
from bot.store import Store

pytestmark = pytest.mark.integration

TICK_S = 1  # every policy job runs each second; its lease lasts 30 s (lease_ttl)
JOBS = ("holds", "probes", "prompts", "submits", "watch:dev")
START_WITHIN_S = 90.0  # a guard against a driver that never starts, not a speed budget
# why the killed process is dead: reaped (by this test), or seen between its kill and its reaping
DEATHS = r"(no process has its pid any more|its process has exited \(not yet reaped\))"


@dataclass(frozen=True)
class Lease:
    holder: str
    epoch: int
    acquired_at: float
    expires_at: float


def _leases(url: str) -> dict[str, Lease]:
    store = Store.open(url)
    try:
        with store.engine.begin() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name, holder, epoch, acquired_at, expires_at FROM leases").all()
    finally:
        store.close()
    return {r.name: Lease(r.holder, r.epoch, r.acquired_at, r.expires_at) for r in rows}


class Bot:
    """One run of the driver: its process and its log."""

    def __init__(self, crash_driver, slack: SlackStandIn, log: Path) -> None:
        self.log = log
        self.proc = crash_driver.start(slack, log, crash_at=None, tick=TICK_S,
                                       args=("--job", "all"))

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, what: str, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + START_WITHIN_S
        while (found := re.search(pattern, self.text())) is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no {what} (rc {self.proc.poll()})\n" + self.text()[-4000:])
            time.sleep(0.1)
        return found

    @property
    def holder(self) -> str:
        return self.wait_for("holder id", r"driver: holder (\S+)").group(1)

    def watch_ticks(self) -> list[float]:
        return [float(t) for t in re.findall(r"driver: watch tick dev at ([\d.]+)", self.text())]

    def kill_9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=10) == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _wait_held_by(url: str, holder: str, bot: Bot) -> dict[str, Lease]:
    deadline = time.monotonic() + START_WITHIN_S
    while True:
        leases = _leases(url)
        if all(leases.get(job) and leases[job].holder == holder for job in JOBS):
            return leases
        if bot.proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{holder} does not hold every job: {leases}\n" + bot.text()[-4000:])
        time.sleep(0.1)


@pytest.fixture
def bot_config(dev_cluster, crash_driver, tmp_path):
    data = dev_cluster.bot_config_data(store_url=f"sqlite:///{tmp_path / 'bot.db'}")
    data["policy"] = {"tick_s": TICK_S}
    return crash_driver.configure(data)


def _taken_over(dead: str, bot: Bot, since: dict[str, Lease], now: dict[str, Lease]) -> None:
    """Each job's lease went from `dead` to `bot` at once: under the next epoch, taken before
    `dead`'s lease lapsed, and said in `bot`'s log (who, which lease, why)."""
    for job in JOBS:
        assert now[job].epoch == since[job].epoch + 1, (job, since[job], now[job])
        assert now[job].acquired_at < since[job].expires_at, (
            f"{job} taken over only after the TTL", since[job], now[job])
        said = (re.escape(f"{job}: taken over from replica {holder_label(dead)}, which is "
                          "dead (") + DEATHS
                + re.escape(f"): this replica ({holder_label(bot.holder)}) runs it now"))
        assert re.search(said, bot.text()), (said, bot.text()[-4000:])
    # the first watcher tick ran before the killed process's lease would have lapsed
    assert bot.watch_ticks() and bot.watch_ticks()[0] < since["watch:dev"].expires_at


def test_a_bot_killed_and_started_again_acts_at_once(bot_config, crash_driver, tmp_path):
    url = bot_config.store.url
    assert lease_ttl(TICK_S) == 30.0
    with SlackStandIn() as slack:
        old = Bot(crash_driver, slack, tmp_path / "old.log")
        new = None
        try:
            _wait_held_by(url, old.holder, old)
            old.wait_for("watcher tick", r"driver: watch tick dev")
            old.kill_9()
            at_kill = _leases(url)
            started = time.time()
            new = Bot(crash_driver, slack, tmp_path / "new.log")
            after = _wait_held_by(url, new.holder, new)
            new.wait_for("watcher tick", r"driver: watch tick dev")
            _taken_over(old.holder, new, at_kill, after)
            assert new.watch_ticks()[0] - started < lease_ttl(TICK_S) / 2
        finally:
            old.stop()
            if new is not None:
                new.stop()


def test_a_second_live_replica_on_the_same_host_takes_nothing_over(bot_config, crash_driver,
                                                                   tmp_path):
    url = bot_config.store.url
    with SlackStandIn() as slack:
        first = Bot(crash_driver, slack, tmp_path / "first.log")
        second = None
        try:
            held = _wait_held_by(url, first.holder, first)
            second = Bot(crash_driver, slack, tmp_path / "second.log")
            for job in JOBS:  # each of its jobs ran once at its start, and stood by
                second.wait_for(f"{job} standing by",
                                re.escape(f"{job}: run by replica "
                                          f"{holder_label(first.holder)}; this one "
                                          f"({holder_label(second.holder)}) stands by"))
            time.sleep(5 * TICK_S)  # five more runs of each job
            now = _leases(url)
            for job in JOBS:
                assert (now[job].holder, now[job].epoch) == (first.holder, held[job].epoch)
            assert "taken over" not in second.text() and not second.watch_ticks()

            # the first one dies: the live standby on its host takes over at once
            first.kill_9()
            at_kill = _leases(url)
            after = _wait_held_by(url, second.holder, second)
            second.wait_for("watcher tick", r"driver: watch tick dev")
            _taken_over(first.holder, second, at_kill, after)
        finally:
            first.stop()
            if second is not None:
                second.stop()
