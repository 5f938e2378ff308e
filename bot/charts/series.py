"""Charts straight from a log's `MetricSeries` and its `Diagnosis` (for reports and the
watcher): picks the data, the stall window, saves and the failure mark, then draws."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bot.charts.figures import GIB, loss_chart, progress_chart, rss_chart
from bot.core.detectors import leak_trend
from bot.core.models import Diagnosis

QUIET_CLASSES = frozenset({"completed", "none", "memory_leak"})  # no failure mark
MIN_TREND_GIB_PER_100 = 0.5  # flatter than this, a trend line only adds noise


def charts_for(
    series: Any,
    diagnosis: Diagnosis,
    *,
    job_id: str,
    mem_limit_bytes: int | None,
    earlier_attempts: Sequence[tuple[str, Sequence[tuple[float, float]]]] = (),
) -> dict[str, bytes]:
    """{"rss.png", "progress.png", "loss.png"}: those the series has data for (2+ RSS
    samples, 2+ timed iterations, 2+ loss values). `earlier_attempts` (job id, [(time,
    iteration)]) are drawn before this job on the progress chart's shared time axis."""
    out: dict[str, bytes] = {}
    rss = [(s.iteration, s.host_rss_bytes) for s in series.rss_points()
           if s.iteration is not None]
    if len(rss) >= 2:
        line = projected = None
        trend = leak_trend(series, mem_limit_bytes)
        if trend is not None and abs(trend.slope_gib_per_100_iter) >= MIN_TREND_GIB_PER_100:
            f = trend.finding
            slope = f.slope_gib_per_100_iter / 100 * GIB
            line = (slope, f.rss_now_bytes - slope * f.last.iteration)
            projected = f.projected_oom_iter
        out["rss.png"] = rss_chart(rss, mem_limit_bytes=mem_limit_bytes, trend=line,
                                   projected_oom_iter=projected,
                                   title=f"Host RSS · job {job_id}")
    timed = [(s.time, s.iteration) for s in series.samples
             if s.time is not None and s.iteration is not None]
    if len(timed) >= 2:
        stalls = []
        up = diagnosis.upstream
        end = series.last_time
        if up is not None and up.started_at is not None and up.seconds_before_failure:
            stalls.append((up.started_at, up.started_at + up.seconds_before_failure))
        elif diagnosis.metrics.stall_seconds and end is not None:
            stalls.append((end - diagnosis.metrics.stall_seconds, end))
        windows = series.save_windows()
        saves = [w.end_time for w in windows if w.end_time is not None]
        unfinished = [w.start_time for w in windows
                      if w.end_line is None and w.start_time is not None]
        failures = []
        if diagnosis.class_id not in QUIET_CLASSES and end:
            failures.append((end, diagnosis.class_id))
        out["progress.png"] = progress_chart(
            [*earlier_attempts, (job_id, timed)], stalls=stalls, saves=saves,
            failures=failures, unfinished_saves=unfinished,
            target_iter=diagnosis.metrics.target_iter, title=f"Progress · job {job_id}")
    losses = [(s.iteration, s.loss) for s in series.samples
              if s.iteration is not None and s.loss is not None]
    if len(losses) >= 2 or any(not math.isfinite(v) for _, v in losses):
        out["loss.png"] = loss_chart(losses, title=f"Loss · job {job_id}")
    return out
