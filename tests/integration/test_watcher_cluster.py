"""The watcher tick against the real dev cluster: real Slurm (squeue + sacct through the real
sshd and trainbot's SSH runner), real SFTP log tail, a real SQLite store.

Two jobs at once: one prints progress lines, then an NCCL watchdog abort, and exits 134; the
other is a launcher that exits 0 in a second without training (COMPLETED 0:0). The watcher
must make one squeue + one sacct per tick, warn about nothing, and end with one incident per
job: nccl_timeout (resubmit proposed) and silent_exit (stop).
"""

from __future__ import annotations

import shlex
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest
from cluster_jobs import NCCL_JOB, CountingRunner
from fakes import FakeCheckpoints, RecordingEventSink, present
from support.watcher import head_line

from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.cluster.tail import ShellTailReader
from bot.core.catalogue import Catalogue
from bot.core.policy import DecisionKind, PolicyParams
from bot.core.slurm.sbatch import SubmitSpec
from bot.services.status import job_status
from bot.services.watch.tick import Watcher
from bot.slack.render import explain, explain_decided, explain_title
from bot.store import Store

pytestmark = pytest.mark.integration

SILENT_JOB = """#!/bin/bash
set -euo pipefail
echo "[launcher] looking for the latest checkpoint"
LATEST=$( { ls -d /nonexistent/checkpoint_step_* 2>/dev/null || true; } | tail -1)
exit 0
"""


def _watch(store: Store, recipe: str, name: str, job_id) -> None:
    """Record `job_id` as the one attempt of a new run of `recipe` and watch it."""
    chain = store.chains.create(recipe=recipe, cluster="dev", job_name=name, now=time.time())
    store.attempts.record(chain_id=chain.id, job_id=str(job_id), now=time.time())
    store.watched_jobs.add("dev", str(job_id), now=time.time(), chain_id=chain.id)


@dataclass
class _Site:
    """A test's place on the dev cluster: its SSH session, its log folder, its store."""

    ssh: SSHRunner
    logdir: str
    store: Store
    tag: str  # the folder's and the jobs' names end with it
    jobs: list[int] = field(default_factory=list)

    def submit(self, slurm: SlurmClient, spec: SubmitSpec, script: str) -> int:
        """`spec` submitted through `slurm` (on this site's session): cancelled at the end."""
        job_id = slurm.submit(spec, script=script)
        self.jobs.append(job_id)
        return job_id


@contextmanager
def _site(slurm_cluster, tmp_path, folder: str) -> Iterator[_Site]:
    """An SSH session to the dev cluster, a new log folder `<folder>-<tag>` in its home and a
    SQLite store in `tmp_path`; at the end the jobs `submit` sent are cancelled, the folder
    (made writable again) removed and the store closed."""
    tag = uuid.uuid4().hex[:8]
    with SSHRunner(slurm_cluster.ssh_settings()) as ssh:
        logdir = f"{slurm_cluster.home}/{folder}-{tag}"
        ssh.run(["mkdir", "-p", logdir])
        site = _Site(ssh, logdir, Store.open(f"sqlite:///{tmp_path / 'state.db'}"), tag)
        try:
            yield site
        finally:
            for job_id in site.jobs:
                ssh.run(["scancel", str(job_id)], check=False)
            ssh.run(["chmod", "-R", "u+rwx", logdir], check=False)
            ssh.run(["rm", "-rf", logdir], check=False)
            site.store.close()


def _watcher(store: Store, slurm, ssh: SSHRunner, sink: RecordingEventSink, **options) -> Watcher:
    """The dev cluster's watcher over `store`, reading logs through the real read script;
    with no `config`, every recipe's policy resubmits without a backoff."""
    reader = ShellTailReader(ssh)
    if "config" not in options:
        options.setdefault("policy", PolicyParams(backoff_s=0))
    return Watcher("dev", slurm=slurm, reader=lambda: reader, store=store,
                   catalogue=Catalogue.load(), sink=sink, checkpoint=FakeCheckpoints(),
                   **options)


