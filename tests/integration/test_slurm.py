"""SlurmClient against the real dev cluster, through trainbot's own SSH runner and the real sshd.

Every test runs on both dev clusters (Slurm 22.05 and 24.11, fixture `slurm_cluster`), on the
json path (`squeue --json`) and the parsable path (`squeue -O`) where it matters; sacct is
`--parsable2` unless a test says otherwise (22.05's `sacct --json` gets exit codes wrong).
Job names are unique per test: the cluster is shared and keeps finished jobs for 300 s.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest
from cluster_jobs import CommandLineWatch, CountingRunner

from bot.cluster.errors import ClusterUnavailable, CommandFailed, OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import CommandResult, SSHRunner
from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Action, Diagnosis
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec

pytestmark = pytest.mark.integration

PATHS = ["json", "parsable"]

# How sacct -P shows the SIGTERM Slurm sends at the time limit: `0:15` when the batch shell
# died of it; `15:0` when the shell outlived its child and exited 128+15 = 143, because sacct's
# print.c takes 128 off an exit code >= 128 (`sacct --json` says return_code 143). Slurm 24.11
# has given both for the same `sleep 300` script. While squeue still knows the job, the
# merged record keeps squeue's exact status instead: `143:0` (records._squeue_says_exactly).
SIGTERM_ACCOUNTED = {(0, 15), (15, 0), (143, 0)}


def diagnose(log: str, record: JobRecord) -> Diagnosis:
    """The watcher's diagnosis of a finished job: its log read against its accounting."""
    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text(log)
    analysis.finish()
    return analysis.diagnose(record.accounting())


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


@pytest.fixture
def submitted(ssh_runner) -> Iterator[list[int]]:
    """Job ids a test submitted; cancelled afterwards so the shared cluster stays free."""
    ids: list[int] = []
    yield ids
    for job_id in ids:
        ssh_runner.run(["scancel", str(job_id)], check=False)


def make_client(ssh_runner: SSHRunner, path: str) -> tuple[SlurmClient, CountingRunner]:
    counting = CountingRunner(ssh_runner)
    return SlurmClient(counting, use_json=(path == "json"), timeout=60), counting


def unique(prefix: str) -> str:
    return f"it-{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(
    client: SlurmClient,
    ids: Sequence[int],
    done: Callable[[Mapping[int, JobRecord]], object],
    *,
    timeout: float,
    what: str,
    missing: Callable[[Mapping[int, JobRecord]], str] | None = None,
) -> dict[int, JobRecord]:
    """Poll jobs(ids) until `done(records)`; fail with the last records otherwise, and with
    what `missing(records)` says is not there yet."""
    deadline = time.monotonic() + timeout
    records: dict[int, JobRecord] = {}
    while time.monotonic() < deadline:
        records = client.jobs(ids)
        if done(records):
            return records
        time.sleep(1)
    pending = f"; not yet: {missing(records)}" if missing is not None else ""
    pytest.fail(f"{what} not reached within {timeout:g} s{pending}; last records: {records}")


def settled(job_id: int, state: str) -> Callable[[Mapping[int, JobRecord]], bool]:
    """The job is in `state` and sacct has its steps (the outcome came from accounting)."""

    def check(records: Mapping[int, JobRecord]) -> bool:
        record = records.get(job_id)
        return bool(record and record.state == state and record.step_states
                    and record.source == "squeue+sacct")

    return check


def read_remote(runner: SSHRunner, path: str | None) -> str:
    assert path is not None, "the job has no such file in Slurm's record"
    return runner.run(["cat", path]).stdout


def test_probe_finds_the_release_with_json(slurm_cluster, ssh_runner):
    client = SlurmClient(ssh_runner)
    info = client.probe()
    assert info.version_tuple[:2] == slurm_cluster.release_tuple
    assert info.has_json is True
    assert client.parsers is not None and client.parsers.warning is None


