"""Resubmits interrupted by a crash (issue 7, part 5): a `submitting` row is reconciled with
what the cluster and the store hold, never blindly submitted again. The same cases run for
real (kill -9 of a bot process) in tests/integration/test_crash_safety.py."""

from __future__ import annotations

from fakes import (
    T0,
    AnswerLostSlurm,
    FakeCheckpoints,
    FakeResubmit,
    RecordingEventSink,
    make_config,
)
from support.watcher import CLUSTER, make_watcher, timed_out

from bot.core.policy import PolicyParams
from bot.services.lost_submit import adopt_unrecorded_submit
from bot.services.submit import submit_recipe

KEY = f"{CLUSTER}:88300:resubmit"


def _crashed_in_resubmit(env, resub):
    store, slurm, sftp, sink = env
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)  # the incident; the resubmit row is `due`
    store.incidents.set_state(KEY, "submitting")  # ... then the bot died mid-submit
    return chain


def _restarted(env, resub, recover):
    store, slurm, sftp, _ = env
    sink = RecordingEventSink()
    return sink, make_watcher(store, slurm, sftp, sink, resubmit=resub, recover=recover,
                              checkpoint=FakeCheckpoints(1200),
                              policy=PolicyParams(auto_resubmit=True, backoff_s=60))


def test_job_left_by_a_crashed_sbatch_is_adopted_not_submitted_again(env):
    store = env[0]
    resub = FakeResubmit(store)
    chain = _crashed_in_resubmit(env, resub)
    asked = []

    def recover(recipe, chain_id, old_job, decision, *, intent):
        asked.append((recipe, chain_id, old_job))
        store.attempts.record(chain_id=chain_id, job_id="90500", now=T0,
                              charge_retry=decision.charged)
        return "90500"

    sink, w = _restarted(env, resub, recover)
    w.tick(T0 + 1400)
    assert asked == [("auto", chain.id, "88300")]
    assert resub.calls == []
    assert sink.kinds() == ["resubmitted"] and "90500" in sink.events[0].text
    assert store.incidents.get(KEY).state == "done"
    assert store.chains.get(chain.id).retries_used == 1
    w.tick(T0 + 1460)
    assert resub.calls == [] and len(sink.events) == 1


def test_nothing_left_on_the_cluster_means_submit_once(env):
    store = env[0]
    resub = FakeResubmit(store)
    chain = _crashed_in_resubmit(env, resub)
    sink, w = _restarted(env, resub, lambda recipe, chain_id, old_job, decision, *, intent: None)
    w.tick(T0 + 1400)
    w.tick(T0 + 1460)
    assert resub.calls == [("auto", chain.id, 1200)]
    assert store.chains.get(chain.id).retries_used == 1


def test_cluster_not_answering_the_lookup_submits_nothing_until_it_does(env):
    store = env[0]
    resub = FakeResubmit(store)
    _crashed_in_resubmit(env, resub)
    answers = [RuntimeError("ssh: connect to host: Connection refused"), None]

    def recover(recipe, chain_id, old_job, decision, *, intent):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    sink, w = _restarted(env, resub, recover)
    w.tick(T0 + 1400)
    assert resub.calls == [] and store.incidents.get(KEY).state == "submitting"
    w.tick(T0 + 1460)
    assert len(resub.calls) == 1