def _tick_until_unwatched(watcher: Watcher, store: Store, *, within_s: float) -> int:
    """Tick `watcher` every 2 s until it watches no job or `within_s` passed: the ticks."""
    ticks = 0
    deadline = time.monotonic() + within_s
    while store.watched_jobs.list("dev") and time.monotonic() < deadline:
        watcher.tick(time.time())
        ticks += 1
        time.sleep(2)
    return ticks


@pytest.mark.timeout(240)
def test_watcher_diagnoses_two_real_jobs_with_one_squeue_and_one_sacct_per_tick(
    slurm_cluster, tmp_path
):
    with _site(slurm_cluster, tmp_path, "watcher") as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        runner = CountingRunner(ssh)
        slurm = SlurmClient(runner)
        ids = {}
        for kind, script in (("nccl", NCCL_JOB), ("silent", SILENT_JOB)):
            name = f"watch-{kind}-{tag}"
            spec = SubmitSpec(job_name=name, partition=slurm_cluster.partition,
                              output=f"{logdir}/%x-%j.out", time="5")
            job_id = site.submit(slurm, spec, script)
            ids[kind] = job_id
            _watch(store, kind, name, job_id)
        sink = RecordingEventSink()
        watcher = _watcher(store, slurm, ssh, sink,
                           policy=PolicyParams(backoff_s=0, stall_min_s=60))
        slurm.probe()  # once per client: sinfo --version + whether squeue --json works
        runner.calls.clear()
        ticks = _tick_until_unwatched(watcher, store, within_s=180)
        assert not store.watched_jobs.list("dev"), (
            f"jobs still watched after {ticks} ticks: {watcher.last_known}")
        counts = runner.counts()
        assert counts["squeue"] == ticks and counts["sacct"] == ticks, counts
        # Plus at most one sstat per tick: the NCCL job's log prints no RSS (issue 7).
        assert counts["sstat"] <= ticks, counts
        assert set(counts) <= {"squeue", "sacct", "sstat"}, counts

        by_job = {e.job_id: e for e in sink.events}
        assert [e.kind for e in sink.events] == ["incident", "incident"]
        nccl = by_job[str(ids["nccl"])]
        assert nccl.diagnosis.class_id == "nccl_timeout"
        assert nccl.decision.kind == DecisionKind.PROPOSE_RESUBMIT
        assert nccl.diagnosis.metrics.last_iter == 8
        silent = by_job[str(ids["silent"])]
        assert silent.record.state == "COMPLETED"
        assert silent.diagnosis.class_id == "silent_exit"
        assert silent.decision.kind == DecisionKind.STOP
        attempt = present(store.attempts.get_by_job(str(ids["nccl"])))
        assert (attempt.cause, attempt.last_iter) == ("nccl_timeout", 8)


# A script that names its own stderr file: progress on stdout, then PyTorch's CUDA OOM
# traceback on stderr (as Python prints an uncaught exception), exit 1.
OWN_STDERR_JOB = r"""#!/bin/bash
#SBATCH --error={elsewhere}
for i in $(seq 1 4); do
  echo "$(date -u '+%Y-%m-%d %H:%M:%S').000 | INFO | iter: $i/100 | loss: 0.9$i | 0.50 s/iter"
done
cat >&2 <<'TRACE'
Traceback (most recent call last):
  File "/home/u/train.py", line 88, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
TRACE
exit 1
"""