@pytest.mark.parametrize("path", PATHS)
def test_submit_running_then_completed_with_one_squeue_and_one_sacct_per_read(
        slurm_cluster, ssh_runner, submitted, path):
    client, counting = make_client(ssh_runner, path)
    name = unique("ok")
    job_id = client.submit(
        SubmitSpec(
            job_name=name,
            partition=slurm_cluster.partition,
            output=f"{slurm_cluster.home}/%x-%j.out",
            time="5",
            mem="64M",
        ),
        script="#!/bin/bash\necho started\nsleep 8\necho finished\n",
    )
    submitted.append(job_id)
    other = client.submit(
        SubmitSpec(job_name=unique("other"), output="/dev/null"), script="#!/bin/bash\nsleep 1\n"
    )
    submitted.append(other)
    unknown = 987654321
    ids = [job_id, other, unknown]

    client.slurm_release()  # once per client (it decides sacct's fields): not per read
    counting.calls.clear()
    running = wait_for(client, ids, lambda r: r.get(job_id) and r[job_id].is_running,
                       timeout=60, what=f"job {job_id} RUNNING")
    polls = len(counting.calls) // 2
    assert counting.counts() == Counter({"squeue": polls, "sacct": polls})
    rec = running[job_id]
    assert (rec.name, rec.user, rec.partition, rec.node) == (
        name, slurm_cluster.user, slurm_cluster.partition, slurm_cluster.node)
    assert rec.stdout_path == f"{slurm_cluster.home}/{name}-{job_id}.out"
    assert unknown not in running

    counting.calls.clear()
    done = wait_for(client, ids, settled(job_id, "COMPLETED"), timeout=90,
                    what=f"job {job_id} COMPLETED in sacct")
    polls = len(counting.calls) // 2
    assert counting.counts() == Counter({"squeue": polls, "sacct": polls})
    rec = done[job_id]
    assert (rec.exit_code, rec.signal, rec.is_finished) == (0, 0, True)
    assert rec.elapsed_s is not None and rec.elapsed_s >= 7
    assert rec.mem_limit_bytes == 64 * 1024**2
    assert rec.time_limit_s == 300
    assert read_remote(ssh_runner, rec.stdout_path).splitlines() == ["started", "finished"]
    assert unknown not in done


@pytest.mark.slow
def test_slow_exit3_kill9_memory_and_time_limit_run_together(slurm_cluster, ssh_runner, submitted):
    """Takes ~70 s: Slurm's smallest time limit is one minute (it fires at ~64 s)."""
    client, _ = make_client(ssh_runner, "json")
    home = slurm_cluster.home
    scripts = {
        "exit3": ([], "echo failing\nexit 3\n"),
        "kill9": ([], "echo killing myself\nkill -9 $$\n"),
        "mem": (["--mem=100M"], "python3 -c \"import time; b = b'x' * (300 * 1024 * 1024); "
                                "time.sleep(60)\"\n"),
        "timeout": (["--time=1"], "sleep 300\n"),
    }
    ids: dict[str, int] = {}
    for case, (opts, body) in scripts.items():
        mem_limit = "100M" if opts == ["--mem=100M"] else "64M"
        ids[case] = client.submit(
            SubmitSpec(
                job_name=unique(case),
                mem=mem_limit,
                time="1" if case == "timeout" else "5",
                output=f"{home}/%x-%j.out",
            ),
            script="#!/bin/bash\n" + body,
        )
        submitted.append(ids[case])
    # Slurm 22.05 gives a job whose batch script died of a signal (kill9, mem) the reason
    # JobLaunchFailure (slurmctld logs `_job_complete: JobId=N WTERMSIG 9`): its usual end,
    # on a quiet machine too, not a launch that failed. The outcome is read from sacct.
    finals = {"exit3": "FAILED", "kill9": "FAILED", "mem": "FAILED", "timeout": "TIMEOUT"}

    def timeout_signal_recorded(records: Mapping[int, JobRecord]) -> bool:
        # When the time limit ends the job, accounting can show it (and its batch step)
        # TIMEOUT with 0:0 for a moment, before the batch step's own exit status arrives.
        record = records[ids["timeout"]]
        return (record.exit_code, record.signal) in SIGTERM_ACCOUNTED

    def all_settled(records: Mapping[int, JobRecord]) -> bool:
        return (all(settled(ids[c], s)(records) for c, s in finals.items())
                and timeout_signal_recorded(records))

    def not_settled(records: Mapping[int, JobRecord]) -> str:
        said = [f"{case} (job {ids[case]}): " + (
            "known to neither squeue nor sacct" if (r := records.get(ids[case])) is None else
            f"{r.state} (want {state}), steps {r.step_states}, from {r.source}")
            for case, state in finals.items() if not settled(ids[case], state)(records)]
        if ids["timeout"] in records and not timeout_signal_recorded(records):
            r = records[ids["timeout"]]
            said.append(f"timeout: no SIGTERM in accounting (ExitCode {r.exit_code}:{r.signal}, "
                        "want 0:15, or 15:0 or 143:0 from a shell that exited 128+15)")
        return "; ".join(said)

    records = wait_for(client, list(ids.values()), all_settled, timeout=200,
                       what="exit3/kill9/mem/timeout outcomes in sacct", missing=not_settled)

    exit3, kill9, mem, timeout = (records[ids[c]] for c in ("exit3", "kill9", "mem", "timeout"))
    assert (exit3.state, exit3.exit_code, exit3.signal) == ("FAILED", 3, 0)
    assert (kill9.state, kill9.exit_code, kill9.signal) == ("FAILED", 0, 9)
    assert (mem.state, mem.exit_code, mem.signal) == ("FAILED", 0, 9)
    assert mem.mem_limit_bytes == 100 * 1024**2
    assert mem.max_rss_bytes is not None and mem.max_rss_bytes > mem.mem_limit_bytes
    assert "exceeded memory limit" in read_remote(ssh_runner, mem.stdout_path)
    assert timeout.state == "TIMEOUT"
    assert (timeout.exit_code, timeout.signal) in SIGTERM_ACCOUNTED, (
        f"the time limit's SIGTERM is not in accounting: ExitCode "
        f"{timeout.exit_code}:{timeout.signal}")
    assert timeout.time_limit_s == 60 and (timeout.elapsed_s or 0) >= 60
    timeout_log = read_remote(ssh_runner, timeout.stdout_path)
    assert "DUE TO TIME LIMIT" in timeout_log
    # what the watcher posts: the time limit and its remedy, from the log and from sacct alone
    for log in (timeout_log, ""):
        diagnosis = diagnose(log, timeout)
        assert (diagnosis.class_id, diagnosis.action) == ("time_limit", Action.RESUBMIT), (
            f"TIMEOUT with ExitCode {timeout.exit_code}:{timeout.signal} and "
            f"{'its' if log else 'no'} log diagnosed {diagnosis.class_id}/{diagnosis.action}")

    # The parsable path reads the same outcomes from the same jobs.
    parsable, _ = make_client(ssh_runner, "parsable")
    again = parsable.jobs(ids.values())
    for case, record in zip(("exit3", "kill9", "mem", "timeout"), (exit3, kill9, mem, timeout),
                            strict=True):
        other = again[ids[case]]
        assert (other.state, other.exit_code, other.signal) == (
            record.state, record.exit_code, record.signal), case
    assert diagnose("", again[ids["timeout"]]).class_id == "time_limit"


