"""What a decided prompt did, as data, and the prompt rewritten to say so.

`Outcome` (kind, actor, job ids, iteration, --mem, a verbatim error) is what a click
(bot.services.approvals), the choice it carried out (bot.services.approved_choices) or the
settle of a cancel (bot.services.cancel_settle) did; `decided` renders the prompt after its
decision with the `decided` template, in the recipe's language; `expired_outcome` is what an
expired prompt leaves as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from bot.core.text import Text
from bot.services.ports import Blocks, BotContext, PostError
from bot.services.threads import render
from bot.store import Approval

log = logging.getLogger(__name__)

OutcomeKind = Literal["approved", "failed", "dismissed", "kept", "expired", "stale"]


@dataclass(frozen=True)
class Outcome:
    """What became of a decided prompt, as data for the `decided` template.

    `kind` approved: `did` is resubmitted | cancelled | cancel_resumed | cancel_moved_on |
    cancel_superseded (cancelled, nothing resubmitted: a new run of the recipe, job
    `new_job_id`, was started since) |
    cancel_in_flight (cancelled, nothing resubmitted: another submit carries the run on,
    `carried_on`) | cancel_unknown or,
    for a plain Cancel, cancel_only_unknown (the scancel's end was not seen: `error`; trainbot
    looks at the job again `settle_s` after the click, the recipe's policy.cancel_settle_s,
    and says "not cancelled" only `over_s` after it, once the scancel can no longer land:
    `scancel_over_at`, never before the first look) |
    held | held_released (held, then released in the same click: the resumed job no longer
    waited, `state`, None when gone) | held_not_released (held, the resumed job no longer
    waited, `state` as for held_released, and that release did not go through: the thread
    says what follows) | held_by_person (held, but a person's `/train hold` took the job
    out of trainbot's holds meanwhile: theirs now, left alone) | released_by_person (held,
    but a person's `/train release` ended trainbot's hold meanwhile) | hold_skipped (the resumed
    job no longer waits: `state`,
    or `error` when it could not be read) | hold_failed | hold_unknown; failed: `did` is
    error | not_running |
    resubmit_failed (the job was cancelled, its resubmit failed) | cancel_not_taken (a
    cancel whose end was not seen did not take effect: the job is still in `state`; offered
    again); stale (nothing was done,
    the prompt no longer applies): `did` is moved_on (the chain's latest attempt is
    `current_job` now, in `state`) | superseded (a new run of the recipe was started since:
    its job `current_job`, in `state`, by `by`) | took_over (a newer job carried the
    recipe on, the prompt rewritten as it was submitted: a new run's job `current_job`, its
    thread in `channel`, None: not posted yet) | resumed_since (its run resumed since as job
    `current_job`) | recovered (a stall prompt's job `job_id`
    trained on: it stalled at iteration `stalled_iter`, has reached `reached_iter` since) |
    competitor_started | competitor_left (a hold prompt's
    competitor, in `state`) | competitor_held (held already, not by trainbot: `state` the
    hold's reason) | competitor_releasing (held by trainbot for another run's job,
    `current_job`, and being released right now, or, `retry_in_min` set, its release failed
    and is tried again in about that many minutes). `job_id` is the prompt's target job (the
    competitor of a hold prompt), `new_job_id` the resubmitted one, `for_job` the resumed
    job a hold waits for,
    `state` a Slurm state (None: unknown to Slurm), `error` what the error said (its Text,
    which the template translates; Slurm's or ssh's own words inside stay verbatim);
    `not_applied` the overrides a site submit wrapper's job did not get ([key, requested, the
    job's value]); `exclude` the faulty node a resubmit left out (--exclude). A
    resubmit resumed from iteration `from_iter`, else from the checkpoint named
    `from_checkpoint` (its iteration unknown), else from scratch (the click's submit looked the
    checkpoint up and found none; a failed lookup fails the submit, so the start is never
    unknown); `prompt_iter`, else `prompt_checkpoint`, is where the prompt said it would resume
    (its iteration, else the checkpoint's name) when it resumed from another checkpoint (the
    newest complete one changed since it was posted)."""

    kind: OutcomeKind
    actor: str | None = None
    did: str | None = None
    recipe: str | None = None
    job_id: str | None = None
    new_job_id: str | None = None
    for_job: str | None = None
    current_job: str | None = None
    from_iter: int | None = None
    from_checkpoint: str | None = None
    prompt_iter: int | None = None
    prompt_checkpoint: str | None = None
    mem: str | None = None
    exclude: str | None = None
    state: str | None = None
    error: Text | str | None = None
    not_applied: list[list[str]] | None = None
    job_name: str | None = None
    settle_s: float | None = None
    over_s: float | None = None  # cancel_unknown / cancel_only_unknown: see above
    by: str | None = None  # cancel_moved_on / cancel_in_flight: whose submit carries the run
    sent: str | None = None  # cancel_in_flight: when that submit was sent (sent_moment)
    stalled_iter: int | None = None  # recovered: the iteration the job stalled at
    reached_iter: int | None = None  # recovered: the iteration it has reached since
    channel: str | None = None  # took_over: the channel of the new run's thread
    retry_in_min: int | None = None  # competitor_releasing: its release's retry, from now

    def to_view(self) -> dict[str, Any]:
        # field by field, not asdict: `error` stays a Text for the template's `msg` filter
        return {f.name: getattr(self, f.name) for f in fields(self)}


def decided(ctx: BotContext, recipe: str | None, prompt: Mapping[str, Any],
             outcome: Outcome) -> tuple[str, Blocks]:
    """The prompt after its decision (the `decided` template): (text, blocks), from the
    approval's `prompt` (its payload): its question (`summary`) and the incident card it
    showed under it (`card`, bot.services.prompts.create_resubmit_prompt), kept above the
    outcome so the thread keeps the card's figures. A hold prompt has no stored summary: the
    template asks its question again from the outcome's job ids."""
    blocks, text = render(ctx, "decided", recipe,
                          {"summary": prompt.get("summary"), "card": prompt.get("card"),
                           "outcome": outcome.to_view()})
    return text, blocks


def rewrite_post(ctx: BotContext, approval: Approval, key: str | None, text: str,
                 blocks: Blocks) -> bool:
    """Rewrite the thread post `key` that carries `approval`'s buttons (nothing when it is
    unknown, or the thread writer updates nothing); a refused update is logged: False."""
    update = getattr(ctx.sink, "update_reply", None)
    if key is None or update is None or approval.chain_id is None:
        return True
    try:
        update(approval.chain_id, key, blocks, text)
    except PostError as exc:
        log.warning("could not rewrite prompt %s: %s", approval.token, exc)
        return False
    return True


def expired_outcome(approval: Approval) -> Outcome:
    """What an expired prompt leaves as it is: `did` resubmit (a finished job's resubmit
    prompt), cancel (a running job's stall prompt) or hold (a competitor's hold prompt)."""
    payload = approval.payload
    choices = payload.get("choices", [])
    did = "hold" if "hold" in choices else ("cancel" if "cancel_resume" in choices
                                            else "resubmit")
    return Outcome("expired", did=did, recipe=payload.get("recipe"),
                   job_id=approval.target_job, for_job=payload.get("for_job"))
