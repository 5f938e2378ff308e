"""The watcher's outbox: every event is recorded before it is published, and published once.

Crash safety: an event is first recorded in the store's incidents table under its stable key
with state `pending`, then published, then marked `posted`. A key already `posted` is never
published again; one left `pending` (a crash between the two) is published again when the
condition is seen on a later tick — the finished job stays watched until its event is
posted, so that is guaranteed for incidents; a warning still `pending` when its job ends is
published (as a note) before the incident (`flush_warnings`); one the sink gave up (Slack
refused the message itself: PostGivenUp) is `dropped`. A warning emitted again while it is
`pending` is one warning: its row keeps what it says now (a leak's newest projection; its
key does not move with it, bot.services.watch.judge.warning_key). Publishing must be
idempotent by key (the Slack poster is). tests/integration/test_crash_safety.py kills the
bot at these points.

The stored event keeps its facts (a sentence among them as data, bot.core.text.text_to_json),
so one published again from the store (`unposted`, `stored_event`: a cluster's unreachable
notice whose post failed, or that a restart left) says what it said, in the thread's language.
A publish that reached some of its threads only (PartlyPosted) leaves its row `partly_posted`:
said, so a restarted bot knows it was (bot.services.watch.health), and still to be published
for the threads left. So does a row a bot left `pending` after its publish reached a thread,
or may have (it stopped before marking it, or a post's answer was lost): `last_said` asks the
sink (`said_in_a_thread`: the thread posts' own records, an intent looked up in its thread),
so a notice told is not taken for one never said.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bot.core.policy import Decision, PastWarning
from bot.core.text import text_from_json, text_to_json
from bot.crashpoint import crashpoint
from bot.log_format import log_fields
from bot.services.ports import LeaseLost, PartlyPosted, PostGivenUp, PostLogged
from bot.services.watch.events import EventSink, TickReport, WatchEvent
from bot.store import Incident, Store

log = logging.getLogger(__name__)

WARNING_CLASSES = ("memory_leak", "hang", "low_gpu_util")
PARTLY_POSTED = "partly_posted"  # said in some of its threads, Slack refused it in others
TO_PUBLISH = ("pending", PARTLY_POSTED)  # the states whose event is published (again)
SAID = ("posted", PARTLY_POSTED)  # the states whose event a thread has


def _level(exc: Exception) -> int:
    """A publish's failure is a warning; one whose threads' failures were logged where they
    came (PostLogged: a cluster's notice, one warning per refused try; PostDeferred, not
    tried this time) is logged at debug: a try is warned of once."""
    return logging.DEBUG if isinstance(exc, PostLogged) else logging.WARNING


def event_from_store(cluster: str, incident: Incident) -> WatchEvent:
    """The event `incident` recorded (of `cluster`), as it was emitted: its kind, its English
    text, its facts (its sentences Texts again, for the thread's language), its recipe (the
    thread's language), its decision (Decision.from_json: what its sentence and buttons
    say) and `text_only`; so it is said as it was. (Not its diagnosis and Slurm record: an
    incident is published again from the watcher's reading of its job, not from here.) A row
    stored before the recipe, the decision and `text_only` were has none of them."""
    data = incident.diagnosis
    recipe, decision = data.get("recipe"), data.get("decision")
    return WatchEvent(str(data.get("kind") or "note"), incident.key, cluster,
                      str(data.get("text") or incident.class_id), incident.chain_id,
                      incident.job_id, recipe=recipe if isinstance(recipe, str) else None,
                      decision=Decision.from_json(decision)
                      if isinstance(decision, Mapping) else None,
                      facts=dict(text_from_json(data.get("facts") or {})),
                      text_only=bool(data.get("text_only")))


class Outbox:
    """Publishes one cluster's events to `sink` through the store (module doc), and keeps the
    warnings each chain was given (the policy does not repeat them)."""

    def __init__(self, cluster: str, *, store: Store, sink: EventSink) -> None:
        self.cluster = cluster
        self.store = store
        self.sink = sink
        self._warnings: dict[int, list[PastWarning]] = {}  # per chain, loaded once

    def emit(self, event: WatchEvent, class_id: str, now: float, report: TickReport,
             extra: dict[str, Any] | None = None) -> bool:
        """Intent (store, `pending`) -> publish -> `posted`. False if publishing failed (the
        row stays `pending`: published again when the event is emitted again). A publish
        that reached some of its threads only (PartlyPosted: a cluster's notice) is True, it
        has been said: its row is `partly_posted` (`unposted`: published again for the
        threads left). One the sink gave up (PostGivenUp: Slack refused the message itself,
        which no try changes) is True too, done with: its row is `dropped`, never published
        again."""
        payload: dict[str, Any] = {"kind": event.kind, "text": event.text,
                                   "job_id": event.job_id, "cluster": self.cluster}
        if event.recipe is not None:
            payload["recipe"] = event.recipe
        if event.diagnosis is not None:
            payload["diagnosis"] = event.diagnosis.to_json()
        if event.decision is not None:
            payload["decision"] = event.decision.to_json()
        if event.facts:
            payload["facts"] = text_to_json(event.facts)
        if event.text_only:
            payload["text_only"] = True
        payload.update(extra or {})
        incident, created = self.store.incidents.record(
            event.key, class_id=class_id, diagnosis=payload, now=now,
            chain_id=event.chain_id, job_id=event.job_id, state="pending",
        )
        if incident.state not in TO_PUBLISH:
            return True  # published before (this key is done)
        if not created and incident.state == "pending" and class_id in WARNING_CLASSES:
            # a warning tried again: its row says what it says now (a leak's newest
            # projection), so the one `flush_warnings` publishes at the job's end is that
            self.store.incidents.note_facts(event.key, payload)
        crashpoint("intent_recorded", event.key)  # crash-safety test hook (no-op in production)
        try:
            with log_fields(event_key=event.key, chain=event.chain_id, job=event.job_id):
                self.sink.publish(event)
        except LeaseLost:
            raise  # not published: the key stays `pending` for the replica holding the lease
        except PostGivenUp as exc:  # never to be posted (logged where it was refused)
            log.debug("%s: %s given up, dropped: %s", self.cluster, event.key, exc)
            self.store.incidents.set_state(event.key, "dropped")
            return True
        except PartlyPosted as exc:
            log.log(_level(exc), "%s: publishing %s reached some threads only, will retry the "
                    "others: %s", self.cluster, event.key, exc)
            if incident.state != PARTLY_POSTED:
                self.store.incidents.set_state(event.key, PARTLY_POSTED)
            report.events.append(event)
            return True
        except Exception as exc:  # noqa: BLE001 - a failed post must not stop the tick
            log.log(_level(exc), "%s: publishing %s failed, will retry: %s", self.cluster,
                    event.key, exc)
            return False
        self.store.incidents.set_state(event.key, "posted")
        if class_id in WARNING_CLASSES and event.chain_id is not None:
            self.past_warnings(event.chain_id).append(PastWarning(
                class_id, now, projected_oom_iter=payload.get("projected_oom_iter"),
                stall_started_at=payload.get("stall_started_at"), job_id=event.job_id,
                key=event.key, last_iter=event.diagnosis.metrics.last_iter
                if event.diagnosis is not None else None))
        report.events.append(event)
        return True

    def flush_warnings(self, chain_id: int | None, job_id: str, recipe: str | None,
                       now: float, report: TickReport) -> bool:
        """Publish the job's warnings still `pending` (the bot died between intent and post
        and the condition was not seen again) before its incident, as plain notes: the job
        has ended, so their buttons would act on nothing. Slack's copy, if the post went
        through, is found by key (no duplicate). False if one could not be published."""
        if chain_id is None:
            return True
        ok = True
        for inc in self.store.incidents.for_chain(chain_id):
            if inc.job_id != job_id or inc.state != "pending" or \
                    inc.class_id not in WARNING_CLASSES:
                continue
            text = str(inc.diagnosis.get("text") or inc.class_id)
            ok = self.emit(WatchEvent("note", inc.key, self.cluster, text, chain_id, job_id,
                                      recipe, facts=dict(inc.diagnosis.get("facts") or {})),
                           inc.class_id, now, report) and ok
        return ok

    def unposted(self, class_id: str) -> list[Incident]:
        """This cluster's events of `class_id` recorded and not posted in all their threads
        (their publish failed, or reached some threads only, or the bot stopped before it),
        oldest first."""
        return self._of_class(class_id, TO_PUBLISH)

    def last_said(self, class_id: str) -> Incident | None:
        """This cluster's latest event of `class_id` when a thread has it (posted, or in some
        threads); None when there is none, or the latest was never said (never posted,
        dropped). One left `pending` that the sink finds, or may find, in a thread
        (`said_in_a_thread`: a bot stopped after its publish and before marking it, a post's
        answer was lost) was said: it is stored `partly_posted` (a thread may lack it) and
        returned so."""
        latest = self._of_class(class_id, (*TO_PUBLISH, *SAID, "dropped"))[-1:]
        if not latest:
            return None
        incident = latest[0]
        if incident.state == "pending" and self._said_in_a_thread(incident.key):
            log.warning("%s: %s was posted in a thread, or may have been, and left pending "
                        "(the bot stopped before marking it, or a post's answer was lost): "
                        "it is %s", self.cluster, incident.key, PARTLY_POSTED)
            self.store.incidents.set_state_from(incident.key, "pending", PARTLY_POSTED)
            incident = self.store.incidents.get(incident.key) or incident
        return incident if incident.state in SAID else None

    def _said_in_a_thread(self, key: str) -> bool:
        """Whether the sink has the event `key` in a thread (a sink that cannot tell: no)."""
        said = getattr(self.sink, "said_in_a_thread", None)
        return said is not None and bool(said(key))

    def recorded(self, key: str) -> bool:
        """Whether an event was recorded under `key` (whatever became of it)."""
        return self.store.incidents.get(key) is not None

    def _of_class(self, class_id: str, states: tuple[str, ...]) -> list[Incident]:
        return [inc for inc in self.store.incidents.of_class(class_id, states)
                if inc.diagnosis.get("cluster") == self.cluster]

    def drop(self, incident: Incident) -> None:
        """An unposted event that is no longer true (an outage over before it was told):
        never published."""
        self.store.incidents.set_state(incident.key, "dropped")

    def stored_event(self, incident: Incident) -> WatchEvent:
        """A recorded event as it was emitted, to publish again (`event_from_store`)."""
        return event_from_store(self.cluster, incident)

    def chain_changed(self, chain_id: int) -> None:
        """Tell the sink (when it listens) that a chain's attempts or status changed."""
        self._tell_sink("chain_changed", chain_id)

    def progress_changed(self, chain_id: int) -> None:
        """Tell the sink (when it listens) that only what a chain's thread root shows changed
        (its running jobs' iterations, a single run's state): Home is not told."""
        self._tell_sink("progress_changed", chain_id)

    def new_tick(self) -> None:
        """Tell the sink (when it listens) that a tick of the watcher begins."""
        tell = getattr(self.sink, "new_tick", None)
        if tell is not None:
            tell()

    def cluster_watched(self) -> None:
        """Tell the sink (when it listens) that the watcher found jobs on its cluster for the
        first time; a failure is logged only."""
        tell = getattr(self.sink, "cluster_watched", None)
        if tell is not None:
            try:
                tell(self.cluster)
            except LeaseLost:
                raise
            except Exception:  # noqa: BLE001 - preparing ahead never stops the watch
                log.exception("%s: preparing the cluster's forensics failed", self.cluster)

    def _tell_sink(self, hook: str, chain_id: int) -> None:
        """Call the sink's `hook(chain_id)` when it has one; a failure is logged only."""
        tell = getattr(self.sink, hook, None)
        if tell is not None:
            try:
                tell(chain_id)
            except LeaseLost:
                raise
            except Exception:  # noqa: BLE001 - a stale root never stops the watch
                log.exception("chain %s: updating the thread's root failed", chain_id)

    def past_warnings(self, chain_id: int | None) -> list[PastWarning]:
        """Warnings posted in the chain: read from the store once, then kept up to date."""
        if chain_id is None:
            return []
        cached = self._warnings.get(chain_id)
        if cached is None:
            cached = []
            for inc in self.store.incidents.for_chain(chain_id):
                if inc.class_id not in WARNING_CLASSES or inc.state != "posted":
                    continue
                data = inc.diagnosis
                metrics = (data.get("diagnosis") or {}).get("metrics") or {}
                cached.append(PastWarning(inc.class_id, inc.created_at,
                                          projected_oom_iter=data.get("projected_oom_iter"),
                                          stall_started_at=data.get("stall_started_at"),
                                          job_id=inc.job_id, key=inc.key,
                                          last_iter=metrics.get("last_iter")))
            self._warnings[chain_id] = cached
        return cached

    def keep_warnings_of(self, chain_ids: set[int | None]) -> None:
        """Forget the cached warnings of every other chain (read again if they return)."""
        for gone in set(self._warnings) - chain_ids:
            del self._warnings[gone]

    def forget(self) -> None:
        self._warnings.clear()
