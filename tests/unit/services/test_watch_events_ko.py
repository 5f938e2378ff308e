"""The watcher's own words in a Korean recipe's thread (templates/event.json.j2 with the
Korean message catalogue, through ThreadEvents): incident and stall-prompt head lines, notes
for held / unknown / resubmitted / cluster outages and early warnings, with the right numbers;
an English recipe's thread reads exactly the watcher's English sentence."""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from fakes import T0, FakeCheckpoints, FakeSFTP, FakeSlurm, SstatSlurm, make_context, writer

from bot.core.catalogue import Catalogue
from bot.core.diagnose import analyze_file
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics, NeverStarted
from bot.core.policy import (
    AttemptFacts,
    ChainHistory,
    CpuEvidence,
    PastWarning,
    PolicyParams,
    decide,
    early_warnings,
    own_history,
    task_history,
)
from bot.core.slurm.records import JobRecord
from bot.core.text import N_
from bot.core.units import GIB
from bot.services.watch.events import WatchEvent
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

STORY = Path(__file__).resolve().parents[2] / "fixtures" / "stories" / "88154.log"
LOG = "/scratch/mix/logs/mix-88154.out"
FAILED = Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=950 * GIB,
                    max_rss_bytes=940 * GIB)
MANUAL = PolicyParams(backoff_s=60)


@cache
def catalogue() -> Catalogue:
    return Catalogue.load()


def diag(class_id: str, *, last_iter: int | None = 3400, **kw) -> Diagnosis:
    """A Diagnosis with the real catalogue's flags, title and hint (translated when shown)."""
    cls = catalogue().classes[class_id]
    metrics = kw.pop("metrics", None) or DiagnosisMetrics(last_iter=last_iter, target_iter=8000)
    return Diagnosis(class_id=class_id, action=cls.action, retryable=cls.retryable,
                     charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                     metrics=metrics, **kw)


def history(*last_iters: int | None, retries_used: int = 0) -> ChainHistory:
    return ChainHistory(attempts=tuple(AttemptFacts(str(88154 + i), i + 1, last_iter=it)
                                       for i, it in enumerate(last_iters)),
                        retries_used=retries_used)


def thread(store: Store, lang: str, **recipe):
    ctx = make_context(store, clock=lambda: T0, lang=lang, **recipe)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, chain


def replies(ctx) -> list[str]:
    return [p[3] for p in ctx.sink.posts if p[0] == "reply"]


def incident(chain_id: int, d: Diagnosis, dec, state: str = "FAILED") -> WatchEvent:
    """The incident event exactly as the watcher builds it (`Watcher._finished`)."""
    text = f"job 88154 {state}: {d.class_id} — {dec.reason}"
    return WatchEvent("incident", "dev:88154:final", "dev", text, chain_id, "88154", "mix",
                      diagnosis=d, decision=dec, record=JobRecord(job_id=88154, state=state))


@contextmanager
def own_store(store: Store) -> Iterator[Store]:
    """A new store beside `store`, for one thread of a test that shows one job's event in
    each language: one job's event has one key, which the poster posts once."""
    path = Path(store.url.removeprefix("sqlite:///")).with_name(f"{uuid.uuid4().hex}.db")
    with Store.open(f"sqlite:///{path}") as s:
        yield s


def heads(store: Store, lang: str, d: Diagnosis, dec, state: str = "FAILED") -> str:
    """The head line the thread shows for this incident (first reply, owners mentioned)."""
    with own_store(store) as s:
        ctx, chain = thread(s, lang)
        ThreadEvents(ctx).publish(incident(chain.id, d, dec, state))
        return replies(ctx)[0]


# ------------------------------------------------------------------ incident head lines


def test_budget_exhausted_head_is_korean_with_the_budget_and_english_is_unchanged(store):
    d = diag("nccl_timeout")
    dec = decide(d, history(3000, 3400, retries_used=3), MANUAL, T0, checkpoint_iter=3000,
                 accounting=FAILED)
    assert heads(store, "ko", d, dec) == (
        "<@U0OWNER> 작업 88154 FAILED: nccl_timeout — 재시도 한도 소진: 이 체인에서 재제출 3회 중 "
        "3회를 모두 썼습니다. 사람이 결정해야 합니다 (nccl_timeout)")
    assert heads(store, "en", d, dec) == (
        "<@U0OWNER> job 88154 FAILED: nccl_timeout — retry budget exhausted: 3 of 3 resubmits "
        "used in this chain; a person must decide (nccl_timeout)")


def test_proposed_resubmit_head_names_iteration_work_lost_and_the_charge(store):
    d = diag("nccl_timeout")
    dec = decide(d, history(3400, retries_used=1), MANUAL, T0, checkpoint_iter=3000,
                 accounting=FAILED)
    assert heads(store, "ko", d, dec) == (
        "<@U0OWNER> 작업 88154 FAILED: nccl_timeout — nccl_timeout은(는) 재시도할 수 있는 "
        "실패입니다: iteration 3,000부터 재제출을 제안합니다 (재시도 한도 3회 중 2회째)")
    assert heads(store, "en", d, dec) == (
        "<@U0OWNER> job 88154 FAILED: nccl_timeout — nccl_timeout is retryable: proposing to "
        "resubmit from iteration 3,000 (charged: 2 of 3 retries)")


