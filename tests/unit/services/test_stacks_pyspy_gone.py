"""trainbot's py-spy placed earlier and gone since from the nodes (a cache cleanup, a quota
purge): the collection that finds it absent forgets the placement, so the next one places it
again instead of every collection saying "py-spy absent" until the bot restarts. A copy intact
on the login node that the nodes never see (a home not shared with them, noexec) is
remembered so, a while: not checked again and warned about at every collection."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

from bot.core.stacks import MARKER, NO_PROCESSES, PYSPY_ABSENT, PYSPY_UNSEEN
from bot.services.pyspy_placements import PySpyPlacements
from bot.services.stacks import StackCollector

PATH = "/home/u/.cache/trainbot/py-spy-0.4.0/py-spy"
AGAIN = "/home/u/.cache/trainbot/py-spy-0.4.0/py-spy"


class Runner:
    def __init__(self, absent: bool) -> None:
        self.absent = absent

    def run(self, argv, timeout=None, check=True, **kw):  # noqa: ANN001, ANN003, ANN201
        line = {"host": "gpu1", "procs": []}
        if self.absent:
            line.update(error="pyspy_absent", detail=f"{PATH}: not an executable file on gpu1")
        return SimpleNamespace(exit_code=0, stdout=MARKER + json.dumps(line) + "\n", stderr="")


class Sessions:
    def __init__(self) -> None:
        self.absent = True
        self.placed = 0

    def runner(self, cluster):  # noqa: ANN001, ANN201
        return Runner(self.absent)

    def sftp(self, cluster):  # noqa: ANN001, ANN201
        return object()

    def slurm(self, cluster):  # noqa: ANN001, ANN201
        return SimpleNamespace(job=lambda j: SimpleNamespace(is_running=True, state="RUNNING"))


def _collector(monkeypatch, site_pyspy: str | None = None):  # noqa: ANN001, ANN202
    import bot.services.stacks as stacks

    sessions = Sessions()

    def place(runner, sftp, on_copy=None):  # noqa: ANN001, ANN202
        sessions.placed += 1
        if on_copy is not None:
            on_copy(AGAIN)  # gone from the login node too: copied again
        sessions.absent = False
        return AGAIN

    monkeypatch.setattr(stacks, "place_pyspy", place)
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=site_pyspy, stacks_timeout=25.0, stacks_native=False)})
    placements = PySpyPlacements({"c": PATH})
    return StackCollector(config, sessions, placements=placements), sessions, placements  # type: ignore[arg-type]


def test_a_vanished_copy_is_placed_again_for_the_next_collection(monkeypatch) -> None:
    collector, sessions, placements = _collector(monkeypatch)
    first = collector.collect("c", "42")
    assert first.problem is not None and first.problem.cause == PYSPY_ABSENT  # it was gone
    assert sessions.placed == 1 and placements.placed("c") == AGAIN  # checked: copied again
    second = collector.collect("c", "42")
    assert sessions.placed == 1 and placements.placed("c") == AGAIN
    assert second.problem is None or second.problem.cause != PYSPY_ABSENT


def test_the_sites_own_py_spy_absent_is_never_placed_over(monkeypatch) -> None:
    collector, sessions, placements = _collector(monkeypatch, site_pyspy="/opt/py-spy")
    for _ in range(2):
        assert collector.collect("c", "42").problem.cause == PYSPY_ABSENT
    assert sessions.placed == 0 and placements.placed("c") == PATH


def test_forgetting_keeps_a_copy_placed_since_at_another_path() -> None:
    placements = PySpyPlacements({"c": "/new/py-spy"})
    placements.forget("c", PATH)
    assert placements.placed("c") == "/new/py-spy"


def _never_seen(monkeypatch):  # noqa: ANN001, ANN202
    """A collector whose nodes never see trainbot's copy, intact on the login node."""
    import bot.services.stacks as stacks

    sessions = Sessions()
    clock = [1000.0]

    def place(runner, sftp, on_copy=None):  # noqa: ANN001, ANN202
        sessions.placed += 1  # only checked (sha256sum): there and intact, nothing copied
        return PATH

    monkeypatch.setattr(stacks, "place_pyspy", place)
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=25.0, stacks_native=False)})
    placements = PySpyPlacements({"c": PATH}, monotonic=lambda: clock[0])
    collector = StackCollector(config, sessions, placements=placements)  # type: ignore[arg-type]
    return collector, sessions, placements, clock


def _warnings(caplog) -> list[str]:  # noqa: ANN001
    return [r.getMessage() for r in caplog.records
            if r.name == "bot.services.pyspy_placements" and r.levelno >= logging.WARNING]


def test_a_copy_the_nodes_never_see_is_checked_once_and_warned_about_once(
        monkeypatch, caplog) -> None:  # noqa: ANN001
    caplog.set_level(logging.INFO, logger="bot.services.pyspy_placements")
    collector, sessions, placements, clock = _never_seen(monkeypatch)
    reports = [collector.collect("c", "42") for _ in range(6)]
    assert all(r.problem is not None for r in reports)
    # the first miss checks the copy at once: every report says the nodes do not see it
    assert [r.problem.cause for r in reports] == [PYSPY_UNSEEN] * 6
    # checked once on the login node at the first miss, then remembered
    assert sessions.placed == 1 and placements.placed("c") == PATH
    (warning,) = _warnings(caplog)
    assert "login node" in warning and "py_spy" in warning and "is gone" not in warning
    # from the first miss on, the report says why py-spy is absent on the nodes
    assert all("is on the login node" in str(r.problem.detail) for r in reports)
    # remembered a while: then checked once more, not warned again
    clock[0] += 3601
    for _ in range(4):
        assert collector.collect("c", "42").problem.cause == PYSPY_UNSEEN
    assert sessions.placed == 2 and len(_warnings(caplog)) == 1


def test_nodes_that_see_the_copy_again_end_the_remembered_miss(monkeypatch) -> None:
    collector, sessions, placements, _clock = _never_seen(monkeypatch)
    for _ in range(3):
        collector.collect("c", "42")
    sessions.absent = False  # the home is mounted on the nodes now
    assert collector.collect("c", "42").problem.cause == NO_PROCESSES  # py-spy found
    sessions.absent = True  # and later missed again: checked again at once, as at first
    assert collector.collect("c", "42").problem.cause == PYSPY_UNSEEN
    assert sessions.placed == 2


def test_a_copy_cleaned_up_again_and_again_is_placed_again_each_time(monkeypatch,
                                                                     caplog) -> None:  # noqa: ANN001
    caplog.set_level(logging.INFO, logger="bot.services.pyspy_placements")
    collector, sessions, placements = _collector(monkeypatch)
    for cleanup in range(1, 4):
        sessions.absent = True  # a cache cleanup took it from the home
        assert collector.collect("c", "42").problem.cause == PYSPY_ABSENT
        assert collector.collect("c", "42").problem.cause == NO_PROCESSES  # py-spy found
        assert sessions.placed == cleanup
    assert sum("was gone" in w for w in _warnings(caplog)) == 3
