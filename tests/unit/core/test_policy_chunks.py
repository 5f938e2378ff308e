"""Time-limit chunks (bot.core.policy.chunks, through `decide`): a chunk that saved a newer
complete checkpoint than the one it resumed from is the run going on, resubmitted without
charging the retry budget; one that saved none charges as any time limit does."""

from __future__ import annotations

from functools import cache

import pytest

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import (
    Accounting,
    CheckpointMark,
    ChunkBounds,
    Diagnosis,
    DiagnosisMetrics,
    run_target,
)
from bot.core.policy import (
    AttemptFacts,
    ChainHistory,
    DecisionKind,
    PolicyParams,
    chunk_progress,
    decide,
)

NOW = 1_747_000_000.0
AUTO = PolicyParams(auto_resubmit=True, backoff_s=60)
MANUAL = PolicyParams(auto_resubmit=False, backoff_s=60)


@cache
def catalogue() -> Catalogue:
    return Catalogue.load()


def time_limit(last_iter: int | None, class_id: str = "time_limit") -> Diagnosis:
    """A finished job of `class_id` (the real catalogue's flags) that reached `last_iter`."""
    cls = catalogue().get(class_id)
    return Diagnosis(class_id=class_id, action=cls.action, retryable=cls.retryable,
                     charges_budget=cls.charges_budget, hint=cls.hint,
                     metrics=DiagnosisMetrics(last_iter=last_iter))


def chunks(*starts: int | None, retries_used: int = 0) -> ChainHistory:
    """A chain whose attempts resumed from the checkpoints `starts` (None: from scratch), the
    last being the one decided about."""
    return ChainHistory(attempts=tuple(
        AttemptFacts(job_id=str(100 + i), attempt_no=i + 1, start_iter=s)
        for i, s in enumerate(starts)), retries_used=retries_used)


