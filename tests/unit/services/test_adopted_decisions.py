"""What a run thread says about a job trainbot did not submit (adopted with `/train watch`,
with the fakes): it has no recipe, so no retry budget and nothing trainbot could resubmit or
resume it with; its decisions charge nothing, offer no button they could not carry out, and
ask no question they offer no answer to (en + ko)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import FakeSFTP, FakeSlurm, adopt, recorded
from support.e2e import NOW

from bot.core.units import GIB
from bot.services.home import home_view, render_home
from bot.services.ports import BotContext
from bot.services.threads import render, root_view
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents

LEAD = "U0APPR"  # adopts the job: slack.approvers may watch a job trainbot did not submit
LOG = "/home/bob/logs/eval-4242.out"
PROGRESS = "".join(f"[2025-03-02 10:0{i}:00] iter {i * 100}/1000 loss 1.0\n" for i in range(1, 4))
NCCL = ("[E ProcessGroupNCCL.cpp:1182] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1045, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600123 milliseconds before timing out.\n")


@pytest.fixture
def slurm() -> FakeSlurm:
    slurm = FakeSlurm()
    slurm.add(4242, name="eval-run", state="RUNNING", user="bob", stdout_path=LOG,
              start_time=NOW - 600)
    return slurm


@pytest.fixture
def sftp() -> FakeSFTP:
    sftp = FakeSFTP()
    sftp.clock = NOW  # the log's lines arrive as the job is adopted
    sftp.append(LOG, PROGRESS.encode())
    return sftp


def adopt_4242(ctx: BotContext) -> int:
    return adopt(ctx, 4242, actor=LEAD, now=NOW)


def watcher(ctx: BotContext, slurm: FakeSlurm, sftp: FakeSFTP) -> Watcher:
    return Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
                   catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=ctx.config)


def fails_of_nccl_timeout(ctx: BotContext, slurm: FakeSlurm, sftp: FakeSFTP) -> int:
    """Adopt job 4242, let it run, then end it FAILED with an NCCL watchdog abort (a
    retryable class that charges the budget of a run trainbot submitted)."""
    chain_id = adopt_4242(ctx)
    w = watcher(ctx, slurm, sftp)
    w.tick(NOW + 30)
    sftp.append(LOG, NCCL.encode())
    slurm.set(4242, state="FAILED", exit_code=1, signal=0, end_time=NOW + 50)
    w.tick(NOW + 60)
    return chain_id


def thread_reply(ctx: BotContext, key: str) -> tuple[str, list[dict[str, Any]]]:
    [text] = [p[3] for p in recorded(ctx).posts if p[0] == "reply" and p[2] == key]
    return text, recorded(ctx).blocks[key]


def proposed(blocks: list[dict[str, Any]]) -> str:
    """The incident's "*Proposed:*" line (Korean: "*제안:*")."""
    [text] = [b["text"]["text"] for b in blocks if "text" in b and b["type"] == "section"
              and b["text"]["text"].startswith(("*Proposed:*", "*제안:*"))]
    return str(text)


def stored_decision(ctx: BotContext, chain_id: int) -> dict[str, Any]:
    [incident] = [i for i in ctx.store.incidents.for_chain(chain_id)
                  if i.key.endswith(":final")]
    return incident.diagnosis["decision"]


