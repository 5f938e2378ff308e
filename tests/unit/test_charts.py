"""Charts: PNG bytes at Slack's preview size, for the leak and stall stories and edge cases."""

from __future__ import annotations

import io
import math
import struct

from bot.charts import loss_chart, progress_chart, rss_chart

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
