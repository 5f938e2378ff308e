"""A job Slurm shows alive (RUNNING, COMPLETING, SUSPENDED, squeue's STOPPED after SIGSTOP, which
read as ended before, or waiting to start: PENDING, REQUEUED) is never offered a resubmit,
whatever failure its log shows: a resubmit would run a second copy beside it. The class stays
(what the log shows), the action is none and the explanation says the job is still alive and
trainbot decides once it ends; once Slurm says it ended, the class's own action comes back. A
hang's cancel-and-resume cancels the job first and stays offered."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import present
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.incident import build_incident
from bot.core.models import Accounting, Action
from bot.slack.render import blocks_to_text, catalogue_text, explain, render_blocks


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


_PROGRESS = "".join(f"[2025-01-01 00:{m:02d}:00] iter {m * 10}/8000 loss 2.{m:02d}\n"
                    for m in range(1, 8))
# each the failure's own line as its program prints it, after the run's progress
FAILURES = {
    "nccl_timeout": "[rank3]:[E0101 00:20:00.000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog"
                    " caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)"
                    " ran for 1800000 milliseconds before timing out.\n",
    "gpu_failure": "RuntimeError: CUDA error: uncorrectable ECC error encountered\n",
    "dataloader_timeout": "RuntimeError: DataLoader timed out after 300 seconds\n",
    "host_oom": "slurmstepd: error: Detected 1 oom_kill event in StepId=77.0. Some of the step"
                " tasks have been OOM Killed.\n",
}
ALIVE = ["RUNNING", "COMPLETING", "SUSPENDED", "STOPPED"]  # STOPPED: squeue's, after SIGSTOP


@pytest.mark.parametrize("state", ALIVE)
@pytest.mark.parametrize("class_id", sorted(FAILURES))
def test_a_failure_in_a_job_slurm_shows_alive_is_not_resubmitted(catalogue, class_id, state):
    """Before, nccl_timeout, gpu_failure and dataloader_timeout said action resubmit (retryable:
    the watcher's retry policy would submit it again) and host_oom action ask (its proposals a
    resubmit and one with more memory) while the job still ran."""
    log = _PROGRESS + FAILURES[class_id]
    assert read_log(catalogue, log, Accounting(state="FAILED", exit_code=1)).action in (
        Action.RESUBMIT, Action.ASK)  # its class's own action once the job ended
    d = read_log(catalogue, log, Accounting(state=state))
    assert (d.class_id, d.action, d.retryable) == (class_id, Action.NONE, False)
    assert d.detail is not None and d.detail["kind"] == "alive" and d.detail["state"] == state
    said = explain(d)
    assert f"Slurm still shows the job alive ({state})" in said
    assert "trainbot decides once Slurm says how it ended" in said
    ko = explain(d, "ko")
    assert f"Slurm에서는 작업이 아직 살아 있는 것으로 보입니다({state})" in ko
    assert "trainbot이 판단합니다" in ko
    incident = build_incident(d, recipe="r", job_id="77", last_checkpoint_iter=None,
                              now=0.0)
    assert incident.action == "none" and incident.proposals == ()


@pytest.mark.parametrize("state", ["PENDING", "REQUEUED"])
@pytest.mark.parametrize("class_id", sorted(FAILURES))
def test_a_failure_in_a_job_waiting_to_start_again_is_not_resubmitted(catalogue, class_id, state):
    """Waiting in the queue again (Slurm requeued it): the requeue's reading, nothing proposed."""
    d = read_log(catalogue, _PROGRESS + FAILURES[class_id], Accounting(state=state))
    assert (d.class_id, d.action, d.secondary) == ("none", Action.NONE, (class_id,))
    assert build_incident(d, recipe="r", job_id="77", last_checkpoint_iter=None,
                          now=0.0).proposals == ()


# what the class's hint is said after, while the job is alive, in each language
IF_IT_ENDS = {"en": "If it ends with this failure: ", "ko": "작업이 이 실패로 끝나면: "}