@pytest.mark.parametrize("path", PATHS)
def test_hold_release_cancel_a_pending_job_with_the_reason_read_back(
        slurm_cluster, ssh_runner, submitted, path):
    client, _ = make_client(ssh_runner, path)
    job_id = client.submit(
        SubmitSpec(job_name=unique("hold"), output="/dev/null", extra=("--begin=now+1hour",)),
        script="#!/bin/bash\nsleep 5\n",
    )
    submitted.append(job_id)
    rec = wait_for(client, [job_id], lambda r: r.get(job_id) and r[job_id].reason == "BeginTime",
                   timeout=30, what="pending with BeginTime")[job_id]
    assert rec.is_pending and not rec.is_held

    client.hold(job_id)
    rec = client.jobs([job_id])[job_id]
    assert (rec.state, rec.reason, rec.is_held) == ("PENDING", "JobHeldUser", True)
    # a hold of a held job exits 0 too, and one release drops both: Slurm keeps no holder,
    # so trainbot holds no job Slurm shows held already (competitors.apply_hold)
    client.hold(job_id)
    assert client.jobs([job_id])[job_id].is_held

    client.release(job_id)
    rec = client.jobs([job_id])[job_id]
    assert rec.is_pending and not rec.is_held and rec.reason != "JobHeldUser"

    client.cancel(job_id)
    rec = wait_for(client, [job_id], lambda r: r[job_id].state == "CANCELLED", timeout=30,
                   what="CANCELLED")[job_id]
    assert rec.is_finished


def test_release_of_a_job_with_no_hold_is_no_failure(slurm_cluster, ssh_runner, submitted):
    """`scontrol release` of a job that is not held: pending or running, Slurm exits 0 and says
    nothing; finished, it exits 1 saying so (the same words on 22.05 and 24.11). trainbot's
    release takes all three as released (a hold whose outcome was unknown is released so)."""
    client, _ = make_client(ssh_runner, "parsable")

    def submit(script: str, *extra: str) -> int:
        job_id = client.submit(SubmitSpec(job_name=unique("release"), output="/dev/null",
                                          extra=extra), script=script)
        submitted.append(job_id)
        return job_id

    pending = submit("#!/bin/bash\ntrue\n", "--begin=now+1hour")
    running = submit("#!/bin/bash\nsleep 120\n")
    finished = submit("#!/bin/bash\ntrue\n")
    wait_for(client, [pending, running, finished],
             lambda r: bool(r.get(pending) and r[pending].reason == "BeginTime"
                            and r.get(running) and r[running].is_running
                            and r.get(finished) and r[finished].is_finished),
             timeout=60, what="one job pending, one running, one finished")

    for job_id in (pending, running):
        raw = ssh_runner.run(["scontrol", "release", str(job_id)], check=False)
        assert (raw.exit_code, raw.stdout, raw.stderr) == (0, "", ""), job_id
    raw = ssh_runner.run(["scontrol", "release", str(finished)], check=False)
    assert raw.exit_code == 1
    assert raw.stderr.splitlines()[0] == f"Job has already finished for job {finished}"

    for job_id in (pending, running, finished):
        client.release(job_id)  # no error
    records = client.jobs([pending, running])
    assert records[pending].is_pending and not records[pending].is_held
    assert records[running].is_running


