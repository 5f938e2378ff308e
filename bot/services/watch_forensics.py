"""The forensics a watcher's events begin in their run's thread, once each.

A stall warning starts the collection of the job's Python stacks (bot.services.stacks
.Forensics): in the background, so publishing (and the tick) never waits for it; the grouped
stacks, or the one line saying why there are none, follow in the thread (key
`stacks:<the warning's key>`), the full dump attached. An `nccl_timeout` incident of a
recipe with `nccl_flight_recorder` likewise brings the ranks' flight-recorder summary (key
`flight_recorder:<the incident's key>`). Each is begun once, as soon as the thread is there,
whether or not the event's own reply is posted yet: a stall prompt Slack did not take (a 5xx,
a rate limit) does not hold back the stacks of the stall (`EventForensics.begin`, called by
bot.services.watch_events.ThreadEvents at each publish).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

from bot.services.ports import BotContext, PostError
from bot.services.stacks import Forensics
from bot.services.threads import given_up_for_thread, has_thread, kept_for_thread
from bot.services.watch.events import WatchEvent

log = logging.getLogger(__name__)


class EventForensics:
    """Begins the forensics a watcher's event calls for (`forensics`: None without), once
    per event (see module doc)."""

    def __init__(self, ctx: BotContext, forensics: Forensics | None) -> None:
        self.ctx = ctx
        self.forensics = forensics
        # the events whose forensics were begun (`begin`: once each), by key
        self._begun: set[str] = set()

    def prepare(self, cluster: str) -> None:
        """The watcher polled `cluster` with jobs for the first time: begin placing py-spy
        there, so a stall's stacks need not wait for it."""
        if self.forensics is not None:
            self.forensics.prepare(cluster)

    def begin(self, event: WatchEvent) -> None:
        """A stall: collect the ranks' stacks; an NCCL timeout of a recipe that records its
        collectives: read the flight recorder (both in the background, see module doc).
        Once per event, as soon as its thread is there to post them in, whether or not the
        event's own reply is posted: a stall prompt Slack did not take yet (a 5xx, a rate
        limit: published again at the next tick) does not hold back the stacks of the
        stall it is about, and its next publish does not collect them again: begun in this
        process (`_begun`; a collection whose post did not go through is not, so the
        event's next publish begins it again), or their post in the store (`_reported`: a
        bot restarted since does not collect a still-stalled job's stacks once more)."""
        begin = self._of(event)
        if begin is None or event.key in self._begun or \
                not has_thread(self.ctx, event.chain_id):
            return
        key, collect = begin
        try:
            if self._reported(key):
                self._begun.add(event.key)
                return
        except PostError as exc:  # Slack may have it: asked again at the next publish
            log.info("%s: not collected now: cannot tell whether its post is there (%s)", key,
                     exc)
            return
        self._begun.add(event.key)
        collect().add_done_callback(lambda done: self._ended(event.key, done))

    def forget(self, prefixes: tuple[str, ...]) -> None:
        """Forget which events keyed under `prefixes` (an ended run's) had their forensics
        begun: none of them is published again."""
        self._begun -= {key for key in self._begun if key.startswith(prefixes)}

    @property
    def begun_any(self) -> bool:
        """Whether any event's forensics are remembered as begun."""
        return bool(self._begun)

    def _of(self, event: WatchEvent) -> tuple[str, Callable[[], Future[bool]]] | None:
        """The forensics `event` calls for (its post's key, and what begins them), by its
        kind: a stall's stacks, an NCCL timeout's flight recorder (its recipe recording
        its collectives); None for any other event, or without forensics."""
        forensics, dec, d = self.forensics, event.decision, event.diagnosis
        job_id, chain_id, rec = event.job_id, event.chain_id, event.record
        if forensics is None or job_id is None:
            return None
        if event.kind == "warning" and dec is not None and dec.class_id == "hang":
            key = f"stacks:{event.key}"
            return key, lambda: forensics.stacks(event.cluster, job_id, chain_id, event.recipe,
                                                 key, record=rec, sampler=event.sampler)
        recipe = event.recipe
        if event.kind == "incident" and d is not None and d.class_id == "nccl_timeout" and \
                recipe is not None and recipe in self.ctx.config.recipes and \
                self.ctx.config.recipe(recipe).nccl_flight_recorder:
            key = f"flight_recorder:{event.key}"
            return key, lambda: forensics.flight_recorder(
                event.cluster, job_id, chain_id, recipe, key,
                started_at=rec.start_time if rec else None)
        return None

    def _ended(self, event_key: str, done: Future[bool]) -> None:
        """A collection's end: one not reported (its run without a thread, its collection
        failing) is not begun: the event's next publish begins it again. A post Slack did
        not take is kept for the thread (reported: bot.services.stacks.post_stacks)."""
        if done.cancelled() or done.exception() is not None or not done.result():
            self._begun.discard(event_key)

    def _reported(self, key: str) -> bool:
        """Whether the forensics post `key` (a stall's stacks, an NCCL timeout's flight
        recorder) is in the thread, or on its way there, or was given up: kept for the thread
        (Slack did not take it: the `prompts` job posts it, this process's or a restarted
        bot's), or kept and given up since (Slack rejected the post itself, or its run has
        no thread: collected once, what it said is in the log; a restarted bot does not
        collect it over SSH again, for a post that would meet the same fate), recorded
        posted, or its intent (a post begun and never confirmed: a 5xx, a bot stopped in it)
        found there (the thread writer's `look_up`, then recorded posted); collected before,
        by this process or one before it. One Slack does not have, refused or never begun and
        not kept, is not (collected again). Raises PostError when Slack cannot tell."""
        if kept_for_thread(self.ctx, key) or given_up_for_thread(self.ctx, key):
            return True
        post = self.ctx.store.slack_posts.get(key)
        if post is None or post.posted:
            return post is not None
        look_up = getattr(self.ctx.sink, "look_up", None)  # test recorders cannot look up
        return look_up is None or bool(look_up(key))
