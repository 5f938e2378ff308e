"""A one-shot collection (`trainbot stacks`) waits for trainbot's py-spy to be placed, however
long the copy takes, and then has its whole stacks_timeout: no later collection of its
process would use a placement left under way ("the next collection uses it" was false)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from bot.core.stacks import MARKER, PYSPY_NOT_PLACED
from bot.services.stacks import StackCollector

PATH = "/home/u/.cache/trainbot/py-spy-0.4.0/py-spy"


class Sessions:
    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def runner(self, cluster):  # noqa: ANN001, ANN201
        sessions = self

        class Runner:
            def run(self, argv, timeout=None, check=True, **kw):  # noqa: ANN001, ANN003, ANN202
                sessions.timeouts.append(timeout)
                line = json.dumps({"host": "gpu1", "procs": []})
                return SimpleNamespace(exit_code=0, stdout=MARKER + line + "\n", stderr="")

        return Runner()

    def sftp(self, cluster):  # noqa: ANN001, ANN201
        return object()

    def slurm(self, cluster):  # noqa: ANN001, ANN201
        return SimpleNamespace(job=lambda j: SimpleNamespace(is_running=True, state="RUNNING"))


def _collector(monkeypatch, **kw):  # noqa: ANN001, ANN003, ANN202
    import bot.services.stacks as stacks

    def slow_place(runner, sftp, **_kw):  # noqa: ANN001, ANN003, ANN202
        time.sleep(0.6)  # longer than the whole stacks_timeout
        return PATH

    monkeypatch.setattr(stacks, "place_pyspy", slow_place)
    sessions = Sessions()
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=0.4, stacks_native=False)})
    return StackCollector(config, sessions, **kw), sessions  # type: ignore[arg-type]


def test_the_bots_collection_waits_its_share_and_says_the_copy_is_under_way(
        monkeypatch) -> None:
    collector, sessions = _collector(monkeypatch)
    report = collector.collect("c", "42")
    assert report.problem is not None and report.problem.cause == PYSPY_NOT_PLACED
    assert sessions.timeouts == []


def test_a_one_shot_collection_waits_for_the_copy_then_has_its_whole_timeout(
        monkeypatch) -> None:
    collector, sessions = _collector(monkeypatch, wait_for_placement=True)
    report = collector.collect("c", "42")
    assert report.problem is None or report.problem.cause != PYSPY_NOT_PLACED
    assert sessions.timeouts and sessions.timeouts[0] >= 0.4