@pytest.mark.timeout(240)
def test_a_scripts_own_stderr_file_does_not_hide_its_traceback_from_the_watched_log(
    slurm_cluster, tmp_path
):
    """A recipe whose script says `#SBATCH --error=<elsewhere>`, submitted as trainbot
    submits a recipe: the traceback is in the log at log_path, after the progress lines, and
    the job's incident reads the CUDA OOM from it (not exit 1 from accounting alone)."""
    from bot.config import RecipeConfig

    with _site(slurm_cluster, tmp_path, "stderr") as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        slurm = SlurmClient(ssh)
        elsewhere, script = f"{logdir}/own-%j.err", f"{logdir}/train.sbatch"
        ssh.run(["sh", "-c", f"cat > {shlex.quote(script)}"],
                stdin=OWN_STDERR_JOB.format(elsewhere=elsewhere))
        name = f"watch-stderr-{tag}"
        recipe = RecipeConfig.model_validate({
            "cluster": "dev", "sbatch_script": script, "job_name": name, "time": "5",
            "partition": slurm_cluster.partition, "log_path": f"{logdir}/%x-%j.out"})
        job_id = slurm.submit(recipe.submit_spec(job_name=name, env={}))
        site.jobs.append(job_id)
        _watch(store, "oom", name, job_id)
        sink = RecordingEventSink()
        _tick_until_unwatched(_watcher(store, slurm, ssh, sink), store, within_s=150)
        log = ssh.run(["cat", f"{logdir}/{name}-{job_id}.out"]).stdout
        assert log.index("iter: 4/100") < log.index("Traceback (most recent call last):")
        assert "torch.OutOfMemoryError: CUDA out of memory" in log
        [incident] = sink.events
        assert incident.record.state == "FAILED"
        assert incident.diagnosis.class_id == "cuda_oom", incident.diagnosis
        assert incident.diagnosis.metrics.last_iter == 4
        assert "log_path" not in incident.facts  # read, not judged from accounting alone


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", ["unreadable", "missing"])
def test_a_real_jobs_log_it_cannot_read_once_it_ended_is_judged_from_accounting_once(
    slurm_cluster, tmp_path, case
):
    """A job whose --output file the ssh user cannot read once it ended (`unreadable`:
    chmod 000, the read script answers for it but cannot read it) or that is removed once it
    ended (`missing`: the read script says the path does not exist). After
    unreadable_file_s the watcher judges the job from sacct alone, once, and its incident
    names the log and why it was not read."""
    with _site(slurm_cluster, tmp_path, case) as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        slurm = SlurmClient(ssh)
        log = f"{logdir}/job.out"
        name = f"watch-{case}-{tag}"
        job_id = site.submit(slurm, SubmitSpec(job_name=name, partition=slurm_cluster.partition,
                                               output=log, time="5"), NCCL_JOB)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            record = slurm.jobs([job_id]).get(job_id)
            if record is not None and record.is_finished:
                break
            time.sleep(2)
        else:
            pytest.fail(f"job {job_id} did not end within 120 s")
        ssh.run(["chmod", "000", log] if case == "unreadable" else ["rm", "-f", log])
        _watch(store, "nccl", name, job_id)
        sink = RecordingEventSink()
        watcher = _watcher(store, slurm, ssh, sink, unreadable_file_s=6.0)
        first = time.time()
        watcher.tick(first)
        assert sink.events == [], "judged before unreadable_file_s"
        ticks = 1
        while store.watched_jobs.list("dev") and ticks < 30:
            time.sleep(1)
            watcher.tick(time.time())
            ticks += 1
        [incident] = sink.events
        assert time.time() - first >= 6.0
        assert incident.kind == "incident" and incident.job_id == str(job_id)
        assert incident.diagnosis.metrics.last_iter is None  # nothing of the log was read
        said = head_line(incident)  # as the thread words its facts
        if case == "unreadable":
            assert incident.facts["log_path"] == log and str(incident.facts["log_unreadable"])
            reason = str(incident.facts["log_unreadable"])
            assert said.endswith(f" Its log {log} could not be read ({reason}), so it was "
                                 "judged from Slurm's accounting alone.")
        else:
            assert incident.facts == {"log_path": log, "log_missing": True}
            assert said.endswith(f" Its log {log} did not exist, so it was judged from "
                                 "Slurm's accounting alone.")
        assert "accounting alone" not in incident.text  # the facts say it, once
        watcher.tick(time.time())
        assert len(sink.events) == 1


