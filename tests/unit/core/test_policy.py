"""The resubmit policy (bot.core.policy): rules over plain data, and the docs/incidents.md stories
diagnosed from their fixture logs by the real diagnose pipeline and then decided."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from fakes import present

from bot.core.catalogue import Catalogue
from bot.core.diagnose import analyze_file
from bot.core.models import Accounting, Action, Diagnosis, DiagnosisMetrics
from bot.core.policy import (
    OFFER_RESUBMIT,
    AttemptFacts,
    ChainHistory,
    CpuEvidence,
    Decision,
    DecisionKind,
    PastWarning,
    PolicyParams,
    backoff_delay,
    decide,
    early_warnings,
    held_report,
    leak_warning_due,
    params_from,
    resume_start,
    suggest_mem,
)
from bot.core.slurm.records import JobRecord
from bot.core.slurm.values import parse_exit_code
from bot.core.units import GIB, parse_size

STORIES = Path(__file__).resolve().parents[2] / "fixtures" / "stories"
NOW = 1_747_000_000.0


@cache
def catalogue() -> Catalogue:
    return Catalogue.load()


def diag(class_id: str, *, last_iter: int | None = 1000, **kw: object) -> Diagnosis:
    """A Diagnosis with the real catalogue's action / retryable / charges_budget flags."""
    cls = catalogue().classes.get(class_id)
    action = cls.action if cls else Action.NONE
    metrics = kw.pop("metrics", None) or DiagnosisMetrics(last_iter=last_iter, target_iter=8000)
    return Diagnosis(
        class_id=class_id,
        action=action,
        retryable=cls.retryable if cls else False,
        charges_budget=cls.charges_budget if cls else False,
        hint=cls.hint if cls else "",
        metrics=metrics,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def chain(*last_iters: int | None, retries_used: int = 0, warnings=()) -> ChainHistory:
    attempts = tuple(
        AttemptFacts(job_id=str(100 + i), attempt_no=i + 1, last_iter=it)
        for i, it in enumerate(last_iters)
    )
    return ChainHistory(attempts=attempts, retries_used=retries_used, warnings=tuple(warnings))


FINISHED = Accounting(state="FAILED", exit_code=1, signal=0)
AUTO = PolicyParams(auto_resubmit=True, backoff_s=60)
MANUAL = PolicyParams(auto_resubmit=False, backoff_s=60)


# ------------------------------------------------------------------ the stories


def story(job: str) -> tuple[Diagnosis, Accounting]:
    meta = json.loads((STORIES / f"{job}.sacct.json").read_text())
    code, sig = parse_exit_code(meta["exit_code"])
    acct = Accounting(
        state=meta["state"],
        exit_code=code,
        signal=sig,
        elapsed_s=meta.get("elapsed_s"),
        mem_limit_bytes=parse_size(meta["mem_limit"]) if meta.get("mem_limit") else None,
    )
    with open(STORIES / f"{job}.log", "rb") as f:
        analysis = analyze_file(f, catalogue())
    return analysis.diagnose(acct, target_iter=meta.get("target_iter")), acct


def test_story_88154_nccl_timeout_after_hang_resubmits_from_3000():
    d, acct = story("88154")
    assert d.class_id == "nccl_timeout" and "hang" in d.secondary
    # 88154 was itself the resubmit of 88016 (which reached iter 1049).
    history = chain(1049, 3470, retries_used=0)
    auto = decide(d, history, AUTO, NOW, checkpoint_iter=3000, accounting=acct)
    assert auto.kind == DecisionKind.RESUBMIT_NOW
    assert auto.resume_from == 3000
    assert auto.work_lost_iters == 470
    assert auto.charged is True
    assert auto.not_before is not None and auto.not_before > NOW
    assert "from iteration 3,000 (470 iterations lost)" in auto.reason
    manual = decide(d, history, MANUAL, NOW, checkpoint_iter=3000, accounting=acct)
    assert manual.kind == DecisionKind.PROPOSE_RESUBMIT
    assert "resubmit" in manual.offers and manual.resume_from == 3000


def test_a_checkpoint_without_an_iteration_is_where_the_decision_resumes_not_scratch():
    """The newest complete checkpoint is `final` (no iteration in its name): the decision
    carries its name, says it resumes from it, and keeps it when stored and read back (an
    automatic resubmit's note reads the stored decision)."""
    d, acct = story("88154")
    dec = decide(d, chain(1049, 3470), MANUAL, NOW, checkpoint_iter=None,
                 checkpoint_name="final", accounting=acct)
    assert dec.resume_from is None and dec.resume_checkpoint == "final"
    assert dec.work_lost_iters is None  # not all 3470: how many is unknown
    assert "from checkpoint `final`" in dec.reason and "scratch" not in dec.reason
    assert Decision.from_json(dec.to_json()).resume_checkpoint == "final"


def test_an_unknown_checkpoint_turns_an_automatic_resubmit_into_a_proposal():
    """Looking the checkpoint up failed: no resume point, no work lost, and the resubmit the
    policy would make by itself is proposed (it could start from scratch, charged)."""
    d, acct = story("88154")
    dec = decide(d, chain(1049, 3470), AUTO, NOW, checkpoint_unknown="lookup_failed",
                 accounting=acct)
    assert dec.kind == DecisionKind.PROPOSE_RESUBMIT and "resubmit" in dec.offers
    assert dec.resume_from is None and dec.resume_checkpoint is None
    assert dec.work_lost_iters is None
    assert dec.facts["checkpoint_lookup"] == "failed"
    assert dec.facts["auto_withheld"] == "checkpoint_unknown"
    assert "(unknown: looking it up failed)" in dec.reason and "scratch" not in dec.reason
    assert "not resubmitted automatically" in dec.reason


@pytest.mark.parametrize(("resume_from", "checkpoint", "unknown", "where"), [
    (3000, "iter_0003000", None, "from iteration 3,000"),
    (0, "iter_0000000", None, "from iteration 0"),  # iteration 0 is an iteration, not none
    (None, "final", None, "from checkpoint `final`"),
    (None, None, "lookup_failed",
     "from the last complete checkpoint (unknown: looking it up failed)"),
    (None, None, "not_looked_up", "from the last complete checkpoint, which the bot looks up "
                                  "when it posts this (`trainbot report` cannot)"),
    (None, None, None, "from scratch (no complete checkpoint)"),
])
def test_a_resume_point_is_worded_once_for_the_decision_the_note_and_the_messages(
        resume_from, checkpoint, unknown, where):
    """The decision's reason, an automatic resubmit's note and every message (through the
    templates) say where a resume starts in one phrase; a button's is brief when unknown or
    none."""
    assert str(resume_start(resume_from, checkpoint, unknown)) == where
    brief = str(resume_start(resume_from, checkpoint, unknown, brief=True))
    assert brief == ("from the checkpoint the bot looks up" if unknown == "not_looked_up"
                     else "(checkpoint unknown)" if unknown
                     else "from scratch" if resume_from is None and not checkpoint else where)


def test_story_87870_host_oom_during_save_proposes_more_memory():
    d, acct = story("87870")
    assert d.class_id == "host_oom" and d.during_checkpoint_save
    # auto_resubmit does not matter: host_oom is an `ask` class.
    dec = decide(d, chain(999), AUTO, NOW, checkpoint_iter=None, accounting=acct)
    assert dec.kind == DecisionKind.PROPOSE_MEM_RESUBMIT
    assert dec.mem == "600G"  # 300G limit x 2 (died while saving) > the ~550 GB peak
    assert dec.mem_bytes == 600 * GIB
    assert "while saving a checkpoint" in dec.reason
    assert "from scratch" in dec.reason  # the iter_000001000 partial was not offered
    assert dec.offers[0] == "resubmit_mem"


def test_story_108687_silent_exit_stops():
    d, acct = story("108687")
    assert d.class_id == "silent_exit"
    dec = decide(d, chain(None), AUTO, NOW, accounting=acct)
    assert dec.kind == DecisionKind.STOP and dec.stop_chain
    assert not dec.resubmits


def test_story_108903_compiler_missing_stops_even_with_budget_and_auto():
    d, acct = story("108903")
    dec = decide(d, chain(None), AUTO, NOW, accounting=acct)
    assert dec.kind == DecisionKind.STOP
    assert "CC" in dec.reason  # the catalogue hint is carried


def test_story_88016_leak_warns_once_with_projection():
    d, _ = story("88016")
    assert d.class_id == "memory_leak" or "memory_leak" in d.secondary
    warns = early_warnings(d, chain(170), MANUAL, NOW)
    leak = [w for w in warns if w.class_id == "memory_leak"]
    assert len(leak) == 1 and leak[0].kind == DecisionKind.WARN
    proj = d.metrics.projected_oom_iter
    assert proj is not None and str(proj) in leak[0].reason
    # Posted once: the same projection does not warn again.
    posted = PastWarning("memory_leak", NOW, projected_oom_iter=proj)
    again = early_warnings(d, chain(170, warnings=[posted]), MANUAL, NOW + 60)
    assert [w for w in again if w.class_id == "memory_leak"] == []


# ------------------------------------------------------------------ budget and progress


def test_budget_exhausted_stops_and_asks():
    d = diag("nccl_timeout", last_iter=5000)
    history = chain(1000, 2000, 3000, 5000, retries_used=3)
    dec = decide(d, history, AUTO, NOW, checkpoint_iter=4000)
    assert dec.kind == DecisionKind.STOP and dec.stop_chain
    assert "budget" in dec.reason and "3 of 3" in dec.reason
    assert not dec.resubmits


def test_budget_counts_only_charged_retries():
    d = diag("nccl_timeout", last_iter=5000)
    # Three attempts so far but only one charged resubmit (the others were preemptions).
    dec = decide(d, chain(1000, 2000, 5000, retries_used=1), AUTO, NOW, checkpoint_iter=4000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW
    assert "2 of 3" in dec.reason


def test_custom_budget_from_recipe_policy():
    d = diag("time_limit", last_iter=5000)
    dec = decide(d, chain(5000, retries_used=1), {"retry_budget": 1, "auto_resubmit": True},
                 NOW)
    assert dec.kind == DecisionKind.STOP


@pytest.mark.parametrize("cid", ["preempted", "node_failure"])
def test_preemption_and_node_failure_not_charged(cid):
    d = diag(cid, last_iter=2000)
    dec = decide(d, chain(1000, 2000, retries_used=3), AUTO, NOW, checkpoint_iter=2000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW  # budget spent, yet still resubmitted
    assert dec.charged is False
    assert "not charged" in dec.reason


@pytest.mark.parametrize("cid", ["preempted", "node_failure"])
def test_uncharged_classes_skip_no_progress_rule(cid):
    # Preempted again before passing the previous attempt: not the job's fault.
    dec = decide(diag(cid, last_iter=1500), chain(2000, 1500), AUTO, NOW, checkpoint_iter=1000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW


def test_no_progress_stops_and_asks_human():
    d = diag("nccl_timeout", last_iter=3470)
    dec = decide(d, chain(3470, 3470, retries_used=1), AUTO, NOW, checkpoint_iter=3000)
    assert dec.kind == DecisionKind.ASK_HUMAN and dec.stop_chain
    assert "no progress" in dec.reason and "3470" in dec.reason
    assert not dec.resubmits


def test_no_progress_when_retry_logged_no_iteration():
    d = diag("dataloader_timeout", last_iter=None)
    dec = decide(d, chain(3000, None, retries_used=1), AUTO, NOW, checkpoint_iter=3000)
    assert dec.kind == DecisionKind.ASK_HUMAN


def test_progress_beyond_previous_attempt_resubmits():
    d = diag("nccl_timeout", last_iter=3471)
    dec = decide(d, chain(3470, 3471, retries_used=1), AUTO, NOW, checkpoint_iter=3000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW


def test_first_attempt_is_never_no_progress():
    dec = decide(diag("time_limit", last_iter=None), chain(None), AUTO, NOW)
    assert dec.kind == DecisionKind.RESUBMIT_NOW
    assert "from scratch" in dec.reason


# ------------------------------------------------------------------ class actions


@pytest.mark.parametrize("cid", ["cuda_oom", "compiler_missing", "nan_loss", "silent_exit"])
def test_stop_classes_never_resubmit(cid):
    d = diag(cid)
    # Even a site catalogue claiming `resubmit` / retryable cannot make them resubmit.
    forged = Diagnosis(cid, Action.RESUBMIT, True, True, "", metrics=d.metrics)
    for dx in (d, forged):
        dec = decide(dx, chain(1000), AUTO, NOW, checkpoint_iter=1000)
        assert dec.kind == DecisionKind.STOP and not dec.resubmits


@pytest.mark.parametrize("cid", ["nccl_timeout", "dataloader_timeout", "time_limit"])
def test_resubmit_classes_propose_without_auto(cid):
    dec = decide(diag(cid), chain(1000), MANUAL, NOW, checkpoint_iter=1000)
    assert dec.kind == DecisionKind.PROPOSE_RESUBMIT
    assert dec.resume_from == 1000


def test_non_retryable_resubmit_class_is_proposed_not_automatic():
    d = Diagnosis("nccl_timeout", Action.RESUBMIT, False, True, "",
                  metrics=DiagnosisMetrics(last_iter=10))
    assert decide(d, chain(10), AUTO, NOW).kind == DecisionKind.PROPOSE_RESUBMIT


@pytest.mark.parametrize("cid", ["unknown_failure", "hang"])
def test_ask_classes_propose_even_with_auto(cid):
    dec = decide(diag(cid), chain(1000), AUTO, NOW, checkpoint_iter=1000, accounting=FINISHED)
    assert dec.kind == DecisionKind.PROPOSE_RESUBMIT


def test_dataloader_worker_killed_proposes_more_memory():
    acct = Accounting(state="FAILED", exit_code=1, mem_limit_bytes=400 * GIB)
    dec = decide(diag("dataloader_worker_killed"), chain(1000), AUTO, NOW, accounting=acct)
    assert dec.kind == DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem == "600G"
    assert "DataLoader worker" in dec.reason


def test_completed_does_nothing():
    assert decide(diag("completed"), chain(8000), AUTO, NOW,
                  accounting=Accounting(state="COMPLETED", exit_code=0)).kind == DecisionKind.NONE


def test_finished_memory_leak_only_warns():
    dec = decide(diag("memory_leak"), chain(1000), AUTO, NOW, accounting=FINISHED)
    assert dec.kind == DecisionKind.WARN and not dec.resubmits


def test_running_ok_job_is_none():
    dec = decide(diag("none"), chain(1000), AUTO, NOW,
                 accounting=Accounting(state="RUNNING"))
    assert dec.kind == DecisionKind.NONE


# ------------------------------------------------------------------ host_oom memory


def test_suggest_mem_rounds_up_from_limit_and_maxrss():
    assert suggest_mem(300 * GIB, 290 * GIB) == (450 * GIB, "450G")
    # MaxRSS above the limit (a spike sacct did catch) wins; 10 GiB steps from 100 GiB.
    assert present(suggest_mem(300 * GIB, 310 * GIB))[1] == "470G"
    assert present(suggest_mem(300 * GIB, None, during_save=True))[1] == "600G"
    # Small jobs: whole GiB.
    assert present(suggest_mem(int(3.2 * GIB), None))[1] == "5G"
    assert suggest_mem(None, None) is None
    # Without the job's limit a MaxRSS alone makes no number: no made-up --mem.
    assert suggest_mem(None, 290 * GIB) is None


def test_suggest_mem_capped_by_site():
    p = PolicyParams(mem_cap_bytes=953 * GIB)
    assert present(suggest_mem(800 * GIB, None, policy=p))[1] == "953G"


def test_host_oom_at_cap_asks_to_cut_memory():
    p = PolicyParams(mem_cap_bytes=950 * GIB)
    acct = Accounting(state="OUT_OF_MEMORY", mem_limit_bytes=950 * GIB)
    dec = decide(diag("host_oom"), chain(1000), p, NOW, accounting=acct)
    assert dec.kind == DecisionKind.ASK_HUMAN
    assert dec.mem is None and "cap" in dec.reason


def test_host_oom_of_a_small_job_states_its_sizes_in_mib():
    acct = Accounting(state="FAILED", signal=9, mem_limit_bytes=150 * 1024**2,
                      max_rss_bytes=230 * 1024**2)
    dec = decide(diag("host_oom"), chain(1000), MANUAL, NOW, accounting=acct)
    assert "limit 150.0 MiB" in dec.reason and "MaxRSS 230.0 MiB" in dec.reason


def test_host_oom_without_limit_asks():
    acct = Accounting(state="OUT_OF_MEMORY")
    dec = decide(diag("host_oom"), chain(1000), MANUAL, NOW, accounting=acct)
    assert dec.kind == DecisionKind.ASK_HUMAN and "unknown" in dec.reason


def test_host_oom_respects_budget():
    acct = Accounting(state="OUT_OF_MEMORY", mem_limit_bytes=300 * GIB)
    dec = decide(diag("host_oom"), chain(1, 2, 3, 1000, retries_used=3), MANUAL, NOW,
                 accounting=acct)
    assert dec.kind == DecisionKind.STOP


# ------------------------------------------------------------------ backoff


def test_backoff_is_exponential_and_capped():
    p = PolicyParams(backoff_s=60, backoff_max_s=600)
    assert [backoff_delay(p, n) for n in range(5)] == [60, 120, 240, 480, 600]
    assert backoff_delay(PolicyParams(backoff_s=0), 3) == 0


def test_decision_not_before_grows_along_the_chain():
    d1 = decide(diag("time_limit", last_iter=1000), chain(1000), AUTO, NOW)
    d3 = decide(diag("time_limit", last_iter=3000), chain(1000, 2000, 3000, retries_used=2),
                AUTO, NOW)
    assert d1.not_before == NOW + 60
    assert d3.not_before == NOW + 240


def test_params_from_config_object():
    from bot.config import PolicyConfig

    cfg = PolicyConfig(retry_budget=5, auto_resubmit=True, backoff_s=5)
    p = params_from(cfg)
    assert (p.retry_budget, p.auto_resubmit, p.backoff_s) == (5, True, 5)
    assert p.gpu_util_warn_pct == cfg.gpu_util_warn_pct


def test_the_config_defaults_are_the_policy_defaults():
    from bot.config import PolicyConfig

    assert params_from(PolicyConfig()) == PolicyParams()
    assert {"leak_warn_margin", "leak_min_samples"} <= set(PolicyConfig.model_fields) \
        & set(PolicyParams.__dataclass_fields__)  # what the config sets, the policy reads


# ------------------------------------------------------------------ early warnings


def _hang(last_iter=3470, stall_s=360.0):
    return diag("hang", metrics=DiagnosisMetrics(last_iter=last_iter, stall_seconds=stall_s))


def test_stall_warns_with_cancel_offer_and_cpu_corroboration():
    w = early_warnings(_hang(), chain(3470), MANUAL, NOW, cpu=CpuEvidence(92, 8), job_id="88154")
    assert len(w) == 1 and w[0].kind == DecisionKind.WARN
    assert "cancel_resume" in w[0].offers
    assert "3470" in w[0].reason and "92 % → 8 %" in w[0].reason
    # decide() on a running job returns the same warning.
    dec = decide(_hang(), chain(3470), MANUAL, NOW, accounting=Accounting(state="RUNNING"))
    assert dec.kind == DecisionKind.WARN and dec.class_id == "hang"


def test_stall_with_busy_cpu_says_so():
    w = early_warnings(_hang(), chain(3470), MANUAL, NOW, cpu=CpuEvidence(92, 88))
    assert "still busy" in w[0].reason


def test_stall_warned_once_per_episode():
    started = NOW - 360
    seen = PastWarning("hang", NOW - 60, stall_started_at=started, job_id="88154")
    again = early_warnings(_hang(stall_s=420), chain(3470, warnings=[seen]), MANUAL, NOW + 60,
                           job_id="88154")
    assert again == []
    # A new stall later in the same job is a new episode.
    later = early_warnings(_hang(stall_s=400), chain(3470, warnings=[seen]), MANUAL, NOW + 7200,
                           job_id="88154")
    assert len(later) == 1


def test_leak_rewarn_only_when_projection_worsens_by_margin():
    prev = [PastWarning("memory_leak", NOW, projected_oom_iter=5000)]
    assert leak_warning_due([], 5000, 0.1)
    assert not leak_warning_due(prev, 4800, 0.1)  # 4 % earlier: same story
    assert not leak_warning_due(prev, 6000, 0.1)  # later: better, not worse
    assert leak_warning_due(prev, 4400, 0.1)  # 12 % earlier: warn again
    assert not leak_warning_due(prev, None, 0.1)


def test_leak_warning_in_secondary_of_running_hang():
    d = diag("hang", metrics=DiagnosisMetrics(last_iter=100, stall_seconds=400,
                                              projected_oom_iter=4824,
                                              rss_gib_per_100_iter=17.0),
             secondary=("memory_leak",))
    kinds = [w.class_id for w in early_warnings(d, chain(100), MANUAL, NOW)]
    assert kinds == ["hang", "memory_leak"]


def test_low_gpu_util_note_once():
    d = diag("none")
    notes = early_warnings(d, chain(1), MANUAL, NOW, gpu_util_pct=57)
    assert [n.kind for n in notes] == [DecisionKind.NOTE]
    assert "57 %" in notes[0].reason
    assert early_warnings(d, chain(1), MANUAL, NOW, gpu_util_pct=90) == []
    done = PastWarning("low_gpu_util", NOW)
    assert early_warnings(d, chain(1, warnings=[done]), MANUAL, NOW, gpu_util_pct=57) == []


# ------------------------------------------------------------------ held jobs


def test_job_held_admin_reported_after_threshold():
    rec = JobRecord(job_id=87870, state="PENDING", reason="JobHeldAdmin")
    p = PolicyParams(held_report_s=600)
    assert held_report(rec, NOW - 60, NOW, policy=p) is None
    rep = held_report(rec, NOW - 900, NOW, policy=p)
    assert rep is not None and rep.job_id == 87870
    assert (rep.reason, rep.held_s) == ("JobHeldAdmin", 900)
    # The same hold keeps the same key (the watcher posts it once).
    assert present(held_report(rec, NOW - 900, NOW + 300, policy=p)).key == rep.key


def test_requeue_hold_reported_user_hold_not():
    p = PolicyParams(held_report_s=0)
    assert held_report(JobRecord(job_id=1, state="REQUEUE_HOLD"), NOW, NOW, policy=p)
    user = JobRecord(job_id=2, state="PENDING", reason="JobHeldUser")
    assert held_report(user, NOW - 10_000, NOW, policy=p) is None
    running = JobRecord(job_id=3, state="RUNNING")
    assert held_report(running, NOW - 10_000, NOW, policy=p) is None


# ------------------------------------------------------------------------------ stored decisions


def test_a_decision_reads_back_as_it_was_stored():
    d = Decision(DecisionKind.RESUBMIT_NOW, "time limit", "time_limit", charged=True,
                 not_before=NOW + 60, resume_from=1200, work_lost_iters=35, mem="600G",
                 offers=(OFFER_RESUBMIT,), stop_chain=False)
    back = Decision.from_json(json.loads(json.dumps(d.to_json())))
    assert back == d


@pytest.mark.parametrize("stored", [{}, {"kind": None}, {"kind": "resubmit_later"},
                                    {"kind": 3, "charged": True}])
def test_a_stored_decision_of_missing_or_unknown_kind_asks_a_person(stored):
    assert Decision.from_json(stored).kind is DecisionKind.ASK_HUMAN


# ------------------------------------------------------------------ a leak-driven host OOM

LEAK = {"slope_gib_per_100_iter": 12.0, "start_iter": 0, "start_gib": 40.0}
OOM_120G = Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9, mem_limit_bytes=120 * GIB,
                      max_rss_bytes=118 * GIB)


def test_a_leak_no_memory_can_finish_gets_no_mem_button_but_how_far_memory_gets():
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=6000))
    dec = decide(d, chain(), MANUAL, NOW, checkpoint_iter=500, accounting=OOM_120G,
                 worker_rss=(2 * GIB, 9 * GIB), trainer_rss=(30 * GIB, 31 * GIB))
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
    assert "resubmit_mem" not in dec.offers
    f = dec.facts
    assert f["why"] == "leak_hopeless" and f["need_gib"] == 700 and f["ceiling_gib"] == 240
    assert (f["with_gib"], f["reach_iter"], f["target"]) == (180, 1666, 6000)
    assert f["role"] == "workers" and "trainbot probe dataloader" in dec.reason


def test_a_leak_whose_resume_point_is_unknown_counts_from_iteration_0_as_the_worst_case():
    """From scratch (no checkpoint) and unknown (not looked up, a name without an iteration)
    both count from iteration 0; only the unknown one says so and bounds it by the last
    iteration the log reached (no checkpoint is later): 40 + 0.12 x (6000 - 670) = 680G."""
    from bot.core.policy import leak_remedy
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=6000))
    scratch = leak_remedy(d, resume_iter=None, limit_bytes=120 * GIB)
    unknown = leak_remedy(d, resume_iter=None, limit_bytes=120 * GIB, start_unknown=True)
    assert scratch is not None and unknown is not None
    assert scratch.start_known and scratch.reached_need_gib is None
    assert (unknown.need_gib, unknown.resume_iter, unknown.start_known) == (760, 0, False)
    assert (unknown.reached_iter, unknown.reached_need_gib) == (670, 680)
    assert unknown.runs_iters == 1166 and unknown.facts()["runs_iters"] == 1166
    # a known checkpoint counts from it
    assert present(leak_remedy(d, resume_iter=500, limit_bytes=120 * GIB)).need_gib == 700


