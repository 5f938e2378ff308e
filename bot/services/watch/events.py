"""What a watcher tick tells: events for the threads, the sink they go to, the tick's report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.core.metrics import MetricSeries
from bot.core.models import Diagnosis
from bot.core.policy import Decision
from bot.core.sampler_series import SamplerSeries
from bot.core.slurm.records import JobRecord
from bot.core.text import Text


@dataclass(frozen=True)
class WatchEvent:
    """Something the thread (or the ops channel) should say. `key` is stable and unique.

    kind: `incident` (a finished job, with `diagnosis` + `decision`), `warning` / `note`
    (early warnings on a running job), `held` (JobHeldAdmin), `unknown` (a watched job Slurm
    does not know, no longer watched), `read_failed` (a job whose tick's batched read of its
    files has failed READ_FAILED_NOTE_TICKS ticks in a row), `resubmitted` (an automatic
    resubmit), `resubmit_superseded` (a due automatic resubmit not made: a new run of its
    recipe carries it on), `stall_over` (a job trained on past a stall warning: its prompt is
    out of date),
    `cluster_unreachable`, `cluster_back`.

    Incidents and early warnings also carry what their charts are drawn from, in memory only
    (never stored): `series`, the job's bounded MetricSeries; `sampler`, its SamplerSeries
    (None when the sampler wrote nothing); `skew`, log clock minus wall clock (see
    bot.services.watch.logs), which maps the sampler's wall times onto the log's.

    `text` is the English message (stored with the event, logged); `facts` says it as data
    for messages in other languages where `decision` / `record` do not: held (`reason`,
    `held_s`), unknown (`minutes`), read_failed (`ticks`, `seconds`: since the first,
    `error`: the reader's sentence, a Text), resubmitted (`new_job`), resubmit_superseded
    (`new_job`, `recipe`), an automatic resubmit given up or not carried out (a note:
    `resubmit`, `said`: its sentence, a Text, whose English its `text` is), stall_over
    (`stall_key`: the warning's key, `stalled_at`, `reached`: iterations),
    cluster_unreachable (`ticks`,
    `since`, `error`: the error's sentence, a Text; English in to_json), cluster_back
    (`since`), a warning re-posted as a note (its decision's facts, from the store), an
    incident judged without a file it could not read (`log_path`, `log_unreadable`,
    `log_missing`, `sampler_path`, `sampler_unreadable`, `sampler_missing`: its `text` says
    only the decision; the template's sentences say these).
    `text_only`: `text` is the whole message, said instead of a sentence from the facts (a
    note about its `decision`, e.g. one that could not be read back, does not repeat what the
    decision says).
    """

    kind: str
    key: str
    cluster: str
    text: str
    chain_id: int | None = None
    job_id: str | None = None
    recipe: str | None = None
    diagnosis: Diagnosis | None = None
    decision: Decision | None = None
    record: JobRecord | None = None
    series: MetricSeries | None = field(default=None, repr=False, compare=False)
    sampler: SamplerSeries | None = field(default=None, repr=False, compare=False)
    skew: float | None = None
    facts: dict[str, Any] = field(default_factory=dict, compare=False)
    text_only: bool = False

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON object (the webhook's body; `key` is unique: a receiver that
        gets an event twice, after a retry, drops the second)."""
        return {
            "key": self.key, "kind": self.kind, "cluster": self.cluster,
            "chain_id": self.chain_id, "job_id": self.job_id, "recipe": self.recipe,
            "text": self.text, "text_only": self.text_only,
            "facts": {k: str(v) if isinstance(v, Text) else v for k, v in self.facts.items()},
            "diagnosis": self.diagnosis.to_json() if self.diagnosis is not None else None,
            "decision": self.decision.to_json() if self.decision is not None else None,
            "state": self.record.state if self.record is not None else None,
        }


class EventSink(Protocol):
    """Where events go (the Slack layer renders them; tests record them). Idempotent by key.

    A sink may also define `chain_changed(chain_id)`: called once the store holds a finished
    attempt's result and the chain's status, so the thread's root can be rewritten from it;
    and `progress_changed(chain_id)`: called at a tick's end when only what the chain's root
    shows moved in the store: its running jobs' iterations (at most once every
    `persist_every_s` per root), or the state of a run that is no parallel chain (at once);
    and `said_in_a_thread(key) -> bool`: whether a thread has the cluster notice published
    under `key` (its post recorded), asked of one left `pending` (bot.services.watch.outbox);
    and `cluster_watched(cluster)`: called once per watcher, on its first poll of the cluster
    that finds jobs to watch (the threads begin placing py-spy there, ahead of a stall);
    and `new_tick()`: called as each tick begins.
    """

    def publish(self, event: WatchEvent) -> None: ...


@dataclass
class TickReport:
    """What one tick of one cluster did (for logs, metrics, tests and the benchmarks).

    `slurm_calls`: Slurm client calls (`jobs`: one squeue + one sacct; `memory`: one sstat);
    `round_trips`: the remote requests the tick waited on, one by one: every Slurm command
    plus `read_round_trips`, the requests that read the logs and sampler files; `bytes_moved`:
    what those reads sent and received (requests, new bytes, anchors, framing); `bytes_read`:
    the new log bytes consumed; `wall_s`: the tick's wall time in seconds;
    `resubmits_failed`: automatic resubmits that failed (retried next tick).
    """

    ok: bool
    cluster: str = ""
    slurm_calls: int = 0
    jobs: int = 0
    bytes_read: int = 0
    round_trips: int = 0
    read_round_trips: int = 0
    bytes_moved: int = 0
    wall_s: float = 0.0
    resubmits_failed: int = 0
    events: list[WatchEvent] = field(default_factory=list)
    error: str | None = None
