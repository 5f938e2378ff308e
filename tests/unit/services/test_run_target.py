"""One target iteration per run (bot.core.models.run_target): what the watcher judges a job
by and what the thread's root, App Home and an array task's budget (Home, approvals) show are
the same: a submit's `target_iter=` override (kept for the run's resubmits), else the
recipe's, else the one the run's log printed."""

from __future__ import annotations

from dataclasses import replace

from fakes import T0, FakeSFTP, FakeSlurm, make_context, present
from support.watcher import count_reads

from bot.core.catalogue import Catalogue
from bot.core.models import DEFAULT_MAX_FREE_CHUNKS, ChunkBounds
from bot.services.home import home_view
from bot.services.runs import AutoResubmitter, submit_and_announce
from bot.services.threads import chain_target, root_view, task_bounds
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

LOG = "/logs/mix-{}.out"
MEGATRON = (" iteration {it:>8}/   40000 | consumed samples: {it:>10} | elapsed time per "
            "iteration (ms): 2349.4 | learning rate: 9.7E-05 | lm loss: 2.72E+00 |\n")


def run(store: Store, *, overrides: dict[str, str] | None = None,
        policy: dict[str, object] | None = None, **recipe):
    """Recipe `mix` (no target_iter unless `recipe` sets one; auto-resubmitting, with
    `policy` on top) submitted with `overrides`, its job running to iteration 1,200 of the
    40,000 its log prints, seen by one watcher tick."""
    slurm, sftp = FakeSlurm(), FakeSFTP()
    ctx = make_context(store, slurm, sftp=sftp, clock=lambda: T0,
                       policy={"auto_resubmit": True, "backoff_s": 60, **(policy or {})},
                       **recipe)
    result = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0, overrides=overrides)
    auto = AutoResubmitter(ctx, "dev")
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                checkpoint=auto.checkpoint, resubmit=auto.resubmit, recover=auto.recover)
    job = int(result.job_id)
    log = LOG.format(job)
    slurm.set(job, state="RUNNING", stdout_path=log, start_time=T0)
    sftp.append(log, "".join(MEGATRON.format(it=it) for it in range(100, 1300, 100)).encode())
    w.tick(T0 + 60)
    return ctx, slurm, w, result


def home_progress(ctx, chain_id: int) -> str:
    [row] = [r for r in home_view(ctx, "U0ALICE", T0 + 60)["runs"] if r["chain_id"] == chain_id]
    return row["progress_bar"]


def judged_target(store: Store, chain_id: int) -> int | None:
    """The target the watcher judged the run's last finished job by (its incident)."""
    final = [i for i in store.incidents.for_chain(chain_id) if i.key.endswith(":final")]
    return final[-1].diagnosis["diagnosis"]["metrics"]["target_iter"]


def end(slurm: FakeSlurm, w: Watcher, job: int, state: str = "TIMEOUT") -> None:
    slurm.set(job, state=state, exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)


def test_a_recipe_without_a_target_shows_the_one_its_log_printed_wherever_the_run_is_shown(
        store):
    ctx, slurm, w, result = run(store)
    chain = store.chains.get(result.chain_id)
    assert ctx.config.recipe("mix").target_iter is None
    assert present(root_view(ctx, chain.id)).target_iter == 40000
    assert home_progress(ctx, chain.id).endswith("1,200 / 40,000")
    attempts = store.attempts.for_chain(chain.id)
    assert chain_target(ctx.config, chain, attempts) == 40000  # an array task's budget's too
    end(slurm, w, int(result.job_id))
    assert judged_target(store, chain.id) == 40000  # the watcher judged it by the same


def test_the_recipes_target_wins_over_the_one_the_log_printed(store):
    ctx, slurm, w, result = run(store, target_iter=30000)
    assert present(root_view(ctx, result.chain_id)).target_iter == 30000
    assert home_progress(ctx, result.chain_id).endswith("1,200 / 30,000")
    end(slurm, w, int(result.job_id))
    assert judged_target(store, result.chain_id) == 30000


