"""A person's submit whose end trainbot did not see (`/train resume|submit`, a Resubmit
button): sbatch's channel closed, or it outlived its timeout (OutcomeUnknown). trainbot looks
the job up by its name at once, as the automatic resubmit does after a crash: a job sbatch did
queue is recorded as the attempt, watched and announced as any submit (one job, never two);
none there yet keeps the submit in flight, looked up again once its bound has passed (an
overloaded controller may queue it late); a lookup that fails says the job may or may not
exist and where to look."""

from __future__ import annotations

import fakes
import pytest
from fakes import AnswerLostSlurm, make_context, present, recorded
from support.in_flight import settled

from bot.cluster.errors import (
    ChannelClosed,
    ClusterUnavailable,
    CommandTimedOut,
    OutcomeUnknown,
    submit_advice,
)
from bot.core import train_grammar as c
from bot.core.takeover import RemoteDeadlines, submit_in_flight_s
from bot.services.after_submit import after_person_submit
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import recover_submits_in_flight
from bot.services.train import execute
from bot.store import Store

NOW = 1_000_000.0
CHANNEL = "C0TRAIN"
TIMED_OUT = OutcomeUnknown(
    ["sbatch", "--parsable"], "`sbatch --parsable` did not answer within 5 s: the Slurm "
    "controller is overloaded or down; it may or may not have taken effect")


def failed_run(ctx: BotContext) -> int:
    """Run `mix` whose job 88154 failed: a chain with its thread."""
    return fakes.failed_run(ctx, now=NOW, channel=CHANNEL)


def jobs(ctx: BotContext, chain_id: int | None) -> list[str]:
    assert chain_id is not None
    return [a.job_id for a in ctx.store.attempts.for_chain(chain_id)]


def watched(ctx: BotContext) -> list[str]:
    return [w.job_id for w in ctx.store.watched_jobs.list("dev")]


@pytest.mark.parametrize("error", [None, TIMED_OUT], ids=["channel_closed", "timed_out"])
def test_a_resume_whose_sbatch_queued_the_job_but_lost_its_answer_records_that_one_job(
        store: Store, error) -> None:
    slurm = AnswerLostSlurm(error=error, submitted_at=NOW)
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.startswith("mix: submitted job 90500 (attempt 2)"), reply.text
    assert len(slurm.submits()) == 1 and slurm.queued("mix") == [90500]
    assert jobs(ctx, chain) == ["88154", "90500"]
    assert watched(ctx) == ["90500"]
    assert ["squeue", "-h", "--name=mix", "--user=slurmci", "-o", "%A"] in slurm.runner.argvs()
    # announced in the run's thread as any resubmit: its resolution line
    assert any("90500" in text for text in recorded(ctx).texts()[1:])
    [audit] = [e for e in store.audit.recent(50) if e.action == "submit" and e.result == "ok"]
    assert '"found_by_name": true' in present(audit.detail)


# what a person reads when the lost submit's job is not in Slurm (yet) when trainbot looks:
# sent at 13:46:40 UTC, looked up again once its in-flight bound (20m39s) has passed
NOT_SEEN_EN = ("No job of that name is queued yet (not seen yet): trainbot looks again at "
               "14:07 UTC and, if it is there, records it and tells the run's thread; until "
               "then the run takes no other submit.")
NOT_SEEN_KO = ("그 이름의 작업이 아직 대기열에 없습니다 (아직 보이지 않음): trainbot이 14:07 UTC에 "
               "다시 찾아보고, 있으면 기록하고 실행의 스레드에 알립니다. 그때까지 이 실행은 다른 "
               "제출을 받지 않습니다.")
LOOKED_AGAIN = NOW + submit_in_flight_s(RemoteDeadlines()) + 1  # the dev cluster's bound


def test_a_new_submit_whose_answer_was_lost_starts_its_run_with_the_job_found(
        store: Store) -> None:
    slurm = AnswerLostSlurm(submitted_at=NOW)
    ctx = make_context(store, slurm)
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.startswith("mix: submitted job 90500 (attempt 1)"), reply.text
    assert slurm.queued("mix") == [90500] and len(slurm.submits()) == 1
    assert jobs(ctx, reply.chain_id) == ["90500"] and watched(ctx) == ["90500"]


