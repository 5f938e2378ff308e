"""Charts: PNG bytes at Slack's preview size, for the leak and stall stories and edge cases."""

from __future__ import annotations

import io
import math
import struct

from bot.charts.figures import loss_chart, progress_chart, rss_chart

GIB = 1024**3
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC, "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def leak_points():
    # 88016: 72 GiB at iter 64 → 90 GiB at iter 161 (≈ +18.6 GiB / 100 iterations).
    return [(i, (72 + (i - 64) * 0.186) * GIB) for i in range(10, 162, 3)]


def test_rss_chart_with_limit_trend_and_projection_is_a_preview_sized_png():
    slope = 0.186 * GIB
    data = rss_chart(leak_points(), mem_limit_bytes=950 * GIB,
                     trend=(slope, 72 * GIB - 64 * slope), projected_oom_iter=5000,
                     worker_series=[(i, (1.9 + i * 0.04) * GIB) for i in range(0, 161, 10)])
    assert png_size(data) == (800, 450)
    assert len(data) > 10_000  # drawn, not blank


def test_rss_chart_projection_changes_the_picture():
    flat = rss_chart(leak_points(), mem_limit_bytes=950 * GIB)
    projected = rss_chart(leak_points(), mem_limit_bytes=950 * GIB,
                          trend=(0.186 * GIB, 60 * GIB), projected_oom_iter=5000)
    assert flat != projected


def test_progress_chart_joins_attempts_with_stall_saves_and_failure():
    t0 = 1_747_239_000.0  # epoch seconds: drawn as UTC clock times
    a1 = [(t0 + k * 4.5, k) for k in range(1000, 3471, 10)]
    stall_start = a1[-1][0]
    died = stall_start + 1800
    a2 = [(died + 600 + k * 4.5, 3000 + k) for k in range(0, 300, 10)]
    data = progress_chart([("88154", [(t - 4.5 * 1000, i) for t, i in a1]), ("88887", a2)],
                          stalls=[(stall_start, died)], saves=[t0 + 2000 * 4.5],
                          failures=[(died, "NCCL watchdog")], target_iter=8000)
    assert png_size(data) == (800, 450)


def test_progress_chart_with_dateless_times_uses_hours_from_start():
    data = progress_chart([("1", [(3600.0 * h, 100 * h) for h in range(5)])])
    assert png_size(data) == (800, 450)


def test_loss_chart_marks_nan_and_handles_noise():
    pts = [(i, 0.6 + 0.7 * math.exp(-i / 400) + 0.05 * math.sin(i)) for i in range(0, 3000, 10)]
    pts.append((3010, float("nan")))
    data = loss_chart(pts)
    assert png_size(data) == (800, 450)


def test_empty_inputs_still_give_a_readable_png():
    for data in (rss_chart([]), progress_chart([("1", [])]), loss_chart([])):
        assert png_size(data) == (800, 450)


def test_png_decodes():
    from matplotlib.image import imread

    img = imread(io.BytesIO(loss_chart([(0, 1.0), (10, 0.5)])), format="png")
    assert img.shape[:2] == (450, 800)


def test_charts_render_from_several_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor

    jobs = [lambda: rss_chart(leak_points(), mem_limit_bytes=950 * GIB),
            lambda: loss_chart([(0, 1.0), (10, 0.5)]),
            lambda: progress_chart([("1", [(0.0, 0), (60.0, 10)])])] * 2
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda f: f(), jobs))
    assert all(png_size(r) == (800, 450) for r in results)


# ------------------------------------------------------------------ charts_for with the sampler

T0 = 1_800_000_000.0


def _log_analysis(*, with_rss: bool):
    """160 iterations, 4.5 s each, from T0 (log clock = wall clock); RSS printed or not."""
    import time

    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis

    analysis = LogAnalysis(Catalogue.load())
    lines = []
    for k in range(161):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 + 4.5 * k))
        rss = f" | rss: {70 + k * 0.01:.2f} GiB" if with_rss else ""
        lines.append(f"{stamp}.000 | INFO | iter: {64 + k}/8000 | loss: 0.9 | 4.50 s/iter{rss}\n")
    analysis.feed("".join(lines).encode())
    return analysis


def _sampler(*, workers: bool, skew: float = 0.0):
    """Sampler lines every 8 iterations, on the wall clock (log time - skew): the trainer at
    60 GiB, DataLoader workers growing 1.9 -> 9.2 GiB (or none)."""
    import json

    from bot.core.sampler_series import SamplerSeries

    s = SamplerSeries()
    s.feed_lines(json.dumps({
        "v": 1, "t": T0 - skew + 4.5 * k,
        "rss": {"trainer": 60 * GIB, "other": 0,
                "worker": int((1.9 + 7.3 * k / 160) * GIB) if workers else 0},
        "n": {"trainer": 1, "worker": 8 if workers else 0, "other": 0}})
        for k in range(0, 161, 8))
    return s


