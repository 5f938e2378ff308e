"""A run split into time-limit chunks, through the watcher tick (fake Slurm and SFTP, a real
store and catalogue): each chunk that saved a newer checkpoint is resubmitted without spending
the chain's retry budget; chunks that save none spend it and stop at it."""

from __future__ import annotations

import pytest
from fakes import T0, FakeCheckpoints, FakeResubmit, FakeSFTP, FakeSlurm
from support.watcher import add_job, make_watcher

from bot.core.policy import DecisionKind, PolicyParams
from bot.core.slurm.records import JobRecord

MEGATRON = (" iteration {it:>8}/   40000 | consumed samples: {it:>10} | elapsed time per "
            "iteration (ms): 2349.4 | learning rate: 9.7E-05 | lm loss: 2.72E+00 |\n")


def log_of(job: int) -> str:
    return f"/scratch/auto/logs/auto-{job}.out"


def chunk_log(first: int, last: int, *, saved: bool) -> bytes:
    """Megatron's log from iteration `first` to `last`: with `saved`, its --exit-interval stop
    there (a checkpoint saved, exit 0); without, just its iterations (Slurm's TIMEOUT)."""
    text = "".join(MEGATRON.format(it=it) for it in (*range(first, last, 100), last))
    if saved:
        text += (f"saving checkpoint at iteration {last} to /ckpt/auto\n"
                 f"  successfully saved checkpoint at iteration {last} to /ckpt/auto\n"
                 f"[exiting program at iteration {last}] datetime: 2024-05-01 10:00:00.1 \n")
    return text.encode()


def end_chunk(slurm: FakeSlurm, sftp: FakeSFTP, job: int, first: int, last: int, *,
              saved: bool, at: float) -> None:
    """Job `job` ran from `first` to `last` and ended at `at`: by its exit interval (saved),
    or at Slurm's time limit."""
    sftp.append(log_of(job), chunk_log(first, last, saved=saved))
    state = ("COMPLETED", 0, 0) if saved else ("TIMEOUT", 0, 0)
    slurm.records[job] = JobRecord(job_id=job, state=state[0], exit_code=state[1],
                                   signal=state[2], stdout_path=log_of(job),
                                   start_time=at - 3600, end_time=at)


def test_chunks_that_each_save_a_newer_checkpoint_never_spend_the_budget(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    checkpoints = FakeCheckpoints()  # the first chunk: none yet
    chain = add_job(store, 88400, recipe="auto")  # the first chunk: from scratch
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub,
                     checkpoint=checkpoints,
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))  # budget 3
    job, now = 88400, T0 + 1300
    for n, last in enumerate((2000, 4000, 6000, 8000), start=1):  # one chunk past the budget
        end_chunk(slurm, sftp, job, last - 1900, last, saved=True, at=now)
        checkpoints.found = last
        w.tick(now)
        incident = sink.events[-1]
        assert incident.kind == "incident" and incident.decision.kind == DecisionKind.RESUBMIT_NOW
        assert not incident.decision.charged
        start = (f"iteration {last - 2000:,}" if last > 2000
                 else "scratch (no complete checkpoint)")
        assert incident.text == (
            f"job {job} COMPLETED: time_limit — chunk from {start} ended at the time limit "
            f"after saving iter {last:,}: resubmitting; retries not charged")
        w.tick(now + 600)  # past its backoff
        assert resub.calls[-1] == ("auto", chain.id, last) and len(resub.calls) == n
        job, now = 90000 + n, now + 5000
    assert store.chains.get(chain.id).retries_used == 0  # the full budget left
    assert store.chains.get(chain.id).status == "active"
    assert [a.start_iter for a in store.attempts.for_chain(chain.id)] == \
        [None, 2000, 4000, 6000, 8000]


@pytest.mark.parametrize("resumed_from", [None, 2000], ids=["before its first save",
                                                            "no newer save"])
