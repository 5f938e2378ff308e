"""One submit of a recipe at a time: the claim `submit_recipe` holds from just before its sbatch
until its job is recorded, in the store's claims (CommandClaimsRepo: the mechanism a run's
root message is tried under, bot.services.threads.open_thread), shared by every replica.

Every submit of a recipe writes the same checkpoints under the same job name, whichever run
it goes into: a Resubmit click of an older run and a `/train submit` of a new one at the same
instant would each pass the checks that look at the other's recorded job (neither is recorded
yet) and both queue. Of two submits of a recipe at once, exactly one takes the claim; the
other is refused before its sbatch (`RecipeSubmitUnderWay`), naming the one under way.
"""

from __future__ import annotations

import logging

from bot.core.holders import holder_label
from bot.core.text import N_, Text
from bot.services import ServiceError
from bot.services.leases import process_holder, process_judge
from bot.store import Store, SubmitInFlight

log = logging.getLogger(__name__)

#: Who the watcher's automatic resubmits are made by (bot.services.submit.AUTOMATIC_ACTOR).
_AUTOMATIC = "trainbot"
#: The longest a submit's claim is held besides its remote commands (its store writes).
CLAIM_MARGIN_S = 30.0


def claim_key(recipe: str) -> str:
    """The key of `recipe`'s submit claim."""
    return f"submit:recipe:{recipe}"


def claim_recipe(store: Store, recipe: str, now: float, hold_s: float) -> str | None:
    """Claim the submit of `recipe` for this process until `now + hold_s`: its holder, or None
    when another submit holds it. A claim whose holder is provably dead (a bot killed in its
    submit, restarted: bot.services.leases.DeadHolders) is taken over at once (of several
    takers one gets it), as a run root's claim is; a live one's, or one that cannot be
    judged, stands until released or lapsed."""
    holder, key = process_holder(), claim_key(recipe)
    claims = store.command_claims
    if claims.claim(key, holder, now, hold_s):
        return holder
    other = claims.holder(key)
    if other is None:  # released meanwhile: claimed again, once
        return holder if claims.claim(key, holder, now, hold_s) else None
    if other == holder:  # this process's other submit
        return None
    death = process_judge().death(other, what=key)
    if death is None or not claims.take_over(key, other, holder, now, hold_s):
        return None
    log.warning("%s: its submit claim was held by %s, which is dead (%s): taken over by %s",
                recipe, holder_label(other), death.value, holder_label(holder))
    return holder


def release_recipe(store: Store, recipe: str, holder: str) -> None:
    """End `holder`'s claim of `recipe`'s submit (a store blip: it lapses by its hold)."""
    try:
        store.command_claims.release(claim_key(recipe), holder)
    except Exception:  # noqa: BLE001 - the job is recorded; the claim lapses by itself
        log.warning("%s: could not release its submit claim (it lapses by its hold)", recipe,
                    exc_info=True)


class RecipeSubmitUnderWay(ServiceError):
    """A submit of `recipe` refused before its sbatch: another submit of the recipe holds its
    claim (its job is not recorded yet). `other`: that submit, as kept in flight (a person's
    or the watcher's; None when it keeps none, e.g. `trainbot submit`, and then it is not
    named); `run_job`: the latest job of the run it goes into (None: a new run)."""

    def __init__(self, recipe: str, other: SubmitInFlight | None, run_job: str | None,
                 sent: str) -> None:
        super().__init__(_under_way(recipe, other, run_job, sent))
        self.recipe, self.other, self.run_job = recipe, other, run_job


def _under_way(recipe: str, other: SubmitInFlight | None, run_job: str | None,
               sent: str) -> Text:
    """The refusal's sentence: whose submit of which run of `recipe` is under way."""
    if other is None:
        return N_("not submitted: another submit of %(recipe)s is under way and its job is not "
                  "recorded yet; two jobs of a recipe side by side would write the same "
                  "checkpoints. `/train status %(recipe)s` shows its job once it is queued",
                  recipe=recipe)
    if other.chain_id is None:
        return N_("not submitted: <@%(actor)s>'s submit of a new run of %(recipe)s was sent "
                  "at %(sent)s and its job is not recorded yet; two jobs of a recipe side by "
                  "side would write the same checkpoints. The new run's thread tells which "
                  "job it is", actor=other.actor, recipe=recipe, sent=sent)
    if other.actor == _AUTOMATIC:
        return N_("not submitted: trainbot's automatic resubmit of %(recipe)s's run of job "
                  "%(job)s was sent at %(sent)s and its job is not recorded yet; two jobs of a "
                  "recipe side by side would write the same checkpoints. That run's thread "
                  "tells which job it is", recipe=recipe, job=run_job or "?", sent=sent)
    return N_("not submitted: <@%(actor)s>'s resubmit of %(recipe)s's run of job %(job)s was "
              "sent at %(sent)s and its job is not recorded yet; two jobs of a recipe side by "
              "side would write the same checkpoints. That run's thread tells which job it is",
              actor=other.actor, recipe=recipe, job=run_job or "?", sent=sent)
