"""A DataLoader worker's death is told its own fix (/dev/shm, open files) and no --mem only
when its own lines name that cause and host memory shows no sign of running out. Before, any
matched line anywhere that spoke of shared memory (NCCL's /dev/shm segment) made a worker
the OOM killer ended (`signal: Killed`) a /dev/shm case, and a true host OOM (a steady leak,
MaxRSS at its limit) lost its --mem offer while its card said both "ran out of shared memory,
not host RAM" and the leak's --mem."""

from __future__ import annotations

import dataclasses

import pytest
from support.diagnosis import read_log
from test_mem_whole_node import NOW
from test_mem_whole_node_causes import worker_killed

from bot.config import PolicyConfig
from bot.core.catalogue import Catalogue
from bot.core.incident import build_incident
from bot.core.models import Accounting
from bot.core.policy import ChainHistory, DecisionKind, decide
from bot.core.units import GIB
from bot.slack.render import blocks_to_text, render_template

NCCL_SHM = ("NCCL WARN Error: failed to extend /dev/shm/nccl-abc123 to 9637892 bytes "
            "(shared memory)\n")
KILLED = "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.\n"
LEAK = {"slope_gib_per_100_iter": 12.0, "start_iter": 0, "start_gib": 40.0}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def test_a_worker_the_oom_killer_ended_is_no_shm_case_for_an_nccl_line(catalogue) -> None:
    d = read_log(catalogue, "iteration 100/1000 | loss 2.1\n" + NCCL_SHM
                 + "iteration 200/1000 | loss 2.0\nTraceback (most recent call last):\n"
                 + KILLED, Accounting(state="FAILED", exit_code=1, signal=0))
    assert d.class_id == "dataloader_worker_killed"
    assert d.detail is None


def test_signal_killed_is_never_shm_even_beside_a_bus_error(catalogue) -> None:
    d = read_log(catalogue, "iteration 10/100 loss 1.0\nBus error\n" + KILLED)
    assert d.class_id == "dataloader_worker_killed" and d.detail is None


@pytest.mark.parametrize(("text", "kind"), [
    ("RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error. It is possible "
     "that dataloader's workers are out of shared memory. Please try to raise your shared "
     "memory limit.\n", "shm"),
    ("RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode: "
     "Too many open files (24)\n", "fd_limit"),
])
def test_the_workers_own_lines_still_name_its_cause(catalogue, text: str, kind: str) -> None:
    d = read_log(catalogue, "iteration 10/100 loss 1.0\n" + NCCL_SHM + text)
    assert d.class_id == "dataloader_worker_killed" and d.detail == {"kind": kind}


def _acct(max_rss_gib: int) -> Accounting:
    return Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=64 * GIB,
                      max_rss_bytes=max_rss_gib * GIB)


@pytest.mark.parametrize(("leak", "max_rss_gib"), [(True, 40), (False, 63), (True, 63)])
def test_host_memory_evidence_wins_over_the_workers_own_fix(leak: bool,
                                                             max_rss_gib: int) -> None:
    d = worker_killed("shm")
    if leak:
        d = dataclasses.replace(d, leak_fit=LEAK)
    dec = decide(d, ChainHistory(attempts=()), PolicyConfig(max_mem="1T"), NOW,
                 checkpoint_iter=500, accounting=_acct(max_rss_gib))
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT, dec.reason
    assert dec.mem and "own_fix" not in dec.facts


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_its_card_proposes_the_leaks_mem_and_says_no_shm(lang: str) -> None:
    d = dataclasses.replace(worker_killed("shm"), leak_fit=LEAK)
    view = build_incident(d, recipe="r", job_id="9001", last_checkpoint_iter=500, now=NOW,
                          state="FAILED", mem_limit_bytes=64 * GIB, max_rss_bytes=63 * GIB,
                          mem_policy=PolicyConfig(max_mem="1T"))
    assert not view.own_fix and view.leak is not None
    assert [p.mem for p in view.proposals if p.mem] == ["128G"]
    blocks = render_template("incident", lang, view)
    text = blocks_to_text(blocks["blocks"], blocks["text"])
    assert "--mem=128G" in text, text
    assert "file_system" not in text, text


def test_a_shm_death_without_host_evidence_keeps_its_own_fix_and_no_leak() -> None:
    d = worker_killed("shm")
    dec = decide(d, ChainHistory(attempts=()), PolicyConfig(max_mem="1T"), NOW,
                 checkpoint_iter=500, accounting=_acct(20))
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.facts.get("own_fix") is True
    view = build_incident(d, recipe="r", job_id="9001", last_checkpoint_iter=500, now=NOW,
                          state="FAILED", mem_limit_bytes=64 * GIB, max_rss_bytes=20 * GIB,
                          mem_policy=PolicyConfig(max_mem="1T"))
    assert view.own_fix and view.leak is None and not any(p.mem for p in view.proposals)