def test_submit_held_shows_job_held_user(slurm_cluster, ssh_runner, submitted):
    client, _ = make_client(ssh_runner, "parsable")
    job_id = client.submit(
        SubmitSpec(job_name=unique("sbatch-hold"), output="/dev/null", hold=True),
        script="#!/bin/bash\ntrue\n",
    )
    submitted.append(job_id)
    assert client.jobs([job_id])[job_id].reason == "JobHeldUser"


@pytest.mark.parametrize("path", PATHS)
def test_hostile_job_name_arguments_and_env_are_passed_literally(
        slurm_cluster, ssh_runner, submitted, path):
    client, _ = make_client(ssh_runner, path)
    canary = f"/tmp/pwned-{uuid.uuid4().hex[:8]}"
    # quotes, expansions and backquotes only: a comma or a control character in a job name is
    # refused before anything is sent (sbatch.check_job_name; squeue/sacct --name lists)
    name = f"a'; touch {canary} #$(touch {canary})`touch {canary}` line2"
    args = [f"a'; touch {canary} #", f"$(touch {canary})", "x\ny", "--wrap=id"]
    job_id = client.submit(
        SubmitSpec(
            args=tuple(args),
            job_name=name,
            output=f"{slurm_cluster.home}/it-hostile-%j.out",
            env={"HOSTILE": f"a,b'c\"d\ne $(touch {canary})"},
        ),
        script='#!/bin/bash\nfor a in "$@"; do printf "ARG[%s]\\n" "$a"; done\n'
        'printf "ENV[%s]\\n" "$HOSTILE"\nprintf "NAME[%s]\\n" "$SLURM_JOB_NAME"\n',
    )
    submitted.append(job_id)
    rec = wait_for(client, [job_id], settled(job_id, "COMPLETED"), timeout=90,
                   what="hostile job COMPLETED")[job_id]
    assert rec.name == name
    out = read_remote(ssh_runner, f"{slurm_cluster.home}/it-hostile-{job_id}.out")
    expected_args = "".join(f"ARG[{a}]\n" for a in args)
    assert out.startswith(expected_args)
    assert f"ENV[a,b'c\"d\ne $(touch {canary})]\n" in out
    assert f"NAME[{name}]\n" in out
    probe = ssh_runner.run(["test", "-e", canary], check=False)
    assert probe.exit_code == 1, f"canary {canary} exists: something ran a shell on input"


def test_an_env_secret_reaches_the_job_but_no_process_list_and_no_error(
        slurm_cluster, ssh_runner, submitted):
    client, _ = make_client(ssh_runner, "parsable")
    secret = f"hf_{uuid.uuid4().hex}"
    out_path = f"{slurm_cluster.home}/it-secret-%j.out"
    script = '#!/bin/bash\nprintf "TOKEN[%s]\\n" "$TRAINBOT_TOKEN"\n'
    with CommandLineWatch() as ps:
        job_id = client.submit(SubmitSpec(job_name=unique("secret"), output=out_path,
                                          env={"TRAINBOT_TOKEN": secret}), script=script)
        submitted.append(job_id)
        wait_for(client, [job_id], settled(job_id, "COMPLETED"), timeout=90,
                 what="secret job COMPLETED")
        with pytest.raises(CommandFailed) as failed:  # sbatch refuses: the error shows no value
            client.submit(SubmitSpec(job_name=unique("secret"), partition="no-such-partition",
                                     env={"TRAINBOT_TOKEN": secret}), script=script)
    assert read_remote(ssh_runner, out_path.replace("%j", str(job_id))) == f"TOKEN[{secret}]\n"
    assert "sbatch" in str(failed.value) and "partition" in str(failed.value).lower()
    assert secret not in f"{failed.value} {failed.value.argv} {failed.value.stderr}"
    assert ps.containing("sbatch") or ps.containing("slurmstepd"), "the scan saw nothing"
    assert ps.containing(secret) == []


