"""`trainbot probe dataloader`: a real DataLoader over the fixture Datasets (decoder cache like
job 88016's, and its bounded LRU fix), plus the slope/projection arithmetic on plain data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.probes.dataloader import MB, WorkerSeries, analyze, theil_sen_slope

PROBES = Path(__file__).resolve().parents[2] / "fixtures" / "probes"


def _probe(factory: str, capsys, *extra: str) -> tuple[int, dict]:
    code = main(["probe", "dataloader", f"decoder_datasets:{factory}", "--path", str(PROBES),
                 "--workers", "2", "--samples", "120", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.timeout(60)
def test_unbounded_decoder_cache_is_flagged_as_a_leak(capsys):
    code, out = _probe("leaky", capsys, "--run-workers", "40", "--run-samples", "320000")
    assert code == 1
    assert out["leaking"] is True
    # each sample caches a new 4 MB buffer: the slope is about 4 MB per sample per worker
    assert 3.0 < out["slope_mb_per_sample"] < 5.5
    assert len(out["worker_slopes_mb"]) == 2
    # 8000 samples per worker at ~4 MB each: tens of GiB per worker by the end of the run
    assert out["projected_worker_rss_mb"] > 20 * 1024
    assert "LEAK" in out["message"]


@pytest.mark.timeout(60)
def test_bounded_lru_twin_is_not_flagged(capsys):
    code, out = _probe("bounded", capsys)
    assert code == 0
    assert out["leaking"] is False and out["conclusive"] is True
    assert abs(out["slope_mb_per_sample"]) < 0.5


def test_bad_factory_spec_and_failing_factory_are_usage_errors(capsys):
    assert main(["probe", "dataloader", "decoder_datasets", "--path", str(PROBES)]) == 2
    assert "MODULE:FACTORY" in capsys.readouterr().err
    assert main(["probe", "dataloader", "no_such_module_x:f"]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert main(["probe", "dataloader", "decoder_datasets:broken", "--path", str(PROBES)]) == 2
    assert "/data/missing" in capsys.readouterr().err


def test_theil_sen_ignores_a_few_wild_points():
    x = list(range(40))
    y = [2.0 * i for i in x]
    y[10] += 500  # a GC pause / allocator jump
    y[30] -= 300
    assert theil_sen_slope(x, y) == pytest.approx(2.0)


def _series(pid: int, slope_mb: float, n: int = 60, start_mb: float = 100) -> WorkerSeries:
    xs = tuple(range(1, n + 1))
    uss = tuple(int((start_mb + slope_mb * x) * MB) for x in xs)
    rss = tuple(u + 150 * MB for u in uss)
    return WorkerSeries(pid, xs, uss, rss)


def test_analyze_reports_the_88016_repro_and_projects_the_run():
    # 2 workers × 160 samples at ~20 MB per sample (docs/incidents.md story 2)
    verdict = analyze([_series(1, 20, n=160), _series(2, 20, n=160)],
                      run_workers=40, run_samples=40 * 1000)
    assert verdict.leaking and verdict.slope_mb_per_sample == pytest.approx(20)
    # each worker loads 1000 samples: 840 more than measured, at 20 MB each
    assert verdict.projected_worker_rss_mb == pytest.approx(verdict.rss_end_mb + 840 * 20)
    assert verdict.projected_total_mb == pytest.approx((verdict.uss_end_mb + 840 * 20) * 40)


def test_warmup_growth_alone_is_not_a_leak_and_too_few_points_is_inconclusive():
    # grows for the first few samples (cache filling to its bound), then flat
    xs = tuple(range(1, 61))
    uss = tuple(int((100 + 4 * min(x, 4)) * MB) for x in xs)
    verdict = analyze([WorkerSeries(1, xs, uss, uss)])
    assert not verdict.leaking and verdict.conclusive
    sparse = analyze([_series(1, 20, n=3)])
    assert not sparse.conclusive and "raise --samples" in sparse.message


@pytest.mark.timeout(60)
def test_the_probe_shows_its_samples_under_a_bar_on_a_terminal(monkeypatch, capsys):
    import io
    import sys

    from bot.cli import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress, "DELAY_S", 0)
    monkeypatch.setattr(sys, "stderr", Terminal())
    main(["probe", "dataloader", "decoder_datasets:bounded", "--path", str(PROBES),
          "--workers", "1", "--samples", "20"])
    assert isinstance(sys.stderr, io.StringIO)  # the Terminal above
    assert "samples:" in sys.stderr.getvalue() and "/20" in sys.stderr.getvalue()