def test_a_chunk_that_saved_a_newer_checkpoint_is_resubmitted_uncharged():
    dec = decide(time_limit(4000), chunks(None, 2000), AUTO, NOW, checkpoint_iter=4000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW and dec.charged is False
    assert dec.resume_from == 4000
    # the start in the phrase every resume says it with, as the posted line (event.json.j2)
    assert dec.reason == ("chunk from iteration 2,000 ended at the time limit after saving "
                          "iter 4,000: resubmitting; retries not charged")
    assert dict(dec.facts) == {"why": "chunk_progress", "from_iter": 2000, "to_iter": 4000}


def test_a_chunk_progresses_even_with_the_budget_spent():
    # the budget counts retries; chunks that each save a checkpoint never spend it
    dec = decide(time_limit(6000), chunks(None, 2000, 4000, retries_used=3), AUTO, NOW,
                 checkpoint_iter=6000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW and not dec.charged and not dec.stop_chain


def test_the_first_chunk_from_scratch_progresses_by_its_first_save():
    dec = decide(time_limit(2300), chunks(None), AUTO, NOW, checkpoint_iter=2000)
    assert not dec.charged
    assert dec.reason == ("chunk from scratch (no complete checkpoint) ended at the time limit "
                          "after saving iter 2,000 (300 iterations since lost): resubmitting; "
                          "retries not charged")


def test_a_chunk_offered_to_a_person_says_its_approval_is_not_charged():
    dec = decide(time_limit(4000), chunks(2000), MANUAL, NOW, checkpoint_iter=4000)
    assert dec.kind == DecisionKind.PROPOSE_RESUBMIT and dec.charged is False
    assert dec.reason.endswith(": proposing to resubmit; retries not charged")


@pytest.mark.parametrize(("start", "checkpoint"), [(2000, 2000), (None, None), (2000, None)],
                         ids=["same checkpoint", "never saved", "checkpoint gone"])
def test_a_chunk_that_saved_no_newer_checkpoint_is_charged(start, checkpoint):
    dec = decide(time_limit(2400), chunks(start), AUTO, NOW, checkpoint_iter=checkpoint)
    assert dec.kind == DecisionKind.RESUBMIT_NOW and dec.charged is True
    assert "charged: 1 of 3 retries" in dec.reason
    assert dec.facts["why"] == "retryable"


def test_chunks_without_progress_stop_at_the_budget_and_ask():
    # a run that times out before its first save, again and again
    dec = decide(time_limit(900), chunks(None, None, None, None, retries_used=3), AUTO, NOW,
                 checkpoint_iter=None)
    assert dec.kind == DecisionKind.STOP and dec.stop_chain
    assert dec.facts["why"] == "budget_exhausted" and "3 of 3" in dec.reason


def test_only_a_time_limit_is_a_chunk():
    nccl = time_limit(4000, "nccl_timeout")
    assert chunk_progress("nccl_timeout", chunks(2000), CheckpointMark("iter_4000", 4000),
                          bounds=ChunkBounds()) is None
    assert decide(nccl, chunks(2000), AUTO, NOW, checkpoint_iter=4000).charged is True


def test_a_runs_chunk_bounds_are_its_target_and_its_policys_free_chunks():
    assert PolicyParams(max_free_chunks=7).chunk_bounds(900) == ChunkBounds(900, 7)
    assert AUTO.chunk_bounds(None) == ChunkBounds()


MEGATRON = (" iteration     {it}/   40000 | consumed samples:  {it}0 | elapsed time per iteration "
            "(ms): 2349.4 | learning rate: 9.7E-05 | lm loss: 2.72E+00 |\n")


def megatron_chunk(first: int, last: int) -> Diagnosis:
    """Megatron's --exit-interval chunk from `first` to `last`: it saves there and exits 0."""
    text = "".join(MEGATRON.format(it=it) for it in range(first, last + 1, 100))
    text += (f"saving checkpoint at iteration {last} to /ckpt/tr1\n"
             f"  successfully saved checkpoint at iteration {last} to /ckpt/tr1\n"
             f"[exiting program at iteration {last}] datetime: 2024-05-01 10:00:00.123456 \n")
    analysis = LogAnalysis(catalogue())
    analysis.feed_text(text)
    analysis.finish()
    return analysis.diagnose(Accounting(state="COMPLETED", exit_code=0, signal=0),
                             target_iter=40000)


def test_a_megatron_exit_interval_stop_past_its_start_is_an_uncharged_chunk():
    d = megatron_chunk(2100, 4000)
    assert d.class_id == "time_limit" and d.detail == {"kind": "exit_interval",
                                                       "iteration": 4000}
    dec = decide(d, chunks(None, 2000), AUTO, NOW, checkpoint_iter=4000)
    assert dec.kind == DecisionKind.RESUBMIT_NOW and not dec.charged
    assert dec.work_lost_iters == 0


def test_a_megatron_exit_interval_stop_at_the_target_is_the_run_completed():
    # the safety bound: the last chunk is the run's end, never one more resubmit
    d = megatron_chunk(38100, 40000)
    assert d.class_id == "completed"
    assert decide(d, chunks(None, 38000), AUTO, NOW, checkpoint_iter=40000).kind \
        == DecisionKind.NONE


@pytest.mark.parametrize(("submitted", "configured", "logged", "target"), [
    (None, None, 40000, 40000),   # the recipe sets none: the log's own
    (None, 30000, 40000, 30000),  # the recipe's over the log's
    (1200, 30000, 40000, 1200),   # a submit's target_iter= over both
    (None, None, None, None),
])
def test_a_runs_target_is_the_submits_else_the_recipes_else_the_logs(submitted, configured,
                                                                      logged, target):
    assert run_target(submitted=submitted, configured=configured, logged=logged) == target


def test_a_time_limit_from_an_unknown_start_is_charged_and_says_why_only_with_a_checkpoint():
    d = time_limit(4000)
    unknown = ChainHistory(attempts=(AttemptFacts("9", 1, start_known=False),))
    saved = decide(d, unknown, AUTO, NOW, checkpoint_iter=4000)
    assert saved.charged and saved.facts["charged_why"] == "start_unknown"
    assert saved.reason.endswith("(charged: 1 of 3 retries, not a free chunk: the checkpoint "
                                 "this job started from is unknown)")
    none_saved = decide(d, unknown, AUTO, NOW)
    assert none_saved.charged and "charged_why" not in none_saved.facts