@pytest.mark.parametrize(("lang", "said", "proposal"), [
    ("en", "job 4242 FAILED: nccl_timeout — nccl_timeout is retryable; trainbot did not submit "
     "this job, so it resubmits nothing: resubmit it yourself from the last complete checkpoint "
     "(unknown: no recipe names its checkpoint dir)",
     "*Proposed:* resume from the last complete checkpoint (unknown: no recipe names its "
     "checkpoint dir), by hand: trainbot did not submit this job, so it resubmits nothing"),
    ("ko", "작업 4242 FAILED: nccl_timeout — nccl_timeout은(는) 재시도할 수 있는 실패입니다. 이 "
     "작업은 trainbot이 제출하지 않아 아무것도 재제출하지 않습니다: 마지막 완전한 "
     "체크포인트부터 (체크포인트 디렉터리를 알려 주는 레시피가 없어 어느 체크포인트인지 "
     "모릅니다) 직접 재제출하세요",
     "*제안:* 마지막 완전한 체크포인트부터 (체크포인트 디렉터리를 알려 주는 레시피가 없어 어느 "
     "체크포인트인지 모릅니다) 직접 재개하세요: 이 작업은 trainbot이 제출하지 않아 아무것도 "
     "재제출하지 않습니다"),
])
def test_an_adopted_jobs_failure_charges_no_retry_and_names_no_budget(ctx, slurm, sftp, lang,
                                                                     said, proposal):
    """A retryable failure of a job with no recipe: nothing is charged to a budget it does not
    have. Its thread says who resubmits it, not "(charged: 1 of 3 retries)", and so does the
    incident's proposal (no resume trainbot would make); the stored
    decision is not charged and names no charge; the chain's ledger stays at 0 and its root
    names no retries."""
    chain_id = fails_of_nccl_timeout(ctx, slurm, sftp)
    text, blocks = thread_reply(ctx, "dev:4242:final")
    assert text == said
    assert proposed(blocks) == proposal
    assert "charged" not in text and "재시도 한도" not in text
    decision = stored_decision(ctx, chain_id)
    assert decision["charged"] is False
    assert {"charge_no", "budget"}.isdisjoint(decision["facts"]), decision["facts"]
    assert ctx.store.chains.get(chain_id).retries_used == 0
    blocks, _ = render(ctx, "root", None, root_view(ctx, chain_id))
    root = str(blocks)
    assert "retries" not in root and "재시도" not in root, root


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "no training progress since iteration 300 for 12 min. trainbot did not submit this "
     "job, so it offers no resume: if it is stuck, `/train cancel 4242` cancels it"),
    ("ko", "iteration 300 이후 12분째 학습 진행이 없습니다. 이 작업은 trainbot이 제출하지 않아 "
     "재개를 제안하지 않습니다: 멈춰 있다면 `/train cancel 4242`로 취소하세요"),
])
def test_an_adopted_jobs_stall_asks_no_question_it_offers_no_answer_to(ctx, slurm, sftp, lang,
                                                                       said):
    """A job with no recipe stops making progress: nothing could resume it, so its note
    neither asks "Cancel and resume from the last complete checkpoint?" nor carries buttons:
    it says trainbot will not resume it and how a person cancels it."""
    chain_id = adopt_4242(ctx)
    w = watcher(ctx, slurm, sftp)
    for after in (0, 60, 400, 700):  # progress stops at iteration 300, ~10:03
        w.tick(NOW + after)
    [key] = [p[2] for p in ctx.sink.posts if p[0] == "reply"]
    text, blocks = thread_reply(ctx, key)
    assert key.startswith("dev:4242:hang:") and text == said
    assert "?" not in text and [b for b in blocks if b["type"] == "actions"] == []
    assert ctx.store.approvals.for_chain(chain_id) == []  # no prompt behind it either


@pytest.mark.parametrize(("lang", "said", "home", "proposal"), [
    ("en", "job 4242 OUT_OF_MEMORY: host_oom — host memory exhausted: trainbot did "
     "not submit this job, so it resubmits nothing: resubmit it "
     "yourself from the last complete checkpoint (unknown: no recipe names its checkpoint dir) "
     "with --mem=180G",
     "Last incident: host_oom (job 4242), resume from the last complete checkpoint (unknown: no "
     "recipe names its checkpoint dir) · adopted: not resubmitted by trainbot",
     "*Proposed:* nothing: trainbot did not submit this job, so it resubmits nothing"),
    ("ko", "작업 4242 OUT_OF_MEMORY: host_oom — 호스트 메모리 부족: "
     "이 작업은 trainbot이 제출하지 않아 아무것도 재제출하지 않습니다: 마지막 완전한 "
     "체크포인트부터 (체크포인트 디렉터리를 알려 주는 레시피가 없어 어느 체크포인트인지 "
     "모릅니다) --mem=180G으로 직접 재제출하세요",
     "마지막 인시던트: host_oom (작업 4242), 마지막 완전한 체크포인트부터 (체크포인트 디렉터리를 "
     "알려 주는 레시피가 없어 어느 체크포인트인지 모릅니다) 재개 · 가져온 작업: trainbot이 다시 "
     "제출하지 않음",
     "*제안:* 없음: 이 작업은 trainbot이 제출하지 않아 아무것도 재제출하지 않습니다"),
])
def test_an_adopted_jobs_decision_offers_no_resubmit_it_cannot_make(ctx, slurm, sftp, lang,
                                                                   said, home, proposal):
    """A host OOM of a job with no recipe: no prompt could resubmit it (a prompt resubmits a
    recipe), so its decision offers no Resubmit or --mem button, proposes none in words (its
    incident's proposal says trainbot resubmits nothing, not that one waits for approval), and
    leaves the --mem to the person who resubmits it; the stored decision, the thread and the
    Home row say the same."""
    chain_id = adopt_4242(ctx)
    w = watcher(ctx, slurm, sftp)
    w.tick(NOW + 30)
    slurm.set(4242, state="OUT_OF_MEMORY", exit_code=0, signal=9, end_time=NOW + 50,
              mem_limit_bytes=120 * GIB, max_rss_bytes=119 * GIB)
    w.tick(NOW + 60)
    text, blocks = thread_reply(ctx, "dev:4242:final")
    assert text == said and "propos" not in text and "제안" not in text
    assert proposed(blocks) == proposal
    assert "approv" not in str(blocks) and "승인" not in str(blocks)
    assert [b for b in blocks if b["type"] == "actions"] == []
    assert ctx.store.approvals.for_chain(chain_id) == []
    decision = stored_decision(ctx, chain_id)
    assert (decision["kind"], decision["offers"], decision["mem"]) == (
        "ask_human", ["dismiss"], "180G")
    assert decision["facts"]["by_hand"] is True and decision["not_before"] is None
    tab = "\n".join(str(b.get("text", {}).get("text", ""))
                    for b in render_home(ctx, home_view(ctx, LEAD, NOW)))
    assert home in tab, tab


