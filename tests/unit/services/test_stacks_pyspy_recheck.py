"""trainbot's py-spy that the nodes missed, checked again on the login node: that check's
"intact" counts only for the miss right after it (a collection that timed out instead drops
it), and while a miss is remembered the copy is checked again every few minutes, so a copy
really gone (a cache cleanup) is placed again, not hidden for the hour behind "the nodes do
not find it"."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from bot.core.stacks import MARKER, PYSPY_ABSENT, PYSPY_UNSEEN
from bot.services.pyspy_placements import UNSEEN_RECHECK_S, PySpyPlacements
from bot.services.stacks import StackCollector

PATH = "/home/u/.cache/trainbot/py-spy-0.4.0/py-spy"


class World:
    """login_has: the copy is on the login node; nodes_see: the nodes run it; timed_out: a
    collection that finds it times out."""

    def __init__(self) -> None:
        self.login_has, self.nodes_see, self.timed_out = True, True, False
        self.checks = self.copies = 0
        self.clock = 1000.0

    def run(self, argv, timeout=None, check=True, **kw):  # noqa: ANN001, ANN003, ANN201
        line: dict = {"host": "gpu1", "procs": []}
        if not self.nodes_see:
            line.update(error="pyspy_absent", detail=f"{PATH}: not an executable file on gpu1")
        elif not self.timed_out:
            line["procs"] = [{"pid": 5, "rank": 0, "ok": True, "threads": []}]
        return SimpleNamespace(exit_code=None if self.nodes_see and self.timed_out else 0,
                               stdout=MARKER + json.dumps(line) + "\n", stderr="")

    def runner(self, cluster):  # noqa: ANN001, ANN201
        return self

    def sftp(self, cluster):  # noqa: ANN001, ANN201
        return object()

    def slurm(self, cluster):  # noqa: ANN001, ANN201
        return SimpleNamespace(job=lambda j: SimpleNamespace(is_running=True, state="RUNNING"))


@pytest.fixture
def world(monkeypatch) -> World:  # noqa: ANN001
    import bot.services.stacks as stacks

    world = World()

    def place(runner, sftp, on_copy=None):  # noqa: ANN001, ANN202
        world.checks += 1  # sha256-checked
        if not world.login_has:
            on_copy(PATH)
            world.copies += 1
            world.login_has = world.nodes_see = True  # the shared home has it again
        return PATH

    monkeypatch.setattr(stacks, "place_pyspy", place)
    return world


def _collector(world: World) -> StackCollector:
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=25.0, stacks_native=False)})
    placements = PySpyPlacements({"c": PATH}, monotonic=lambda: world.clock)
    return StackCollector(config, world, placements=placements)  # type: ignore[arg-type]


def _cause(collector: StackCollector) -> str | None:
    problem = collector.collect("c", "42").problem
    return None if problem is None else problem.cause


def test_a_recheck_whose_collection_timed_out_does_not_hide_a_later_cleanup(
        world: World) -> None:
    collector = _collector(world)
    world.nodes_see = False
    # a passing miss (a node's automount late): checked at once, intact, said as unseen
    assert _cause(collector) == PYSPY_UNSEEN and world.checks == 1
    world.nodes_see, world.timed_out = True, True
    assert _cause(collector) != PYSPY_ABSENT and world.checks == 1  # checked: intact
    world.timed_out = False
    world.clock += 86400
    world.login_has = world.nodes_see = False  # a cache cleanup, a day later
    report = collector.collect("c", "42")
    assert report.problem is not None and "is on the login node" not in str(
        report.problem.detail)
    assert _cause(collector) is None and world.copies == 1  # placed again at once


def test_a_copy_gone_while_the_nodes_miss_is_remembered_is_placed_again(
        world: World) -> None:
    collector = _collector(world)
    world.nodes_see = False
    for _ in range(3):  # the nodes never see it: checked once, then remembered
        assert _cause(collector) in (PYSPY_ABSENT, PYSPY_UNSEEN)
    assert world.checks == 1
    world.login_has = False  # a cache cleanup
    world.clock += UNSEEN_RECHECK_S + 1
    assert _cause(collector) == PYSPY_UNSEEN  # this miss checks the copy again
    assert _cause(collector) is None and world.copies == 1  # gone: placed again


@pytest.mark.parametrize(("lang", "says", "never"), [
    ("en", "set the cluster's `py_spy` path to a py-spy the nodes can see and run",
     "let trainbot copy"),
    ("ko", "노드에서 보이고 실행할 수 있는 py-spy로 설정하세요", "봇 사용자의 홈에 복사")])
def test_the_nodes_not_seeing_the_copy_only_asks_for_the_clusters_py_spy(
        world: World, lang: str, says: str, never: str) -> None:
    """trainbot's copy is what the nodes miss: the report never offers to copy it again."""
    from bot.slack.render import render_blocks

    collector = _collector(world)
    world.nodes_see = False
    collector.collect("c", "42")
    report = collector.collect("c", "42")
    assert report.problem is not None and report.problem.cause == PYSPY_UNSEEN
    _, text = render_blocks("stacks", lang, report.to_view())
    assert says in text and never not in text
    assert "login node" in text or "로그인 노드" in text