@pytest.mark.parametrize(("lang", "want"), [("en", NOT_SEEN_EN), ("ko", NOT_SEEN_KO)])
def test_a_resume_whose_lost_submit_is_not_on_the_cluster_yet_keeps_the_run_until_it_is_looked_up(
        store: Store, lang: str, want: str) -> None:
    """The sbatch's end was not seen and the controller has not queued its job when trainbot
    looks at once: nothing is concluded. The submit stays in flight (a second resume is
    refused, not sent), the person is told when trainbot looks again, and the job the
    controller queues late is recorded, watched and announced by that lookup."""
    slurm = AnswerLostSlurm(queue=False, submitted_at=NOW)
    ctx = make_context(store, slurm, lang=lang)
    chain = failed_run(ctx)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.endswith(want), reply.text
    assert slurm.queued("mix") == [] and jobs(ctx, chain) == ["88154"] and watched(ctx) == []
    again = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 60)
    assert again.job_id is None and len(slurm.submits()) == 1
    assert slurm.land() == [90500]  # the overloaded controller queues it now
    recover_submits_in_flight(ctx, LOOKED_AGAIN, after_submit=after_person_submit)
    assert jobs(ctx, chain) == ["88154", "90500"] and watched(ctx) == ["90500"]
    assert slurm.queued("mix") == [90500] and len(slurm.submits()) == 1
    assert any("90500" in text for text in recorded(ctx).texts()[1:])


def test_a_job_of_the_same_name_submitted_before_the_click_is_not_adopted(
        store: Store) -> None:
    """Someone submitted a job named `mix` by hand an hour before; the person's new submit
    was lost before Slurm queued it. The hand-submitted job is not this submit's: nothing is
    recorded or watched (before, it was adopted as the new run's job, and trainbot would
    have resubmitted or cancelled it as its own), and the person is told to check again."""
    slurm = AnswerLostSlurm(queue=False, submitted_at=NOW)
    slurm.add(90400, name="mix", submit_time=NOW - 3600)  # by hand, in the queue
    ctx = make_context(store, slurm)
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.endswith(NOT_SEEN_EN), reply.text
    assert reply.chain_id is None and watched(ctx) == []
    assert not any(a.job_id == "90400" for c_ in store.chains.for_recipe("mix")
                   for a in store.attempts.for_chain(c_.id))
    # ... while a job submitted after the click (within the clocks' margin) is the one
    settled(store)
    slurm = AnswerLostSlurm(submitted_at=NOW - 60, first_id=90600)
    slurm.add(90400, name="mix", submit_time=NOW - 3600)
    ctx = make_context(store, slurm)
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.startswith("mix: submitted job 90600 (attempt 1)"), reply.text


def test_a_lost_submit_whose_lookup_fails_says_it_may_exist_and_records_nothing(
        store: Store) -> None:
    slurm = AnswerLostSlurm(error=ChannelClosed(  # as SlurmClient.submit raises it
        ["sbatch", "--parsable"], "login", connection_lost=True, advice=submit_advice("mix")))
    slurm.lookup_error = CommandTimedOut(["squeue"], 5)
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.startswith("The cluster did not answer: "), reply.text
    assert "it may have run. The job 'mix' may or may not have been submitted: " \
        "look for that name in squeue before submitting again. Looking it up by name failed " \
        "too (`squeue` did not finish within 5 s" in reply.text
    assert reply.text.endswith("trainbot looks for it again in 21 minutes and, if it is "
                               "there, records it and tells the run's thread."), reply.text
    assert jobs(ctx, chain) == ["88154"] and watched(ctx) == []
    assert len(slurm.submits()) == 1


def prompt(ctx: BotContext) -> str:
    chain = failed_run(ctx)
    return create_resubmit_prompt(ctx, recipe="mix", chain_id=chain, job_id="88154", now=NOW,
                                  summary="88154: NCCL", mem=None).token


