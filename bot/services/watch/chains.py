"""The watcher's bookkeeping of chains and attempt rows in the store: which chain a watched
job belongs to (cached: a chain's kind never changes), its run's target (read again only once
a new job of the chain is watched), the tasks of a watched array that started (each a new
attempt row and watched job), the history a finished job is judged against, its attempt row's
progress, and the end of an adopted job's or array's chain.

The rules over the rows are pure: which records are tasks of a watched array that are no
attempt yet (bot.core.arrays.new_array_tasks), and (bot.core.policy.chain) which attempts
are a finished job's history (`run_history`; a submitted array's task: its own attempts,
`task_rows`, and retry budget, `task_history`; a job trainbot did not submit:
`own_history`), when a chain
whose jobs run side by side (`Chain.parallel`) has ended (`parallel_chain_end`), and what a
progress write changes in an attempt row (`attempt_progress`); this module reads the store
for them and writes what they decide. Chains trainbot ran one attempt after another are
ended by the finished job's decision (bot.services.watch.tick).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from bot.core.arrays import new_array_tasks
from bot.core.catalogue import Catalogue
from bot.core.models import DEFAULT_CHUNK_BOUNDS, ChunkBounds, logged_target, run_target
from bot.core.policy import (
    ChainHistory,
    RootWaiting,
    attempt_progress,
    free_rewrite_slots,
    own_history,
    parallel_chain_end,
    roots_due,
    roots_to_rewrite,
    run_history,
    task_history,
    task_rows,
)
from bot.core.slurm.records import JobRecord
from bot.services.ports import root_key
from bot.services.watch.logs import JobWatch
from bot.services.watch.outbox import Outbox
from bot.services.watch.resubmit import AutoResubmits
from bot.store import Attempt, Chain, Store, WatchedJob

log = logging.getLogger(__name__)


# roots rewritten for progress alone a minute, by all the clusters the replicas on one database
# watch (ProgressRewriteBudget): chat.update is Slack's tier 3, about 50 a minute per
# workspace, shared with incidents and state changes
PROGRESS_REWRITES_PER_MINUTE = 10


class ProgressRewriteBudget:
    """How many thread roots are rewritten for progress alone (bot.core.policy.roots_due),
    at most `per_minute` in any minute, counted in the store across every cluster's ticks on
    every replica on the database: chat.update is rate-limited per Slack workspace, and the
    replicas post into one workspace (one bot token). A rewrite takes one of the budget's
    slots for a minute (bot.core.policy.free_rewrite_slots), a slot being taken by one
    conditional write (bot.store.repos.replicas.ProgressRewritesRepo.take), so replicas
    ticking at once never take more than the budget between them. The most overdue roots
    go first across clusters and replicas: a cluster's due roots that were not rewritten
    are noted in the store (for `waiting_kept_s`, so a cluster whose ticks stopped, or
    whose lease moved to a replica that has not ticked yet, holds none back for long), and
    another cluster's tick leaves them the budget when they wait longer
    (bot.core.policy.roots_to_rewrite); a busy cluster thus never starves another's roots.
    It keeps no count in memory, so each cluster's watcher has its own (bot.services.watch
    .tick.Watcher)."""

    def __init__(self, store: Store, per_minute: int = PROGRESS_REWRITES_PER_MINUTE, *,
                 waiting_kept_s: float = 300.0) -> None:
        self.repo = store.progress_rewrites
        self.per_minute = per_minute
        self.waiting_kept_s = waiting_kept_s
        # clusters none of whose roots is noted waiting in the store, as this budget wrote it
        self._none_waiting: set[str] = set()

    def roots_to_rewrite(self, cluster: str, *, restated: Iterable[int],
                         due: list[RootWaiting], now: float) -> list[int]:
        """The roots `cluster`'s tick at `now` rewrites (bot.core.policy.roots_to_rewrite):
        each `restated` one, and of its `due` ones those the minute's budget left takes,
        the most overdue of this and the other clusters' waiting roots first. With no root
        due, the store is read not at all, and written only to drop what it noted waiting."""
        state = set(restated)
        kept_since = now - self.waiting_kept_s
        if not due:
            self._note(cluster, [], now=now, kept_since=kept_since)
            return sorted(state)
        slots = self.repo.slots()
        free = free_rewrite_slots(slots, budget=self.per_minute, now=now)
        chosen = roots_to_rewrite(
            restated=state, due=due, progress_budget=len(free),
            waiting_elsewhere=self.repo.waiting(other_than=cluster, noted_since=kept_since)
            if free else ())
        granted = []
        for chain_id in (c for c in chosen if c not in state):
            while free:  # a slot another replica took since it was read is tried no more
                slot = free.pop(0)
                if self.repo.take(slot, seen=slots.get(slot), chain_id=chain_id, now=now):
                    granted.append(chain_id)
                    break
        rewritten = state | set(granted)
        self._note(cluster, [r for r in due if r[1] not in rewritten], now=now,
                   kept_since=kept_since)
        return sorted(state) + granted

    def _note(self, cluster: str, left: list[RootWaiting], *, now: float,
              kept_since: float) -> None:
        """Note in the store the roots `cluster`'s tick left waiting, in place of its last
        tick's; nothing is written while it has none there (`forget`)."""
        if not left and cluster in self._none_waiting:
            return
        self.repo.note_waiting(cluster, left, now=now, noted_since=kept_since)
        (self._none_waiting.discard if left else self._none_waiting.add)(cluster)

    def forget(self, cluster: str) -> None:
        """Another replica may have noted `cluster`'s waiting roots (it watched the cluster
        meanwhile): its next tick replaces them."""
        self._none_waiting.discard(cluster)


