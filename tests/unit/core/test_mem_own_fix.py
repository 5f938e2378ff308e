"""A DataLoader worker's death whose cause is not host memory (its workers out of /dev/shm,
the process at its open-file limit) on a job that is NOT whole-node: before, it was told
"host memory exhausted (a DataLoader worker was killed): proposing to resubmit with --mem=…"
and offered a --mem button, though more host memory fixes neither. It is now told its own fix
(fewer workers, a larger /dev/shm, the file_system sharing strategy, `ulimit -n`), a person
decides, and no --mem is proposed, as for a --mem=0 job (test_mem_whole_node_causes)."""

from __future__ import annotations

import pytest
from test_mem_whole_node import NOW
from test_mem_whole_node_causes import MORE_MEM, OWN_FIX, worker_killed

from bot.config import PolicyConfig
from bot.core.incident import build_incident
from bot.core.models import Accounting, Diagnosis
from bot.core.policy import ChainHistory, DecisionKind, decide
from bot.core.units import GIB
from bot.slack.render import blocks_to_text, render_template

LIMITED = Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=64 * GIB,
                     max_rss_bytes=40 * GIB)
HOST = {"en": "host memory exhausted", "ko": "호스트 메모리 부족"}


def _head(diagnosis: Diagnosis, lang: str) -> tuple[str, object]:
    dec = decide(diagnosis, ChainHistory(attempts=()), PolicyConfig(max_mem="1T"), NOW,
                 checkpoint_iter=500, accounting=LIMITED)
    view = {"kind": "incident", "prompt": False, "text_only": False, "job_id": "9001",
            "cluster": "dev", "state": "FAILED", "class_id": diagnosis.class_id,
            "hint": diagnosis.hint, "detail": diagnosis.detail, "translations": {},
            "site_hint": False, "facts": {}, "text": "job 9001", "card": {},
            "reason": {"kind": str(dec.kind), "class_id": diagnosis.class_id,
                       "resume_from": dec.resume_from, **dec.facts}}
    return render_template("event", lang, view)["text"], dec


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["shm", "fd_limit"])
def test_a_limited_jobs_shm_or_fd_failure_is_told_its_own_fix(kind: str, lang: str) -> None:
    text, dec = _head(worker_killed(kind), lang)
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None  # type: ignore[attr-defined]
    assert "resubmit_mem" not in dec.offers  # type: ignore[attr-defined]
    assert "--mem" not in dec.reason  # type: ignore[attr-defined]
    assert not dec.facts.get("whole_node")  # type: ignore[attr-defined]
    assert OWN_FIX[kind, lang] in text, text
    assert HOST[lang] not in text and MORE_MEM[lang] not in text and "--mem=" not in text, text


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["shm", "fd_limit"])
def test_its_card_proposes_no_mem(kind: str, lang: str) -> None:
    view = build_incident(worker_killed(kind), recipe="r", job_id="9001",
                          last_checkpoint_iter=500, now=NOW, state="FAILED",
                          mem_limit_bytes=LIMITED.mem_limit_bytes,
                          max_rss_bytes=40 * GIB, mem_policy=PolicyConfig(max_mem="1T"))
    assert view.own_fix and not view.whole_node and not view.mem_whole_node
    assert not any(p.mem for p in view.proposals)
    blocks = render_template("incident", lang, view)
    text = blocks_to_text(blocks["blocks"], blocks["text"])
    assert OWN_FIX[kind, lang] in text, text
    assert MORE_MEM[lang] not in text and "--mem=" not in text, text


def test_a_worker_killed_for_host_memory_still_gets_its_mem() -> None:
    dec = decide(worker_killed(None), ChainHistory(attempts=()), PolicyConfig(max_mem="1T"), NOW,
                 checkpoint_iter=500, accounting=LIMITED)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT
    assert dec.mem
