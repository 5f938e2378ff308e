"""The App Home tab's rows (pure): who sees a job trainbot adopted (`/train watch`), the
buttons its row may carry, and how many rows fit in one view (Slack: 100 blocks) before an
"and N more" line. (An array's row counts its tasks by state as its thread's root does:
bot.core.arrays.build_array_root.)

A run of a recipe belongs to the recipe's team (bot.services.home.team_recipes). An adopted
job has no recipe: it shows on the Home tab of the person who adopted it and of the people
who may act on it (bot.core.authz.can_control_job: a job trainbot did not submit is the
default approvers'). The config has no Slurm-user -> Slack-user mapping, so the job's Slurm
user makes nobody an owner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bot.core.policy import OFFER_RESUBMIT, OFFER_RESUBMIT_MEM, CheckpointUnknown, Decision
from bot.core.slurm.states import PENDING_STATES, RUNNING_STATES

# A view holds at most 100 blocks; the header, the notice, the intro and the "and N more" line
# take the first FIXED_BLOCKS of them.
MAX_VIEW_BLOCKS = 100
FIXED_BLOCKS = 4
# views.publish takes a `view` of up to 250,000 characters (a message's blocks: ~13,000); the
# tab's blocks are trimmed to this, with a margin.
MAX_VIEW_JSON = 240_000

# Button kinds that submit a job again: never offered for a job trainbot did not submit.
RESUBMIT_KINDS = frozenset({"resubmit", "resubmit_mem", "cancel_resume"})
# The kinds that act on the job itself: only for a viewer who may control it.
CONTROL_KINDS = frozenset({"cancel"})
# Stop watching an adopted job: for who may (bot.core.authz.can_unwatch: every viewer of its
# row, as who adopted it or may act on it sees it).
UNWATCH = "unwatch"

def sees_adopted(user: str, watched_by: str | None, may_control: bool) -> bool:
    """Does `user`'s Home tab list an adopted job: they adopted it, or may act on it?"""
    return user == watched_by or may_control


def adopted_buttons(kinds: Iterable[str], *, may_control: bool) -> list[str]:
    """The button kinds an adopted job's row may show: never a resubmit (trainbot does not
    resubmit what it did not submit); acting on the job only for who may control it."""
    return [k for k in kinds
            if k not in RESUBMIT_KINDS and (k not in CONTROL_KINDS or may_control)]


def unfinished_tasks(counts: Iterable[tuple[str, int]]) -> int:
    """How many of an array's started tasks (its `(state, n)` counts) still run or wait:
    what cancelling the whole array stops, besides its tasks not started yet."""
    return sum(n for state, n in counts if state in RUNNING_STATES or state in PENDING_STATES)


def cancel_confirm(job_id: str, state: str, *,
                   counts: Iterable[tuple[str, int]] | None = None, waiting: bool = False,
                   resume: bool = False, from_iter: int | None = None,
                   from_checkpoint: str | None = None,
                   checkpoint_unknown: CheckpointUnknown | None = None) -> dict[str, Any]:
    """What Slack's confirm dialog before a Cancel names (every Cancel on the Home tab and in
    a run's thread asks; the shared template's `cancel_confirm` words it): the job as people
    read it (`123_4` of an array task) and its state; for a whole array (`counts`, its tasks by
    state) how many of its started tasks still run or wait, and `waiting`: tasks not started
    yet remain; for Cancel and resume (`resume`), that it is resubmitted and where it resumes,
    as its prompt claims it (bot.core.policy.resume_start's words): from iteration
    `from_iter`, else from the checkpoint named `from_checkpoint` (a pointer naming `final`),
    else from the last complete checkpoint, unknown (`checkpoint_unknown` says why), else from
    scratch."""
    named = from_checkpoint if from_iter is None and from_checkpoint else None
    return {"job_id": job_id, "state": state, "array": counts is not None,
            "unfinished": unfinished_tasks(counts) if counts is not None else None,
            "waiting": waiting, "resume": resume, "from_iter": from_iter,
            "from_checkpoint": named,
            "checkpoint_unknown": (checkpoint_unknown
                                   if from_iter is None and named is None else None)}


# A prompt's buttons that scancel its job: each asks first (prompt_confirm).
CANCEL_KINDS = frozenset({"cancel", "cancel_resume"})


def prompt_confirm(kind: str, job_id: str, state: str, from_iter: int | None = None, *,
                   from_checkpoint: str | None = None,
                   checkpoint_unknown: CheckpointUnknown | None = None) -> dict[str, Any]:
    """A prompt button's confirm dialog (`{"confirm": ...}` to merge into the button; `{}` for
    a button that cancels nothing): a Cancel's names the job as its thread does (`job_id`,
    `123_4` of an array task) and its `state`; Cancel and resume's, that it is resubmitted and
    from where, as the prompt says it (`cancel_confirm`: `from_iter`, else `from_checkpoint`,
    else unknown, `checkpoint_unknown`, else from scratch)."""
    if kind not in CANCEL_KINDS:
        return {}
    return {"confirm": cancel_confirm(job_id, state, resume=kind == "cancel_resume",
                                      from_iter=from_iter, from_checkpoint=from_checkpoint,
                                      checkpoint_unknown=checkpoint_unknown)}


def last_incident(class_id: str, job_id: str,
                  decision: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's "Last incident" on the Home tab: its class and job (as the thread names it),
    and, when its decision (stored JSON, None: none stored) resumes the run, or leaves that to
    a person (a job with no recipe), from a checkpoint nobody could look up, why
    (`checkpoint_unknown`: the row says where the resume starts as the incident does, not
    nothing); `never_started`: the job ended while it waited in the queue, which the row says
    as the incident's head line does, not as its State's class (bot.core.policy.retry)."""
    dec = Decision.from_json(decision) if decision is not None else None
    resumes = dec is not None and (dec.resubmits or OFFER_RESUBMIT in dec.offers
                                   or OFFER_RESUBMIT_MEM in dec.offers or dec.by_hand)
    return {"class_id": class_id, "job_id": job_id,
            "checkpoint_unknown": dec.checkpoint_unknown if dec is not None and resumes
            else None,
            "never_started": dec is not None and dec.facts.get("why") == "never_started"}


def row_blocks(row: Mapping[str, Any]) -> int:
    """Blocks one row takes in the home template: a divider and its section, per open prompt
    its summary (when it has one) and its buttons, and the row's own buttons."""
    prompts = row.get("prompts") or ()
    return (2 + sum(1 + (1 if p.get("summary") else 0) for p in prompts)
            + (1 if row.get("buttons") else 0))


def fit_rows(rows: Sequence[Mapping[str, Any]], max_rows: int,
             budget: int = MAX_VIEW_BLOCKS - FIXED_BLOCKS) -> int:
    """How many of `rows` (newest first) the view shows: at most `max_rows`, and no more
    than fit in `budget` blocks; the rest are counted in the "and N more" line."""
    used = shown = 0
    for row in rows[:max_rows]:
        used += row_blocks(row)
        if used > budget:
            break
        shown += 1
    return shown


__all__ = ["CANCEL_KINDS", "CONTROL_KINDS", "FIXED_BLOCKS", "MAX_VIEW_BLOCKS", "MAX_VIEW_JSON",
           "RESUBMIT_KINDS", "UNWATCH", "adopted_buttons", "cancel_confirm", "fit_rows",
           "prompt_confirm", "row_blocks", "sees_adopted", "unfinished_tasks"]