def leaking_log() -> bytes:
    """Host RSS 40 GiB + 12 GiB per 100 iterations up to iteration 670, then an OOM kill."""
    lines = [f"2025-05-14 {10 + 45 * k // 3600:02d}:{45 * k // 60 % 60:02d}:{45 * k % 60:02d} | "
             f"INFO | iter: {i}/6000 | loss: 0.9 | 4.50 s/iter | rss: {40 + 0.12 * i:.1f} GiB\n"
             for k, i in enumerate(range(0, 671, 10))]
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the "
                 "step tasks have been OOM Killed.\n")
    return "".join(lines).encode()


@pytest.mark.parametrize(("lang", "advice"), [
    ("en", " To find what grows, run `trainbot probe dataloader MODULE:FACTORY --workers 2 "
     "--samples 160` on the cluster from the job's working directory, in its Python environment "
     "(MODULE:FACTORY: the function that builds the job's Dataset)."),
    ("ko", " 무엇이 늘어나는지 찾으려면 클러스터에서 이 작업의 작업 디렉터리와 Python 환경으로 "
     "`trainbot probe dataloader MODULE:FACTORY --workers 2 --samples 160`를 실행하세요"
     "(MODULE:FACTORY: 이 작업의 Dataset을 만드는 함수)."),
])
def test_an_adopted_jobs_leak_advice_names_no_recipe_it_does_not_have(ctx, slurm, sftp, lang,
                                                                       advice):
    """A host OOM after a steady leak of a job with no recipe: the incident's memory paragraph
    tells how to run the DataLoader probe by hand, where the job ran, and does not send the
    reader to a recipe's config (it said "set `dataloader_probe.factory` in recipe 's
    config")."""
    adopt_4242(ctx)
    w = watcher(ctx, slurm, sftp)
    w.tick(NOW + 30)
    sftp.append(LOG, leaking_log())
    slurm.set(4242, state="OUT_OF_MEMORY", exit_code=0, signal=9, end_time=NOW + 50,
              mem_limit_bytes=120 * GIB, max_rss_bytes=119 * GIB)
    w.tick(NOW + 60)
    _, blocks = thread_reply(ctx, "dev:4242:final")
    [leak] = [b["text"]["text"] for b in blocks if b.get("block_id") == "leak_remedy"]
    assert leak.endswith(advice), leak
    assert "recipe" not in leak and "레시피" not in leak


def test_logs_of_an_adopted_job_slurm_gives_no_path_for_say_none_is_known(ctx, slurm) -> None:
    """An adopted job has no recipe to take a log path from: once Slurm no longer names its
    log, `/train logs` says no path is known, as for a recipe without log_path."""
    from bot.core import train_grammar as c
    from bot.services.train import execute

    adopt_4242(ctx)
    slurm.set(4242, stdout_path=None)
    reply = execute(ctx, c.Logs(4242), actor="W0LEAD", channel=None, now=NOW + 60)
    assert reply.text.startswith("no log path known for job 4242 (Slurm no longer knows it "
                                 "and its recipe has no log_path)"), reply.text