def _drawn_rss(monkeypatch, analysis, **kwargs):
    """charts_for's RSS chart: (points, rss_chart keyword arguments, png) or None."""
    import bot.charts.figures
    import bot.charts.series

    drawn = []
    real = bot.charts.figures.rss_chart

    def drawing(points, **kw):  # noqa: ANN001, ANN003, ANN202
        drawn.append((points, kw))
        return real(points, **kw)

    monkeypatch.setattr(bot.charts.figures, "rss_chart", drawing)
    charts = bot.charts.series.charts_for(analysis.series, analysis.diagnose(), job_id="88016",
                                          mem_limit_bytes=100 * GIB, names=("rss.png",),
                                          **kwargs)
    assert set(charts) <= {"rss.png"}
    return (*drawn[0], charts["rss.png"]) if drawn else None


def test_charts_for_draws_the_dataloader_workers_from_the_sampler(monkeypatch):
    analysis = _log_analysis(with_rss=True)
    host, kw, png = _drawn_rss(monkeypatch, analysis, sampler=_sampler(workers=True))
    assert len(host) == 161 and kw["title"] == "Host RSS · job 88016"  # the log's own RSS
    workers = sorted(kw["worker_series"])
    assert (workers[0][0], workers[-1][0]) == (64, 224)
    assert (round(workers[0][1] / GIB, 1), round(workers[-1][1] / GIB, 1)) == (1.9, 9.2)
    _, plain_kw, plain = _drawn_rss(monkeypatch, analysis)
    assert plain_kw["worker_series"] is None and plain != png
    _, idle_kw, _ = _drawn_rss(monkeypatch, analysis, sampler=_sampler(workers=False))
    assert idle_kw["worker_series"] is None  # no workers, no line


def test_charts_for_maps_sampler_times_through_the_clock_skew(monkeypatch):
    """Sampler times are wall times; the log's clock runs 3 h ahead (skew = +3 h): with the
    skew they land on the same iterations, without it outside the log's time range."""
    analysis = _log_analysis(with_rss=True)
    skewed = _sampler(workers=True, skew=3 * 3600)
    _, kw, _ = _drawn_rss(monkeypatch, analysis, sampler=skewed, skew=3 * 3600)
    assert (min(kw["worker_series"])[0], max(kw["worker_series"])[0]) == (64, 224)
    _, unmapped, _ = _drawn_rss(monkeypatch, analysis, sampler=skewed)
    assert unmapped["worker_series"] is None


def test_without_rss_in_the_log_the_host_line_is_the_samplers_total_not_sstat(monkeypatch):
    analysis = _log_analysis(with_rss=False)
    assert _drawn_rss(monkeypatch, analysis) is None  # nothing to draw from the log alone
    analysis.add_rss(50 * GIB, source="sstat")  # sstat samples before the sampler wrote
    analysis.feed(b"2027-01-15 08:12:00.000 | INFO | heartbeat\n")  # a later log line
    analysis.add_rss(51 * GIB, source="sstat")
    only_sstat, kw, _ = _drawn_rss(monkeypatch, analysis)
    assert sorted(b for _, b in only_sstat) == [50 * GIB, 51 * GIB]
    host, kw, _ = _drawn_rss(monkeypatch, analysis, sampler=_sampler(workers=True))
    assert kw["title"] == "Host RSS (sampler) · job 88016"
    assert len(host) == 21 and not {50 * GIB, 51 * GIB} & {b for _, b in host}
    assert min(b for _, b in host) == 60 * GIB + int(1.9 * GIB)  # trainer + workers
    assert kw["worker_series"] and kw["projected_oom_iter"] is not None


def test_the_bot_imports_matplotlib_when_it_draws_a_chart_not_when_it_starts(tmp_path):
    """Each start of the bot's process (a restart, the crash tests' many) does not pay for
    matplotlib's import: the services and the watcher are built without it, and the first
    chart drawn imports it."""
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parents[2]
    script = f"""
import sys
from pathlib import Path
from bot.app import build_context, build_watcher
from bot.slack.console import ConsoleSink
from fakes import make_config
from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis

config = make_config()
config.store.url = "sqlite:///{tmp_path / 'bot.db'}"
ctx = build_context(config, threads=lambda store: ConsoleSink(Path("{tmp_path}"), store=store))
build_watcher(ctx, next(iter(config.clusters)))
print("started", "matplotlib" in sys.modules)
analysis = LogAnalysis(Catalogue.load())
analysis.feed("".join(f"2026-01-01 00:00:{{k:02d}}.000 | INFO | iter: {{k}}/240 | loss: 0.5\\n"
                      for k in range(1, 9)).encode())
analysis.finish()
charts = ctx.charts.charts_for(analysis.series, analysis.diagnose(), job_id="88016",
                               mem_limit_bytes=None, names=("progress.png",))
print("drew", sorted(charts), "matplotlib" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": f"{tests.parent}:{tests}",
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["started False", "drew ['progress.png'] True"]