def test_a_resubmit_click_whose_answer_was_lost_records_the_job_sbatch_queued(
        store: Store) -> None:
    slurm = AnswerLostSlurm(submitted_at=NOW)
    ctx = make_context(store, slurm)
    token = prompt(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert result.status == "done" and result.job_id == "90500"
    assert present(result.update_text).startswith("Approved by <@W0LEAD>: resubmitted as 90500")
    assert slurm.queued("mix") == [90500] and len(slurm.submits()) == 1
    chain = present(store.approvals.get(token)).chain_id
    assert jobs(ctx, chain) == ["88154", "90500"] and watched(ctx) == ["90500"]


@pytest.mark.parametrize(("lang", "want"), [
    ("en", "Approved by <@W0LEAD>, but it failed: "),
    ("ko", "<@W0LEAD>님이 승인했지만 실패했습니다: "),
])
def test_a_resubmit_click_whose_lost_submit_is_not_there_yet_says_when_it_is_looked_up_again(
        store: Store, lang: str, want: str) -> None:
    slurm = AnswerLostSlurm(queue=False, submitted_at=NOW)
    ctx = make_context(store, slurm, lang=lang)
    token = prompt(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    text = present(result.update_text)
    assert result.status == "failed" and text.startswith(want), text
    assert text.endswith(NOT_SEEN_EN if lang == "en" else NOT_SEEN_KO)
    assert slurm.queued("mix") == [] and watched(ctx) == []
    assert len(store.submits_in_flight.sent_before("dev", NOW + 10)) == 1  # looked up again


def test_the_watchers_resubmit_leaves_a_lost_submit_to_its_own_reconciliation(
        store: Store) -> None:
    """Without `reconcile_unknown` (the automatic resubmit, reconciled through its intent
    row) the OutcomeUnknown goes up as it came, and nothing is looked up here."""
    from bot.services.runs import submit_and_announce

    slurm = AnswerLostSlurm(submitted_at=NOW)
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    with pytest.raises(ClusterUnavailable):
        submit_and_announce(ctx, "mix", actor="trainbot", now=NOW, chain_id=chain)
    assert "squeue" not in slurm.runner.commands() and jobs(ctx, chain) == ["88154"]


def test_a_resume_whose_sbatch_socket_timed_out_records_the_job_slurm_queued(
        store: Store) -> None:
    """sbatch says `Socket timed out on send/recv operation` (its request may have reached
    slurmctld): an OutcomeUnknown, so the job Slurm did queue is found by its name and
    recorded, not left behind for a second submit."""
    from fakes import FakeRunner

    from bot.cluster.slurm import SlurmClient
    from bot.core.slurm.squeue import SQUEUE_FIELDS, SQUEUE_SEPARATOR

    row = {"JobID": "90500", "ArrayJobID": "90500", "ArrayTaskID": "N/A", "Name": "mix",
           "UserName": "slurmci", "State": "PENDING", "SubmitTime": str(int(NOW) + 1)}
    job_row = SQUEUE_SEPARATOR.join(row.get(f, "") for f in SQUEUE_FIELDS) + "\n"

    def squeue(argv: list[str]) -> tuple[int, str, str]:
        if "--name=mix" in argv:  # the lookup by name
            return 0, "90500\n", ""
        return 0, job_row if any("90500" in a for a in argv) else "", ""  # its record

    runner = FakeRunner({
        "sbatch": (1, "", "sbatch: error: Batch job submission failed: Socket timed out on "
                          "send/recv operation"),
        "squeue": squeue,
        "sinfo": (0, "slurm 24.11.5\n", ""),
        "sacct": (0, "", ""),
    })
    ctx = make_context(store, {"dev": SlurmClient(runner, use_json=False)})  # type: ignore[dict-item]
    chain = failed_run(ctx)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.text.startswith("mix: submitted job 90500 (attempt 2)"), reply.text
    assert runner.commands().count("sbatch") == 1
    assert ["squeue", "-h", "--name=mix", "--user=slurmci", "-o", "%A"] in runner.argvs()
    assert jobs(ctx, chain) == ["88154", "90500"] and watched(ctx) == ["90500"]
