"""A watched job Slurm shows stopped (squeue STOPPED: its processes were sent SIGSTOP,
`scancel --signal=STOP`; sacct still says RUNNING) or suspended makes no progress, and that is
no hang: the watcher warns of no stall across the stop, nor right after the job continues,
and still warns of one that outlasts the usual threshold once it runs again.

The 88154 story's log (tests/support/watcher) to iteration 3470, its stall threshold 5 min:
running, it is warned of at 6 min of silence (test_watcher's story test)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes import T0, FakeCheckpoints, FakeSFTP, FakeSlurm, RecordingEventSink
from support.watcher import CLUSTER, LOG, add_job, make_watcher, running, story_lines

from bot.core.slurm.records import JobRecord
from bot.services.watch.tick import Watcher
from bot.store import Store

JOB = 88154


def _to_3470() -> bytes:
    lines = story_lines()
    stall = next(i for i, x in enumerate(lines) if b"iter: 3470/" in x)
    return b"".join(lines[: stall + 1])


def _watched_to_3470(env: tuple[Store, FakeSlurm, FakeSFTP, RecordingEventSink]
                     ) -> Watcher:
    """The watcher of job 88154, running, its log read to iteration 3470 at its first tick
    (T0): the silence of the stall is counted from there."""
    store, slurm, sftp, sink = env
    add_job(store, JOB)
    slurm.records[JOB] = running(JOB)
    sftp.append(LOG, _to_3470())
    w = make_watcher(store, slurm, sftp, sink, checkpoint=FakeCheckpoints(3000))
    w.tick(T0)
    return w


@pytest.mark.parametrize("state", ["STOPPED", "SUSPENDED"])
def test_a_stopped_job_is_not_warned_of_as_hung_and_a_hang_after_it_continues_is(env, state):
    store, slurm, sftp, sink = env
    w = _watched_to_3470(env)
    slurm.records[JOB] = replace(running(JOB), state=state)  # squeue's state, as merged
    for minutes in (2, 6, 10, 30, 60):  # the old watcher warned `hang` at 6 min
        w.tick(T0 + 60 * minutes)
    assert sink.events == [], [e.text for e in sink.events]
    assert store.attempts.get_by_job(str(JOB)).state == state
    slurm.records[JOB] = running(JOB)  # SIGCONT: RUNNING again, no new line yet
    w.tick(T0 + 60 * 62)
    w.tick(T0 + 60 * 64)  # 4 min since it was last seen stopped: under the threshold
    assert sink.events == [], [e.text for e in sink.events]
    w.tick(T0 + 60 * 66)  # 6 min running with no new iteration: a hang of its own
    [warn] = sink.events
    assert warn.decision.class_id == "hang" and "3470" in warn.text
    assert "cancel_resume" in warn.decision.offers


def test_a_job_that_never_stopped_is_warned_of_at_6_min_as_before(env):
    store, slurm, sftp, sink = env
    w = _watched_to_3470(env)
    w.tick(T0 + 240)
    assert sink.events == []
    w.tick(T0 + 360)
    assert [e.decision.class_id for e in sink.events] == ["hang"]


def test_a_stopped_job_that_ends_is_judged_as_any_ended_job(env):
    """Cancelled while stopped: the watcher's incident, as for a job cancelled running."""
    store, slurm, sftp, sink = env
    w = _watched_to_3470(env)
    slurm.records[JOB] = replace(running(JOB), state="STOPPED")
    w.tick(T0 + 600)
    slurm.records[JOB] = JobRecord(job_id=JOB, state="CANCELLED", exit_code=0, signal=9,
                                   stdout_path=LOG, start_time=T0, end_time=T0 + 700,
                                   mem_limit_bytes=950 << 30, cancelled_by=1001)
    w.tick(T0 + 720)
    assert sink.kinds() == ["incident"]
    assert store.watched_jobs.get(CLUSTER, str(JOB)) is None