def test_a_leak_that_more_memory_finishes_proposes_that_memory():
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=1200))
    dec = decide(d, chain(), MANUAL, NOW, checkpoint_iter=500, accounting=OOM_120G)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT
    # 40 + 0.12 x (1200 - 500) = 124 GiB, but a plain OOM already gets 180G: the larger one
    assert dec.mem == "180G" and "leak" not in dec.facts
    longer = diag("host_oom", last_iter=670, leak_fit=LEAK,
                  metrics=DiagnosisMetrics(last_iter=670, target_iter=1800))
    dec = decide(longer, chain(), MANUAL, NOW, checkpoint_iter=500, accounting=OOM_120G)
    assert dec.mem == "200G" and dec.facts["leak"]["need_gib"] == 200  # 196 -> 200 (10 GiB)


def test_a_site_cap_below_what_finishes_the_run_removes_the_mem_button_and_is_named():
    from bot.config import PolicyConfig

    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=1200))
    # 40 + 0.12 x (1200 - 500) = 124 -> 130G needed: under 2 x 120G, above a 122G site cap
    for policy in (PolicyParams(auto_resubmit=False, mem_cap_bytes=122 * GIB),
                   PolicyConfig(max_mem="122G")):
        dec = decide(d, chain(), policy, NOW, checkpoint_iter=500, accounting=OOM_120G)
        assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
        assert "resubmit_mem" not in dec.offers
        f = dec.facts
        assert f["why"] == "leak_hopeless" and f["need_gib"] == 130
        assert f["ceiling_gib"] == 122 and f["ceiling_is_cap"] is True
        assert "above 122G (the site's cap, policy.max_mem)" in dec.reason
        # the plain 180G, cut to the cap, gets to 500 + (122 - 40) / 0.12
        assert (f["with_gib"], f["reach_iter"]) == (122, 1183)
    # at the cap exactly: the memory that finishes the run is proposed
    dec = decide(d, chain(), PolicyConfig(max_mem="130G"), NOW, checkpoint_iter=500,
                 accounting=OOM_120G)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem == "130G"
    # under the cap before rounding up (124 <= 128 < 130): the cap is the --mem that finishes
    dec = decide(d, chain(), PolicyConfig(max_mem="128G"), NOW, checkpoint_iter=500,
                 accounting=OOM_120G)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem == "128G"
    # a cap above twice the limit: twice the limit is the ceiling, and the reason says so
    long = diag("host_oom", last_iter=670, leak_fit=LEAK,
                metrics=DiagnosisMetrics(last_iter=670, target_iter=6000))
    dec = decide(long, chain(), PolicyConfig(max_mem="300G"), NOW, checkpoint_iter=500,
                 accounting=OOM_120G)
    assert dec.facts["ceiling_gib"] == 240 and dec.facts["ceiling_is_cap"] is False
    assert "above 240G (twice the current limit)" in dec.reason


