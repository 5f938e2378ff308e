"""Status service: store and Slurm merged; an unreachable cluster keeps the stored state."""

from __future__ import annotations

import pytest
from fakes import FakeSlurm

from bot.cli.status import format_report
from bot.config import parse_config
from bot.core.slurm.records import JobRecord
from bot.services import UsageProblem
from bot.services.status import job_status
from bot.store import Store

CONFIG = """\
clusters:
  a: {host: h1, user: u, key_file: /k}
  b: {host: h2, user: u, key_file: /k}
recipes:
  mix: {cluster: a, sbatch_script: /s}
  other: {cluster: b, sbatch_script: /s}
"""


@pytest.fixture
def setup(tmp_path):
    config = parse_config(CONFIG, source="t.yaml", env={})
    with Store.open(f"sqlite:///{tmp_path}/s.db") as store:
        for recipe, cluster, jobs in (("mix", "a", ["11", "12"]), ("other", "b", ["21"])):
            chain = store.chains.create(recipe=recipe, cluster=cluster, job_name=recipe, now=1)
            for job in jobs:
                store.attempts.record(chain_id=chain.id, job_id=job, now=2, state="PENDING")
                store.watched_jobs.add(cluster, job, now=3, chain_id=chain.id)
        yield config, store


def test_watched_jobs_one_slurm_call_per_cluster(setup):
    config, store = setup
    slurms = {
        "a": FakeSlurm({11: JobRecord(11, state="FAILED", exit_code=3, signal=0),
                        12: JobRecord(12, state="RUNNING", node="vm", elapsed_s=65)}),
        "b": FakeSlurm({21: JobRecord(21, state="PENDING", reason="JobHeldUser")}),
    }  # fmt: skip
    report = job_status(config, None, store=store, slurm_for=slurms.__getitem__)
    assert slurms["a"].calls == [("jobs", [11, 12])] and slurms["b"].calls == [("jobs", [21])]
    assert [(r.job_id, r.recipe, r.state) for r in report.rows] == [
        ("11", "mix", "FAILED"), ("12", "mix", "RUNNING"), ("21", "other", "PENDING"),
    ]  # fmt: skip
    text = format_report(report)
    assert "3:0" in text and "JobHeldUser" in text and "00:01:05" in text


def test_unreachable_cluster_keeps_stored_state_never_not_found(setup):
    config, store = setup
    slurms = {"a": FakeSlurm(down=True), "b": FakeSlurm({21: JobRecord(21, state="RUNNING")})}
    report = job_status(config, None, store=store, slurm_for=slurms.__getitem__)
    assert "a" in report.unreachable
    assert [r.state for r in report.rows] == ["PENDING (stored)", "PENDING (stored)", "RUNNING"]
    assert "cluster a unreachable" in format_report(report)


def test_recipe_and_job_targets(setup):
    config, store = setup
    slurm = FakeSlurm({12: JobRecord(12, state="COMPLETED", exit_code=0, signal=0)})
    report = job_status(config, "mix", store=store, slurm_for=lambda _c: slurm)
    assert [r.job_id for r in report.rows] == ["11", "12"] and "chain" in str(report.title)
    report = job_status(config, "12", store=store, slurm_for=lambda _c: slurm)
    assert [(r.job_id, r.state) for r in report.rows] == [("12", "COMPLETED")]
    # A job trainbot never submitted: every cluster is asked; Slurm's answer is shown.
    foreign = {"a": FakeSlurm(), "b": FakeSlurm({99: JobRecord(99, state="RUNNING")})}
    report = job_status(config, "99", store=store, slurm_for=foreign.__getitem__)
    assert [(r.job_id, r.cluster, r.recipe, r.state) for r in report.rows] == [
        ("99", "b", None, "RUNNING")
    ]
    report = job_status(config, "98", store=store, slurm_for=foreign.__getitem__)
    assert report.rows == [] and "unknown" in str(report.note)


def test_bad_target_is_a_usage_problem(setup):
    config, store = setup
    with pytest.raises(UsageProblem, match="neither a recipe nor a job id"):
        job_status(config, "mx; rm -rf", store=store, slurm_for=lambda _c: FakeSlurm())


def test_an_array_task_is_found_by_its_own_id_and_shown_as_array_task(setup):
    config, store = setup
    task = JobRecord(6103, state="FAILED", exit_code=1, signal=0, array_job_id=6100,
                     array_task_id=2)
    remainder = JobRecord(6100, state="PENDING", array_job_id=6100)
    slurms = {"a": FakeSlurm({6103: task, 6100: remainder}), "b": FakeSlurm({})}
    report = job_status(config, "6100_2", store=store, slurm_for=slurms.__getitem__)
    assert str(report.title) == "job 6100_2"
    assert [(r.cluster, r.job_id, r.label, r.state) for r in report.rows] == [
        ("a", "6103", "6100_2 (6103)", "FAILED")]
    assert "6100_2 (6103)" in format_report(report)
    missing = job_status(config, "6100_7", store=store, slurm_for=slurms.__getitem__)
    assert missing.rows == [] and str(missing.note).startswith("job 6100_7 is unknown")


def test_a_bad_job_id_names_the_accepted_forms(setup):
    config, store = setup
    with pytest.raises(UsageProblem, match=r"123_4 \(task 4 of array 123\)"):
        job_status(config, "6100_x", store=store, slurm_for=lambda c: FakeSlurm({}))


def test_status_of_an_arrays_id_lists_its_tasks(setup):
    config, store = setup
    records = {6101: JobRecord(6101, state="COMPLETED", exit_code=0, signal=0,
                               array_job_id=6100, array_task_id=0),
               6102: JobRecord(6102, state="RUNNING", array_job_id=6100, array_task_id=1),
               6100: JobRecord(6100, state="PENDING", array_job_id=6100)}
    slurms = {"a": FakeSlurm(records), "b": FakeSlurm({})}
    report = job_status(config, "6100", store=store, slurm_for=slurms.__getitem__)
    assert [(r.label, r.state) for r in report.rows] == [
        ("6100", "PENDING"), ("6100_0 (6101)", "COMPLETED"), ("6100_1 (6102)", "RUNNING")]