def test_an_sbatch_that_answers_past_the_timeout_is_an_outcome_unknown_and_its_job_is_there(
        slurm_cluster, ssh_runner, submitted):
    """A slow controller: sbatch queues the job but its answer comes after trainbot's
    timeout. The submit is an OutcomeUnknown (not a plain ClusterUnavailable, nor a
    CommandFailed) saying to look for the job's name in squeue before submitting again, and
    that name is there, once."""
    slow = f"{slurm_cluster.home}/it-slow-sbatch-{uuid.uuid4().hex[:8]}"
    real = ssh_runner.run(["sh", "-c", "command -v sbatch"]).stdout.strip()
    ssh_runner.run(["sh", "-c", 'mkdir -p "$1" && cat > "$1/sbatch" && chmod 755 "$1/sbatch"',
                    "sh", slow], stdin=f'#!/bin/sh\n"{real}" "$@"\nsleep 30\n')
    name = unique("slow-sbatch")
    path = f"{slow}:" + ssh_runner.run(["sh", "-c", "echo $PATH"]).stdout.strip()
    client = SlurmClient(_SlowSbatchFirst(ssh_runner, path), use_json=False, timeout=5)
    try:
        with pytest.raises(OutcomeUnknown) as info:
            client.submit(SubmitSpec(job_name=name, output="/dev/null"),
                          script="#!/bin/bash\nsleep 60\n")
        queued = ssh_runner.run(["squeue", "--noheader", f"--name={name}", "--format=%i"])
        ids = [int(i) for i in queued.stdout.split()]
        submitted.extend(ids)
    finally:
        ssh_runner.run(["rm", "-rf", slow])
    message = str(info.value)
    assert "did not answer within 5 s" in message
    assert "may or may not have taken effect" in message
    assert f"The job {name!r} may or may not have been submitted: look for that name in " \
        "squeue before submitting again." in message
    assert info.value.argv[0] == "sbatch"
    assert len(ids) == 1  # it went through, once: what a lookup by name finds


def test_a_resume_whose_sbatch_answers_past_the_timeout_records_the_job_it_queued(
        slurm_cluster, ssh_runner, submitted, tmp_path):
    """The same slow controller under `/train resume`'s submit (submit_recipe with
    `reconcile_unknown`): sbatch's answer comes too late, so trainbot looks the job up by its
    name through the real squeue, and records that job as the run's next attempt and watches
    it. sbatch ran once: one job of that name on the cluster. The lookup keeps only a job
    submitted once the sbatch was sent (`now`, trainbot's clock, against the submit time the
    real squeue prints)."""
    from fakes import make_config

    from bot.services.submit import submit_recipe
    from bot.store import Store

    slow = f"{slurm_cluster.home}/it-slow-sbatch-{uuid.uuid4().hex[:8]}"
    real = ssh_runner.run(["sh", "-c", "command -v sbatch"]).stdout.strip()
    ssh_runner.run(["sh", "-c", 'mkdir -p "$1" && cat > "$1/sbatch" && chmod 755 "$1/sbatch"',
                    "sh", slow], stdin=f'#!/bin/sh\n"{real}" "$@"\nsleep 30\n')
    ssh_runner.run(["sh", "-c", 'cat > "$1/job.sbatch"', "sh", slow],
                   stdin="#!/bin/bash\nsleep 60\n")
    name = unique("slow-resume")
    path = f"{slow}:" + ssh_runner.run(["sh", "-c", "echo $PATH"]).stdout.strip()
    client = SlurmClient(_SlowSbatchFirst(ssh_runner, path), use_json=False, timeout=5)
    config = make_config(sbatch_script=f"{slow}/job.sbatch", job_name=name,
                         partition=slurm_cluster.partition, account=None, log_path="/dev/null")
    config.clusters["dev"] = config.clusters["dev"].model_copy(
        update={"user": slurm_cluster.user})
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        chain = store.chains.create(recipe="mix", cluster="dev", job_name=name, now=1)
        store.attempts.record(chain_id=chain.id, job_id="1", now=1)
        try:
            result = submit_recipe(config, "mix", slurm=client,
                                   sftp=None,  # type: ignore[arg-type]  # no checkpoints
                                   store=store,
                                   now=time.time(), actor="U0ALICE", chain_id=chain.id,
                                   reconcile_unknown=True)
            queued = ssh_runner.run(["squeue", "--noheader", f"--name={name}", "--format=%i"])
            ids = [int(i) for i in queued.stdout.split()]
            submitted.extend(ids)
        finally:
            ssh_runner.run(["rm", "-rf", slow])
        assert ids == [int(result.job_id)]  # it went through, once, and that job is recorded
        assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["1", result.job_id]
        assert [w.job_id for w in store.watched_jobs.list("dev")] == [result.job_id]


