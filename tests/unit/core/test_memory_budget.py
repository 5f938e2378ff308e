"""Checkpoint-save memory budget, against the numbers of jobs 87870 / 88016 (docs/incidents.md).

The reports do not give the parameter count. 1.4 B params is assumed: with 10 workers per rank
at the fixed worker RSS (2.3 GiB, 88016 after the fix) it reproduces the measured 186 GiB save
peak within the estimate's 1.2 overhead, so the same model explains 87870's OOM.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.memory_budget import SaveMemoryInputs, SaveMode, estimate_save_peak
from bot.core.units import parse_size

GIB = 1024**3
PARAMS = 1_400_000_000
PER_GPU_CAP = parse_size("244000M")  # site admission cap per GPU
SITE_FLOOR = parse_size("563200M")  # site accounting floor for a 4-GPU job


def _job_87870(worker_rss: str = "9.2G", **changes) -> SaveMemoryInputs:
    base: dict[str, Any] = dict(params=PARAMS, ranks_per_node=4, workers_per_rank=10,
                worker_rss_bytes=parse_size(worker_rss))
    base.update(changes)
    return SaveMemoryInputs(**base)


def test_87870_estimate_exceeds_300gb_and_says_why():
    budget = estimate_save_peak(_job_87870(), mem_limit_bytes=parse_size("300GB"),
                                per_gpu_cap_bytes=PER_GPU_CAP, site_floor_bytes=SITE_FLOOR)
    assert budget.level == "fail"
    assert budget.peak_bytes > parse_size("300GB")
    assert budget.peak_bytes > 550e9  # the reports: "the peak was above 550 GB"
    parts = {p.name: p.bytes for p in budget.parts}
    # every rank gathers 18 B/param: bf16 2 + fp32 master 4 + Adam 8 + EMA 4
    assert parts["model+optimizer state"] == 4 * 18 * PARAMS
    assert parts["DataLoader workers"] == 40 * parse_size("9.2G")
    assert "40 workers" in budget.finding().message and "OOM-killed" in budget.finding().message
    assert "gathered by every rank" in budget.finding().message
    # the --mem that fits, rounded up to 10 GiB, under the 4 × 244,000 MiB cap
    assert budget.suggested_mem is not None
    suggested = parse_size(budget.suggested_mem)
    assert suggested >= budget.peak_bytes and suggested - budget.peak_bytes < 10 * GIB
    assert suggested <= 4 * PER_GPU_CAP
    assert f"--mem={budget.suggested_mem}" in budget.finding().fix


def test_after_the_leak_fix_the_estimate_covers_the_measured_186_gib_and_fits_300gb():
    budget = estimate_save_peak(_job_87870(worker_rss="2.3G"),
                                mem_limit_bytes=parse_size("300GB"))
    assert budget.peak_bytes >= 186 * GIB  # conservative against the measurement
    assert budget.level == "pass"


def test_site_floor_is_suggested_when_the_need_is_below_it():
    budget = estimate_save_peak(_job_87870(worker_rss="2.3G"), mem_limit_bytes=None,
                                site_floor_bytes=SITE_FLOOR)
    assert budget.level == "warn"  # no --mem at all
    assert budget.suggested_mem == "550G"  # 563,200 MiB is charged anyway


def test_mem_0_is_each_nodes_whole_memory_not_a_zero_byte_limit():
    """--mem=0 (Slurm: all of each node's memory) is a size preflight does not know: the
    peak is told with what the nodes need, a warning, never "above --mem=0 B" and a fail;
    the site cap still applies."""
    budget = estimate_save_peak(_job_87870(worker_rss="2.3G"), mem_limit_bytes=0)
    assert budget.level == "warn" and budget.mem_limit_bytes is None
    message = budget.finding().message
    assert "--mem=0 gives the job all of each node's memory" in message, message
    assert f"the nodes need at least {budget.suggested_mem}" in message
    assert "OOM-killed" not in message and "0 B" not in message
    assert f"--mem={budget.suggested_mem}" in budget.finding().fix
    capped = estimate_save_peak(_job_87870(), mem_limit_bytes=0, per_gpu_cap_bytes=10 * GIB)
    assert capped.level == "fail" and "site cap" in capped.finding().message


def test_cannot_fit_under_the_cap_names_the_ways_down():
    big = _job_87870(params=12_000_000_000, worker_rss="2.3G")
    budget = estimate_save_peak(big, mem_limit_bytes=parse_size("950GB"),
                                per_gpu_cap_bytes=PER_GPU_CAP)
    assert budget.level == "fail"
    assert budget.suggested_mem is None
    assert budget.finding().fix.startswith("cannot fit under the cap")
    assert "save sharded" in budget.finding().fix
    sharded = estimate_save_peak(_job_87870(params=12_000_000_000, worker_rss="2.3G",
                                            save_mode=SaveMode.SHARDED),
                                 mem_limit_bytes=parse_size("950GB"),
                                 per_gpu_cap_bytes=PER_GPU_CAP)
    assert sharded.level == "pass"


def test_fewer_workers_is_offered_when_workers_are_what_breaks_the_cap():
    budget = estimate_save_peak(_job_87870(worker_rss="30G"), mem_limit_bytes=None,
                                per_gpu_cap_bytes=PER_GPU_CAP)
    assert budget.level == "fail"
    assert "reduce DataLoader workers to" in budget.finding().fix


def test_ema_optional_and_tight_budget_warns():
    no_ema = _job_87870(worker_rss="2.3G", ema_bytes=0)
    with_ema = _job_87870(worker_rss="2.3G")
    assert (estimate_save_peak(with_ema).peak_bytes - estimate_save_peak(no_ema).peak_bytes
            == pytest.approx(4 * 4 * PARAMS * 1.2, rel=1e-6))
    peak = estimate_save_peak(with_ema).peak_bytes
    assert estimate_save_peak(with_ema, mem_limit_bytes=int(peak * 1.05)).level == "warn"


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match="params"):
        SaveMemoryInputs(params=0, ranks_per_node=4)
    with pytest.raises(ValueError, match="ranks_per_node"):
        SaveMemoryInputs(params=10, ranks_per_node=0)


def test_the_json_report_says_what_the_finding_says():
    budget = estimate_save_peak(_job_87870(), mem_limit_bytes=parse_size("300GB"),
                                per_gpu_cap_bytes=PER_GPU_CAP, site_floor_bytes=SITE_FLOOR)
    report, finding = budget.to_json(), budget.finding()
    assert report["message"] == finding.message and "OOM-killed" in report["message"]
    assert report["fix"] == finding.fix and f"--mem={budget.suggested_mem}" in report["fix"]
    assert all(isinstance(p["why"], str) and p["why"] for p in report["parts"])