def test_a_submits_target_override_is_the_runs_target_for_the_watcher_and_everywhere(store):
    ctx, slurm, w, result = run(store, overrides={"target_iter": "1200"}, target_iter=30000)
    chain = store.chains.get(result.chain_id)
    assert chain.target_iter == 1200
    assert present(root_view(ctx, chain.id)).target_iter == 1200
    assert home_progress(ctx, chain.id).endswith("1,200 / 1,200")
    assert chain_target(ctx.config, chain, store.attempts.for_chain(chain.id)) == 1200
    end(slurm, w, int(result.job_id), "COMPLETED")
    assert judged_target(store, chain.id) == 1200
    # ended at the target the submit set: the run completed, not short of the recipe's
    [final] = [i for i in store.incidents.for_chain(chain.id) if i.key.endswith(":final")]
    assert final.class_id == "completed"
    assert len(slurm.submits()) == 1


def test_a_submits_target_override_holds_for_the_runs_resubmits(store):
    ctx, slurm, w, result = run(store, overrides={"target_iter": "20000"})
    end(slurm, w, int(result.job_id))  # a time limit short of it: resubmitted
    w.tick(T0 + 600)  # past its backoff
    assert len(slurm.submits()) == 2 and "target_iter" not in str(slurm.submits()[1].args)
    assert store.chains.get(result.chain_id).target_iter == 20000
    assert present(root_view(ctx, result.chain_id)).target_iter == 20000
    again = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0 + 700,
                                chain_id=result.chain_id, overrides={"target_iter": "25000"})
    assert again.chain_id == result.chain_id
    assert present(root_view(ctx, result.chain_id)).target_iter == 25000


def test_an_array_tasks_budget_is_bounded_by_the_runs_target_and_its_recipes_free_chunks(
        store):
    """threads.task_bounds: the target as run_target ranks them (the submit's override, else
    the recipe's, else the one the task's rows logged) and the recipe's max_free_chunks (the
    defaults' once the recipe is gone): what Home, approvals and the completion note count an
    array task's retries within."""
    ctx, _, _, result = run(store, overrides={"target_iter": "1200"}, target_iter=30000,
                            policy={"max_free_chunks": 7})
    chain = store.chains.get(result.chain_id)
    rows = store.attempts.for_chain(chain.id)
    assert task_bounds(ctx.config, chain, rows) == ChunkBounds(target_iter=1200,
                                                               max_free_chunks=7)
    no_override = replace(chain, target_iter=None)
    assert task_bounds(ctx.config, no_override, rows) == ChunkBounds(30000, 7)
    gone = replace(no_override, recipe="no-longer-configured")
    assert task_bounds(ctx.config, gone, rows) == ChunkBounds(40000, DEFAULT_MAX_FREE_CHUNKS)
    assert task_bounds(ctx.config, gone, []) == ChunkBounds(None, DEFAULT_MAX_FREE_CHUNKS)


def test_a_resumes_target_is_the_one_the_watcher_judges_its_new_job_by(store):
    """The watcher keeps a chain's row between ticks; a `/train resume target_iter=` (made
    on any replica) watches a new job, and that job is judged by the target it set."""
    ctx, slurm, w, result = run(store, target_iter=30000)
    end(slurm, w, int(result.job_id), "CANCELLED")  # nothing resubmits a cancelled run
    again = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0 + 130,
                                chain_id=result.chain_id, overrides={"target_iter": "1200"})
    job = int(again.job_id)
    sftp = ctx.clusters.sftp("dev")
    slurm.set(job, state="RUNNING", stdout_path=LOG.format(job), start_time=T0 + 140)
    sftp.append(LOG.format(job),
                "".join(MEGATRON.format(it=it) for it in range(100, 1300, 100)).encode())
    w.tick(T0 + 180)
    slurm.set(job, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 200)
    w.tick(T0 + 240)
    assert judged_target(store, result.chain_id) == 1200
    [*_, final] = [i for i in store.incidents.for_chain(result.chain_id)
                   if i.key.endswith(":final")]
    assert final.job_id == str(job) and final.class_id == "completed"


