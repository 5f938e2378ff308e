"""Automatic resubmits: the state machine behind a `resubmit_now` decision.

A finished job whose decision is `resubmit_now` gets an intent row in the incidents table
(class `resubmit`, `record_due`); once its backoff has passed it goes `due` -> `submitting`
(sbatch; the attempt and its retry charge recorded in one transaction) -> `submitted` ->
`done` (thread told). A crash inside the submit, or an error that may have left a job (an
sbatch whose end trainbot did not see: OutcomeUnknown, its channel closed first or past its
timeout), is reconciled with Slurm before anything is submitted again (`run_due`). A row
whose stored decision does not read back as `resubmit_now` is never carried out: a person is
asked instead (`asked`). A resubmit that fails is tried again after a backoff
(bot.core.backoff.resubmit_retry_in_s), its failures counted on its row; the lookup of one
that may have gone through (`recover`), while it fails (the cluster down), is made again after
the same backoff, not at every tick. One refused by the cluster (sbatch said no) or failed
`RESUBMIT_TRIES` times is given up: the run's thread is told why and how to resume it by hand
(`failed`).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from bot.cluster.errors import CommandFailed
from bot.core.backoff import RESUBMIT_TRIES, resubmit_retry_in_s
from bot.core.policy import Decision, DecisionKind, resume_start, run_latest
from bot.core.slurm.sbatch import sbatch_refused_for_now
from bot.crashpoint import crashpoint
from bot.services.lost_submit import SubmitNotSeen
from bot.services.ports import LeaseLost
from bot.services.submit import RESUBMIT_CLASS, RunMovedOn, run_moved_on
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import Outbox
from bot.services.watch.said import resubmit_note_said, resubmitted_said, superseded_said
from bot.store import Chain, Incident, Store

log = logging.getLogger(__name__)


class Resubmit(Protocol):
    """Carry `decision` out for the chain, the resubmit of intent row `intent` (its key,
    kept with the submit in flight): the new job id; None when nothing was sent because
    another submit of the run is in flight (a person's resume)."""

    def __call__(self, recipe: str, chain_id: int, decision: Decision, *,
                 intent: str) -> str | int | None: ...


class Recover(Protocol):
    """The job the resubmit of `old_job` (intent row `intent`) left when it crashed,
    recorded; None: none."""

    def __call__(self, recipe: str, chain_id: int, old_job: str, decision: Decision, *,
                 intent: str) -> str | int | None: ...


class AutoResubmits:
    """One cluster's automatic resubmits (module doc). `resubmit` carries a decision out and
    records the new attempt (and, when `decision.charged`, its retry charge, in one store
    transaction); `recover` finds the job a resubmit interrupted by a crash left (recorded,
    charged like `resubmit`, and announced), or None."""

    def __init__(self, cluster: str, *, store: Store, outbox: Outbox, resubmit: Resubmit,
                 recover: Recover | None = None) -> None:
        self.cluster = cluster
        self.store = store
        self.outbox = outbox
        self._resubmit = resubmit
        self._recover = recover
        # the resubmits whose `recover` lookup failed in a row (the cluster down): how many
        # times, and when to look again (bot.core.backoff.resubmit_retry_in_s, as a failed
        # resubmit is tried again), by intent row; forgotten once a lookup answers
        self._lookups_failed: dict[str, tuple[int, float]] = {}

    def record_due(self, chain_id: int, job_id: str, recipe: str, decision: Decision,
                   now: float) -> None:
        """The intent to carry out `decision` (a `resubmit_now`) once its backoff passed."""
        self.store.incidents.record(
            f"{self.cluster}:{job_id}:resubmit", class_id=RESUBMIT_CLASS, now=now,
            chain_id=chain_id, job_id=job_id, state="due",
            diagnosis={"recipe": recipe, "decision": decision.to_json()},
        )

    def pending(self, chain_id: int) -> bool:
        """Whether a resubmit of the chain is still to be carried out (`due`: waiting out its
        backoff) or may have been (`submitting`: a crash or an error after sbatch), so the
        chain has a job to come even with none watched now."""
        return any(inc.chain_id == chain_id for inc in
                   self.store.incidents.of_class(RESUBMIT_CLASS, ("due", "submitting")))

    def run_due(self, now: float, report: TickReport) -> None:
        """Carry out `resubmit_now` decisions whose backoff has passed, through an intent row:
        `due` -> `submitting` (sbatch; the attempt and its charge recorded together) ->
        `submitted` -> `done` (thread told).

        A row found `submitting` is a crash or an error after the intent: the submit may have
        gone through. A resubmit that raises stays `submitting` (its sbatch may have gone
        through: an sbatch whose end was not seen, OutcomeUnknown; an error after it)
        unless the submit command said no (CommandFailed: back to `due`).
        `recover(recipe, chain_id, old_job, decision)` (when given) finds and records the job
        it left (an unrecorded sbatch, or a recorded attempt whose thread was not told) and
        returns its id, or None when there is none (then it is submitted), or raises
        SubmitNotSeen while Slurm may still queue it (the row stays `submitting`, looked at
        again when it says; an sbatch whose end was not seen waits as long before its first
        look); without `recover`,
        a chain with a newer attempt counts as submitted. A `submitted` row is only
        told (posts are idempotent by key). A chain that has ended since (the resumed job ran
        to its end while the bot was down) gets nothing new submitted, but a resubmit that went
        through is still told, once; one that did not is `dropped` (nothing to submit or
        tell, and no lookup on the cluster again). A `due` row whose run has a newer attempt
        (someone resubmitted it meanwhile), or whose recipe a newer run carries on (a
        `/train submit` since: bot.services.submit.run_moved_on; its thread is told), is
        `dropped` too: two jobs of a run never run side
        by side; one found another submit of its run in flight (`resubmit` returns None: a
        person's resume, refused to it) is `due` again, dropped once that job is recorded, or
        carried out if that submit queued nothing."""
        chains: dict[int, Chain | None] = {}
        rows = self.store.incidents.of_class(RESUBMIT_CLASS, ("due", "submitting", "submitted"))
        for key in self._lookups_failed.keys() - {inc.key for inc in rows}:
            del self._lookups_failed[key]  # settled meanwhile (another replica, a person)
        for inc in rows:
            if inc.chain_id is None:
                continue
            if inc.chain_id not in chains:
                chains[inc.chain_id] = self.store.chains.get(inc.chain_id)
            chain = chains[inc.chain_id]
            if chain is None or chain.cluster != self.cluster:
                continue
            # A resubmit that went through is told even when its chain has ended since (a
            # restart after the resumed job finished): `submitted`, or `submitting` when the
            # crash came before that was recorded. Nothing new is submitted for an ended chain.
            ended = chain.status != "active"
            if ended and inc.state == "due":
                continue
            data = inc.diagnosis
            decision = Decision.from_json(data.get("decision") or {})
            if decision.kind != DecisionKind.RESUBMIT_NOW:
                self._ask_instead(inc, chain.id, data, decision, now, report)
                continue
            if decision.not_before is not None and now < float(decision.not_before):
                continue
            if inc.state != "submitted" and now < float(data.get("retry_at") or 0):
                continue  # a failed try's backoff
            moved = run_moved_on(self.store, chain.id, chain.recipe,
                                 decision.facts.get("array_task"), str(inc.job_id)) \
                if inc.state == "due" else None
            if moved is not None:
                # the run went on meanwhile (a person's resume, a new run of the recipe): a
                # second job would run beside the one that carries it on
                log.info("%s: resubmit of %s dropped: job %s carries %s on since",
                         self.cluster, inc.job_id, moved.job, chain.recipe)
                if not moved.new_run or self._tell_superseded(inc, chain.id, moved, now,
                                                              report):
                    self.store.incidents.set_state(inc.key, "dropped")
                continue
            latest = self._latest(chain.id, decision)
            if inc.state == "submitted":
                new_job = latest.shown_id if latest is not None else "?"
                self._tell_resubmitted(inc, chain.id, data, decision, new_job, now, report)
                continue
            new_job = None
            if inc.state == "submitting":
                if self._recover is not None:
                    failed, again_at = self._lookups_failed.get(inc.key, (0, 0.0))
                    if now < again_at:
                        continue  # its last lookup failed: the cluster is given time
                    try:
                        new_job = self._recover(data["recipe"], chain.id,
                                                str(inc.job_id), decision, intent=inc.key)
                    except LeaseLost:
                        raise
                    except SubmitNotSeen as exc:  # Slurm may still queue it: never sent again
                        log.info("%s: the resubmit of %s is not on the cluster yet; looked "
                                 "for again at %.0f", self.cluster, inc.job_id,
                                 exc.look_again_at)
                        self.store.incidents.note_facts(inc.key,
                                                        {"retry_at": exc.look_again_at})
                        continue
                    except Exception as exc:  # noqa: BLE001 - never guess: retry later
                        wait = resubmit_retry_in_s(failed + 1)
                        self._lookups_failed[inc.key] = (failed + 1, now + wait)
                        log.warning("%s: cannot tell whether the resubmit of %s went "
                                    "through (%s); asking again in %.0f s",
                                    self.cluster, inc.job_id, exc, wait)
                        continue
                    self._lookups_failed.pop(inc.key, None)
                elif latest is not None and latest.job_id != inc.job_id:
                    new_job = latest.shown_id  # it went through: a newer attempt records it
            if new_job is None:
                if ended:  # nothing went through, and the chain has ended since: settled, so
                    self.store.incidents.set_state(inc.key, "dropped")  # no lookup each tick
                    continue
                if data.get("refused") or int(data.get("failures") or 0) >= RESUBMIT_TRIES:
                    self._give_up(inc, chain.id, data, decision, now, report)
                    continue
                if not self.store.incidents.set_state_from(inc.key, inc.state, "submitting"):
                    continue  # another replica took this resubmit on meanwhile
                crashpoint("resubmit_intent", inc.key)  # crash-safety test hook (no-op)
                try:
                    new_job = self._resubmit(data["recipe"], chain.id, decision,
                                             intent=inc.key)
                except LeaseLost:
                    raise  # no sbatch was made; the state is the new holder's to change
                except Exception as exc:  # noqa: BLE001 - retried later, never lost
                    report.resubmits_failed += 1
                    self._failed(inc, chain.id, data, decision, exc, now, report)
                    continue
                if new_job is None:  # another submit of the run is in flight: nothing sent;
                    self.store.incidents.set_state(inc.key, "due")  # dropped once recorded
                    continue
            self.store.incidents.set_state(inc.key, "submitted")
            self._tell_resubmitted(inc, chain.id, data, decision, new_job, now, report)

    def _failed(self, inc: Incident, chain_id: int, data: dict[str, Any], decision: Decision,
                exc: Exception, now: float, report: TickReport) -> None:
        """The resubmit of `inc` raised `exc`: counted on its row, tried again after its
        backoff. The submit command said no (CommandFailed: nothing was submitted) → back to
        `due`; given up at once unless its reason passes by itself (a submit limit, a busy
        controller: bot.core.slurm.sbatch.sbatch_refused_for_now), since the same sbatch
        would be refused again. Else it may have gone through (a channel closed, an error
        after sbatch): it stays `submitting`, so `recover` looks first, and it is given up
        only once that found nothing."""
        said_no = isinstance(exc, CommandFailed)
        stderr = exc.stderr if isinstance(exc, CommandFailed) else ""
        refused = said_no and not sbatch_refused_for_now(stderr)
        tried = int(data.get("failures") or 0) + 1
        retry_at = now + resubmit_retry_in_s(tried)
        if isinstance(exc, SubmitNotSeen):  # sent, its end not seen: not looked up before
            retry_at = max(retry_at, exc.look_again_at)  # Slurm may queue it (its bound)
        # sbatch's own words when it said no (its last lines, as one), not its long argv
        error = " ".join(" ".join(stderr.strip().splitlines()[-5:]).split()) or str(exc)
        stored = self.store.incidents.note_failure(
            inc.key, error=error, state="due" if said_no else "submitting",
            facts={"refused": refused, "retry_at": retry_at
                   if tried < RESUBMIT_TRIES and not refused else now})
        log.warning("%s: resubmit of %s (chain %s) failed (try %d of %d)%s: %s", self.cluster,
                    inc.job_id, chain_id, tried, RESUBMIT_TRIES,
                    "; sbatch refused it, not tried again" if refused else "", exc)
        if refused:
            self._give_up(inc, chain_id, stored, decision, now, report)

    def _give_up(self, inc: Incident, chain_id: int, data: dict[str, Any], decision: Decision,
                 now: float, report: TickReport) -> None:
        """Stop trying the resubmit of `inc` (refused, or failed RESUBMIT_TRIES times, nothing
        submitted): the run's thread is told once, with the last error and how to resume by
        hand; the row is `failed` once the note is taken (until then it is said again)."""
        recipe = data.get("recipe")
        tries = int(data.get("failures") or 0)
        error = str(data.get("error") or "")
        facts: dict[str, Any] = {"resubmit": "refused" if data.get("refused") else "failed",
                                 "tries": tries, "error": error, "recipe": recipe or "RECIPE"}
        said = facts["said"] = resubmit_note_said(str(inc.job_id), facts)
        if self.outbox.emit(WatchEvent("note", f"{self.cluster}:{inc.job_id}:resubmit:failed",
                                       self.cluster, str(said), chain_id, str(inc.job_id),
                                       recipe, decision=decision, facts=facts, text_only=True),
                            "resubmit_failed", now, report):
            self.store.incidents.set_state(inc.key, "failed")

    def _latest(self, chain_id: int, decision: Decision) -> Any:
        """The chain's latest attempt; of a resubmitted array task (`array_task`), that
        task's: its siblings run side by side and are no resubmit of it."""
        return run_latest(self.store.attempts.for_chain(chain_id),
                          decision.facts.get("array_task"))

    def _tell_superseded(self, inc: Incident, chain_id: int, moved: RunMovedOn, now: float,
                         report: TickReport) -> bool:
        """Say in the run's thread that its due resubmit was not made: a new run of its
        recipe carries it on (its incident said it would resubmit). True once said."""
        recipe = str(inc.diagnosis.get("recipe") or "")
        told = superseded_said(str(inc.job_id), recipe, moved.job)
        return self.outbox.emit(WatchEvent(
            "resubmit_superseded", f"{self.cluster}:{inc.job_id}:resubmit:superseded",
            self.cluster, str(told), chain_id, str(inc.job_id), recipe,
            facts={"new_job": moved.job, "recipe": recipe, "said": told}),
            "resubmit_superseded", now, report)

    def _ask_instead(self, inc: Incident, chain_id: int, data: dict[str, Any], decision: Decision,
                     now: float, report: TickReport) -> None:
        """A resubmit row whose stored decision does not say `resubmit_now` (unreadable,
        written by another version): nothing is submitted, a person is asked in the thread."""
        recipe = data.get("recipe")
        kind = str((data.get("decision") or {}).get("kind"))
        facts: dict[str, Any] = {"resubmit": "ask", "stored_kind": kind,
                                 "recipe": recipe or "RECIPE"}
        said = facts["said"] = resubmit_note_said(str(inc.job_id), facts)
        # The note says its own sentence, not the stored decision's ("resubmitting …")
        if self.outbox.emit(WatchEvent("note", f"{self.cluster}:{inc.job_id}:resubmit:ask",
                                 self.cluster, str(said), chain_id, str(inc.job_id), recipe,
                                 decision=decision, text_only=True, facts=facts),
                      "resubmit_ask", now, report):
            self.store.incidents.set_state(inc.key, "asked")

    def _tell_resubmitted(self, inc: Incident, chain_id: int, data: dict[str, Any],
                          decision: Decision, new_job: str | int, now: float,
                          report: TickReport) -> None:
        old = self.store.attempts.get_by_job(str(inc.job_id), self.cluster)
        shown = old.shown_id if old is not None else str(inc.job_id)  # `123_4` of a task
        where = resume_start(decision.resume_from, decision.resume_checkpoint)
        told = resubmitted_said(shown, str(new_job), where)
        if self.outbox.emit(WatchEvent("resubmitted", f"{self.cluster}:{inc.job_id}:resubmitted",
                                 self.cluster, str(told), chain_id, str(inc.job_id),
                                 data["recipe"], decision=decision,
                                 facts={"new_job": str(new_job), "said": told,
                                        **({"shown_id": shown} if shown != str(inc.job_id)
                                           else {})}),
                      "resubmitted", now, report):
            self.store.incidents.set_state(inc.key, "done")
