"""Incident view models (core facts) and their Slack buttons and progress bar (bot.slack.views):
work lost, proposed actions, root progress and warnings."""

from __future__ import annotations

import pytest

from bot.core.incident import AttemptSummary, build_incident, build_root, build_warning
from bot.core.models import Action, Diagnosis, DiagnosisMetrics
from bot.core.policy import PolicyParams
from bot.slack.views import ActionId, action_id_for, buttons, default_value, progress_bar

GIB = 1024**3


def diag(class_id: str, action: Action, *, retryable: bool = False, **metrics) -> Diagnosis:
    return Diagnosis(class_id=class_id, action=action, retryable=retryable, charges_budget=True,
                     hint="hint", metrics=DiagnosisMetrics(**metrics))


def btns(view, value_for=default_value):
    """The view's proposals as the Slack buttons its message shows."""
    return buttons(view.proposals, view.job_id, value_for)


def test_work_lost_uses_checkpoint_save_time_to_failure():
    # 88154: checkpoint 3000, died at 3470; the stall makes wall time larger than iters × s/iter.
    d = diag("nccl_timeout", Action.RESUBMIT, retryable=True, last_iter=3470, sec_per_iter=4.5)
    inc = build_incident(d, recipe="mix", job_id="88154", last_checkpoint_iter=3000,
                         last_checkpoint_time=1000.0, failed_at=1000.0 + 3915, now=99999.0)
    assert inc.lost_iters == 470
    assert inc.lost_seconds == 3915
    assert [a.kind for a in btns(inc)] == ["resubmit", "dismiss"]
    assert btns(inc)[0].from_iter == 3000 and btns(inc)[0].style == "primary"


def test_work_lost_falls_back_to_iterations_times_speed():
    d = diag("time_limit", Action.RESUBMIT, retryable=True, last_iter=1500, sec_per_iter=2.0)
    inc = build_incident(d, recipe="mix", job_id="1", last_checkpoint_iter=1000, now=0.0)
    assert (inc.lost_iters, inc.lost_seconds) == (500, 1000.0)


def test_no_checkpoint_means_everything_is_lost_and_resume_from_start():
    d = diag("host_oom", Action.ASK, last_iter=999, sec_per_iter=4.5)
    inc = build_incident(d, recipe="mix", job_id="87870", last_checkpoint_iter=None, now=0.0,
                         mem_limit_bytes=300 * GIB)
    assert inc.lost_iters == 999
    kinds = [a.kind for a in btns(inc)]
    assert kinds == ["resubmit_mem", "resubmit", "dismiss"]
    assert btns(inc)[0].mem == "450G" and btns(inc)[1].from_iter is None


def test_stop_classes_offer_only_dismiss_and_completed_offers_nothing():
    stop = build_incident(diag("compiler_missing", Action.STOP), recipe="r", job_id="1",
                          last_checkpoint_iter=None, now=0.0)
    assert [a.kind for a in btns(stop)] == ["dismiss"]
    done = build_incident(diag("completed", Action.NONE, last_iter=8000), recipe="r",
                          job_id="1", last_checkpoint_iter=8000, now=0.0)
    assert done.proposals == () and done.lost_iters is None


def test_button_values_come_from_the_callers_factory():
    calls = []

    def token(kind, params):
        calls.append((kind, params))
        return f"tok-{len(calls)}"

    inc = build_incident(diag("hang", Action.ASK, last_iter=10), recipe="r", job_id="7",
                         last_checkpoint_iter=0, now=0.0)
    assert [a.value for a in btns(inc, token)] == ["tok-1", "tok-2"]
    assert calls[0] == ("cancel_resume", {"job": "7", "from_iter": 0})