def test_a_host_oom_without_a_steady_trend_keeps_the_plain_mem_proposal():
    dec = decide(diag("host_oom"), chain(), MANUAL, NOW, checkpoint_iter=500,
                 accounting=OOM_120G)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem == "180G"


def test_a_leak_whose_limit_is_unknown_gets_no_mem_but_the_probe():
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=6000))
    unknown = Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9)
    dec = decide(d, chain(), MANUAL, NOW, checkpoint_iter=500, accounting=unknown)
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
    assert "resubmit_mem" not in dec.offers
    assert dec.facts["why"] == "leak_limit_unknown" and dec.facts["limit_known"] is False
    assert dec.facts["need_gib"] == 700 and "trainbot probe dataloader" in dec.reason
    # a site cap is a ceiling of its own: the memory that finishes the run under it is proposed
    capped = PolicyParams(mem_cap_bytes=953 * GIB)
    dec = decide(d, chain(), capped, NOW, checkpoint_iter=500, accounting=unknown)
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem == "700G"


def test_a_host_oom_whose_limit_is_unknown_proposes_no_mem():
    dec = decide(diag("host_oom"), chain(), MANUAL, NOW, checkpoint_iter=500,
                 accounting=Accounting(state="OUT_OF_MEMORY", max_rss_bytes=118 * GIB))
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
    assert dec.facts["why"] == "mem_unknown"


