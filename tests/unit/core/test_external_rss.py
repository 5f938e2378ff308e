"""MetricSeries.add_rss / LogAnalysis.add_rss: host RSS measured outside the log (sstat)
placed as samples at the current line and iteration, so the leak fit and the chart use it."""

from __future__ import annotations

from functools import cache

from bot.core.catalogue import Catalogue
from bot.core.detectors import leak_trend
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import MetricSeries

GIB = 1 << 30


@cache
def catalogue() -> Catalogue:
    return Catalogue.load()


def progress(it: int) -> str:
    return f"2025-05-14 16:02:{it % 60:02d}.000 | INFO | iter: {it}/8000 | loss: 0.9"


def test_nothing_before_the_first_progress_line() -> None:
    series = MetricSeries()
    series.feed_line("starting up", 1)
    assert series.add_rss(5 * GIB, source="sstat") is None
    assert series.rss_points() == [] and series.external_rss_source is None


def test_sample_at_current_iteration_and_replaced_until_the_log_moves() -> None:
    series = MetricSeries()
    series.feed_lines([progress(10), progress(11)])
    first = series.add_rss(5 * GIB, source="sstat")
    assert first is not None and (first.iteration, first.line_no) == (11, 2)
    series.add_rss(6 * GIB, source="sstat")  # no new line: replaces, does not pile up
    assert [p.host_rss_bytes for p in series.rss_points()] == [6 * GIB]
    series.feed_line(progress(12), 3)  # the log moved on: the next one is a new point
    series.add_rss(7 * GIB, source="sstat")
    assert [(p.iteration, p.host_rss_bytes) for p in series.rss_points()] == [
        (11, 6 * GIB), (12, 7 * GIB)]
    assert series.last_iteration == 12 and not series.log_rss_seen
    assert series.external_rss_source == "sstat"
    assert "sstat" in series.rss_points()[-1].text


def test_log_rss_is_told_apart_from_external_rss() -> None:
    series = MetricSeries()
    series.feed_line(progress(10) + " | rss: 40.0 GiB", 1)
    assert series.log_rss_seen


def test_external_samples_make_a_leak_trend_and_survive_compaction() -> None:
    analysis = LogAnalysis(catalogue(), max_samples=16)
    for k in range(40):
        analysis.feed_text(progress(100 + k) + "\n")
        assert analysis.add_rss((40 + k) * GIB // 2, source="sstat")
    trend = leak_trend(analysis.series, 100 * GIB)
    assert trend is not None
    assert abs(trend.slope_gib_per_100_iter - 50.0) < 1e-6
    assert trend.finding.projected_oom_iter is not None
    assert len(analysis.series.samples) <= 16 + 1


def test_non_positive_rss_is_ignored() -> None:
    series = MetricSeries()
    series.feed_line(progress(10), 1)
    assert series.add_rss(0, source="sstat") is None