@pytest.mark.parametrize(("class_id", "state", "setup", "korean"), [
    ("time_limit", "TIMEOUT", {"policy": PolicyParams(auto_resubmit=True), "ck": None},
     "time_limit은(는) 재시도할 수 있는 실패입니다: 완전한 체크포인트가 없어 처음부터 자동으로 "
     "재제출합니다 (재시도 한도 3회 중 1회째)"),
    ("node_failure", "NODE_FAIL", {"ck": 3000},
     "node_failure은(는) 재시도할 수 있는 실패입니다: iteration 3,000부터 재제출을 제안합니다 "
     "(재시도 한도에 포함되지 않음)"),
    ("nccl_timeout", "FAILED", {"attempts": (3400, 3400)},
     "실제로 실행된 마지막 시도인 작업 88154보다 진행이 없습니다 (작업 88155은(는) iteration "
     "3400에서, 작업 88154은(는) iteration 3400에서 멈췄습니다). nccl_timeout을(를) 다시 "
     "재시도하지 않고 체인을 멈춥니다"),
    ("host_oom", "OUT_OF_MEMORY", {"ck": 3000},
     "호스트 메모리 부족 (한도 950.0 GiB, MaxRSS 940.0 GiB): iteration 3,000부터 --mem=1430G으로 "
     "재제출을 제안합니다"),
    ("dataloader_worker_killed", "FAILED", {"ck": 3000, "during": True},
     "호스트 메모리 부족 (DataLoader 워커가 종료됨, 체크포인트 저장 중, 한도 950.0 GiB, MaxRSS "
     "940.0 GiB): iteration 3,000부터 --mem=1900G으로 재제출을 제안합니다"),
    ("host_oom", "OUT_OF_MEMORY", {"ck": 3000, "policy": PolicyParams(mem_cap_bytes=950 * GIB)},
     "호스트 메모리 부족: 950.0 GiB(으)로 이미 사이트 상한(950.0 GiB)이므로 --mem 대신 호스트 "
     "메모리 사용량을 줄여야 합니다. --mem을 늘려 재제출하거나(사이트의 GPU당 상한 확인) 호스트 "
     "메모리 사용을 줄이세요: DataLoader 워커 수와 prefetch를 줄이고, 체크포인트는 CPU로 "
     "gather하지 않고 저장하세요."),
    ("unknown_failure", "FAILED", {"ck": 3000},
     "unknown_failure: 사람이 결정해야 합니다. iteration 3,000부터 재제출할 수 있습니다. "
     "첨부된 마지막 줄들을 읽어 보세요. 같은 실패가 반복되면 사이트 카탈로그에 "
     "시그니처를 추가하세요."),
])
def test_other_decisions_read_in_korean_with_their_figures(store, class_id, state, setup, korean):
    d = diag(class_id, during_checkpoint_save=setup.get("during", False))
    dec = decide(d, history(*setup.get("attempts", (3400,))), setup.get("policy", MANUAL), T0,
                 checkpoint_iter=setup.get("ck"), accounting=replace(FAILED, state=state))
    assert heads(store, "ko", d, dec, state) == \
        f"<@U0OWNER> 작업 88154 {state}: {class_id} — {korean}"


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "no progress over the last attempt that ran, job 88152 (job 88154 stopped at "
           "iteration 3400, job 88152 at 3400); stopping the chain instead of retrying "
           "nccl_timeout again"),
    ("ko", "실제로 실행된 마지막 시도인 작업 88152보다 진행이 없습니다 (작업 88154은(는) "
           "iteration 3400에서, 작업 88152은(는) iteration 3400에서 멈췄습니다). "
           "nccl_timeout을(를) 다시 재시도하지 않고 체인을 멈춥니다"),
])
def test_no_progress_names_the_last_attempt_that_ran_not_the_one_just_before(store, lang, said):
    """[88152 ran to 3400, 88153 ended in the queue, 88154 crashed at 3400]: the chain stops
    for no progress over 88152, the latest attempt that ran (6d375bb skips the never-started
    one), and the head line says so. Before, it read "previous attempt 88152", though the
    attempt just before 88154 was 88153."""
    d = diag("nccl_timeout")
    chain = ChainHistory(attempts=(
        AttemptFacts("88152", 1, last_iter=3400), AttemptFacts("88153", 2, ran=False),
        AttemptFacts("88154", 3, last_iter=3400)), retries_used=1)
    dec = decide(d, chain, MANUAL, T0, checkpoint_iter=3000, accounting=FAILED)
    assert dec.facts["why"] == "no_progress" and dec.facts["prev_job"] == "88152"
    assert heads(store, lang, d, dec) == f"<@U0OWNER> {JOB_FAILED[lang]}{said}"
    assert "previous" not in heads(store, "en", d, dec)


JOB_FAILED = {"en": "job 88154 FAILED: nccl_timeout — ", "ko": "작업 88154 FAILED: nccl_timeout — "}


@pytest.mark.parametrize(("policy", "last_iter", "english", "korean"), [
    (PolicyParams(auto_resubmit=True), 4000,
     "chunk from iteration 2,000 ended at the time limit after saving iter 4,000: "
     "resubmitting; retries not charged",
     "iteration 2,000부터 시작한 구간이 시간 제한으로 끝났고 그 전에 iter 4,000 체크포인트를 "
     "저장했습니다: 자동으로 재제출합니다. 진행이 있었으므로 재시도 한도에 포함되지 않습니다"),
    (MANUAL, 4300,
     "chunk from iteration 2,000 ended at the time limit after saving iter 4,000: "
     "proposing to resubmit; retries not charged",
     "iteration 2,000부터 시작한 구간이 시간 제한으로 끝났고 그 전에 iter 4,000 체크포인트를 "
     "저장했습니다: 재제출을 제안합니다. 진행이 있었으므로 "
     "재시도 한도에 포함되지 않습니다"),
])
def test_a_time_limit_chunk_that_saved_a_newer_checkpoint_says_it_is_not_charged(
        store, policy, last_iter, english, korean):
    d = diag("time_limit", last_iter=last_iter)
    chain = ChainHistory(attempts=(AttemptFacts("88154", 1, start_iter=2000),), retries_used=3)
    dec = decide(d, chain, policy, T0, checkpoint_iter=4000,
                 accounting=replace(FAILED, state="TIMEOUT"))
    assert heads(store, "en", d, dec, "TIMEOUT") == \
        f"<@U0OWNER> job 88154 TIMEOUT: time_limit — {english}"
    assert heads(store, "ko", d, dec, "TIMEOUT") == \
        f"<@U0OWNER> 작업 88154 TIMEOUT: time_limit — {korean}"