def test_a_gpu_fault_resubmits_elsewhere_excluding_its_node_uncharged():
    d = diag("gpu_failure", node="gpu-b12")
    dec = decide(d, chain(), AUTO, NOW, checkpoint_iter=500, accounting=FINISHED)
    assert dec.kind is DecisionKind.RESUBMIT_NOW and not dec.charged
    assert dec.facts["exclude"] == "gpu-b12" and "--exclude=gpu-b12" in dec.reason
    assert "exclude" not in decide(diag("nccl_timeout"), chain(), AUTO, NOW).facts


@pytest.mark.parametrize(("class_id", "words"), [
    ("disk_full", "`df -h`"),
    ("checkpoint_corrupt", "previous complete checkpoint"),
])
def test_a_full_disk_or_a_broken_checkpoint_waits_for_a_person_even_with_auto_resubmit(
        class_id: str, words: str):
    """Both fail again unchanged (until space is freed, while the broken file is the newest):
    a person acts first, then approves the offered resubmit."""
    dec = decide(diag(class_id), chain(), AUTO, NOW, checkpoint_iter=500, accounting=FINISHED)
    assert dec.kind is DecisionKind.PROPOSE_RESUBMIT and dec.offers == ("resubmit", "dismiss")
    assert dec.resume_from == 500 and dec.facts["why"] == "ask"
    assert dec.reason.startswith(f"{class_id}: a person should decide; resubmit from "
                                 "iteration 500 (500 iterations lost) is offered.")
    assert words in dec.reason