def test_progress_bar_and_root_attempts_table():
    assert progress_bar(3470, 8000).endswith("43% · 3,470 / 8,000")
    assert progress_bar(9000, 8000).startswith("▓" * 20)
    assert progress_bar(12, None) == "iter 12"
    root = build_root(recipe="mix", target_iter=8000, attempts=[
        AttemptSummary("88154", "FAILED", 3470, 1000, "nccl_timeout"),
        AttemptSummary("88887", "RUNNING", 3010, 3000)])
    assert (root.job_id, root.state, root.last_iter) == ("88887", "RUNNING", 3470)
    with pytest.raises(ValueError, match="mix"):
        build_root(recipe="mix", attempts=[], target_iter=None)


def test_leak_warning_projects_time_to_oom():
    w = build_warning(kind="leak", recipe="mix", job_id="88016", last_iter=161, now=0.0,
                      rss_now_bytes=90 * GIB, limit_bytes=950 * GIB,
                      slope_gib_per_100_iter=17.4, projected_oom_iter=5000, sec_per_iter=4.5)
    assert w.iters_to_oom == 4839 and w.seconds_to_oom == pytest.approx(4839 * 4.5)
    assert w.proposals == ()


def test_stall_warning_offers_cancel_and_resume():
    w = build_warning(kind="stall", recipe="mix", job_id="88154", last_iter=3470,
                      now=1360.0, stalled_since=1000.0, last_checkpoint_iter=3000)
    assert w.stalled_seconds == 360.0
    assert [a.kind for a in btns(w)] == ["cancel_resume", "dismiss"]
    # the clicks arrive with action ids that handlers.actions listens to
    assert [a.action_id for a in btns(w)] == [ActionId.CANCEL_RESUME, ActionId.DISMISS]
    with pytest.raises(ValueError, match="kind"):
        build_warning(kind="oops", recipe="r", job_id="1", last_iter=None, now=0.0)


def test_without_an_estimate_the_policy_rule_proposes_the_mem():
    """The same --mem as bot.core.policy.suggest_mem with default parameters: 1.5 × the
    limit, 2 × when the job died in a checkpoint save (87870's peak was > 550 GB)."""
    def proposed(during_save: bool, limit: int | None, policy: object = None) -> str | None:
        d = Diagnosis(class_id="host_oom", action=Action.ASK, retryable=False,
                      charges_budget=True, hint="", during_checkpoint_save=during_save,
                      metrics=DiagnosisMetrics(last_iter=999))
        inc = build_incident(d, recipe="mix", job_id="87870", last_checkpoint_iter=None,
                             now=0.0, mem_limit_bytes=limit, mem_policy=policy)
        return next((a.mem for a in btns(inc) if a.kind == "resubmit_mem"), None)

    assert proposed(False, 950 * GIB) == "1430G"
    assert proposed(True, 300 * GIB) == "600G"
    assert proposed(False, None) is None  # no number, no --mem button
    # the recipe's site cap: the --mem is cut to it, and none is offered at or below the limit
    assert proposed(False, 950 * GIB, PolicyParams(mem_cap_bytes=1000 * GIB)) == "1000G"
    assert proposed(False, 950 * GIB, PolicyParams(mem_cap_bytes=950 * GIB)) is None


def test_callers_memory_estimate_wins():
    d = diag("host_oom", Action.ASK, last_iter=999)
    inc = build_incident(d, recipe="mix", job_id="87870", last_checkpoint_iter=None, now=0.0,
                         mem_limit_bytes=300 * GIB, suggested_mem="700G")
    assert btns(inc)[0].mem == "700G"


@pytest.mark.parametrize("d", [
    diag("hang", Action.ASK, last_iter=10),
    diag("nccl_timeout", Action.RESUBMIT, retryable=True, last_iter=10),
    diag("host_oom", Action.ASK, last_iter=10),
])
def test_every_proposed_button_is_a_known_action_id(d: Diagnosis):
    inc = build_incident(d, recipe="mix", job_id="7", last_checkpoint_iter=0, now=0.0,
                         mem_limit_bytes=100 * GIB)
    assert btns(inc)
    assert all(a.action_id in set(ActionId) for a in btns(inc))
    with pytest.raises(ValueError, match="no action id for button kind 'reboot'"):
        action_id_for("reboot")