def test_a_chunk_past_the_cap_of_free_chunks_says_why_it_is_charged(store):
    d = diag("time_limit", last_iter=6000)
    chunk = [AttemptFacts(str(88150 + n), n + 1, start_iter=start, class_id="time_limit")
             for n, start in enumerate((None, 2000))]
    chain = ChainHistory(attempts=(*chunk, AttemptFacts("88154", 3, start_iter=4000)),
                         retries_used=1)
    dec = decide(d, chain, PolicyParams(auto_resubmit=True, max_free_chunks=2), T0,
                 checkpoint_iter=6000, accounting=replace(FAILED, state="TIMEOUT"))
    assert dec.charged and dec.facts["why"] == "chunk_capped"
    assert heads(store, "en", d, dec, "TIMEOUT") == (
        "<@U0OWNER> job 88154 TIMEOUT: time_limit — chunk from iteration 4,000 ended at the "
        "time limit after saving iter 6,000: resubmitting (charged: 2 of 3 retries): 2 chunks "
        "in a row went uncharged, the recipe's max_free_chunks")
    assert heads(store, "ko", d, dec, "TIMEOUT") == (
        "<@U0OWNER> 작업 88154 TIMEOUT: time_limit — iteration 4,000부터 시작한 구간이 시간 "
        "제한으로 끝났고 그 전에 iter 6,000 체크포인트를 저장했습니다: 자동으로 재제출하며 "
        "이번에는 재시도 한도에 포함합니다 (재시도 한도 3회 중 2회째). 재시도 한도에 포함되지 "
        "않은 구간이 연속 2개로 레시피의 max_free_chunks에 이르렀습니다")


def test_a_chunk_that_saved_a_checkpoint_named_without_an_iteration_names_it(store):
    d = diag("time_limit", last_iter=6000)
    chain = ChainHistory(attempts=(AttemptFacts("88154", 1, start_iter=4000,
                                                start_checkpoint="/ck/mix/iter_0004000"),))
    dec = decide(d, chain, MANUAL, T0, checkpoint_name="final",
                 accounting=replace(FAILED, state="TIMEOUT"))
    assert not dec.charged
    assert heads(store, "en", d, dec, "TIMEOUT") == (
        "<@U0OWNER> job 88154 TIMEOUT: time_limit — chunk from iteration 4,000 ended at the "
        "time limit after saving checkpoint `final`: proposing to resubmit; retries not charged")
    assert heads(store, "ko", d, dec, "TIMEOUT") == (
        "<@U0OWNER> 작업 88154 TIMEOUT: time_limit — iteration 4,000부터 시작한 구간이 시간 "
        "제한으로 끝났고 그 전에 체크포인트 `final`을(를) 저장했습니다: 재제출을 제안합니다. "
        "진행이 있었으므로 재시도 한도에 포함되지 않습니다")


def test_a_stop_class_head_carries_the_catalogues_korean_hint(store):
    d = diag("cuda_oom")
    dec = decide(d, history(3400), MANUAL, T0, checkpoint_iter=3000, accounting=FAILED)
    head = heads(store, "ko", d, dec)
    assert head.startswith("<@U0OWNER> 작업 88154 FAILED: cuda_oom — cuda_oom은(는) 재시도할 수 "
                           "없는 실패입니다: 그대로 재제출하면 같은 이유로 다시 실패합니다. GPU당 "
                           "배치 크기나")
    assert "Lower the per-GPU" not in head


@pytest.mark.parametrize(("lang", "line"), [
    ("en", "✅ Completed · job 88155: reached iteration 8,000 / 8,000 in 2 h 05 min, in 2 "
           "attempts (retries used: 1)."),
    ("ko", "✅ 완료 · 작업 88155: iteration 8,000 / 8,000 도달, 소요 2시간 5분, 시도 2회 (사용한 "
           "재시도 1회)."),
])
def test_a_completed_run_is_one_resolution_line_not_an_incident(store, lang, line):
    ctx, chain = thread(store, lang)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0 - 7500)
    store.attempts.record(chain_id=chain.id, job_id="88155", now=T0 - 3000, charge_retry=True)
    d = diag("completed", last_iter=8000)
    dec = decide(d, history(3400, 8000), MANUAL, T0,
                 accounting=replace(FAILED, state="COMPLETED"))
    event = replace(incident(chain.id, d, dec, "COMPLETED"), job_id="88155")
    ThreadEvents(ctx).publish(event)
    posts = [p for p in ctx.sink.posts if p[0] == "reply"]
    assert [p[3] for p in posts] == [line]  # no owner mention, no evidence, no charts


def test_a_first_attempt_completion_says_so(store):
    ctx, chain = thread(store, "en")
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0 - 95)
    d = diag("completed", last_iter=240, metrics=DiagnosisMetrics(last_iter=240, target_iter=240))
    dec = decide(d, history(240), MANUAL, T0, accounting=replace(FAILED, state="COMPLETED"))
    ThreadEvents(ctx).publish(incident(chain.id, d, dec, "COMPLETED"))
    assert replies(ctx) == ["✅ Completed · job 88154: reached iteration 240 / 240 in 95 s, "
                            "first attempt."]