def test_a_job_with_no_recipe_resumes_from_an_unknown_checkpoint_never_from_scratch():
    """A job trainbot did not submit: no recipe names its checkpoint dir, so where a resume
    starts is unknown (as after a failed lookup), not "from scratch": no work lost is
    claimed, nothing is resubmitted, nothing charged to a retry budget it does not have, and
    the stored decision says why."""
    d, acct = story("88154")
    dec = decide(d, chain(1049, 3470), AUTO, NOW, checkpoint_unknown="no_recipe",
                 accounting=acct)
    assert dec.work_lost_iters is None
    assert dec.reason == (
        "nccl_timeout is retryable; trainbot did not submit this job, so it resubmits nothing: "
        "resubmit it yourself from the last complete checkpoint (unknown: no recipe names its "
        "checkpoint dir)")
    assert not dec.charged and dec.facts["by_hand"] is True
    assert {"auto_withheld", "charge_no", "budget"}.isdisjoint(dec.facts)
    # no button could resubmit it (a prompt resubmits a recipe): none is offered, a person
    # decides, and nothing waits for a backoff
    assert (dec.kind, dec.offers, dec.not_before) == (DecisionKind.ASK_HUMAN, ("dismiss",), None)
    back = Decision.from_json(json.loads(json.dumps(dec.to_json())))
    assert back.checkpoint_unknown == "no_recipe" and back == dec


