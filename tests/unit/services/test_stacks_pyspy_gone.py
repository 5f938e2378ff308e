"""trainbot's py-spy placed earlier and gone since from the nodes (a cache cleanup, a quota
purge): the collection that finds it absent forgets the placement, so the next one places it
again instead of every collection saying "py-spy absent" until the bot restarts."""

from __future__ import annotations

import json
from types import SimpleNamespace

from bot.core.stacks import MARKER, PYSPY_ABSENT
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

    def place(runner, sftp, **_kw):  # noqa: ANN001, ANN003, ANN202
        sessions.placed += 1
        sessions.absent = False
        return AGAIN

    monkeypatch.setattr(stacks, "place_pyspy", place)
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=site_pyspy, stacks_timeout=25.0, stacks_native=False)})
    placements = PySpyPlacements({"c": PATH})
    return StackCollector(config, sessions, placements=placements), sessions, placements  # type: ignore[arg-type]


def test_a_vanished_copy_is_placed_again_by_the_next_collection(monkeypatch) -> None:
    collector, sessions, placements = _collector(monkeypatch)
    first = collector.collect("c", "42")
    assert first.problem is not None and first.problem.cause == PYSPY_ABSENT
    assert placements.placed("c") is None
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