def _recheck_due_finds_the_copy_gone(world: World, collector: StackCollector) -> None:
    """The nodes never see the copy; a cleanup takes it; past UNSEEN_RECHECK_S on the
    collector's clocks, a miss checks it and the next collection places it again."""
    world.nodes_see = False
    for _ in range(3):
        collector.collect("c", "42")
    world.login_has = False
    world.clock += UNSEEN_RECHECK_S + 1
    for _ in range(2):
        collector.collect("c", "42")
    assert world.copies == 1


def test_a_collectors_own_placements_keep_its_clock(world: World) -> None:
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=25.0, stacks_native=False)})
    collector = StackCollector(config, world,  # type: ignore[arg-type]
                               monotonic=lambda: world.clock)
    _recheck_due_finds_the_copy_gone(world, collector)


def test_the_contexts_placements_keep_its_clock(world: World, store) -> None:  # noqa: ANN001
    from dataclasses import replace

    from fakes import make_context

    # a context with its own clock and the default (new, untouched) placements
    ctx = replace(make_context(store), clock=lambda: world.clock, pyspy=PySpyPlacements())
    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=25.0, stacks_native=False)})
    collector = StackCollector(config, world, placements=ctx.pyspy)  # type: ignore[arg-type]
    _recheck_due_finds_the_copy_gone(world, collector)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_first_miss_after_a_start_says_the_nodes_do_not_see_the_copy(
        world: World, lang: str) -> None:
    """A bot placed (checked) its copy at the watcher's first poll, long before the first
    stall: the first collection the nodes miss it in checks it on the login node again at
    once, and its post already says why and what to set, as later ones do."""
    from bot.slack.render import render_blocks

    config = SimpleNamespace(clusters={"c": SimpleNamespace(
        py_spy=None, stacks_timeout=25.0, stacks_native=False)})
    collector = StackCollector(config, world,  # type: ignore[arg-type]
                               monotonic=lambda: world.clock)
    placing = collector.prepare("c")  # the watcher's first poll of the cluster
    assert placing is not None and placing.result(timeout=5) == PATH
    world.clock += 7200
    world.nodes_see = False
    report = collector.collect("c", "42")
    assert report.problem is not None and report.problem.cause == PYSPY_UNSEEN
    assert world.checks == 2 and world.copies == 0
    _, text = render_blocks("stacks", lang, report.to_view())
    assert ("set the cluster's `py_spy` path to a py-spy the nodes can see and run" in text
            or "노드에서 보이고 실행할 수 있는 py-spy로 설정하세요" in text)


def test_two_overlapping_first_misses_both_say_the_nodes_do_not_see_the_copy() -> None:
    """Two jobs' collections on one cluster miss the copy at once, its check long stale:
    both join the one placement that checks it intact on the login node, and both are told
    the nodes do not see it, not the second one `pyspy_absent`."""
    clock = [1000.0]
    placements = PySpyPlacements(monotonic=lambda: clock[0])
    path = "/h/.cache/trainbot/py-spy"
    assert placements.start("c", lambda: path).result(timeout=5) == path  # checked intact
    clock[0] += 7200  # the first stall, long after
    assert not placements.forget("c", path)  # job 1: forgotten, to be checked
    assert not placements.forget("c", path)  # job 2: nothing placed to explain
    assert placements.start("c", lambda: path).result(timeout=5) == path  # both join it
    assert placements.unseen_after_check("c", path)
    assert placements.unseen_after_check("c", path)
    clock[0] += 3601  # the miss no longer remembered: not known checked
    assert not placements.unseen_after_check("c", path)