def test_chunks_that_save_no_newer_checkpoint_spend_the_budget_and_stop_at_it(env,
                                                                              resumed_from):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    chain = add_job(store, 88500, recipe="auto")
    store.attempts.update(store.attempts.get_by_job("88500").id, start_iter=resumed_from)
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub,
                     checkpoint=FakeCheckpoints(resumed_from),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))  # budget 3
    base = resumed_from or 0
    job, now = 88500, T0 + 1300
    for n in range(1, 4):  # each a little further, none as far as the next save
        end_chunk(slurm, sftp, job, base + 100, base + 800 + 50 * n, saved=False, at=now)
        w.tick(now)
        decision = sink.events[-1].decision
        assert decision.kind == DecisionKind.RESUBMIT_NOW and decision.charged
        assert f"charged: {n} of 3 retries" in sink.events[-1].text
        w.tick(now + 1000)
        assert store.chains.get(chain.id).retries_used == n
        job, now = 90000 + n, now + 5000
    end_chunk(slurm, sftp, job, base + 100, base + 1000, saved=False, at=now)
    w.tick(now)
    w.tick(now + 1000)
    final = sink.events[-1]
    assert final.decision.kind == DecisionKind.STOP and "resubmit" in final.decision.offers
    assert "retry budget exhausted: 3 of 3" in final.text
    assert len(resub.calls) == 3 and store.chains.get(chain.id).status == "stopped"


def test_past_max_free_chunks_in_a_row_a_chunk_is_charged_and_the_thread_says_why(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    checkpoints = FakeCheckpoints()
    chain = add_job(store, 88600, recipe="auto")  # from scratch
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub, checkpoint=checkpoints,
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60, max_free_chunks=2))
    job, now = 88600, T0 + 1300
    texts = []
    for last in (2000, 4000, 6000, 8000):
        end_chunk(slurm, sftp, job, last - 1900, last, saved=True, at=now)
        checkpoints.found = last
        w.tick(now)
        texts.append(sink.events[-1].text)
        w.tick(now + 600)  # past its backoff
        job, now = 90000 + len(resub.calls), now + 5000
    assert [t.endswith("resubmitting; retries not charged") for t in texts] == \
        [True, True, False, True]  # two free in a row, the third charged, then free again
    assert texts[2] == (
        "job 90002 COMPLETED: time_limit — chunk from iteration 4,000 ended at the time limit "
        "after saving iter 6,000: resubmitting (charged: 1 of 3 retries): 2 chunks in a row "
        "went uncharged, the recipe's max_free_chunks")
    assert len(resub.calls) == 4 and store.chains.get(chain.id).retries_used == 1


def test_a_checkpoint_past_the_runs_target_is_no_progress_of_it(env):
    # another run saves into the same dir, far past this run's 40,000 iterations
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    add_job(store, 88700, recipe="auto")
    store.attempts.update(store.attempts.get_by_job("88700").id, start_iter=2000,
                          checkpoint_path="/ck/auto/iter_0002000")
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub,
                     checkpoint=FakeCheckpoints(90000),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    end_chunk(slurm, sftp, 88700, 2100, 4000, saved=True, at=T0 + 1300)
    w.tick(T0 + 1300)
    incident = sink.events[-1]
    assert incident.decision.charged and "charged: 1 of 3 retries" in incident.text
    assert "chunk ended" not in incident.text


def test_a_checkpoint_without_an_iteration_counts_as_progress_when_its_name_changed(env):
    # a pointer naming `final` (no iteration in the name): the same name again is no progress
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    checkpoints = FakeCheckpoints("final")
    chain = add_job(store, 88800, recipe="auto")  # from scratch
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub, checkpoint=checkpoints,
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    job, now = 88800, T0 + 1300
    texts, charged = [], []
    for n, (found, last) in enumerate((("final", 2000), ("final", 3000), ("release", 4000)),
                                      start=1):
        end_chunk(slurm, sftp, job, last - 900, last, saved=False, at=now)
        checkpoints.found = found
        w.tick(now)
        texts.append(sink.events[-1].text)
        charged.append(sink.events[-1].decision.charged)
        w.tick(now + 1000)
        assert len(resub.calls) == n
        job, now = 90000 + n, now + 5000
    assert charged == [False, True, False]
    assert texts[0].endswith("chunk from scratch (no complete checkpoint) ended at the time "
                             "limit after saving checkpoint `final`: resubmitting; retries not "
                             "charged")
    assert "from checkpoint `final` (charged: 1 of 3 retries)" in texts[1]
    assert texts[2].endswith("chunk from checkpoint `final` ended at the time limit after "
                             "saving checkpoint `release`: resubmitting; retries not charged")
    assert store.chains.get(chain.id).retries_used == 1