def test_a_lookup_the_cluster_keeps_failing_is_made_again_after_a_backoff_not_every_tick(env):
    """The cluster stays down for 20 minutes after the restart, at a tick every 30 s (a test
    clock: each tick's `now`): the lookup of the resubmit that may have gone through is made
    again 1, 2, 4 and 8 minutes after each failed one (bot.core.backoff.resubmit_retry_in_s),
    5 lookups instead of one per tick (41), and nothing is submitted; once the cluster
    answers, at the next lookup due, the resubmit goes on, its backoff forgotten."""
    store = env[0]
    resub = FakeResubmit(store)
    _crashed_in_resubmit(env, resub)
    cluster_up = False
    lookups: list[float] = []
    now = [0.0]

    def recover(recipe, chain_id, old_job, decision, *, intent):
        lookups.append(now[0] - (T0 + 1400))
        if not cluster_up:
            raise RuntimeError("ssh: connect to host: Connection refused")
        return None

    sink, w = _restarted(env, resub, recover)
    for tick in range(41):  # 20 minutes
        now[0] = T0 + 1400 + 30 * tick
        w.tick(now[0])
    assert lookups == [0, 60, 180, 420, 900]
    assert resub.calls == [] and store.incidents.get(KEY).state == "submitting"
    cluster_up = True
    for tick in range(41, 71):  # 15 more minutes: the next lookup is due 15 min after 900
        now[0] = T0 + 1400 + 30 * tick
        w.tick(now[0])
    assert lookups == [0, 60, 180, 420, 900, 1800]
    assert len(resub.calls) == 1


def test_submitted_but_not_told_is_told_once_and_not_charged_again(env):
    store = env[0]
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    sink = env[3]
    sink.fail_next = 0
    w.tick(T0 + 1310)
    sink.fail_next = 1  # Slack down when the resubmit is told
    w.tick(T0 + 1380)
    assert len(resub.calls) == 1 and store.incidents.get(KEY).state == "submitted"
    w.tick(T0 + 1440)
    assert sink.kinds() == ["incident", "resubmitted"]
    assert store.incidents.get(KEY).state == "done"
    assert len(resub.calls) == 1 and store.chains.get(chain.id).retries_used == 1


def test_submitted_but_not_told_is_told_after_the_chain_ended(env):
    """A restart after the resumed job already finished: the chain is no longer active, but
    the resubmit it carried out is still told in the thread, once."""
    store = env[0]
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    sink = env[3]
    w.tick(T0 + 1310)
    sink.fail_next = 1  # Slack down when the resubmit is told
    w.tick(T0 + 1380)
    assert store.incidents.get(KEY).state == "submitted"
    store.chains.set_status(chain.id, "completed", now=T0 + 1400)
    w.tick(T0 + 1440)
    assert sink.kinds() == ["incident", "resubmitted"]
    assert store.incidents.get(KEY).state == "done" and len(resub.calls) == 1


def test_crash_mid_resubmit_is_told_after_the_resumed_job_ran_to_its_end(env):
    """The bot died after sbatch and the attempt's record but before the row said
    `submitted`, and stayed down while the resumed job ran and finished: on restart the chain
    has ended, and the resubmit is still told in the thread, once, with nothing submitted."""
    store = env[0]
    resub = FakeResubmit(store)
    chain = _crashed_in_resubmit(env, resub)
    store.attempts.record(chain_id=chain.id, job_id="90500", now=T0, charge_retry=True)
    store.chains.set_status(chain.id, "completed", now=T0 + 1390)
    asked = []

    def recover(recipe, chain_id, old_job, decision, *, intent):
        asked.append(old_job)
        return "90500"  # the recorded attempt its thread was not told of

    sink, w = _restarted(env, resub, recover)
    w.tick(T0 + 1400)
    w.tick(T0 + 1460)
    assert asked == ["88300"] and resub.calls == []
    assert sink.kinds() == ["resubmitted"] and "90500" in sink.events[0].text
    assert store.incidents.get(KEY).state == "done"


def test_crash_mid_resubmit_with_nothing_submitted_submits_nothing_for_an_ended_chain(env):
    store = env[0]
    resub = FakeResubmit(store)
    chain = _crashed_in_resubmit(env, resub)
    store.chains.set_status(chain.id, "stopped", now=T0 + 1390)  # a person stopped the run
    lookups = []

    def recover(recipe, chain_id, old_job, decision, *, intent):
        lookups.append(old_job)  # an SSH round trip on a real cluster
        return None

    sink, w = _restarted(env, resub, recover)
    w.tick(T0 + 1400)
    w.tick(T0 + 1460)
    assert resub.calls == [] and sink.kinds() == []
    assert lookups == ["88300"]  # looked up once, not on every tick after
    assert store.incidents.get(KEY).state == "dropped"