def test_a_leaks_mem_for_a_job_with_no_recipe_says_it_counts_from_iteration_0():
    """A steady leak's --mem for a job trainbot did not submit: the need to reach the target
    counts from iteration 0 (40 + 0.12 x 1200 = 184G, rounded up to 190G) and the decision
    says it is the worst case, with the need from the last iteration the log reached."""
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=1200))
    dec = decide(d, chain(), MANUAL, NOW, accounting=OOM_120G, checkpoint_unknown="no_recipe")
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem == "190G", dec.reason
    assert dec.offers == ("dismiss",) and dec.by_hand  # the --mem is for a person's resubmit
    assert dec.reason.endswith(
        "trainbot did not submit this job, so it resubmits nothing: resubmit it yourself from "
        "the last complete checkpoint (unknown: no recipe names its checkpoint dir) with "
        "--mem=190G; the iteration a resume starts from is unknown, so "
        "this counts from iteration 0, the worst case: reaching iteration 1200 needs ~190G "
        "(from iteration 670, the last the log reached: ~110G)"), dec.reason


def test_a_stored_resubmit_decision_keeps_the_node_it_excludes():
    dec = decide(diag("gpu_failure", node="gpu-b12"), chain(), AUTO, NOW, checkpoint_iter=500)
    back = Decision.from_json(json.loads(json.dumps(dec.to_json())))
    assert back.facts == dict(dec.facts) and back.facts["exclude"] == "gpu-b12"
    assert back.kind is DecisionKind.RESUBMIT_NOW


