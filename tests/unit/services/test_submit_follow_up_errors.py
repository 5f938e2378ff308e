"""A person's submit that went through, was recorded and announced stands whatever its
follow-up (bot.services.after_submit: the competitor lookup, the Home tabs) raises: Slurm
printing what trainbot cannot read (a SlurmParseError, no ClusterError) is logged and said in
the run's thread; the click and `/train resume` still say the job was submitted."""

from __future__ import annotations

from typing import Any

from fakes import FakeSlurm, make_context, recorded

from bot.core.slurm.errors import SlurmParseError
from bot.core.train_grammar import Resume
from bot.services.approvals import ActionId, handle_click
from bot.services.prompts import create_resubmit_prompt
from bot.services.train import execute

NOW = 1_000_000.0


class OddSqueue(FakeSlurm):
    """squeue answers the competitor lookup with a line trainbot cannot read."""

    def pending_competitors(self, **filters: Any) -> Any:
        raise SlurmParseError("squeue printed a line trainbot cannot read: 'x|y'")


def test_a_resubmit_done_stands_when_its_competitor_lookup_cannot_read_squeue(store) -> None:  # noqa: ANN001
    slurm = OddSqueue()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died", resume_iter=3000)

    result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "W0LEAD", NOW + 10)

    said = result.update_text or ""
    assert "failed" not in said and "88887" in said, said
    approval = store.approvals.get(prompt.token)
    assert approval is not None and approval.state == "done"
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88154", "88887"]
    assert "88887" in [j.job_id for j in store.watched_jobs.list("dev")]
    assert len(slurm.submits()) == 1
    notes = [t for t in recorded(ctx).texts() if "could not look for" in t]
    assert len(notes) == 1 and "88887" in notes[0] and "x|y" in notes[0], notes

    # `/train resume` after that job failed: the same follow-up, the reply says submitted
    slurm.set(88887, state="FAILED")
    attempt = store.attempts.get_by_job("88887")
    assert attempt is not None
    store.attempts.update(attempt.id, state="FAILED", result="FAILED")
    reply = execute(ctx, Resume("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW + 100)
    assert "88888" in reply.text and "internal error" not in reply.text, reply.text
    assert len(slurm.submits()) == 2
    assert len([t for t in recorded(ctx).texts() if "could not look for" in t]) == 2