class _SlowSbatchFirst(CountingRunner):
    """The real runner, with `path` (the slow sbatch's directory first) as the PATH of every
    command it runs: the login node where sbatch answers late (a job's env may not set
    PATH, so it is set here, for the login shell that execs sbatch)."""

    def __init__(self, inner: SSHRunner, path: str):
        super().__init__(inner)
        self.path = path

    def run(self, argv: Sequence[str], **kwargs) -> CommandResult:
        kwargs["env"] = {**(kwargs.get("env") or {}), "PATH": self.path}
        return super().run(argv, **kwargs)


def test_requeue_restarts_the_job(slurm_cluster, ssh_runner, submitted):
    client, _ = make_client(ssh_runner, "json")
    job_id = client.submit(
        SubmitSpec(job_name=unique("requeue"), output="/dev/null"),
        script="#!/bin/bash\nsleep 120\n",
    )
    submitted.append(job_id)
    wait_for(client, [job_id], lambda r: r.get(job_id) and r[job_id].is_running, timeout=60,
             what="RUNNING before requeue")
    client.requeue(job_id)
    rec = wait_for(client, [job_id], lambda r: r[job_id].restart_count == 1, timeout=60,
                   what="restart_count 1 after requeue")[job_id]
    assert not rec.is_finished
    assert rec.exit_code is None  # the killed first attempt is not this job's outcome


@pytest.mark.parametrize("path", PATHS)
def test_pending_competitors_same_user_and_partition_not_another_account(
        slurm_cluster, ssh_runner, submitted, path):
    if "team-b" not in slurm_cluster.accounts:
        pytest.fail("the dev cluster has no second account 'team-b' (connection.json accounts)")
    client, _ = make_client(ssh_runner, path)
    mine = client.submit(
        SubmitSpec(
            job_name=unique("mine"),
            output="/dev/null",
            hold=True,
            account="root",
            partition=slurm_cluster.partition,
        ),
        script="#!/bin/bash\ntrue\n",
    )
    rival = client.submit(
        SubmitSpec(
            job_name=unique("rival"),
            output="/dev/null",
            extra=("--begin=now+1hour",),
            account="root",
            partition=slurm_cluster.partition,
        ),
        script="#!/bin/bash\ntrue\n",
    )
    other_account = client.submit(
        SubmitSpec(
            job_name=unique("teamb"),
            output="/dev/null",
            hold=True,
            account="team-b",
            partition=slurm_cluster.partition,
        ),
        script="#!/bin/bash\ntrue\n",
    )
    submitted.extend([mine, rival, other_account])
    found = client.pending_competitors(user=slurm_cluster.user, account="root",
                                       partition=slurm_cluster.partition, exclude=[mine])
    ids = [r.job_id for r in found]
    assert rival in ids
    assert mine not in ids and other_account not in ids
    assert all(r.is_pending and r.account == "root" for r in found)
    by_account = client.pending_competitors(account="team-b", partition=slurm_cluster.partition)
    assert other_account in [r.job_id for r in by_account]


def test_stopped_controller_raises_cluster_unavailable_then_recovers(
        slurm_cluster, ssh_runner, submitted):
    json_client, _ = make_client(ssh_runner, "json")
    parsable_client, _ = make_client(ssh_runner, "parsable")
    job_id = json_client.submit(
        SubmitSpec(job_name=unique("ctld"), output="/dev/null"), script="#!/bin/bash\nsleep 1\n"
    )
    submitted.append(job_id)
    try:
        slurm_cluster.stop_daemon("slurmctld")
        for client in (json_client, parsable_client):
            with pytest.raises(ClusterUnavailable, match="did not answer"):
                client.jobs([job_id])
        with pytest.raises(ClusterUnavailable, match="may or may not have been submitted"):
            json_client.submit(
                SubmitSpec(job_name=unique("down"), output="/dev/null"),
                script="#!/bin/bash\ntrue\n",
            )
    finally:
        slurm_cluster.start_daemons()
    for client in (json_client, parsable_client):
        records = wait_for(client, [job_id], lambda r: job_id in r, timeout=60,
                           what="jobs() answering after slurmctld restart")
        assert (records[job_id].name or "").startswith("it-ctld-")


# ---- what differs between releases, read right on each -------------------------------------

MiB = 1024**2