@pytest.mark.parametrize(("lang", "said"), [
    ("en", " Its log /scratch/mix/logs/mix-88154.out did not exist, so it was judged from "
           "Slurm's accounting alone. The memory samples at /scratch/mix/logs/rss-88154.jsonl "
           "could not be read (reading it failed on the login node (dd exit 1)), so there is no "
           "RSS chart."),
    ("ko", " 로그 /scratch/mix/logs/mix-88154.out이(가) 없어 Slurm 회계 기록만으로 "
           "판단했습니다. /scratch/mix/logs/rss-88154.jsonl의 메모리 샘플을 읽을 수 없어 (로그인 "
           "노드에서 읽기에 실패했습니다 (dd 종료 코드 1)) RSS 차트가 없습니다."),
])
def test_a_completed_run_judged_without_its_files_says_so_on_its_line(store, lang, said):
    """A run that COMPLETED whose log did not exist and whose memory samples could not be
    read (Watcher: judged from accounting alone): its ✅ line says both, in the incident's
    words and the thread's language, where it looked as if the bot had read everything."""
    ctx, chain = thread(store, lang)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0 - 95)
    d = diag("completed", last_iter=None, metrics=DiagnosisMetrics())
    dec = decide(d, history(None), MANUAL, T0, accounting=replace(FAILED, state="COMPLETED"))
    reason = N_("reading it failed on the login node (dd exit %(code)s)", code=1)
    ThreadEvents(ctx).publish(replace(
        incident(chain.id, d, dec, "COMPLETED"),
        facts={"log_path": LOG, "log_missing": True,
               "sampler_path": "/scratch/mix/logs/rss-88154.jsonl",
               "sampler_unreadable": reason}))
    finished = {"en": "✅ Completed · job 88154: finished in 95 s, first attempt.",
                "ko": "✅ 완료 · 작업 88154: 종료, 소요 95초, 첫 시도에 완료."}[lang]
    assert replies(ctx) == [finished + said]


# ------------------------------------------------------------------ early warnings


def warn(store: Store, lang: str, dec, d: Diagnosis) -> str:
    with own_store(store) as s:
        ctx, chain = thread(s, lang)
        kind = "note" if dec.kind == "note" else "warning"
        ThreadEvents(ctx).publish(WatchEvent(kind, f"dev:88154:{dec.class_id}", "dev",
                                             dec.reason, chain.id, "88154", "mix",
                                             diagnosis=d, decision=dec))
        return replies(ctx)[0]


def test_stall_prompt_is_korean_with_iteration_minutes_and_cpu(store):
    d = diag("hang", metrics=DiagnosisMetrics(last_iter=3470, stall_seconds=720))
    [dec] = early_warnings(d, ChainHistory(), MANUAL, T0, job_id="88154",
                           cpu=CpuEvidence(before_pct=95.0, after_pct=3.0))
    assert warn(store, "ko", dec, d) == (
        "<@U0OWNER> 작업 88154: iteration 3470 이후 12분째 학습 진행이 없습니다; CPU가 "
        "95 % → 3 %로 떨어졌습니다 (멈춘 것으로 보입니다). 취소하고 마지막 완전한 체크포인트에서 "
        "재개할까요?")
    assert warn(store, "en", dec, d) == (
        "<@U0OWNER> job 88154: no training progress since iteration 3470 for 12 min; CPU fell "
        "95 % → 3 % (likely hung). Cancel and resume from the last complete checkpoint?")


def test_leak_warning_and_low_gpu_note_are_korean(store):
    m = DiagnosisMetrics(last_iter=2000, target_iter=8000, projected_oom_iter=6100,
                         rss_gib_per_100_iter=2.14)
    d = diag("memory_leak", metrics=m)
    past = ChainHistory(warnings=(PastWarning("memory_leak", T0 - 600, projected_oom_iter=9000),))
    [leak, gpu] = early_warnings(d, past, MANUAL, T0, gpu_util_pct=41.6,
                                 worker_rss=(1 * GIB, 3 * GIB))
    assert warn(store, "ko", leak, d) == (
        "호스트 메모리가 100 iteration마다 2.1 GiB씩 늘고 있습니다; 이 속도면 iteration 6100 "
        "부근에서 메모리 한도에 도달합니다 (목표 8000); DataLoader 워커가 1.0 → 3.0 GiB로 "
        "늘었습니다 (샘플별 캐시를 확인하세요) — 지난번 예상보다 빨라졌습니다")
    assert warn(store, "ko", gpu, d) == (
        "GPU 사용률이 42 %입니다 (기준 60 % 미만): 작업은 정상이지만 입력 파이프라인이나 CPU가 "
        "병목일 수 있습니다")
    assert warn(store, "en", gpu, d) == gpu.reason


# ------------------------------------------------------------------ through the watcher


def watcher(ctx, slurm, sftp=None, **kw) -> Watcher:
    sftp = sftp or FakeSFTP()
    return Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
                   catalogue=catalogue(), sink=ThreadEvents(ctx), config=ctx.config,
                   unreachable_ticks=3, **kw)


def test_held_and_unknown_jobs_are_reported_in_korean(store):
    ctx, chain = thread(store, "ko")
    slurm = FakeSlurm()
    slurm.add(87870, state="PENDING", reason="JobHeldAdmin", restart_count=1)
    store.watched_jobs.add("dev", "87870", now=T0, chain_id=chain.id)
    store.watched_jobs.add("dev", "4242", now=T0, chain_id=chain.id)  # Slurm never knows it
    w = watcher(ctx, slurm, policy=PolicyParams(held_report_s=600))
    w.tick(T0)
    w.tick(T0 + 660)
    w.tick(T0 + 960)
    assert replies(ctx) == [
        "작업 87870이(가) 11분째 보류 상태(JobHeldAdmin)입니다. 보통 requeue 뒤에 생기며 저절로 "
        "시작되지 않습니다. 관리자에게 해제를 요청하거나, 취소하고 마지막 완전한 체크포인트에서 "
        "재제출하세요.",
        "작업 4242은(는) 감시를 시작한 지 16분 후에도 squeue와 sacct 어디에도 없습니다 "
        "(accounting에서 지워졌거나 클러스터 dev의 작업이 아닙니다). trainbot은 이 작업의 감시를 "
        "멈췄습니다. `/train watch 4242`로 다시 감시할 수 있습니다.",
    ]