def test_a_stored_decision_keeps_that_its_checkpoint_was_unknown_and_why_it_asks():
    """A failed lookup and the automatic resubmit it withheld survive the store's JSON: a
    reader of the stored row says the checkpoint is unknown, never "from scratch"."""
    dec = decide(diag("nccl_timeout"), chain(1049, 3470), AUTO, NOW,
                 checkpoint_unknown="lookup_failed", accounting=FINISHED)
    back = Decision.from_json(json.loads(json.dumps(dec.to_json())))
    assert back.facts["checkpoint_lookup"] == "failed"
    assert back.facts["auto_withheld"] == "checkpoint_unknown"
    assert back.facts == dict(dec.facts) and back == dec


def test_a_decision_stored_before_facts_were_kept_reads_back_its_node_and_task():
    old_row = {"kind": "resubmit_now", "reason": "r", "class_id": "gpu_failure",
               "exclude": "gpu-b12", "array_task": 3}
    assert Decision.from_json(old_row).facts == {"exclude": "gpu-b12", "array_task": 3}


def _diagnose_log(text: str) -> Diagnosis:
    import io
    return analyze_file(io.BytesIO(text.encode()), catalogue()).diagnose()


def test_a_retryable_class_named_only_by_how_the_log_ends_is_offered_not_resubmitted():
    """auto_resubmit acts on a decisive line or on Slurm's verdict, never on the error's own
    words alone: a person is asked to look closer first (the thread says "hint")."""
    progress = "[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n"
    by_words = _diagnose_log(
        progress + "ConnectionError: node gpu-b12 is unreachable, aborting the run\n")
    assert (by_words.class_id, by_words.decided_by, by_words.retryable) == (
        "node_failure", "hint", True)
    offered = decide(by_words, chain(120), AUTO, NOW, checkpoint_iter=100)
    assert offered.kind == DecisionKind.PROPOSE_RESUBMIT
    assert "resubmit" in offered.offers and offered.resume_from == 100
    # the same class from a decisive line is resubmitted at once
    decisive = _diagnose_log(progress + "slurmstepd: error: *** JOB 88154 ON gpu-b12 CANCELLED AT "
                             "2025-03-02T10:05:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG ***\n")
    assert (decisive.class_id, decisive.decided_by) == ("node_failure", "signature")
    assert decide(decisive, chain(120), AUTO, NOW, checkpoint_iter=100).kind == \
        DecisionKind.RESUBMIT_NOW