@pytest.mark.parametrize("lang", sorted(IF_IT_ENDS))
@pytest.mark.parametrize(("class_id", "node_line"), [
    ("nccl_timeout", ""),
    # the GPU's node named by srun: the card's node line too
    ("gpu_failure", "srun: error: gpu-a07: task 3: Exited with exit code 1\n"),
], ids=["nccl_timeout", "gpu_failure"])
def test_the_class_hint_of_a_job_still_alive_is_what_to_do_if_it_ends_that_way(
        catalogue, class_id, node_line, lang):
    """The class's hint (NCCL's "Resume from the last complete checkpoint", a GPU fault's "on
    another node") is told as what to do if the job ends with this failure, after the alive
    text, in `trainbot diagnose`'s explanation and on the incident card alike; the card's node
    line likewise. Before, the hint followed the alive text bare, as advice to resume now,
    beside "Nothing to resubmit while it is alive"."""
    d = read_log(catalogue, _PROGRESS + FAILURES[class_id] + node_line,
                 Accounting(state="RUNNING"))
    assert (d.class_id, d.action, present(d.detail)["kind"]) == (class_id, Action.NONE, "alive")
    hint = catalogue_text(d.hint, lang, d.translations, "hint")
    alive = {"en": "Slurm still shows the job alive (RUNNING)",
             "ko": "Slurm에서는 작업이 아직 살아 있는 것으로 보입니다(RUNNING)"}[lang]
    said = explain(d, lang)
    assert said.endswith(IF_IT_ENDS[lang] + hint)
    assert said.count(hint) == 1 and said.index(alive) < said.index(IF_IT_ENDS[lang])
    incident = build_incident(d, recipe="r", job_id="77", last_checkpoint_iter=None, now=0.0)
    blocks, _ = render_blocks("incident", lang, incident)
    card = blocks_to_text(blocks)
    assert IF_IT_ENDS[lang] + hint in card and card.count(hint) == 1
    if node_line:
        assert d.node == "gpu-a07"
        node = next(b for b in blocks if b.get("block_id") == "node")["text"]["text"]
        assert node == {
            "en": "🖥️ On node *gpu-a07*: if the job ends with this failure, resume it elsewhere "
                  "with --exclude=gpu-a07, and tell the admins so they drain it.",
            "ko": "🖥️ 노드 *gpu-a07*에서 일어났습니다: 작업이 이 실패로 끝나면 "
                  "--exclude=gpu-a07로 다른 노드에서 재개하고, 관리자에게 알려 drain하게 하세요.",
        }[lang]
    # once Slurm says it failed, the hint is what to do now, as before
    ended = read_log(catalogue, _PROGRESS + FAILURES[class_id] + node_line,
                     Accounting(state="FAILED", exit_code=1))
    assert explain(ended, lang).endswith(hint) and IF_IT_ENDS[lang] not in explain(ended, lang)


def test_the_failures_own_cause_is_stated_before(catalogue):
    """An NCCL timeout after a stall in a running job: the stall before the watchdog is told
    first, then that the job is still alive."""
    log = ("[2025-01-01 00:00:00] iter 10/8000 loss 2.0\n"
           "[2025-01-01 00:01:00] iter 20/8000 loss 1.9\n"
           "[2025-01-01 00:02:00] iter 30/8000 loss 1.8\n"
           "[2025-01-01 00:35:00] " + FAILURES["nccl_timeout"])
    d = read_log(catalogue, log, Accounting(state="RUNNING"))
    assert (d.class_id, d.action) == ("nccl_timeout", Action.NONE)
    assert d.detail is not None and d.detail["cause"]["kind"] == "upstream"
    said = explain(d)
    assert said.index("Upstream: no progress after iteration 30") < said.index(
        "Slurm still shows the job alive (RUNNING)")


def test_a_hang_in_a_running_job_is_still_offered_its_cancel_and_resume(catalogue):
    """A stall measured in a running job: its proposal cancels the job before resuming it."""
    log = _PROGRESS
    d = read_log(catalogue, log, Accounting(state="RUNNING"))
    assert d.class_id == "none"
    hung = LogAnalysis(catalogue)
    hung.feed_text(log)
    hung.finish()
    d = hung.diagnose(Accounting(state="RUNNING"), now=_t("2025-01-01 02:00:00"))
    assert (d.class_id, d.action) == ("hang", Action.ASK)
    proposals = build_incident(d, recipe="r", job_id="77", last_checkpoint_iter=None,
                               now=0.0).proposals
    assert [p.kind for p in proposals] == ["cancel_resume", "dismiss"]


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
