"""The log bench/diagnose_vs_grep.py writes: at every size it holds the same case, a hang
after the last progress line and the NCCL watchdog's abort one timeout later, which
`trainbot diagnose` reads as nccl_timeout with an upstream hang of that length."""

from __future__ import annotations

import pytest
from support.bench import load_bench

from bot.core.catalogue import Catalogue
from bot.core.diagnose import analyze_file
from bot.core.models import Accounting


@pytest.fixture(scope="module")
def bench():
    return load_bench("diagnose_vs_grep")


# 1 MiB ends on the first day of the log's clock; 8 MiB two days later, past the time the
# abort line once carried whatever the size (`E0520 23:59:59`), which hid the hang
@pytest.mark.parametrize("mib", [1, 8])
def test_the_bench_log_ends_in_a_hang_and_the_watchdogs_abort_at_any_size(bench, tmp_path, mib):
    log = tmp_path / "train.log"
    bench.write_log(log, mib << 20)
    with open(log, "rb") as f:
        analysis = analyze_file(f, Catalogue.load())
    d = analysis.diagnose(Accounting(state="FAILED", exit_code=1, signal=0))
    assert d.class_id == "nccl_timeout"
    assert d.upstream is not None and d.upstream.class_id == "hang"
    assert d.upstream.seconds_before_failure == pytest.approx(
        bench.HANG.total_seconds(), abs=5)