@pytest.mark.parametrize("unknown", [{"checkpoint_name": "final"},
                                     {"checkpoint_unknown": "lookup_failed"},
                                     {"checkpoint_unknown": "no_recipe"}])
def test_a_leaks_decision_from_an_unknown_resume_point_says_it_counts_the_worst_case(unknown):
    """A checkpoint known only by its name, a failed lookup, or a job trainbot did not submit
    (no recipe names its checkpoint dir): the stored decision counts
    from iteration 0 as the incident does (40 + 0.12 x 6000 = 760G), says it is the worst case
    and gives the need from the last iteration the log reached (680G), in the incident's
    words; how far the 180G a plain OOM would get runs is counted past the checkpoint."""
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=6000))
    dec = decide(d, chain(), MANUAL, NOW, accounting=OOM_120G, **unknown)
    assert dec.reason.startswith(
        "host memory grew steadily (12.0 GiB per 100 iterations); the iteration a resume "
        "starts from is unknown, so this counts from iteration 0, the worst case: reaching "
        "iteration 6000 needs ~760G (from iteration 670, the last the log reached: ~680G), "
        "above 240G (twice the current limit), so from iteration 0 no --mem finishes the run "
        "(with 180G it runs ~1166 iterations past the checkpoint it resumes from); "), dec.reason
    assert (dec.facts["start_known"], dec.facts["reached_need_gib"]) == (False, 680)
    assert "resubmit_mem" not in dec.offers


def test_a_leak_whose_worst_case_is_past_the_ceiling_but_best_case_fits_offers_no_mem():
    """Resume point unknown, target 2,000: from iteration 0 it needs 40 + 0.12 x 2000 = 280G,
    above the 240G ceiling; from iteration 670 it would need 200G. No --mem can be promised to
    finish the run (the checkpoint may be early), so none is offered: both figures are said
    and a person decides (the incident offers the DataLoader probe)."""
    d = diag("host_oom", last_iter=670, leak_fit=LEAK,
             metrics=DiagnosisMetrics(last_iter=670, target_iter=2000))
    dec = decide(d, chain(), MANUAL, NOW, accounting=OOM_120G, checkpoint_name="final")
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
    assert "resubmit_mem" not in dec.offers and dec.facts["why"] == "leak_hopeless"
    assert "needs ~280G (from iteration 670, the last the log reached: ~200G)" in dec.reason
