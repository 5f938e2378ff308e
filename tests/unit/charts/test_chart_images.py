"""The charts as a person sees them: each case is compared with its reviewed reference PNG
(tests/fixtures/charts, Slack's 800×450 preview size) within a small RMS tolerance, so a
label drawn over the data, lost marks or wrong ticks show up as a failed test.

Regenerate after an intended change with `UPDATE_CHARTS=1 pytest tests/unit/charts/
test_chart_images.py`, then look at every changed PNG before committing it."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from matplotlib.testing.compare import compare_images

from bot.charts.figures import loss_chart, progress_chart, rss_chart, time_ticks
from bot.slack.render import translator

REFERENCE = Path(__file__).resolve().parents[2] / "fixtures" / "charts"
GIB = 1024**3
TOLERANCE = 2.0  # RMS over 0-255 pixel values: anti-aliasing noise passes, a moved label not
T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def rss_leak() -> bytes:
    """88016: 72 → 90 GiB over iterations 64-161, projected to the 950 GiB limit near 5,000."""
    slope = 0.186 * GIB
    return rss_chart([(i, (72 + (i - 64) * 0.186) * GIB) for i in range(10, 162, 3)],
                     mem_limit_bytes=950 * GIB, trend=(slope, 72 * GIB - 64 * slope),
                     projected_oom_iter=5000, title="Host RSS · job 88016",
                     worker_series=[(i, (1.9 + i * 0.04) * GIB) for i in range(0, 161, 10)])


def rss_near_limit() -> bytes:
    """The demo: the last value (3.7 GiB at iter 256) right under the 4 GiB limit line."""
    return rss_chart([(i, (0.5 + i * 0.0125) * GIB) for i in range(0, 257, 4)],
                     mem_limit_bytes=4 * GIB, trend=(0.0125 * GIB, 0.5 * GIB),
                     projected_oom_iter=280, title="Host RSS · job 73")


def demo_chain(lang: str = "en") -> bytes:
    """A two-minute chain: job 72 stalls at 130 and dies, job 73 resumes from 100 to 240;
    both attempts' checkpoint saves, the stall and the failure are drawn."""
    first = [(T0 + k * 0.45, k) for k in range(0, 131, 2)]
    stalled, died = first[-1][0], first[-1][0] + 20
    second = [(died + 5 + (k - 100) * 0.45, k) for k in range(100, 241, 2)]
    _ = translator(lang).gettext
    return progress_chart(
        [("72", first), ("73", second)], stalls=[(stalled, died)],
        saves=[T0 + 50 * 0.45, T0 + 100 * 0.45, died + 5 + 50 * 0.45, died + 5 + 100 * 0.45],
        failures=[(died, _("%(cause)s (job %(job)s)") % {"cause": "nccl_timeout",
                                                          "job": "72"})],
        target_iter=240, title=_("Progress · job %(job)s") % {"job": "73"}, gettext=_)


def story_88154() -> bytes:
    """Hours long: 88154 runs 1,000 → 3,470, stalls 30 min, dies; 88887 resumes from 3,000."""
    start = T0 - 4.5 * 1000
    first = [(start + k * 4.5, k) for k in range(1000, 3471, 10)]
    stalled = first[-1][0]
    died = stalled + 1800
    second = [(died + 600 + k * 4.5, 3000 + k) for k in range(0, 300, 10)]
    return progress_chart(
        [("88154", first), ("88887", second)], stalls=[(stalled, died)],
        saves=[start + 2000 * 4.5, start + 3000 * 4.5],
        failures=[(died, "nccl_timeout (job 88154)")], target_iter=4000,
        title="Progress · job 88887")


def noisy_loss() -> bytes:
    pts = [(i, 0.6 + 0.7 * math.exp(-i / 400) + 0.05 * math.sin(i)) for i in range(0, 3000, 10)]
    return loss_chart([*pts, (3010, float("nan"))], title="Loss · job 88154")


CASES: dict[str, Callable[[], bytes]] = {
    "rss_leak": rss_leak,
    "rss_near_limit": rss_near_limit,
    "progress_demo_chain": demo_chain,
    "progress_demo_chain.ko": lambda: demo_chain("ko"),
    "progress_88154": story_88154,
    "loss_noisy": noisy_loss,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_chart_matches_its_reviewed_reference(name: str, tmp_path: Path) -> None:
    png = CASES[name]()
    reference = REFERENCE / f"{name}.png"
    if os.environ.get("UPDATE_CHARTS") == "1":
        reference.write_bytes(png)
    assert reference.exists(), f"no reference {reference.name}: run with UPDATE_CHARTS=1, look"
    actual = tmp_path / f"{name}.png"
    actual.write_bytes(png)
    result = compare_images(str(reference), str(actual), tol=TOLERANCE)
    assert result is None, f"{name}: {result}"


def test_a_label_moved_onto_the_data_fails_the_comparison(tmp_path: Path) -> None:
    """The tolerance is tight enough to catch what the references are for."""
    moved = rss_chart([(i, (0.5 + i * 0.0125) * GIB) for i in range(0, 257, 4)],
                      mem_limit_bytes=4 * GIB, trend=(0.0125 * GIB, 0.5 * GIB),
                      projected_oom_iter=280, title="Host RSS · job 73 (last 3.7 GiB)")
    actual = tmp_path / "moved.png"
    actual.write_bytes(moved)
    assert compare_images(str(REFERENCE / "rss_near_limit.png"), str(actual),
                          tol=TOLERANCE) is not None


@pytest.mark.parametrize(("lo", "hi", "step"), [
    (T0, T0 + 130, 20), (T0, T0 + 45, 10), (T0, T0 + 3 * 3600, 1800),
    (T0, T0 + 20 * 3600, 3 * 3600), (0.0, 8.0, 2),
])
def test_time_ticks_fit_the_span(lo: float, hi: float, step: float) -> None:
    ticks, got = time_ticks(lo, hi)
    assert got == step
    assert 3 <= len(ticks) <= 7
    assert all(lo <= t <= hi and t % step == 0 for t in ticks)
