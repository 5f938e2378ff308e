"""One submit of a run at a time, and a new run of a recipe alone: the claim `submit_recipe`
holds from just before its sbatch until its job is recorded, in the store's claims
(CommandClaimsRepo: the mechanism a run's root message is tried under,
bot.services.threads.open_thread), shared by every replica.

Every submit of a run writes that run's checkpoints (a task of an array run its own) under the
recipe's job name: a Resubmit click of an older run and a `/train submit` of a new one at the
same instant would each pass the checks that look at the other's recorded job (neither is
recorded yet) and both queue. The claim's key is a path (bot.core.submit_keys), and a claim
stands against every claim it crosses (its own key, the keys above it and those below it), so
a new run waits for every submit of the recipe, a whole array's for each of its tasks', and
two tasks' resubmits (or two runs') go side by side. An older submit kept in flight
(`submits_in_flight`) stands by the same rule against every submit whose key crosses its own,
also once its claim has lapsed (its sbatch's answer lost, or the bot restarted: its job may
be queued and not recorded until the row's recovery settles it); a row on a cluster no longer
configured, which its recovery does not look up, stands against its own key alone. The other
is refused before its sbatch (`RecipeSubmitUnderWay`), naming the submit that holds the claim
or the row (a Cancel and resume click, which keeps no row until its resubmit, by its holder:
`click_of`), and for a row kept in flight, when its recovery looks its job up (a row on a
cluster no longer configured: that it is not looked up until that cluster is configured).

A rolling upgrade runs an older trainbot beside this one: it claims every submit of a recipe
under one key, `submit:recipe:<recipe>` (bot.core.submit_keys.legacy_key), and looks at that
key alone. Every claim here holds that key too, in the same transaction (taken, renewed:
`renew_submit`, and ended with it: `release_submit`, a row's settle), all of them at once
under one holder that names no process (bot.core.submit_keys.NEWER_SUBMITS), as long as any
of their claims is held or any submit of the recipe is kept in flight (its claim lapsed, its
job maybe queued: until the row settles) (CommandClaimsRepo.sync_legacy): the older trainbot
is refused meanwhile, also when the submit that took or renewed it last died or settled first;
held by the older trainbot, it refuses the claim here (its holder, provably dead, taken over).
Two claims here do not stand against each other by it: their path keys say whether they cross.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection
from dataclasses import dataclass

from bot.core.holders import holder_label
from bot.core.submit_keys import claim_key, crosses, keys_above, legacy_key, top_key
from bot.core.text import N_, Text
from bot.services import ServiceError
from bot.services.leases import process_holder, process_judge
from bot.store import Store, SubmitInFlight

log = logging.getLogger(__name__)

#: Who the watcher's automatic resubmits are made by (bot.services.submit.AUTOMATIC_ACTOR).
_AUTOMATIC = "trainbot"
#: The longest a submit's claim is held besides its remote commands (its store writes).
CLAIM_MARGIN_S = 30.0


def submit_holder(click: str | None = None) -> str:
    """A holder for one submit's claim: this process's holder id (process_holder), its random
    part followed by a token of the submit's own, so the claim is judged dead as the process
    is (bot.core.holders) and only this submit releases it; with `click`, the approval token
    of the Cancel and resume whose claim it is (`click_of`), which keeps no row in flight
    until its resubmit: a submit it refuses names the click by it."""
    parts = process_holder().split(":")
    token = secrets.token_hex(4) + (f"@{click}" if click else "")
    if len(parts) == 6:
        parts[2] = f"{parts[2]}.{token}"
        return ":".join(parts)
    return f"{process_holder()}.{token}"


def click_of(holder: str) -> str | None:
    """The approval token of the Cancel and resume click `holder` (a submit_holder) claims
    for; None: a submit's own claim."""
    parts = holder.split(":")
    _, at, click = (parts[2] if len(parts) == 6 else parts[-1]).partition("@")
    return click if at and click else None


def flight_key(flight: SubmitInFlight) -> str:
    """The claim key of the submit `flight` keeps in flight."""
    return claim_key(flight.recipe, flight.chain_id, flight.array_task)


@dataclass(frozen=True)
class Refused:
    """Why a submit could not take its claim: `other`, the submit that holds the claim or
    stands against it, as kept in flight (None when it keeps none: `trainbot submit`, or a
    Cancel and resume before its resubmit, whose approval token `click` is); `kept`: refused
    by `other`'s row in flight, its claim no longer held (lapsed, or its holder dead: its
    sbatch's answer lost, the bot restarted), which stands until its recovery settles it."""

    other: SubmitInFlight | None
    click: str | None = None
    kept: bool = False


