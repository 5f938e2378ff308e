"""What a host OOM says of a --mem=0 job and of a job sent with no --mem, as the dev clusters'
Slurm reports them: squeue and sacct mark neither as a whole-node job (a requested memory of
0 is also a --mem-per-gpu job's, or one's with no request and no site default), so it is
what trainbot submitted (its attempt's submit_mem: bot.services.watch.tick) that tells them
apart. The --mem=0 job is told that no --mem gives it more, naming the node's memory Slurm
allocated it; the other is never told so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.core.catalogue import Catalogue
from bot.core.models import Diagnosis, DiagnosisMetrics
from bot.core.policy import ChainHistory, PolicyParams, decide, whole_node_mem
from bot.core.slurm.records import JobRecord
from bot.core.units import MIB
from bot.slack.render import render_template

pytestmark = pytest.mark.integration

WHOLE = "already all of its node's memory"


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


def _ended(ssh_runner: SSHRunner, job: int, **client: bool) -> JobRecord:
    """The job's record once Slurm says it ended (22.05's sacct --json answers "Nothing
    found", error 9003, as an error until slurmdbd has the job)."""
    deadline = time.monotonic() + 90
    rec = None
    while time.monotonic() < deadline:
        try:
            rec = SlurmClient(ssh_runner, use_json=False, **client).job(job)
        except ClusterUnavailable:
            rec = None
        if rec is not None and rec.end_time is not None and rec.state == "COMPLETED":
            return rec
        time.sleep(2)
    raise AssertionError(f"job {job} never ended in Slurm's answers: {rec}")


def _head_line(rec: JobRecord, submitted: str) -> tuple[str, dict]:
    """The watcher's incident head line (English) had the job been host-OOM killed near its
    limit, marked by the --mem trainbot `submitted` it with, and the decision's facts."""
    cls = Catalogue.load().classes["host_oom"]
    diagnosis = Diagnosis(class_id="host_oom", action=cls.action, retryable=cls.retryable,
                          charges_budget=cls.charges_budget, hint=cls.hint,
                          metrics=DiagnosisMetrics(last_iter=670, target_iter=1200))
    limit = rec.mem_limit_bytes or 1000 * MIB
    marked = replace(rec, whole_node_mem=whole_node_mem(submitted), state="OUT_OF_MEMORY",
                     exit_code=0, signal=9, max_rss_bytes=limit - 10 * MIB)
    dec = decide(diagnosis, ChainHistory(attempts=()), PolicyParams(auto_resubmit=False),
                 time.time(), checkpoint_iter=500, accounting=marked.accounting())
    view = {"kind": "incident", "prompt": False, "text_only": False, "job_id": str(rec.job_id),
            "cluster": "dev", "state": "OUT_OF_MEMORY", "class_id": "host_oom",
            "hint": cls.hint, "detail": None, "translations": {}, "site_hint": False,
            "facts": {}, "text": f"job {rec.job_id}", "card": {},
            "reason": {"kind": str(dec.kind), "class_id": "host_oom",
                       "resume_from": dec.resume_from, "mem": dec.mem, **dec.facts}}
    return render_template("event", "en", view)["text"], dict(dec.facts)


@pytest.mark.parametrize("sacct_json", [False, True])
def test_a_mem_0_job_and_a_job_with_no_mem_are_told_apart(slurm_cluster, ssh_runner,
                                                          sacct_json):
    jobs = {}
    for mem in ("0", ""):
        out = ssh_runner.run(
            ["sbatch", "--parsable", *([f"--mem={mem}"] if mem else []),
             f"--partition={slurm_cluster.partition}", "--time=1", "--output=/dev/null",
             f"--job-name=trainbot-mem{mem or 'none'}", "--wrap", "sleep 3"], timeout=60)
        jobs[mem] = int(out.stdout.strip().split(";")[0])
    whole = _ended(ssh_runner, jobs["0"], sacct_json=sacct_json)
    plain = _ended(ssh_runner, jobs[""], sacct_json=sacct_json)
    assert not whole.whole_node_mem and not plain.whole_node_mem  # Slurm's word never marks
    assert whole.mem_limit_bytes, whole  # sacct gives the node's memory it allocated

    said, facts = _head_line(whole, "0")
    assert WHOLE in said and "no --mem gives it more" in said, said
    assert facts["why"] == "mem_whole_node" and facts["node_mem"], facts
    said, facts = _head_line(plain, "")
    assert WHOLE not in said and facts["why"] != "mem_whole_node", said