@pytest.mark.timeout(180)
def test_a_real_job_cancelled_while_it_waited_is_judged_at_once_and_said_never_started(
    slurm_cluster, tmp_path
):
    """A job cancelled while it waited in the queue (--begin an hour away), whose --output
    path holds an earlier job's log: sacct gives it a start time (its end), yet it never
    started. The watcher judges it on its first tick, reads no file (not the earlier job's
    log), and its incident says it never started, who cancelled it and why it waited (en,
    ko), not that its log did not exist, nor to read its last lines; a person is offered to
    submit it again."""
    with _site(slurm_cluster, tmp_path, "never-started") as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        slurm = SlurmClient(ssh)
        log = f"{logdir}/job.out"
        ssh.run(["sh", "-c", f"printf 'iter: 5/100 | loss: 0.5\\n' > {log}"])
        name = f"watch-queued-{tag}"
        job_id = site.submit(slurm, SubmitSpec(job_name=name, partition=slurm_cluster.partition,
                                               output=log, time="5", begin="now+1hour"),
                             NCCL_JOB)
        ssh.run(["scancel", str(job_id)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # sacct lags the controller
            record = slurm.jobs([job_id]).get(job_id)
            if record is not None and record.is_finished and "sacct" in record.source:
                break
            time.sleep(1)
        else:
            pytest.fail(f"job {job_id} not ended in sacct within 60 s")
        assert record.start_time is not None  # Slurm's: its end
        _watch(store, "nccl", name, job_id)
        sink = RecordingEventSink()
        watcher = _watcher(store, slurm, ssh, sink, unreadable_file_s=600.0)
        report = watcher.tick(time.time())
        [incident] = sink.events
        assert incident.kind == "incident" and incident.job_id == str(job_id)
        assert report.read_round_trips == 0  # no file of it read
        d = incident.diagnosis
        assert d.metrics.last_iter is None and incident.facts == {}
        uid = int(ssh.run(["id", "-u"]).stdout)  # the test's scancel
        assert d.detail == {"kind": "never_started", "state": "CANCELLED",
                            "cancelled_by": uid, "pending_reason": "BeginTime"}
        assert (d.class_id, d.action, d.retryable) == ("unknown_failure", "ask", False)
        assert incident.decision.kind == DecisionKind.PROPOSE_RESUBMIT
        assert incident.text == (  # not its State's class, no work lost
            f"job {job_id} never started: Slurm ended it (CANCELLED by user id {uid}, "
            "pending reason BeginTime) while it waited in the queue, so nothing ran and "
            "nothing was lost; resubmit from scratch (no complete checkpoint) or dismiss: "
            "a person decides.")
        assert (explain_title(d), explain_title(d, "ko")) == (
            "The job never started", "작업이 시작되지 않음")
        assert explain_decided(d) == (  # its confidence line: what a person checks
            "Decided by Slurm accounting alone: the job never ran, so it wrote no log. "
            "Before submitting it again, check who cancelled it and why, and what it "
            "waited for (its pending reason).")
        # what Slurm did, once: the title and the confidence line say the rest
        assert explain(d) == (
            f"Slurm ended it (CANCELLED by user id {uid}) while it waited in the queue, so "
            "nothing ran and no work was lost. Its pending reason was BeginTime.")
        assert explain(d, "ko") == (
            "대기열에서 기다리는 동안 Slurm이 작업을 끝냈으므로(사용자 ID "
            f"{uid}에 의해 CANCELLED) 아무것도 실행되지 않았고 잃은 작업도 없습니다. "
            "대기 사유: BeginTime.")
        assert store.watched_jobs.list("dev") == []


class _Recipe:
    """The watcher's view of a config with one recipe (`recipe`, `policy_for`)."""

    def __init__(self, **recipe) -> None:
        self._recipe = SimpleNamespace(job_name=None, workdir=None, target_iter=None,
                                       metric_regexes=[], **recipe)
        self.policy = PolicyParams(backoff_s=0)

    def recipe(self, name):
        return self._recipe

    def policy_for(self, name):
        return self.policy


class _NoStdout:
    """The Slurm client with no log path in its records: a finished job squeue forgot
    (MinJobAge) on a sacct without StdOut (22.05), so the watcher takes the recipe's."""

    def __init__(self, slurm: SlurmClient) -> None:
        self.slurm = slurm

    def jobs(self, ids):
        return {i: replace(r, stdout_path=None) for i, r in self.slurm.jobs(ids).items()}

    def __getattr__(self, name):
        return getattr(self.slurm, name)


@pytest.mark.timeout(180)
def test_a_real_array_tasks_files_are_found_at_the_recipes_patterns(slurm_cluster, tmp_path):
    """A real 2-task array whose --output is `%x-%A_%a-%N.out` and whose tasks write their
    memory samples at `rss-<array>_<task>-<host>.jsonl`: with no log path from Slurm, the
    watcher finds each task's log and sampler file at the recipe's patterns (`%A_%a`, `%N`
    expanded as sbatch does), and judges each ended task at once, from both. `%N` is the
    node's host name, which accounting gives as the node's name: where a cluster names its
    node apart from its host (NodeHostname; the 24.11 dev cluster) the watcher cannot know
    it, and the patterns go without it."""
    with _site(slurm_cluster, tmp_path, "array") as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        slurm = SlurmClient(ssh)
        name = f"watch-array-{tag}"
        node = ssh.run(["sinfo", "-h", "-p", slurm_cluster.partition, "-o", "%N"]).stdout
        host = ssh.run(["hostname", "-s"]).stdout.strip()
        by_host = node.strip() == host  # %N names a host accounting gives
        at, at_host = ("-%N", "-$(hostname -s)") if by_host else ("", "")
        sampler = (f"{logdir}/rss-${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
                   f"{at_host}.jsonl")
        script = ("#!/bin/bash\n"
                  f"echo '{{\"v\": 1, \"t\": 0, \"rss\": {{\"trainer\": 1}}}}' > \"{sampler}\"\n"
                  + NCCL_JOB.split("\n", 1)[1])
        array_id = site.submit(slurm, SubmitSpec(
            job_name=name, partition=slurm_cluster.partition,
            output=f"{logdir}/%x-%A_%a{at}.out", time="5", array="0-1"), script)
        deadline = time.monotonic() + 120
        tasks = {}
        while time.monotonic() < deadline:
            tasks = slurm.array_tasks(array_id)
            if len(tasks) == 2 and all(t.is_finished and "sacct" in t.source
                                       for t in tasks.values()):
                break
            time.sleep(2)
        else:
            pytest.fail(f"array {array_id} did not end within 120 s: {tasks}")
        for job_id in tasks:  # each task its own run, as one job
            _watch(store, "arr", name, job_id)
        sink = RecordingEventSink()
        watcher = _watcher(store, _NoStdout(slurm), ssh, sink,
                           config=_Recipe(log_path=f"{logdir}/%x-%A_%a{at}.out",
                                          sampler_path=f"{logdir}/rss-%A_%a{at}.jsonl"),
                           unreadable_file_s=600.0)
        watcher.tick(time.time())
        assert sorted(e.job_id for e in sink.events) == sorted(str(j) for j in tasks)
        for incident in sink.events:
            assert incident.kind == "incident" and incident.facts == {}
            assert incident.diagnosis.class_id == "nccl_timeout"  # judged from its log
            assert incident.diagnosis.metrics.last_iter == 8
            assert incident.sampler is not None  # its samples were read


# After SIGCONT the job takes 4 s before its next line (bash runs the trap once the `sleep` it
# waits for returns), as a run may when it continues mid-iteration: under the 8 s threshold.
PAUSABLE_JOB = r"""#!/bin/bash
trap 'sleep 4' CONT
for i in $(seq 1 400); do
  echo "$(date -u '+%Y-%m-%d %H:%M:%S').000 | INFO | iter: $i/400 | loss: 0.5 | 0.50 s/iter"
  sleep 0.5
done
"""


@pytest.mark.timeout(240)
def test_a_real_job_sent_sigstop_is_not_warned_of_as_hung(slurm_cluster, tmp_path):
    """A real job printing an iteration every 0.5 s (stall threshold 8 s) is sent SIGSTOP by
    its user (`scancel --signal=STOP`, exit 0 at once for a job of no array): squeue says
    STOPPED (sacct RUNNING), and over 30 s of ticks the watcher warns of no hang. Sent
    SIGCONT, it prints its next line 4 s later and trains on: the ticks meanwhile see it
    RUNNING with its last line 30 s old, which the old watcher warned of as a hang; no
    warning now, the silence counted from when it was last seen stopped."""
    with _site(slurm_cluster, tmp_path, "pause") as site:
        ssh, logdir, store, tag = site.ssh, site.logdir, site.store, site.tag
        slurm = SlurmClient(ssh)
        name = f"watch-pause-{tag}"
        job_id = site.submit(slurm, SubmitSpec(job_name=name, partition=slurm_cluster.partition,
                                               output=f"{logdir}/%x-%j.out", time="5"),
                             PAUSABLE_JOB)
        _watch(store, "pause", name, job_id)
        sink = RecordingEventSink()
        watcher = _watcher(store, slurm, ssh, sink,
                           policy=PolicyParams(backoff_s=0, stall_min_s=8))

        def last_iter() -> int:
            jw = watcher._jobs.get(job_id)
            return (jw.analysis.series.last_iteration or 0) if jw is not None else 0

        deadline = time.monotonic() + 90
        while last_iter() < 6 and time.monotonic() < deadline:
            watcher.tick(time.time())
            time.sleep(1)
        assert last_iter() >= 6, watcher.last_known
        started = time.monotonic()
        # --full: the batch shell too (without it only the job's steps, none here, are
        # signalled, and Slurm still lists the job STOPPED)
        stop = ssh.run(["scancel", "--signal=STOP", "--full", str(job_id)], check=False,
                       timeout=30)
        assert stop.exit_code == 0 and time.monotonic() - started < 10, stop
        seen = set()
        stopped_at = time.monotonic()
        frozen = None
        while time.monotonic() - stopped_at < 30:
            watcher.tick(time.time())
            seen.add(watcher.last_known[job_id].state)
            if frozen is None and time.monotonic() - stopped_at > 4:
                frozen = last_iter()
            time.sleep(2)
        acct = ssh.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)])
        assert "STOPPED" in seen and acct.stdout.strip() == "RUNNING", (seen, acct.stdout)
        # squeue's STOPPED, not sacct's RUNNING, is what the run's thread (its attempt
        # row, the root's state) and `/train status N` show
        assert present(store.attempts.get_by_job(str(job_id), "dev")).state == "STOPPED"
        config = SimpleNamespace(recipes={}, clusters={"dev": None})  # what status reads
        status = job_status(config, str(job_id), store=store,  # type: ignore[arg-type]
                            slurm_for=lambda _name: slurm)
        assert [r.state for r in status.rows] == ["STOPPED"], status
        assert last_iter() == frozen, "the job printed on while stopped"
        assert sink.events == [], [e.text for e in sink.events]
        ssh.run(["scancel", "--signal=CONT", "--full", str(job_id)], timeout=30)
        resumed_at = time.monotonic()
        while time.monotonic() - resumed_at < 12:
            watcher.tick(time.time())
            time.sleep(1)
        assert watcher.last_known[job_id].state == "RUNNING" and last_iter() > frozen
        assert sink.events == [], [e.text for e in sink.events]