class ChainBook:
    """One cluster's chains and attempt rows as the watcher reads and writes them (module
    doc). `changed` holds the parallel chains whose rows' states changed this tick (their
    roots and Home rows are rewritten), `restated` the other chains whose row's state
    changed (their roots), `progressed` the chains whose rows' iterations moved and whose
    roots have not shown it yet (`publish_changed` rewrites each root at most once a tick,
    for progress alone at most once every `persist_every_s`:
    bot.core.policy.root_rewrite_due, and as many such roots as the workspace's
    `progress_rewrites` budget leaves: ProgressRewriteBudget); `resubmits` (None: none are
    made) tells whether a task's resubmit is still pending; an attempt's progress (with the
    target its log printed) is written at most every `persist_every_s`."""

    def __init__(self, cluster: str, *, store: Store, catalogue: Catalogue, outbox: Outbox,
                 resubmits: AutoResubmits | None, persist_every_s: float,
                 progress_rewrites: ProgressRewriteBudget) -> None:
        self.cluster = cluster
        self.store = store
        self.catalogue = catalogue
        self.outbox = outbox
        self.resubmits = resubmits
        self.persist_every_s = persist_every_s
        self.progress_rewrites = progress_rewrites
        self._chains: dict[int, Chain] = {}  # by id, for their kind (which never changes)
        # by id, for their target (`new_tick`): the row as last read, and the chain's jobs
        # that were watched then
        self._rows: dict[int, tuple[Chain, frozenset[str]]] = {}
        self._watching: dict[int, frozenset[str]] = {}  # this tick's watched jobs by chain
        # by job, while it is watched: the target its run's attempt rows had logged when its
        # diagnosis first needed one (earlier attempts' are final; its own comes from its log)
        self._logged: dict[str, int | None] = {}
        self.changed: set[int] = set()  # adopted chains whose rows changed this tick
        self.restated: set[int] = set()  # other chains whose row's state changed this tick
        self.progressed: set[int] = set()  # chains whose rows' iterations moved, not shown
        # by chain: its root's last rewrite, seeded from the store (`_last_rewrite`)
        self._rewritten_at: dict[int, float | None] = {}

    def new_tick(self, watched: Iterable[WatchedJob]) -> None:
        """A tick begins with `watched` jobs. A chain's row, read for its target (`target`),
        is read again only once a job of it is watched that was not when the row was read:
        a submit sets the run's `target_iter=` before it watches its new job
        (bot.services.submit), on whichever replica, so a new job of the chain is what can
        bring a new target (a task of a watched array that starts is none: no submit came
        before it, `started_array_tasks`). A chain none of whose jobs is watched is
        forgotten, and so is a root's progress not shown yet once none of its chain's jobs is
        watched (its last job's end rewrote it)."""
        watching: dict[int, set[str]] = {}
        jobs: set[str] = set()
        for w in watched:
            jobs.add(str(w.job_id))
            if w.chain_id is not None:
                watching.setdefault(w.chain_id, set()).add(str(w.job_id))
        self._logged = {job: t for job, t in self._logged.items() if job in jobs}
        self._watching = {chain_id: frozenset(jobs) for chain_id, jobs in watching.items()}
        self._rows = {chain_id: (row, seen) for chain_id, (row, seen) in self._rows.items()
                      if chain_id in self._watching and self._watching[chain_id] <= seen}
        self.progressed &= set(self._watching)
        self._rewritten_at = {chain_id: at for chain_id, at in self._rewritten_at.items()
                              if chain_id in self._watching}

    def forget(self) -> None:
        """Drop the chain rows read for their targets: the next reads come from the store
        (a replica taking the cluster back after another one watched it meanwhile)."""
        self._rows.clear()
        self._logged.clear()
        self._rewritten_at.clear()  # the other replica rewrote roots meanwhile
        self.progress_rewrites.forget(self.cluster)

    def _last_rewrite(self, chain_id: int, now: float) -> float | None:
        """When the chain's root was last posted or rewritten (None: never): as this watcher
        did it, else as the store recorded it (its Slack post's `updated_at`, which every
        chat.update of the root sets, on any replica). A restart or a replica taking the
        cluster over thus waits out the interval of roots rewritten just before, instead of
        rewriting every progressing root in its first tick and then all of them together
        again at every interval (chat.update is rate-limited per workspace)."""
        if chain_id not in self._rewritten_at:
            post = self.store.slack_posts.get(root_key(chain_id))
            self._rewritten_at[chain_id] = None if post is None or not post.posted \
                else min(post.updated_at, now)  # (another replica's clock may be ahead)
        return self._rewritten_at[chain_id]

    def _current(self, chain_id: int | None) -> Chain | None:
        """The chain's row as of its latest watched job (`new_tick`)."""
        if chain_id is None:
            return None
        if chain_id not in self._rows:
            chain = self.store.chains.get(chain_id)
            if chain is None:
                return None
            self._rows[chain_id] = (chain, self._watching.get(chain_id, frozenset()))
        return self._rows[chain_id][0]

    def target(self, jw: JobWatch, configured: int | None) -> int | None:
        """The run's target a job's diagnosis is given, as App Home and the thread show it
        (bot.core.models.run_target): its submit's `target_iter=`, else the recipe's
        `configured` one, else the newest one its run's logs printed: this job's log once it
        prints one, else the one its attempt row or an earlier attempt's kept (a resumed job
        whose log has printed none yet is judged by its run's target, not by none). The rows
        are read once per watched job, and only when nothing before them gives a target."""
        chain = self._current(jw.chain_id)
        submitted = chain.target_iter if chain is not None else None
        logged = jw.analysis.series.target_iter
        if logged is None and submitted is None and configured is None:
            job = str(jw.job_id)
            if job not in self._logged:
                self._logged[job] = logged_target(self._run_attempts(chain, job))
            logged = self._logged[job]
        return run_target(submitted=submitted, configured=configured, logged=logged)

    def _run_attempts(self, chain: Chain | None, job: str) -> list[Attempt]:
        """The attempt rows of `job`'s run, oldest first: its chain's; an array's task's own
        (its tasks are runs side by side); none for a job of no chain."""
        if chain is None:
            return []
        rows = self.store.attempts.for_chain(chain.id)
        if not chain.is_array:
            return rows
        return task_rows(rows, job)

    def get(self, chain_id: int | None) -> Chain | None:
        if chain_id is None:
            return None
        chain = self._chains.get(chain_id)
        if chain is None:
            chain = self.store.chains.get(chain_id)
            if chain is not None:
                self._chains[chain_id] = chain
        return chain

    def recipe_of(self, chain_id: int | None) -> str | None:
        """The recipe of a chain trainbot submitted (None: adopted, or no chain)."""
        chain = self.get(chain_id)
        return chain.recipe if chain is not None and not chain.adopted else None

    def publish_changed(self, now: float) -> None:
        """At most one root update per chain and tick (at `now`): a parallel chain whose rows'
        states changed (its Home rows with it), else a chain whose row's state changed or
        whose rows' iterations moved (its root alone). Progress alone rewrites a root at most
        once every `persist_every_s` (bot.core.policy.roots_due), and only as the workspace's
        `progress_rewrites` budget allows, the most overdue first (ProgressRewriteBudget):
        until then it stays pending, and the rewrite that comes shows the store's latest
        iterations."""
        shown = set(self.changed)
        for chain_id in sorted(self.changed):
            self.outbox.chain_changed(chain_id)
            self._rewritten_at[chain_id] = now
        progressed = self.progressed - self.changed - self.restated
        due = roots_due(progressed=progressed,
                        rewritten_at={c: self._last_rewrite(c, now) for c in progressed},
                        now=now, min_interval_s=self.persist_every_s)
        for chain_id in self.progress_rewrites.roots_to_rewrite(
                self.cluster, restated=self.restated - self.changed, due=due, now=now):
            self.outbox.progress_changed(chain_id)
            self._rewritten_at[chain_id] = now
            shown.add(chain_id)
        self.changed.clear()
        self.restated.clear()
        self.progressed -= shown

    def ended(self, chain_id: int, now: float) -> None:
        """A job of the chain ended (or was given up) and its row, and the chain's status,
        are in the store: its root is rewritten now (the sink's `chain_changed`, Home's rows
        with it), showing its latest progress too, and not again at the tick's end for the
        same change (a webhook receiver would get the same progress twice)."""
        self.outbox.chain_changed(chain_id)
        self._rewritten_at[chain_id] = now
        for pending in (self.changed, self.restated, self.progressed):
            pending.discard(chain_id)

    def started_array_tasks(self, watched: list[WatchedJob], records: dict[int, JobRecord],
                            now: float) -> list[WatchedJob]:
        """Tasks of the watched arrays that started since the last tick (in `records`
        already; bot.core.arrays.new_array_tasks): each becomes an attempt row of its array's
        chain and a watched job (one its chain's row need not be read again for:
        `_watched_task`). The watched jobs, listed again when any was added."""
        started = new_array_tasks(
            [(w.job_id, self.get(w.chain_id)) for w in watched], records.values(),
            lambda chain_id: {a.job_id for a in self.store.attempts.for_chain(chain_id)})
        for chain, rec in started:
            job = str(rec.job_id)
            self.store.attempts.record(chain_id=chain.id, job_id=job, now=now,
                                       state=rec.state or "", display_id=rec.display_id)
            self.store.watched_jobs.add(self.cluster, job, now=now, chain_id=chain.id,
                                        adopted=chain.adopted)
            self._watched_task(chain.id, job)
            log.info("%s: array %s: task %s started as job %s", self.cluster,
                     chain.array_job_id, rec.display_id, job)
            self.changed.add(chain.id)
        return self.store.watched_jobs.list(self.cluster) if started else watched

    def _watched_task(self, chain_id: int, job: str) -> None:
        """A task that started is watched with no submit before it (it brings no new target):
        it is one of the jobs its chain's row was read with (`new_tick`), so the next tick
        does not read the row again for it."""
        self._watching[chain_id] = self._watching.get(chain_id, frozenset()) | {job}
        if chain_id in self._rows:
            row, seen = self._rows[chain_id]
            self._rows[chain_id] = (row, seen | {job})

    def end_adopted(self, chain_id: int | None, now: float) -> None:
        """An adopted job's or array's chain ends (completed or stopped) once none of its
        jobs is watched and no resubmit of a task is pending (bot.core.policy
        .parallel_chain_end); its root is rewritten either way."""
        chain = self.get(chain_id)
        if chain is None or not chain.parallel:
            return
        self.changed.add(chain.id)
        watched = any(w.chain_id == chain.id for w in self.store.watched_jobs.list(self.cluster))
        status = parallel_chain_end(
            lambda: self.store.attempts.for_chain(chain.id),
            jobs_watched=watched,  # (then the pending resubmits need no store read either)
            resubmit_pending=not watched and self.resubmits is not None
            and self.resubmits.pending(chain.id))
        if status is not None:
            self.store.chains.set_status(chain.id, status, now=now)

    def history(self, chain_id: int | None, *, current_job: str | None = None,
                current_last_iter: int | None = None,
                bounds: ChunkBounds = DEFAULT_CHUNK_BOUNDS) -> ChainHistory:
        """What a finished job is judged against (the current one at `current_last_iter`):
        a submitted array's task, its task's attempts and budget (its chunks counted within
        the run's `bounds`); a job of no chain or of one trainbot did not submit (an array's
        tasks run side by side, not one after another), itself; else its chain's attempts,
        retries used and past warnings."""
        chain = self.get(chain_id)
        if chain is not None and chain.is_array and not chain.adopted and current_job:
            return task_history(self.store.attempts.for_chain(chain.id),
                                current_job=current_job, current_last_iter=current_last_iter,
                                catalogue=self.catalogue,
                                warnings=self.outbox.past_warnings(chain.id), bounds=bounds)
        if chain_id is None or (chain is not None and chain.parallel):
            return own_history(current_job, current_last_iter)
        fresh = self.store.chains.get(chain_id)  # retries_used changes; the cache is for kind
        return run_history(self.store.attempts.for_chain(chain_id), current_job=current_job,
                           current_last_iter=current_last_iter,
                           retries_used=fresh.retries_used if fresh else 0,
                           warnings=self.outbox.past_warnings(chain_id))

    def update_attempt(self, jw: JobWatch, now: float, *, force: bool = False,
                       **fields: Any) -> None:
        """Progress into the attempt row (bot.core.policy.attempt_progress): state changes at
        once, last_iter at most every `persist_every_s` (always when `force`, i.e. at the
        end). The chain's root is rewritten at the tick's end when the row's state changed (a
        parallel chain's Home rows with it), and when its iteration or target moved, at most
        once every `persist_every_s` (`publish_changed`)."""
        attempt = jw.attempt
        if attempt is None or force:
            attempt = jw.attempt = self.store.attempts.get_by_job(str(jw.job_id), self.cluster)
        if attempt is None:
            return
        changed = attempt_progress(attempt, fields, now=now, written_at=jw.attempt_written_at,
                                   persist_every_s=self.persist_every_s, force=force)
        if not changed:
            return
        jw.attempt = self.store.attempts.update(attempt.id, **changed)
        jw.attempt_written_at = now
        chain = self.get(jw.chain_id)
        if chain is None:
            return
        if {"state", "result"} & set(changed):  # its row in the root changes: at once
            (self.changed if chain.parallel else self.restated).add(chain.id)
        if {"last_iter", "logged_target_iter"} & set(changed):
            self.progressed.add(chain.id)  # the progress its root shows moved


__all__ = ["PROGRESS_REWRITES_PER_MINUTE", "ChainBook", "ProgressRewriteBudget"]