@pytest.mark.parametrize("path", PATHS)
def test_per_cpu_memory_reads_as_the_jobs_limit_while_queued_and_after(
        slurm_cluster, ssh_runner, submitted, path):
    # squeue -O MinMemory prints 96M for this job on every release (the per-CPU marker is
    # dropped); the limit is 2 x 96M, in squeue and in sacct alike.
    client, _ = make_client(ssh_runner, path)
    job_id = client.submit(
        SubmitSpec(job_name=unique("percpu"), output="/dev/null",
                   extra=("--cpus-per-task=2", "--mem-per-cpu=96M")),
        script="#!/bin/bash\nsleep 4\n")
    submitted.append(job_id)
    running = wait_for(client, [job_id], lambda r: r.get(job_id) and r[job_id].is_running,
                       timeout=60, what=f"job {job_id} RUNNING")
    assert running[job_id].mem_limit_bytes == 192 * MiB
    done = wait_for(client, [job_id], settled(job_id, "COMPLETED"), timeout=90,
                    what=f"job {job_id} COMPLETED in sacct")
    assert done[job_id].mem_limit_bytes == 192 * MiB


# How each release prints `squeue -O exit_code` for `exit 3`: the raw wait status on 22.05,
# code:signal from 23.02 on.
SQUEUE_EXIT_3 = {"22.05": "768", "24.11": "3:0"}
# ... and for a shell's `exit 137`: exact on both (sacct -P prints `9:0`).
SQUEUE_EXIT_137 = {"22.05": "35072", "24.11": "137:0"}


def test_a_shell_that_exits_137_reads_as_its_kill_on_both_sacct_paths(
    slurm_cluster, ssh_runner, submitted
):
    """A batch script whose child was SIGKILLed (as the OOM killer kills) and which exits
    with the child's status, 137: `sacct --parsable2` prints it `9:0` (src/sacct/print.c
    takes 128 off a status of 128 or more), and the bot reads that 9 as 9 or 137, as a hint
    a log line of the same class must back; squeue prints it exactly (22.05 `35072`, the raw
    wait status; 24.11 `137:0`), so while squeue still lists the ended job (MinJobAge) the
    merged record is 137, unmarked. The watcher's diagnosis from the job's own log (bash's
    `Killed` notice) is the host OOM, decided by accounting, from sacct's 9 alone, from the
    merged 137 and from `sacct --json`'s exact 137 where the release gives it (24.11; 22.05
    reports a job's exit status as 0 there, so the bot reads its columns)."""
    client, _ = make_client(ssh_runner, "parsable")
    body = ("echo 'epoch 1 step 10 loss 2.31'\n"
            "sh -c 'kill -9 $$'\n"
            "rc=$?\n"
            "echo \"train.py exited with status $rc\"\n"
            "exit $rc\n")
    job_id = client.submit(SubmitSpec(job_name=unique("exit137"), mem="64M",
                                      output=f"{slurm_cluster.home}/%x-%j.out"),
                           script="#!/bin/bash\n" + body)
    submitted.append(job_id)
    records = wait_for(client, [job_id], settled(job_id, "FAILED"), timeout=90,
                       what=f"job {job_id} FAILED in sacct")
    merged = records[job_id]
    column = ssh_runner.run(["squeue", "--noheader", "--states=all", f"--jobs={job_id}",
                             "--Format=exit_code:0"]).stdout.strip()
    assert column == SQUEUE_EXIT_137[slurm_cluster.release]
    assert (merged.source, merged.exit_code, merged.signal) == ("squeue+sacct", 137, 0)
    assert merged.accounting().exit_code_candidates == (137,)
    alone = SlurmClient(ForgetfulSqueue(ssh_runner), use_json=False, timeout=60)
    printed = alone.jobs([job_id])[job_id]
    assert (printed.source, printed.exit_code, printed.signal) == ("sacct", 9, 0), (
        f"sacct -P printed ExitCode {printed.exit_code}:{printed.signal} for a shell's 137")
    assert printed.accounting().exit_code_candidates == (9, 137)
    log = read_remote(ssh_runner, merged.stdout_path)
    assert "Killed" in log and "exited with status 137" in log, log
    diagnosis = diagnose(log, printed)
    assert (diagnosis.class_id, diagnosis.decided_by) == ("host_oom", "accounting"), (
        f"FAILED 9:0 (maybe 137) with bash's kill notice diagnosed "
        f"{diagnosis.class_id} by {diagnosis.decided_by}")
    from_merged = diagnose(log, merged)
    assert (from_merged.class_id, from_merged.action, from_merged.decided_by) == (
        diagnosis.class_id, diagnosis.action, diagnosis.decided_by)
    if slurm_cluster.release_tuple >= (23, 2):
        exact_client = SlurmClient(CountingRunner(ssh_runner), use_json=True, sacct_json=True,
                                   timeout=60)
        exact = exact_client.jobs([job_id])[job_id]
        assert (exact.exit_code, exact.accounting().exit_code_candidates) == (137, (137,))
        from_json = diagnose(log, exact)
        assert (from_json.class_id, from_json.action, from_json.decided_by) == (
            diagnosis.class_id, diagnosis.action, diagnosis.decided_by)