def test_cluster_outage_notes_follow_each_chains_recipe_language(store):
    ctx, ko_chain = thread(store, "ko")
    # A chain whose recipe is gone from the config: the site's language (English).
    en_chain = store.chains.create(recipe="old", cluster="dev", job_name="old", now=T0)
    ctx.sink.post_root(en_chain.id, "C0TRAIN", [], "old")
    slurm = FakeSlurm()
    slurm.add(88887)  # pending: the ticks ask Slurm about it
    store.watched_jobs.add("dev", "88887", now=T0, chain_id=ko_chain.id)
    w = watcher(ctx, slurm)
    slurm.down = True
    for i in range(3):
        w.tick(T0 + 60 * i)
    slurm.down = False
    w.tick(T0 + 600)
    by_chain = {(p[1], p[2].split(":")[2]): p[3] for p in ctx.sink.posts if p[0] == "reply"}
    assert by_chain[(ko_chain.id, "down")] == (
        "클러스터 dev에 3번 연속 연결하지 못했습니다 (2027-01-15 08:00:00 UTC부터): Unable to "
        "contact slurm controller (connect failure). 다시 응답할 때까지 작업을 판단하지 않으며, "
        "작업에 대해 어떤 결론도 내리지 않습니다.")
    assert by_chain[(ko_chain.id, "back")] == (
        "클러스터 dev이(가) 다시 응답합니다 (2027-01-15 08:00:00 UTC부터 연결 불가). 감시를 "
        "재개합니다.")
    assert by_chain[(en_chain.id, "back")] == (
        "cluster dev answers again (unreachable since 2027-01-15 08:00:00 UTC); watching "
        "resumes.")


def story_job(store: Store, ctx, chain, slurm: FakeSlurm, upto: bytes) -> tuple[FakeSFTP, list]:
    """Job 88154 of the chain running the 88154 story up to the line containing `upto`."""
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
    slurm.add(88154, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix",
              mem_limit_bytes=950 * GIB)
    lines = STORY.read_bytes().splitlines(keepends=True)
    cut = next(i for i, x in enumerate(lines) if upto in x) + 1
    sftp = FakeSFTP()
    sftp.append(LOG, b"".join(lines[:cut]))
    return sftp, lines[cut:]


def test_an_automatic_resubmit_is_told_in_korean_with_both_jobs_and_the_iteration(store):
    ctx, chain = thread(store, "ko", policy={"auto_resubmit": True, "backoff_s": 60})
    slurm = FakeSlurm()
    sftp, _ = story_job(store, ctx, chain, slurm, b"iter: 3470/")
    slurm.set(88154, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 1300)

    def resubmit(recipe, chain_id, decision, *, intent):
        store.attempts.record(chain_id=chain_id, job_id="90001", now=T0,
                              charge_retry=decision.charged)
        return "90001"

    w = watcher(ctx, slurm, sftp, checkpoint=FakeCheckpoints(3000), resubmit=resubmit)
    w.tick(T0 + 1310)
    w.tick(T0 + 1380)
    said = replies(ctx)
    # from scratch to a checkpoint at 3000: a time-limit chunk that made progress
    assert said[0] == ("<@U0OWNER> 작업 88154 TIMEOUT: time_limit — 완전한 체크포인트가 없어 "
                       "처음부터 시작한 구간이 시간 제한으로 끝났고 그 전에 iter 3,000 "
                       "체크포인트를 저장했습니다: 자동으로 "
                       "재제출합니다. 진행이 있었으므로 재시도 한도에 포함되지 않습니다")
    assert said[-1] == ("작업 88154을(를) 작업 90001(으)로 자동 재제출했습니다 "
                        "(iteration 3,000부터 재개)")


def test_a_stall_warning_left_unposted_is_posted_in_korean_from_the_store(store):
    ctx, chain = thread(store, "ko")
    slurm = FakeSlurm()
    sftp, rest = story_job(store, ctx, chain, slurm, b"iter: 3470/")
    real_reply = ctx.sink.post_reply
    down = [True]

    def flaky(chain_id, key, blocks, text):
        if down[0]:
            raise RuntimeError("slack is down")
        return real_reply(chain_id, key, blocks, text)

    ctx.sink.post_reply = flaky
    w = watcher(ctx, slurm, sftp, checkpoint=FakeCheckpoints(3000))
    w.tick(T0)
    w.tick(T0 + 360)  # the stall: its post fails, the warning stays pending in the store
    assert replies(ctx) == []
    down[0] = False
    sftp.clock = T0 + 1805
    sftp.append(LOG, b"".join(rest))
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    w.tick(T0 + 1830)
    note, head = replies(ctx)[:2]
    assert note.startswith("iteration 3470 이후 ") and "분째 학습 진행이 없습니다" in note
    assert note.endswith("취소하고 iteration 3,000부터 재제출할까요?")  # looked up for the stall
    assert head.startswith("<@U0OWNER> 작업 88154 FAILED: nccl_timeout — nccl_timeout은(는) "
                           "재시도할 수 있는 실패입니다: iteration 3,000부터 재제출을 제안합니다 "
                           "(재시도 한도 ")


