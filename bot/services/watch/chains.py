"""The watcher's bookkeeping of chains and attempt rows in the store: which chain a watched
job belongs to (cached: a chain's kind never changes), the tasks of a watched array that
started (each a new attempt row and watched job), the history a finished job is judged
against (its chain's attempts; a submitted array's task: its own attempts and retry budget,
bot.core.arrays.task_retries_used), its attempt row's progress, and the end of an adopted
job's or array's chain.

Chains trainbot ran one attempt after another are ended by the finished job's decision
(bot.services.watch.tick); the chains here whose jobs run side by side (`Chain.parallel`)
end once none of their jobs is watched any more.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.core.arrays import task_retries_used
from bot.core.catalogue import Catalogue
from bot.core.policy import AttemptFacts, ChainHistory
from bot.core.slurm.records import JobRecord
from bot.services.watch.logs import JobWatch
from bot.services.watch.outbox import Outbox
from bot.services.watch.resubmit import AutoResubmits
from bot.store import Chain, Store, WatchedJob

log = logging.getLogger(__name__)


class ChainBook:
    """One cluster's chains and attempt rows as the watcher reads and writes them (module
    doc). `changed` holds the parallel chains whose rows in the thread's root changed this
    tick (`publish_changed` rewrites each root once); `resubmits` (None: none are made)
    tells whether a task's resubmit is still pending; an attempt's progress is written at
    most every `persist_every_s`."""

    def __init__(self, cluster: str, *, store: Store, catalogue: Catalogue, outbox: Outbox,
                 resubmits: AutoResubmits | None, persist_every_s: float) -> None:
        self.cluster = cluster
        self.store = store
        self.catalogue = catalogue
        self.outbox = outbox
        self.resubmits = resubmits
        self.persist_every_s = persist_every_s
        self._chains: dict[int, Chain] = {}  # by id, for their kind (which never changes)
        self.changed: set[int] = set()  # adopted chains whose rows changed this tick

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

    def publish_changed(self) -> None:
        """One root update per changed chain and tick."""
        for chain_id in sorted(self.changed):
            self.outbox.chain_changed(chain_id)
        self.changed.clear()

    def started_array_tasks(self, watched: list[WatchedJob], records: dict[int, JobRecord],
                            now: float) -> list[WatchedJob]:
        """Tasks of the watched arrays that started since the last tick (in `records`
        already): each becomes an attempt row of its array's chain and a watched job."""
        arrays: dict[int, tuple[Chain, set[int]]] = {}
        for w in watched:
            chain = self.get(w.chain_id)
            if chain is not None and chain.is_array and chain.array_job_id is not None:
                # the array's id, and the ids of its tasks' one-task resubmits
                arrays.setdefault(chain.id, (chain, {chain.array_job_id}))[1].add(int(w.job_id))
        if not arrays:
            return watched
        added = False
        for chain, array_ids in arrays.values():
            tasks = [r for r in records.values()
                     if r.array_job_id in array_ids and r.array_task_id is not None]
            if not tasks:
                continue
            known = {a.job_id for a in self.store.attempts.for_chain(chain.id)}
            for rec in sorted(tasks, key=lambda r: r.array_task_id or 0):
                job = str(rec.job_id)
                if job in known:
                    continue
                self.store.attempts.add(chain_id=chain.id, job_id=job, now=now,
                                        state=rec.state or "", display_id=rec.display_id)
                self.store.watched_jobs.add(self.cluster, job, now=now, chain_id=chain.id,
                                            adopted=chain.adopted)
                log.info("%s: array %s: task %s started as job %s", self.cluster,
                         chain.array_job_id, rec.display_id, job)
                self.changed.add(chain.id)
                added = True
        return self.store.watched_jobs.list(self.cluster) if added else watched

    def end_adopted(self, chain_id: int | None, now: float) -> None:
        """An adopted job's or array's chain ends once none of its jobs is watched and no
        resubmit of a task is pending (one waiting out its backoff, or one a crash
        interrupted after sbatch: its job is adopted first): completed when every attempt (of
        an array: each task's latest) completed, else stopped; its root is rewritten either
        way."""
        chain = self.get(chain_id)
        if chain is None or not chain.parallel:
            return
        self.changed.add(chain.id)
        if any(w.chain_id == chain.id for w in self.store.watched_jobs.list(self.cluster)):
            return
        if self.resubmits is not None and self.resubmits.pending(chain.id):
            return
        latest: dict[object, Any] = {}
        for a in self.store.attempts.for_chain(chain.id):
            latest[a.array_task if a.array_task is not None else a.job_id] = a
        attempts = list(latest.values())
        done = attempts and all(a.result == "COMPLETED" and a.cause in (None, "completed")
                                for a in attempts)
        self.store.chains.set_status(chain.id, "completed" if done else "stopped", now=now)

    def history(self, chain_id: int | None, *, current_job: str | None = None,
                current_last_iter: int | None = None) -> ChainHistory:
        """What a finished job is judged against: its chain's attempts (the current one at
        `current_last_iter`), retries used and past warnings."""
        chain = self.get(chain_id)
        if chain is not None and chain.is_array and not chain.adopted and current_job:
            return self._task_history(chain, current_job, current_last_iter)
        if chain_id is None or (chain is not None and chain.parallel):
            # no chain, or one trainbot did not submit (an array's tasks run side by side,
            # not one after another): the job is its own history
            attempts: tuple[AttemptFacts, ...] = ()
            if current_job is not None:
                attempts = (AttemptFacts(current_job, 1, last_iter=current_last_iter),)
            return ChainHistory(attempts=attempts)
        chain = self.store.chains.get(chain_id)
        rows = self.store.attempts.for_chain(chain_id)
        facts = []
        for a in rows:
            last = a.last_iter
            if current_job is not None and a.job_id == current_job:
                last = current_last_iter if current_last_iter is not None else last
            facts.append(AttemptFacts(a.job_id, a.attempt_no, last_iter=last,
                                      start_iter=a.start_iter, class_id=a.cause,
                                      ended_at=a.ended_at))
        return ChainHistory(attempts=tuple(facts),
                            retries_used=chain.retries_used if chain else 0,
                            warnings=tuple(self.outbox.past_warnings(chain_id)))

    def _task_history(self, chain: Chain, current_job: str,
                      current_last_iter: int | None) -> ChainHistory:
        """A submitted array's task judged on its own: its earlier attempts (the task's
        resubmits) and the retries of its own budget they spent."""
        rows = self.store.attempts.for_chain(chain.id)
        current = next((a for a in rows if a.job_id == current_job), None)
        task = current.array_task if current is not None else None
        mine = [a for a in rows if a.array_task == task] if task is not None else \
            [a for a in rows if a.job_id == current_job]
        facts = []
        for n, a in enumerate(mine, start=1):
            last = a.last_iter
            if a.job_id == current_job and current_last_iter is not None:
                last = current_last_iter
            facts.append(AttemptFacts(a.job_id, n, last_iter=last, start_iter=a.start_iter,
                                      class_id=a.cause, ended_at=a.ended_at))
        if not facts:
            facts = [AttemptFacts(current_job, 1, last_iter=current_last_iter)]
        used = task_retries_used([a.cause for a in mine if a.job_id != current_job],
                                 self.catalogue)
        return ChainHistory(attempts=tuple(facts), retries_used=used,
                            warnings=tuple(self.outbox.past_warnings(chain.id)))

    def update_attempt(self, jw: JobWatch, now: float, *, force: bool = False,
                       **fields: Any) -> None:
        """Progress into the attempt row: state changes at once, last_iter at most every
        `persist_every_s` (always when `force`, i.e. at the end)."""
        attempt = jw.attempt
        if attempt is None or force:
            attempt = jw.attempt = self.store.attempts.get_by_job(str(jw.job_id), self.cluster)
        if attempt is None:
            return
        values = {k: v for k, v in fields.items() if v is not None}
        if values.get("last_iter") is not None and attempt.last_iter is not None:
            values["last_iter"] = max(values["last_iter"], attempt.last_iter)
        changed = {k: v for k, v in values.items() if getattr(attempt, k) != v}
        if not changed:
            return
        recent = jw.attempt_written_at is not None and \
            now - jw.attempt_written_at < self.persist_every_s
        if set(changed) == {"last_iter"} and recent and not force:
            return
        jw.attempt = self.store.attempts.update(attempt.id, **changed)
        jw.attempt_written_at = now
        chain = self.get(jw.chain_id)
        if chain is not None and chain.parallel and "state" in changed:
            self.changed.add(chain.id)  # its row in the root changes


__all__ = ["ChainBook"]