def test_due_resubmit_of_an_ended_chain_submits_nothing(env):
    store = env[0]
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)  # the incident; the resubmit row is `due`
    store.chains.set_status(chain.id, "stopped", now=T0 + 1320)
    w.tick(T0 + 1400)
    assert resub.calls == [] and store.incidents.get(KEY).state == "due"


def test_warning_left_pending_by_a_crash_is_told_before_the_incident(env):
    store, _, _, sink = env
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    # The bot recorded a stall warning's intent and died; the job then ended.
    store.incidents.record(f"{CLUSTER}:88300:hang:line250", class_id="hang",
                           diagnosis={"kind": "warning", "text": "no progress for 12 min"},
                           now=T0, chain_id=chain.id, job_id="88300", state="pending")
    w.tick(T0 + 1310)
    assert sink.kinds() == ["note", "incident"]
    assert sink.events[0].text == "no progress for 12 min" and sink.events[0].decision is None
    assert store.incidents.get(f"{CLUSTER}:88300:hang:line250").state == "posted"
    w.tick(T0 + 1320)
    assert sink.kinds().count("note") == 1


def _sbatch_then(store, error):
    """A resubmit whose sbatch submits job 90500 on the cluster (recorded nowhere) and then
    raises `error` (its answer lost), as the runner does when sbatch's channel closes; the
    cluster's jobs by name (`on_cluster`) as AutoResubmitter.recover finds them."""
    calls, on_cluster = [], []

    def resubmit(recipe, chain_id, decision, *, intent):
        calls.append(recipe)
        on_cluster.append("90500")
        raise error

    def recover(recipe, chain_id, old_job, decision, *, intent):
        if not on_cluster:
            return None
        store.attempts.record(chain_id=chain_id, job_id=on_cluster[0], now=T0,
                              charge_retry=decision.charged)
        return on_cluster[0]

    return calls, resubmit, recover