def test_a_leak_seen_through_sstat_says_so_in_korean(store):
    ctx, chain = thread(store, "ko")
    slurm = SstatSlurm()
    store.watched_jobs.add("dev", "88016", now=T0, chain_id=chain.id)
    slurm.add(88016, state="RUNNING", stdout_path=LOG, start_time=T0, mem_limit_bytes=100 * GIB)
    sftp = FakeSFTP()
    w = watcher(ctx, slurm, sftp, judge_every_s=0)
    for tick in range(10):  # no RSS in the log: sstat's MaxRSS grows 0.5 GiB per 20 iterations
        sftp.clock = T0 + 90 * tick
        sftp.append(LOG, "".join(
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(T0 + 90 * tick - 90 + 4.5 * k))}"
            f".000 | INFO | iter: {100 + 20 * tick + k}/8000 | loss: 0.9 | 4.50 s/iter\n"
            for k in range(20)).encode())
        slurm.rss[88016] = 40 * GIB + tick * GIB // 2
        w.tick(T0 + 90 * tick + 1)
    [leak] = replies(ctx)
    assert leak.startswith("호스트 메모리가 100 iteration마다 2.5 GiB씩 늘고 있습니다; 이 속도면 "
                           "iteration ")
    assert leak.endswith("; RSS는 sstat 값입니다 (step batch의 MaxRSS)")


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "<@U0OWNER> job 88154: no training progress since iteration 130 for 8 s"),
    ("ko", "<@U0OWNER> 작업 88154: iteration 130 이후 8초째 학습 진행이 없습니다"),
])
def test_a_short_stall_prompt_reads_in_seconds(store, lang, said):
    d = diag("hang", metrics=DiagnosisMetrics(last_iter=130, stall_seconds=8))
    [dec] = early_warnings(d, ChainHistory(), MANUAL, T0, job_id="88154")
    assert warn(store, lang, dec, d).startswith(said)


@pytest.mark.parametrize("unknown", [
    task_history((), current_job="88154", current_last_iter=4000, catalogue=catalogue()),
    own_history("88154", 4000),
], ids=["a whole-array submit's first task attempt", "a job trainbot did not submit"])
def test_a_time_limit_stop_from_an_unknown_start_says_why_it_is_charged(store, unknown):
    d = diag("time_limit", last_iter=4000)
    dec = decide(d, unknown, PolicyParams(auto_resubmit=True), T0, checkpoint_iter=4000,
                 accounting=replace(FAILED, state="TIMEOUT"))
    assert dec.charged and dec.facts["charged_why"] == "start_unknown"
    assert heads(store, "en", d, dec, "TIMEOUT") == (
        "<@U0OWNER> job 88154 TIMEOUT: time_limit — time_limit is retryable: resubmitting "
        "from iteration 4,000 (charged: 1 of 3 retries, not a free chunk: the checkpoint "
        "this job started from is unknown)")
    assert heads(store, "ko", d, dec, "TIMEOUT") == (
        "<@U0OWNER> 작업 88154 TIMEOUT: time_limit — time_limit은(는) 재시도할 수 있는 "
        "실패입니다: iteration 4,000부터 자동으로 재제출합니다 (재시도 한도 3회 중 1회째. 이 "
        "작업이 시작한 체크포인트를 알 수 없어 진행이 있었던 구간으로 보지 않습니다)")


def test_a_time_limit_stop_from_a_known_start_with_no_newer_save_says_only_the_charge(store):
    d = diag("time_limit", last_iter=4300)
    known = ChainHistory(attempts=(AttemptFacts("88154", 1, start_iter=4000),))
    dec = decide(d, known, PolicyParams(auto_resubmit=True), T0, checkpoint_iter=4000,
                 accounting=replace(FAILED, state="TIMEOUT"))
    assert dec.charged and "charged_why" not in dec.facts
    assert heads(store, "en", d, dec, "TIMEOUT").endswith("(charged: 1 of 3 retries)")


LEAK = {"slope_gib_per_100_iter": 12.0, "start_iter": 0, "start_gib": 40.0}
OOM_120G = Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9, mem_limit_bytes=120 * GIB,
                      max_rss_bytes=118 * GIB)


@pytest.mark.parametrize(("target", "lang", "said"), [
    (6000, "en", "host memory grew steadily (12.0 GiB per 100 iterations); the iteration a "
     "resume starts from is unknown, so this counts from iteration 0, the worst case: reaching "
     "iteration 6,000 needs ≈ 760G (from iteration 670, the last the log reached: ≈ 680G), "
     "above 240G, so from iteration 0 no --mem finishes the run (with 180G it runs ≈ 1,166 "
     "iterations past the checkpoint it resumes from)"),
    (6000, "ko", "호스트 메모리가 꾸준히 증가했습니다(100 iteration당 12.0 GiB); 재개할 "
     "iteration을 알 수 없어 최악의 경우인 iteration 0부터 셉니다: iteration 6,000까지 가려면 "
     "≈ 760G가 필요합니다 (로그가 마지막으로 도달한 iteration 670부터라면 ≈ 680G), 240G를 "
     "넘으므로 iteration 0부터라면 어떤 --mem으로도 실행을 끝낼 수 없습니다(180G로는 재개한 "
     "체크포인트에서 ≈ 1,166 iteration을 더 갑니다)"),
    (1200, "en", "host memory exhausted (limit 120.0 GiB, MaxRSS 118.0 GiB): proposing to "
     "resubmit from checkpoint `final` with --mem=190G; the iteration a resume starts "
     "from is unknown, so this counts from iteration 0, the worst case: reaching iteration "
     "1,200 needs ≈ 190G (from iteration 670, the last the log reached: ≈ 110G)"),
    (1200, "ko", "호스트 메모리 부족 (한도 120.0 GiB, MaxRSS 118.0 GiB): 체크포인트 `final`부터 "
     "--mem=190G으로 재제출을 제안합니다; 재개할 iteration을 알 수 없어 최악의 경우인 "
     "iteration 0부터 셉니다: iteration 1,200까지 가려면 ≈ 190G가 필요합니다 (로그가 마지막으로 "
     "도달한 iteration 670부터라면 ≈ 110G)"),
])
def test_a_leaks_head_line_from_a_checkpoint_known_only_by_name_says_it_is_the_worst_case(
        store, target, lang, said):
    """The checkpoint a resume starts from is `final` (no iteration): the head line counts from
    iteration 0 as the incident's memory paragraph does and says so in its words, with the
    need from the last iteration the log reached."""
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=target))
    dec = decide(d, history(670), MANUAL, T0, accounting=OOM_120G, checkpoint_name="final")
    head = heads(store, lang, d, dec, "OUT_OF_MEMORY")
    assert head.split(" — ", 1)[1] == said, head