def claim_submit(store: Store, recipe: str, chain_id: int | None, array_task: int | None, *,
                 holder: str, own: SubmitInFlight | None, now: float, hold_s: float,
                 clusters: Collection[str]) -> Refused | None:
    """Claim the submit of `recipe` into run `chain_id` (task `array_task`; a new run without
    `chain_id`) for `holder` until `now + hold_s` (a claim `holder` holds already is held on
    to then, and only the claims of others looked at); None once claimed, else what stands
    against it (see module doc): a submit of a crossing key kept in flight before `own` (this
    submit's row; `Refused.kept` once its claim is no longer held; `_stands_against`: one on
    none of the configured `clusters` of its own key alone), or another holder's claim of a
    crossing key, whose submit is named (`Refused`). A claim whose holder is provably
    dead (a bot killed in its submit, restarted: bot.services.leases.DeadHolders) is taken
    over at once (of several takers one gets it), as a run root's claim is; a live
    one's, or one that cannot be judged, stands until released or lapsed. Of claims of
    crossing keys taken at the same instant exactly one is kept
    (CommandClaimsRepo.claim_uncrossed)."""
    key = claim_key(recipe, chain_id, array_task)
    flights = _flights(store, recipe, own)
    claims = store.command_claims
    if claims.renew(key, holder, now, hold_s):
        # held already (a cancel and resume's, taken before its scancel: the rows then were
        # looked at, and a submit in flight since is refused by it); a claim crossing it now
        # was taken once it had lapsed
        for other_key, other in claims.held_around(key, keys_above(key), now):
            if other == holder or other_key == key:
                continue
            if _dead(other, other_key):
                _release_dead(store, key, other_key, other)
                continue
            release_submit(store, key, holder)
            return _refused(_flights(store, recipe, own), other_key, other)
        old = _hold_legacy(store, key, holder, now, hold_s)
        if old is not None:
            release_submit(store, key, holder)
            return _refused(_flights(store, recipe, own), legacy_key(key), old)
        return None
    older = [f for f in flights
             if (own is None or f.id < own.id) and _stands_against(f, key, clusters)]
    if older:
        return Refused(older[0], kept=not _held(store, flight_key(older[0]), now))
    for _ in range(2):  # a second time once the dead holders' claims are gone
        crossing = claims.claim_uncrossed(key, keys_above(key), holder, now, hold_s,
                                          legacy=legacy_key(key))
        if not crossing:
            return None
        live = [(k, h) for k, h in crossing if not _dead(h, k)]
        if live:  # the rows read again: the holder's row may be newer than the claim
            return _refused(_flights(store, recipe, own), *live[0])
        for other_key, other in crossing:
            _release_dead(store, key, other_key, other)
    return Refused(None)


def _release_dead(store: Store, key: str, other_key: str, other: str) -> None:
    """End the claim of `other_key` held by `other`, a dead holder crossing `key`: a newer
    submit's as `release_submit` does (the recipe's hold for an older trainbot recomputed
    without it), an older trainbot's hold of that key (legacy_key) alone."""
    if other_key == legacy_key(key):
        store.command_claims.release(other_key, other)
    else:
        release_submit(store, other_key, other)


def _flights(store: Store, recipe: str, own: SubmitInFlight | None) -> list[SubmitInFlight]:
    """The submits of `recipe` kept in flight, but `own`."""
    return [f for f in store.submits_in_flight.of_recipe(recipe)
            if own is None or f.id != own.id]


def _stands_against(flight: SubmitInFlight, key: str, clusters: Collection[str]) -> bool:
    """Does `flight`, kept in flight, stand against a submit of `key`: its key crosses `key`
    (bot.core.submit_keys.crosses), or, its cluster on none of the configured `clusters` (taken
    out of the config), its key is `key`? Such a row is not looked up by its recovery
    (bot.services.runs.recover_submits_in_flight visits the configured clusters, and warns of
    it) until its cluster is configured again: standing against every crossing submit, a kept
    resume would refuse every new run of the recipe meanwhile, a kept new run every resubmit
    of its runs (the watcher's too)."""
    own = flight_key(flight)
    return own == key if flight.cluster not in clusters else crosses(key, own)


def _held(store: Store, key: str, now: float) -> bool:
    """Is `key`'s claim held at `now` (not lapsed, its holder not provably dead)?"""
    return any(k == key and not _dead(h, k)
               for k, h in store.command_claims.held_around(key, [], now))


def _dead(holder: str, key: str) -> bool:
    """Is `holder`, of `key`'s claim, provably dead (logged)?"""
    death = process_judge().death(holder, what=key)
    if death is not None:
        log.warning("%s: its submit claim was held by %s, which is dead (%s)", key,
                    holder_label(holder), death.value)
    return death is not None


def _refused(flights: list[SubmitInFlight], key: str, holder: str) -> Refused:
    """The refusal by `holder`'s claim of `key`: its submit kept in flight, else the Cancel
    and resume click it claims for (`click_of`)."""
    other = _of(flights, key)
    return Refused(other, click_of(holder) if other is None else None)


