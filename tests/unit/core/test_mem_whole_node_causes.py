"""A DataLoader worker's death of a --mem=0 job whose cause is not host memory (its workers
out of /dev/shm, the process at its open-file limit) is no whole-node host OOM: before, it was
told "host memory exhausted … run it on nodes with more memory" and then "ran out of shared
memory (/dev/shm), not host RAM", and "cut host memory" in place of its /dev/shm fix. It is
now an `ask` told its cause's own fix, with no --mem proposed (none gives the job more) and
no "raise --mem" (the class's hint); a worker killed for host memory keeps the whole-node
sentence."""

from __future__ import annotations

import json

import pytest
from test_mem_whole_node import NOW

from bot.config import PolicyConfig
from bot.core.catalogue import Catalogue
from bot.core.incident import build_incident
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import ChainHistory, DecisionKind, decide
from bot.core.units import GIB
from bot.slack.render import blocks_to_text, render_template

WHOLE_NODE = Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=512 * GIB,
                        whole_node_mem=True, max_rss_bytes=40 * GIB)
HOST = {"en": "host memory exhausted", "ko": "호스트 메모리 부족"}
CUT_HOST = {"en": "Cut host memory", "ko": "호스트 메모리 사용을 줄이세요"}
MORE_MEM = {"en": "raise --mem", "ko": "--mem을 늘린"}
OWN_FIX = {
    ("shm", "en"): "give the job a larger /dev/shm",
    ("shm", "ko"): "작업에 더 큰 /dev/shm을 주거나",
    ("fd_limit", "en"): "ulimit -n 65536",
    ("fd_limit", "ko"): "ulimit -n 65536",
}


def worker_killed(kind: str | None) -> Diagnosis:
    cls = Catalogue.load().classes["dataloader_worker_killed"]
    return Diagnosis(class_id="dataloader_worker_killed", action=cls.action,
                     retryable=cls.retryable, charges_budget=cls.charges_budget, hint=cls.hint,
                     detail={"kind": kind} if kind else None,
                     metrics=DiagnosisMetrics(last_iter=670, target_iter=1200))


def _head(diagnosis: Diagnosis, lang: str) -> tuple[str, object]:
    dec = decide(diagnosis, ChainHistory(attempts=()), PolicyConfig(max_mem="1T"), NOW,
                 checkpoint_iter=500, accounting=WHOLE_NODE)
    view = {"kind": "incident", "prompt": False, "text_only": False, "job_id": "9001",
            "cluster": "dev", "state": "FAILED", "class_id": diagnosis.class_id,
            "hint": diagnosis.hint, "detail": diagnosis.detail, "translations": {},
            "site_hint": False, "facts": {}, "text": "job 9001", "card": {},
            "reason": {"kind": str(dec.kind), "class_id": diagnosis.class_id,
                       "resume_from": dec.resume_from, **dec.facts}}
    return render_template("event", lang, view)["text"], dec


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["shm", "fd_limit"])
def test_a_mem_0_jobs_shm_or_fd_failure_is_told_its_own_fix(kind: str, lang: str) -> None:
    text, dec = _head(worker_killed(kind), lang)
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None  # type: ignore[attr-defined]
    assert "resubmit_mem" not in dec.offers  # type: ignore[attr-defined]
    assert "host memory" not in dec.reason  # type: ignore[attr-defined]
    assert OWN_FIX[kind, lang] in text, text
    assert HOST[lang] not in text and CUT_HOST[lang] not in text, text
    assert MORE_MEM[lang] not in text, text


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["shm", "fd_limit"])
def test_its_card_says_its_own_fix_and_no_whole_node_paragraph(kind: str, lang: str) -> None:
    view = build_incident(worker_killed(kind), recipe="r", job_id="9001",
                          last_checkpoint_iter=500, now=NOW, state="FAILED",
                          mem_limit_bytes=WHOLE_NODE.mem_limit_bytes, whole_node_mem=True,
                          max_rss_bytes=40 * GIB, mem_policy=PolicyConfig(max_mem="1T"))
    assert not view.mem_whole_node and view.whole_node
    assert not any(p.mem for p in view.proposals)
    blocks = render_template("incident", lang, view)
    text = blocks_to_text(blocks["blocks"], blocks["text"])
    assert OWN_FIX[kind, lang] in text, text
    assert CUT_HOST[lang] not in text and MORE_MEM[lang] not in text, text
    assert "mem_whole_node" not in json.dumps(blocks)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_worker_killed_for_host_memory_keeps_the_whole_node_sentence(lang: str) -> None:
    text, dec = _head(worker_killed(None), lang)
    assert dec.facts["why"] == "mem_whole_node"  # type: ignore[attr-defined]
    assert HOST[lang] in text and CUT_HOST[lang] in text and MORE_MEM[lang] not in text, text