def files_not_read_heads(store: Store, facts: dict) -> dict[str, str]:
    """The head line, by language, of a finished job's unknown_failure incident whose files
    the watcher did not read (`facts`, as `Watcher._finished` sets them: they alone say it)."""
    d = diag("unknown_failure", last_iter=None)
    dec = decide(d, history(None), MANUAL, T0, checkpoint_iter=None, accounting=FAILED)
    said = {}
    for lang in ("en", "ko"):
        with own_store(store) as s:
            ctx, chain = thread(s, lang)
            ThreadEvents(ctx).publish(replace(incident(chain.id, d, dec), facts=facts))
            said[lang] = replies(ctx)[0]
    return said


READ_FAILED = N_("reading it failed on the login node (dd exit %(code)s)", code=1)


def test_an_incident_judged_without_its_unreadable_log_says_so_in_each_language(store):
    """A finished job whose log could not be read (Watcher: judged from accounting alone):
    its head line names the log and the reader's reason, in the thread's language."""
    said = files_not_read_heads(store, {"log_path": LOG, "log_unreadable": READ_FAILED})
    assert said["en"].endswith(
        " Its log /scratch/mix/logs/mix-88154.out could not be read (reading it failed on the "
        "login node (dd exit 1)), so it was judged from Slurm's accounting alone.")
    assert said["ko"].endswith(
        " 로그 /scratch/mix/logs/mix-88154.out을(를) 읽을 수 없어 (로그인 노드에서 읽기에 "
        "실패했습니다 (dd 종료 코드 1)) Slurm 회계 기록만으로 판단했습니다.")
    assert said["ko"].startswith("<@U0OWNER> 작업 88154 FAILED: unknown_failure — ")


def test_an_incident_judged_without_its_missing_log_says_so_in_each_language(store):
    """A job that ran and ended whose log did not exist (Watcher: judged from accounting
    alone): its head line names the log's path, in the thread's language."""
    said = files_not_read_heads(store, {"log_path": LOG, "log_missing": True})
    assert said["en"].endswith(
        " Its log /scratch/mix/logs/mix-88154.out did not exist, so it was judged from Slurm's "
        "accounting alone.")
    assert said["ko"].endswith(
        " 로그 /scratch/mix/logs/mix-88154.out이(가) 없어 Slurm 회계 기록만으로 판단했습니다.")


def test_an_incident_of_a_job_that_never_started_says_so_in_each_language(store):
    """A job cancelled while it waited in the queue (sacct: no node, no step, its end as its
    start; the watcher reads no file): the diagnosis says it never started, with what sacct
    says (the State, who cancelled it, why it was pending), and the incident says so in the
    thread's language, offering to submit it again: no class's title or hint about a run
    and its last lines."""
    acct = Accounting(state="CANCELLED", exit_code=0, signal=0,
                      never_started=NeverStarted(cancelled_by=1000, pending_reason="BeginTime"))
    d = analyze_file(io.BytesIO(b""), catalogue()).diagnose(acct)
    dec = decide(d, history(None), MANUAL, T0, checkpoint_iter=None, accounting=acct)
    said, shown = {}, {}
    for lang in ("en", "ko"):
        with own_store(store) as s:
            ctx, chain = thread(s, lang)
            ThreadEvents(ctx).publish(incident(chain.id, d, dec, "CANCELLED"))
            said[lang] = replies(ctx)[0]
            shown[lang] = json.dumps(ctx.sink.blocks["dev:88154:final"], ensure_ascii=False)
    assert said["en"] == (
        "<@U0OWNER> job 88154 never started: Slurm ended it (CANCELLED by user id 1000) while it "
        "waited in the queue, so nothing ran and no work was lost. Its pending reason was "
        "BeginTime. A person decides: resubmit it from scratch (no complete checkpoint), or "
        "dismiss it; trainbot does not submit it again by itself.")
    assert said["ko"] == (
        "<@U0OWNER> 작업 88154은(는) 시작되지 않았습니다: 대기열에서 기다리는 동안 Slurm이 작업을 "
        "끝냈으므로(사용자 ID 1000에 의해 CANCELLED) 아무것도 실행되지 않았고 잃은 작업도 "
        "없습니다. 대기 사유: BeginTime. 사람이 결정합니다: 완전한 체크포인트가 없어 처음부터 "
        "재제출하거나 무시하세요. trainbot은 작업을 스스로 다시 제출하지 않습니다.")
    assert "unknown_failure —" not in said["en"] + said["ko"]
    assert "The job never started" in shown["en"] and "작업이 시작되지 않음" in shown["ko"]
    # the card under the head line names it, and says again none of the head line's facts
    assert (explanation_block(shown["en"]), explanation_block(shown["ko"])) == (
        "*The job never started* (`unknown_failure`, CANCELLED)",
        "*작업이 시작되지 않음* (`unknown_failure`, CANCELLED)")
    for lang, text in shown.items():
        assert text.count("BeginTime") == 1 and text.count("1000") == 1, lang
    # its confidence line: no log to say why, so what a person checks
    assert decided_line(shown["en"]) == (
        "🔎 Decided by Slurm accounting alone: the job never ran, so it wrote no log. Before "
        "submitting it again, check who cancelled it and why, and what it waited for (its "
        "pending reason).")
    assert decided_line(shown["ko"]) == (
        "🔎 Slurm accounting만으로 판단했습니다: 작업이 실행되지 않아 로그를 쓰지 않았습니다. "
        "다시 제출하기 전에 누가 왜 작업을 취소했는지, 작업이 무엇을 기다렸는지(대기 사유) "
        "확인하세요.")
    for lang, text in shown.items():
        assert "last lines" not in text and "마지막 줄" not in text, lang
        assert "no known signature" not in text, lang