def _of(flights: list[SubmitInFlight], key: str) -> SubmitInFlight | None:
    """The submit kept in flight whose claim is `key` (the newest: the one that holds it)."""
    mine = [f for f in flights if flight_key(f) == key]
    return mine[-1] if mine else None


def _hold_legacy(store: Store, key: str, holder: str, now: float, hold_s: float) -> str | None:
    """Hold the key an older trainbot claims `key`'s recipe under (legacy_key) for `holder`,
    who holds `key` already, until `now + hold_s`: None once held, else the older trainbot's
    holder that stands against it (one provably dead is taken over)."""
    claims, legacy, top = store.command_claims, legacy_key(key), top_key(key)
    old = claims.hold_legacy(legacy, top, holder, now, hold_s)
    if old is not None and _dead(old, legacy):
        claims.release(legacy, old)
        old = claims.hold_legacy(legacy, top, holder, now, hold_s)
    return old


def renew_submit(store: Store, key: str, holder: str, now: float, hold_s: float) -> bool:
    """Hold `holder`'s claim of `key` until `now + hold_s` (CommandClaimsRepo.renew), and its
    hold of the recipe's key as an older trainbot claims it (legacy_key) as long: False when
    `holder` no longer holds `key`, or an older trainbot took the recipe's key meanwhile (its
    claim of `key` then ended: lost, as a lapsed one taken by another)."""
    if not store.command_claims.renew(key, holder, now, hold_s):
        return False
    if _hold_legacy(store, key, holder, now, hold_s) is None:
        return True
    release_submit(store, key, holder)
    return False


def release_submit(store: Store, key: str, holder: str) -> None:
    """End `holder`'s claim of `key`, and its share of the hold of the recipe's key as an
    older trainbot claims it (CommandClaimsRepo.release_legacy: kept while another submit of
    the recipe holds its claim, else ended) (a store blip: they lapse by their hold)."""
    try:
        store.command_claims.release(key, holder)
        store.command_claims.release_legacy(legacy_key(key), top_key(key), holder)
    except Exception:  # noqa: BLE001 - the job is recorded; the claim lapses by itself
        log.warning("%s: could not release its submit claim (it lapses by its hold)", key,
                    exc_info=True)


@dataclass(frozen=True)
class ClickHolding:
    """A Cancel and resume click holding a run's submit claim before its resubmit: who
    pressed it (`actor`), on which job of the run (`job`), when (`pressed`, sent_moment)."""

    actor: str
    job: str
    pressed: str


class RecipeSubmitUnderWay(ServiceError):
    """A submit of `recipe` refused before its sbatch: another submit of the recipe holds its
    claim (its job is not recorded yet). `other`: that submit, as kept in flight (a person's
    or the watcher's; None when it keeps none, e.g. `trainbot submit`, and then it is not
    named, or a Cancel and resume before its resubmit: `click`, named); `run_job`: the latest
    job of the run it goes into (None: a new run); `looked_up_at`: when its row's recovery
    looks its job up if it is not recorded by then (None: not said, the refusal came from
    its claim); `gone_cluster`: instead, the cluster no longer configured it was sent to, whose
    rows are not looked up until it is configured again."""

    def __init__(self, recipe: str, other: SubmitInFlight | None, run_job: str | None,
                 sent: str, click: ClickHolding | None = None,
                 looked_up_at: str | None = None, gone_cluster: str | None = None) -> None:
        refusal = _under_way(recipe, other, run_job, sent, click)
        if other is not None and gone_cluster is not None:
            refusal = N_("%(refusal)s. It was sent to cluster `%(cluster)s`, which is no longer "
                         "configured: trainbot looks its job up only once that cluster is "
                         "configured again", refusal=refusal, cluster=gone_cluster)
        elif other is not None and looked_up_at is not None:
            refusal = N_("%(refusal)s. If its job is not recorded by %(at)s, trainbot looks it "
                         "up by its name then and records it if it is queued; until then no "
                         "submit that would run beside it is sent", refusal=refusal,
                         at=looked_up_at)
        super().__init__(refusal)
        self.recipe, self.other, self.run_job, self.click = recipe, other, run_job, click


def _under_way(recipe: str, other: SubmitInFlight | None, run_job: str | None,
               sent: str, click: ClickHolding | None = None) -> Text:
    """The refusal's sentence: whose submit of which run of `recipe` is under way."""
    if other is None and click is not None:
        return N_("not submitted: <@%(actor)s> pressed Cancel and resume on %(recipe)s's job "
                  "%(job)s at %(sent)s: it cancels that job and resubmits its run, and that "
                  "resubmit's job is not recorded yet; two jobs of a recipe side by side would "
                  "write the same checkpoints. That run's thread tells which job it is",
                  actor=click.actor, recipe=recipe, job=click.job, sent=click.pressed)
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