def test_exit_code_from_squeue_and_sacct_of_each_release(slurm_cluster, ssh_runner, submitted):
    # One client asked for JSON the way the config's use_json asks: 22.05 refuses it (its
    # sacct --json reports exit 3 as 0) and reads the columns; 24.11 reads JSON.
    counting = CountingRunner(ssh_runner)
    client = SlurmClient(counting, use_json=True, sacct_json=True, check_json=True, timeout=60)
    job_id = client.submit(SubmitSpec(job_name=unique("exit3"), output="/dev/null"),
                           script="#!/bin/bash\nexit 3\n")
    submitted.append(job_id)
    done = wait_for(client, [job_id], settled(job_id, "FAILED"), timeout=90,
                    what=f"job {job_id} FAILED in sacct")
    assert (done[job_id].exit_code, done[job_id].signal) == (3, 0)
    json_reads = [argv for argv in counting.calls if "--json" in argv]
    assert client.parsers is not None
    if slurm_cluster.release_tuple < (23, 2):
        assert "exit code" in (client.parsers.refusal or "") and json_reads == []
    else:
        assert client.parsers.refusal is None and json_reads
    column = ssh_runner.run(["squeue", "--noheader", "--states=all", f"--jobs={job_id}",
                             "--Format=exit_code:0"]).stdout.strip()
    assert column == SQUEUE_EXIT_3[slurm_cluster.release]


class ForgetfulSqueue(CountingRunner):
    """The real runner, but squeue is asked for a job id nobody has: it answers as it does
    once MinJobAge has passed (`Invalid job id specified`), so only sacct knows the job."""

    def run(self, argv: Sequence[str], **kwargs) -> CommandResult:
        if "squeue" in argv:
            argv = [a if not a.startswith("--jobs=") else "--jobs=987654321" for a in argv]
        return super().run(argv, **kwargs)


def test_a_finished_jobs_log_is_found_by_sacct_alone_where_it_has_stdout(
        slurm_cluster, ssh_runner, submitted):
    """24.11's sacct gives the output patterns (StdOut/StdErr, `%x-%j-%u` as submitted) and
    they are expanded like the JSON path does; 22.05's has no such field and is not asked
    for it (asking fails the whole call)."""
    client, _ = make_client(ssh_runner, "parsable")
    name = unique("acctlog")
    home = slurm_cluster.home
    job_id = client.submit(
        SubmitSpec(job_name=name, partition=slurm_cluster.partition, time="5", mem="64M",
                   output=f"{home}/%x-%j-%u-%A-%a.out", error="%x-%j.err", workdir=home),
        script="#!/bin/bash\necho from-the-log\necho to-stderr >&2\n",
    )
    submitted.append(job_id)
    wait_for(client, [job_id], settled(job_id, "COMPLETED"), timeout=90,
             what=f"job {job_id} COMPLETED in sacct")

    out = f"{home}/{name}-{job_id}-{slurm_cluster.user}-{job_id}-4294967294.out"
    # (no %N here: slurmstepd writes the host's short name, and on the 24.11 dev cluster
    # the node `dev2411node` runs on host `vm`, so NodeList cannot tell it)
    err = f"{home}/{name}-{job_id}.err"
    try:
        forgetful = ForgetfulSqueue(ssh_runner)
        record = SlurmClient(forgetful, timeout=60).jobs([job_id])[job_id]
        assert record.source == "sacct" and record.state == "COMPLETED"
        sacct = next(argv for argv in forgetful.calls if "sacct" in argv)
        has_fields = slurm_cluster.release_tuple >= (23, 2)
        assert ("StdOut" in " ".join(sacct)) is has_fields
        if not has_fields:  # 22.05: the watcher falls back to the path it followed the log at
            assert record.stdout_path is None and record.stderr_path is None
            return
        assert (record.stdout_path, record.stderr_path) == (out, err)
        assert read_remote(ssh_runner, record.stdout_path).splitlines() == ["from-the-log"]
        assert read_remote(ssh_runner, record.stderr_path).splitlines() == ["to-stderr"]
    finally:
        ssh_runner.run(["rm", "-f", out, err], check=False)