def explanation_block(shown: str) -> str:
    """The incident card's title and explanation (its `explanation` block) in the posted
    blocks' JSON."""
    [block] = [b for b in json.loads(shown) if b.get("block_id") == "explanation"]
    return str(block["text"]["text"])


def decided_line(shown: str) -> str:
    """The incident's confidence line (its `decided_by` block) in the posted blocks' JSON."""
    [block] = [b for b in json.loads(shown) if b.get("block_id") == "decided_by"]
    return str(block["elements"][0]["text"])


@pytest.mark.parametrize(("lang", "head", "decided"), [
    ("en", "job 88154 never started: Slurm ended it (DEADLINE) while it waited in the queue, so "
           "nothing ran and no work was lost. A person decides: resubmit it from iteration "
           "2,000, or dismiss it; trainbot does not submit it again by itself.",
     "🔎 Decided by Slurm accounting alone: the job never ran, so it wrote no log. Before "
     "submitting it again, check why Slurm ended it (DEADLINE) and what it waited for (its "
     "pending reason)."),
    ("ko", "작업 88154은(는) 시작되지 않았습니다: 대기열에서 기다리는 동안 Slurm이 작업을 "
           "끝냈으므로(DEADLINE) 아무것도 실행되지 않았고 잃은 작업도 없습니다. 사람이 결정합니다: "
           "iteration 2,000부터 재제출하거나 무시하세요. trainbot은 작업을 스스로 다시 제출하지 "
           "않습니다.",
     "🔎 Slurm accounting만으로 판단했습니다: 작업이 실행되지 않아 로그를 쓰지 않았습니다. 다시 "
     "제출하기 전에 Slurm이 왜 작업을 끝냈는지(DEADLINE), 작업이 무엇을 기다렸는지(대기 사유) "
     "확인하세요."),
])
def test_a_never_started_job_of_a_run_with_a_checkpoint_loses_no_iterations(store, lang, head,
                                                                            decided):
    """A run's next job whose deadline passed while it waited, the run having saved iteration
    2,000 and reached 3,400: the head line offers to resubmit it from the checkpoint, says no
    work was lost (not the earlier job's 1,400 iterations), and names neither a class nor a
    charge; its DEADLINE is not a time limit to resubmit by itself."""
    acct = Accounting(state="DEADLINE", never_started=NeverStarted())
    d = analyze_file(io.BytesIO(b""), catalogue()).diagnose(acct)
    dec = decide(d, history(3400, None), PolicyParams(backoff_s=60, auto_resubmit=True), T0,
                 checkpoint_iter=2000, accounting=acct)
    assert (dec.kind, dec.charged, dec.work_lost_iters) == ("propose_resubmit", False, None)
    with own_store(store) as s:
        ctx, chain = thread(s, lang)
        ThreadEvents(ctx).publish(incident(chain.id, d, dec, "DEADLINE"))
        said = replies(ctx)[0]
        shown = json.dumps(ctx.sink.blocks["dev:88154:final"], ensure_ascii=False)
    assert said == f"<@U0OWNER> {head}"
    assert "lost)" not in said and "time_limit" not in said
    assert decided_line(shown) == decided


def test_a_never_started_job_trainbot_did_not_submit_offers_only_to_dismiss(store):
    """An adopted job (no recipe: trainbot resubmits nothing of it) cancelled while it waited:
    the head line says a person resubmits it, and the incident offers no Resubmit."""
    acct = Accounting(state="CANCELLED", never_started=NeverStarted(cancelled_by=0))
    d = analyze_file(io.BytesIO(b""), catalogue()).diagnose(acct)
    dec = decide(d, history(None), MANUAL, T0, checkpoint_unknown="no_recipe", accounting=acct)
    assert (dec.kind, dec.offers) == ("ask_human", ("dismiss",))
    for lang, head in (
            ("en", "job 88154 never started: Slurm ended it (CANCELLED by user id 0) while it "
                   "waited in the queue, so nothing ran and no work was lost. trainbot did not "
                   "submit this job, so it resubmits nothing: resubmit it yourself "),
            ("ko", "작업 88154은(는) 시작되지 않았습니다: 대기열에서 기다리는 동안 Slurm이 작업을 "
                   "끝냈으므로(사용자 ID 0에 의해 CANCELLED) 아무것도 실행되지 않았고 잃은 작업도 "
                   "없습니다. 이 작업은 trainbot이 제출하지 않아 아무것도 재제출하지 않습니다: "
                   "아직 필요하면 ")):
        said = heads(store, lang, d, dec, "CANCELLED")
        assert said.startswith(f"<@U0OWNER> {head}"), said


@pytest.mark.parametrize("missing", [True, False])
def test_an_incident_without_its_samples_says_why_there_is_no_rss_chart_in_each_language(
        store, missing):
    """A finished job whose sampler file did not exist or could not be read, with no RSS
    chart without it: its head line says so, in the thread's language."""
    path = "/scratch/mix/logs/rss-88154.jsonl"
    said = files_not_read_heads(
        store, {"sampler_path": path, "sampler_missing": True} if missing
        else {"sampler_path": path, "sampler_unreadable": READ_FAILED})
    if missing:
        assert said["en"].endswith(
            f" No memory samples were found at {path}, so there is no RSS chart.")
        assert said["ko"].endswith(f" {path}에서 메모리 샘플을 찾지 못해 RSS 차트가 없습니다.")
    else:
        assert said["en"].endswith(
            f" The memory samples at {path} could not be read (reading it failed on the login "
            "node (dd exit 1)), so there is no RSS chart.")
        assert said["ko"].endswith(
            f" {path}의 메모리 샘플을 읽을 수 없어 (로그인 노드에서 읽기에 실패했습니다 (dd 종료 "
            "코드 1)) RSS 차트가 없습니다.")