def test_a_tick_with_no_new_job_of_the_chain_does_not_read_its_row_again(store, monkeypatch):
    """The chain's row (its target) is read once per new job of it, not once per tick."""
    ctx, slurm, w, result = run(store)
    reads = count_reads(monkeypatch, store.chains, "get")
    sftp = ctx.clusters.sftp("dev")
    log = LOG.format(result.job_id)
    for n, tick in enumerate((T0 + 120, T0 + 180, T0 + 240)):  # the job goes on
        sftp.append(log, MEGATRON.format(it=1300 + 100 * n).encode())
        w.tick(tick)
    assert reads == []
    assert w._jobs[int(result.job_id)].analysis.series.last_iteration == 1500  # judged on


NANOGPT = "iter {it}: loss 2.7200, time 2349.40ms, mfu 40.1%\n"  # prints no target


def resumed(store: Store, last_iter: int, state: str):
    """The run of `run` timed out at iteration 1,200 (its log printed the target 40,000) and
    was resubmitted; the resubmit's log prints no target (nanoGPT's lines) up to `last_iter`,
    where it ends as `state`."""
    ctx, slurm, w, result = run(store)
    end(slurm, w, int(result.job_id))
    w.tick(T0 + 600)  # past its backoff: resubmitted
    job = max(slurm.records)  # the resubmit
    log = LOG.format(job)
    slurm.set(job, state="RUNNING", stdout_path=log, start_time=T0 + 700)
    sftp = ctx.clusters.sftp("dev")
    sftp.append(log, "".join(NANOGPT.format(it=it)
                             for it in range(1300, last_iter + 1, 100)).encode())
    w.tick(T0 + 760)
    slurm.set(job, state=state, exit_code=0, signal=0, end_time=T0 + 800)
    w.tick(T0 + 820)
    return ctx, result.chain_id


def test_a_resumed_job_whose_log_prints_no_target_is_judged_by_the_one_its_run_printed(store):
    # Home shows 1,400 / 40,000 (the first attempt's logged target); the watcher judges the
    # job by the same: exiting 0 at 1,400 of 40,000 is no completed run
    ctx, chain_id = resumed(store, 1400, "COMPLETED")
    [_, last] = [i for i in store.incidents.for_chain(chain_id) if i.key.endswith(":final")]
    assert last.class_id == "silent_exit"
    assert store.chains.get(chain_id).status != "completed"
    assert present(root_view(ctx, chain_id)).target_iter == judged_target(store, chain_id) == 40000


def test_a_resumed_job_that_reaches_its_runs_target_says_so_in_the_completion_line(store):
    ctx, chain_id = resumed(store, 40000, "COMPLETED")
    assert any(t.startswith("✅ Completed") and "reached iteration 40,000 / 40,000" in t
               for t in ctx.sink.texts()), ctx.sink.texts()
    assert judged_target(store, chain_id) == 40000


def test_a_resumed_jobs_run_rows_are_read_once_for_its_target_not_once_per_tick(
        store, monkeypatch):
    """The target its run's earlier attempt logged is read from the store once per watched
    job, as its chain's row is (their values do not change while it runs)."""
    ctx, slurm, w, result = run(store)
    end(slurm, w, int(result.job_id))
    w.tick(T0 + 600)  # resubmitted
    job = max(slurm.records)
    slurm.set(job, state="RUNNING", stdout_path=LOG.format(job), start_time=T0 + 700)
    reads = count_reads(monkeypatch, store.attempts, "for_chain")
    sftp = ctx.clusters.sftp("dev")
    for n, tick in enumerate((T0 + 760, T0 + 820, T0 + 880)):  # its log prints no target
        sftp.append(LOG.format(job), NANOGPT.format(it=1300 + 100 * n).encode())
        w.tick(tick)
    assert reads == [result.chain_id]
    judged = w._jobs[job].diagnosis
    assert judged is not None and judged.metrics.target_iter == 40000