def test_a_resubmit_whose_sbatch_channel_closed_is_looked_up_not_submitted_again(env):
    """sbatch's channel closed before its answer (ChannelClosed: the bot shutting down or
    reconnecting): the job may exist, so the next tick looks it up by name (recover) and
    adopts it; sbatch is not run again, and no incident is posted about it."""
    from bot.cluster.errors import ChannelClosed

    store, slurm, sftp, sink = env
    calls, resubmit, recover = _sbatch_then(
        store, ChannelClosed(["sbatch", "--parsable"], "login", connection_lost=False))
    w, chain = timed_out(env, FakeResubmit(store))
    w = make_watcher(store, slurm, sftp, sink, resubmit=resubmit, recover=recover,
                     checkpoint=FakeCheckpoints(1200),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    w.tick(T0 + 1310)  # the incident; the resubmit row is `due`
    w.tick(T0 + 1380)  # sbatch: its channel closes before the answer
    assert calls == ["auto"] and store.incidents.get(KEY).state == "submitting"
    w.tick(T0 + 1440)
    assert calls == ["auto"]  # not submitted a second time
    assert sink.kinds() == ["incident", "resubmitted"] and "90500" in sink.events[1].text
    assert store.incidents.get(KEY).state == "done"
    assert store.chains.get(chain.id).retries_used == 1


def test_a_resubmit_whose_sbatch_ran_but_lost_its_answer_leaves_one_job_after_the_retry_pass(
        env):
    """Through the fault, with the real submit and the real lookup (submit_recipe,
    adopt_unrecorded_submit, as AutoResubmitter wires them): sbatch queues job 90500, then
    its channel closes before the answer. The row stays `submitting`; the next pass looks
    for the job's name in squeue before submitting again, finds 90500 and records it as the
    chain's next attempt, charged once. Exactly one job of that name is on the cluster, and
    the thread tells the resubmit once."""
    store, _slurm, sftp, sink = env
    slurm = AnswerLostSlurm()
    config = make_config()
    config.recipes["auto"] = config.recipes["mix"].model_copy(update={"job_name": "auto"})

    def resubmit(recipe, chain_id, decision, *, intent):
        return submit_recipe(config, recipe, slurm=slurm, sftp=sftp, store=store, now=T0,
                             actor="trainbot", chain_id=chain_id,
                             charge_retry=decision.charged).job_id

    def recover(recipe, chain_id, old_job, decision, *, intent):
        found = adopt_unrecorded_submit(config, recipe, chain_id=chain_id, after_job=old_job,
                                        slurm=slurm, sftp=sftp, store=store, now=T0,
                                        resumed_at=None, charge_retry=decision.charged)
        return None if found is None else found.job_id

    w, chain = timed_out((store, slurm, sftp, sink), FakeResubmit(store))
    w = make_watcher(store, slurm, sftp, sink, resubmit=resubmit, recover=recover,
                     checkpoint=FakeCheckpoints(1200),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    w.tick(T0 + 1310)  # the incident; the resubmit row is `due`
    w.tick(T0 + 1380)  # sbatch queues 90500; its answer is lost
    assert store.incidents.get(KEY).state == "submitting"
    assert slurm.queued("auto") == [90500]
    w.tick(T0 + 1440)  # the retry pass: looked up by name, not submitted again
    w.tick(T0 + 1500)
    assert len(slurm.submits()) == 1 and slurm.queued("auto") == [90500]
    assert ["squeue", "-h", "--name=auto", "--user=slurmci", "-o", "%A"] in slurm.runner.argvs()
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88300", "90500"]
    assert store.chains.get(chain.id).retries_used == 1
    assert sink.kinds() == ["incident", "resubmitted"] and "90500" in sink.events[1].text
    assert store.incidents.get(KEY).state == "done"


def test_a_resubmit_the_submit_command_refused_is_submitted_again_without_a_lookup(env):
    """sbatch answered no (CommandFailed: nothing was submitted): the row is `due` again and
    the next tick submits, with no lookup on the cluster first."""
    from bot.cluster.errors import CommandFailed

    store, slurm, sftp, sink = env
    calls, lookups = [], []

    def resubmit(recipe, chain_id, decision, *, intent):
        calls.append(recipe)
        raise CommandFailed(["sbatch"], 1, "sbatch: error: QOSMaxSubmitJobPerUserLimit")

    w, _chain = timed_out(env, FakeResubmit(store))
    w = make_watcher(store, slurm, sftp, sink, resubmit=resubmit,
                     recover=lambda *args, **_: lookups.append(args),
                     checkpoint=FakeCheckpoints(1200),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    w.tick(T0 + 1310)
    w.tick(T0 + 1380)
    assert store.incidents.get(KEY).state == "due"
    w.tick(T0 + 1440)
    assert calls == ["auto", "auto"] and lookups == []


def _auto_resubmits(store, slurm, sftp, sink, clock):
    """The watcher's resubmits as the bot wires them (AutoResubmitter: submit_recipe under
    the intent, lost_resubmit), over a chain whose job 88300 timed out; the watcher."""
    from fakes import make_context

    from bot.services.runs import AutoResubmitter

    ctx = make_context(store, slurm, sftp=sftp, clock=lambda: clock[0])
    ctx.config.recipes["auto"] = ctx.config.recipes["mix"].model_copy(
        update={"job_name": "auto"})
    auto = AutoResubmitter(ctx, CLUSTER)
    _w, chain = timed_out((store, slurm, sftp, sink), FakeResubmit(store))
    return chain, make_watcher(store, slurm, sftp, sink, resubmit=auto.resubmit,
                               recover=auto.recover, checkpoint=FakeCheckpoints(1200),
                               policy=PolicyParams(auto_resubmit=True, backoff_s=60))


def _ticks(w, clock, *times):
    for at in times:
        clock[0] = at
        w.tick(at)


def test_a_resubmit_whose_sbatch_timed_out_is_not_sent_again_while_slurm_may_still_queue_it(
        env):
    """sbatch timed out (OutcomeUnknown) and the overloaded controller queues its job only
    after the next passes have looked: nothing is concluded (and nothing sent again) while
    the submit in flight is younger than its bound (flight_in_flight_s); its job, queued
    late, is the run's one job, recorded once it is found."""
    from bot.cluster.errors import CommandTimedOut, OutcomeUnknown
    from bot.core.takeover import RemoteDeadlines, submit_in_flight_s

    store, _slurm, sftp, sink = env
    argv = ["sbatch", "--parsable"]
    slurm = AnswerLostSlurm(queue=False, error=OutcomeUnknown.timed_out(
        argv, CommandTimedOut(argv, 60.0)))
    clock = [T0]
    chain, w = _auto_resubmits(store, slurm, sftp, sink, clock)
    _ticks(w, clock, T0 + 1310, T0 + 1380)  # the incident; sbatch times out, nothing queued
    assert store.incidents.get(KEY).state == "submitting" and len(slurm.submits()) == 1
    _ticks(w, clock, T0 + 1445, T0 + 1600, T0 + 1380 + 600)  # the retry passes
    assert len(slurm.submits()) == 1 and store.incidents.get(KEY).state == "submitting"
    assert slurm.land() == [90500]  # the controller queues it now
    _ticks(w, clock, T0 + 1380 + submit_in_flight_s(RemoteDeadlines()) + 1)
    assert len(slurm.submits()) == 1 and slurm.queued("auto") == [90500]
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88300", "90500"]
    assert store.watched_jobs.get(CLUSTER, "90500") is not None
    assert store.incidents.get(KEY).state == "done"
    assert store.submits_in_flight.sent_before(CLUSTER, T0 + 10**6) == []


def test_a_resubmit_the_bot_died_in_after_its_sbatch_is_looked_for_until_its_bound_passed(
        env):
    """The bot died after sending the resubmit's sbatch, whose job the controller has not
    queued yet: the restarted watcher finds the row `submitting`, finds no job by name, and
    keeps it so (its submit in flight kept, the run's other submits refused) until the bound
    has passed; then, with still no job, it submits once."""
    from bot.core.takeover import RemoteDeadlines, submit_in_flight_s

    store, _slurm, sftp, sink = env
    slurm = AnswerLostSlurm(lost=0)  # the dead process's sbatch is never queued
    clock = [T0]
    chain, w = _auto_resubmits(store, slurm, sftp, sink, clock)
    _ticks(w, clock, T0 + 1310)  # the incident; the resubmit row is `due`
    store.incidents.set_state(KEY, "submitting")  # the bot sent its sbatch, then died
    store.submits_in_flight.add(
        cluster=CLUSTER, recipe="auto", job_name="auto", chain_id=chain.id, array_task=None,
        resumed_at=None, charge_retry=True, actor="trainbot", channel=None, sent_at=T0 + 1380,
        intent=KEY)
    _ticks(w, clock, T0 + 1400, T0 + 1460)
    assert slurm.submits() == [] and store.incidents.get(KEY).state == "submitting"
    assert len(store.submits_in_flight.sent_before(CLUSTER, T0 + 10**6)) == 1
    later = T0 + 1380 + submit_in_flight_s(RemoteDeadlines()) + 1
    _ticks(w, clock, later, later + 60)  # no job came: it did not go through
    assert len(slurm.submits()) == 1 and slurm.queued("auto") == [90500]
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88300", "90500"]
