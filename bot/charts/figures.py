"""The three figures, built with matplotlib's object API (no pyplot state). matplotlib's
rcParams are process-global, so renders are serialised by a lock: safe from any thread.
Every label is in the legend (below the plot) or on an axis, never on the data; the words
come through `gettext` (the thread's language), Hangul from the bundled NanumGothic."""

from __future__ import annotations

import importlib.util
import io
import math
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

from matplotlib import font_manager  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator  # noqa: E402

from bot.core.units import GIB  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

Gettext = Callable[[str], str]


def _english(message: str) -> str:
    return message


def _hangul_font() -> str | None:
    """NanumGothic (SIL OFL) from the koreanize-matplotlib wheel, registered with matplotlib:
    DejaVu Sans has no Hangul. Only the font file is used; the package is never imported
    (importing it rewrites rcParams)."""
    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    fonts = Path(next(iter(spec.submodule_search_locations))) / "fonts"
    regular = fonts / "NanumGothic.ttf"
    if not regular.is_file():
        return None
    for path in (regular, fonts / "NanumGothicBold.ttf"):  # bold: the titles
        if path.is_file():
            font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(regular)).get_name()


_HANGUL = _hangul_font()
_LOCK = threading.Lock()
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 100  # 800×450 px: Slack's thread preview size

# Colour-blind-safe palette (Okabe-Ito) and one red for danger.
BLUE, ORANGE, GREEN, PURPLE, GREY = "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#666666"
RED = "#D62728"
ATTEMPT_COLOURS = (BLUE, GREEN, PURPLE, ORANGE, "#56B4E9")
EPOCH_MIN = 1e9  # times at or above this are epoch seconds (2001+), else seconds from start

_RC: dict[RcKeyType, Any] = {
    # DejaVu Sans first (Latin, digits, ✕); glyphs it lacks (Hangul) fall back to NanumGothic
    "font.family": ["DejaVu Sans", *([_HANGUL] if _HANGUL else [])],
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.titleweight": "bold",
    "axes.labelsize": 13,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def _figure() -> tuple[Figure, Axes]:
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    return fig, ax


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _legend(fig: Figure, ax: Axes) -> None:
    """Every label of the chart in one legend under the plot, clear of the data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        wide = max(len(label) for label in labels) > 26  # three such columns do not fit
        fig.legend(handles, labels, loc="outside lower center",
                   ncols=min(2 if wide else 3, len(handles)), frameon=False, fontsize=11)


def _iter_fmt(x: float, _pos: int) -> str:
    return f"{int(round(x)):,}"


def _no_data(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes,
            fontsize=14, color=GREY)
    ax.set_xticks([])
    ax.set_yticks([])


def duration_text(seconds: float, _: Gettext = _english) -> str:
    """A short duration for a chart label: seconds below two minutes (like the threads)."""
    if seconds < 119.5:
        return _("%(seconds)d s") % {"seconds": int(round(max(0.0, seconds)))}
    minutes = int(round(seconds / 60))
    if minutes < 120:
        return _("%(minutes)d min") % {"minutes": minutes}
    return _("%(hours)d h %(minutes)02d min") % {"hours": minutes // 60,
                                                 "minutes": minutes % 60}


def rss_chart(
    points: Sequence[tuple[float, float]],
    *,
    mem_limit_bytes: int | None = None,
    trend: tuple[float, float] | None = None,
    projected_oom_iter: int | None = None,
    worker_series: Sequence[tuple[float, float]] | None = None,
    title: str = "Host memory (RSS)",
    gettext: Gettext = _english,
) -> bytes:
    """Host RSS vs iteration with the memory limit, the fitted trend and the projected OOM.

    `points` are (iteration, rss_bytes); `trend` is (slope_bytes_per_iter, intercept_bytes),
    the line rss = intercept + slope·iteration; `worker_series` (iteration, bytes) is the
    DataLoader workers' RSS (summed over them) when known. The limit, the last value and the
    projection are named in the legend.
    """
    _ = gettext
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        pts = sorted((float(i), float(b)) for i, b in points if i is not None and b is not None)
        if not pts:
            _no_data(ax, _("no RSS samples in the log"))
            ax.set_title(title, loc="left")
            return _png(fig)
        xs = [p[0] for p in pts]
        ys = [p[1] / GIB for p in pts]
        x_end = max(xs)
        if projected_oom_iter is not None:
            x_end = max(x_end, float(projected_oom_iter))
        last_x, last_y = xs[-1], ys[-1]
        ax.plot(xs, ys, color=BLUE, lw=2.2, marker="o" if len(xs) <= 40 else None, ms=4,
                label=_("host RSS (last %(rss)s GiB at iter %(iter)s)") % {
                    "rss": f"{last_y:,.0f}" if last_y >= 10 else f"{last_y:.1f}",
                    "iter": f"{int(last_x):,}"}, zorder=3)
        ax.plot([last_x], [last_y], marker="o", ms=8, color=BLUE, zorder=4, linestyle="none")
        if worker_series:
            w = sorted((float(i), float(b)) for i, b in worker_series)
            ax.plot([p[0] for p in w], [p[1] / GIB for p in w], color=GREEN, lw=1.8,
                    label=_("DataLoader workers"), zorder=3)
        if trend is not None:
            slope, intercept = trend
            x0 = min(xs)
            ys_trend = [(intercept + slope * x0) / GIB, (intercept + slope * x_end) / GIB]
            ax.plot([x0, x_end], ys_trend, color=ORANGE, lw=2, ls="--",
                    label=_("trend %(slope)s GiB / 100 iter") % {
                        "slope": f"{slope * 100 / GIB:+.1f}"}, zorder=2)
        if mem_limit_bytes:
            limit = mem_limit_bytes / GIB
            ax.axhline(limit, color=RED, lw=2, zorder=2,
                       label=_("memory limit %(limit)s GiB") % {"limit": f"{limit:,.0f}"})
        if projected_oom_iter is not None and mem_limit_bytes:
            ax.plot([projected_oom_iter], [mem_limit_bytes / GIB], marker="X", ms=14,
                    color=RED, zorder=4, linestyle="none",
                    label=_("projected OOM ≈ iter %(iter)s") % {
                        "iter": f"{projected_oom_iter:,}"})
        top = max(ys + ([mem_limit_bytes / GIB] if mem_limit_bytes else []))
        x_lo = min(0.0, min(xs))
        ax.set_ylim(0, top * 1.08)
        ax.set_xlim(x_lo, x_end * 1.04 if x_end > 0 else 1)
        ax.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        ax.xaxis.set_major_locator(MaxNLocator(7, integer=True))
        ax.set_xlabel(_("iteration"))
        ax.set_ylabel("GiB")
        ax.set_title(title, loc="left")
        measured_span = max(xs) - min(xs)
        if len(xs) >= 3 and measured_span > 0 and measured_span < 0.2 * (x_end - x_lo):
            _zoom_inset(ax, xs, ys, trend, _)
        _legend(fig, ax)
        return _png(fig)


def _zoom_inset(ax: Axes, xs: list[float], ys: list[float],
                trend: tuple[float, float] | None, _: Gettext) -> None:
    """The measured samples are a sliver of a projection's x range: show them zoomed, in the
    empty upper left (the data sits at the bottom left, the projection at the right)."""
    inset = ax.inset_axes((0.08, 0.50, 0.32, 0.32))
    inset.plot(xs, ys, color=BLUE, lw=2, marker="o" if len(xs) <= 40 else None, ms=3)
    if trend is not None:
        slope, intercept = trend
        inset.plot([xs[0], xs[-1]], [(intercept + slope * xs[0]) / GIB,
                                      (intercept + slope * xs[-1]) / GIB],
                   color=ORANGE, lw=1.6, ls="--")
    inset.set_title(_("measured: %(first)s → %(last)s GiB") % {
        "first": f"{ys[0]:,.0f}", "last": f"{ys[-1]:,.0f}"}, fontsize=11, loc="left",
        fontweight="normal")
    inset.tick_params(labelsize=9)
    inset.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
    inset.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    inset.yaxis.set_major_locator(MaxNLocator(4))
    inset.set_facecolor("#F7F7F7")
    inset.grid(alpha=0.3)


# Tick steps for a time axis, in seconds: the first giving at most MAX_TIME_TICKS ticks wins.
TIME_STEPS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                21600, 43200, 86400, 172800, 604800)
MAX_TIME_TICKS = 7


def time_ticks(lo: float, hi: float) -> tuple[list[float], float]:
    """Round tick positions (seconds, multiples of the step) covering [lo, hi], and the step:
    a two-minute run gets ticks every 20 or 30 s, a day-long one every few hours."""
    span = max(hi - lo, 1.0)
    step = next((s for s in TIME_STEPS_S if span / s <= MAX_TIME_TICKS), TIME_STEPS_S[-1])
    first = math.ceil(lo / step) * step
    ticks = []
    t = first
    while t <= hi + 1e-9:
        ticks.append(float(t))
        t += step
    return ticks, float(step)


def _time_label(seconds: float, step: float, epoch: bool) -> str:
    if epoch:
        stamp = datetime.fromtimestamp(seconds, tz=UTC)
        return stamp.strftime("%H:%M:%S" if step < 60 else "%H:%M")
    if step < 60:
        return f"{seconds:,.0f}"
    if step < 3600:
        return f"{seconds / 60:,.0f}"
    return f"{seconds / 3600:,.0f}" if step % 3600 == 0 else f"{seconds / 3600:,.1f}"


def _iter_at(attempts: Sequence[tuple[str, Sequence[tuple[float, float]]]], t: float) -> float:
    """The iteration reached by time `t` (the latest point at or before it, any attempt)."""
    best: tuple[float, float] | None = None
    for _, pts in attempts:
        for pt in pts:
            if pt[0] <= t and (best is None or pt[0] > best[0]):
                best = pt
    return float(best[1]) if best else 0.0


def progress_chart(
    attempts: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    stalls: Sequence[tuple[float, float]] = (),
    saves: Sequence[float] = (),
    failures: Sequence[tuple[float, str]] = (),
    unfinished_saves: Sequence[float] = (),
    target_iter: int | None = None,
    title: str = "Training progress",
    gettext: Gettext = _english,
) -> bytes:
    """Iteration vs wall time for every attempt of a chain on one time axis.

    `attempts` are (job_id, [(time, iteration)]); `stalls` (start, end) are shaded,
    `saves` (times of checkpoint saves, every attempt's) drawn as ticks, `failures` (time,
    label: every attempt's) marked ✕ on the line, `unfinished_saves` (start times of saves
    that never finished: partial checkpoints). Times are epoch seconds (UTC clock ticks) or
    seconds from the start; the tick step fits the span. Labels go in the legend.
    """
    _ = gettext
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        all_times = [t for _j, pts in attempts for t, _i in pts]
        all_times += [s for s, _e in stalls] + [e for _s, e in stalls] + list(saves)
        all_times += [t for t, _l in failures] + list(unfinished_saves)
        if not any(pts for _j, pts in attempts):
            _no_data(ax, _("no iteration lines in the log"))
            ax.set_title(title, loc="left")
            return _png(fig)
        epoch = min(all_times) >= EPOCH_MIN
        origin = 0.0 if epoch else min(all_times)
        lo, hi = min(all_times) - origin, max(all_times) - origin

        def tx(t: float) -> float:
            return t - origin

        y_max = 0.0
        for n, (job_id, pts) in enumerate(attempts):
            pts = sorted(pts)
            if not pts:
                continue
            colour = ATTEMPT_COLOURS[n % len(ATTEMPT_COLOURS)]
            ax.plot([tx(t) for t, _i in pts], [i for _t, i in pts], color=colour, lw=2.4,
                    label=_("job %(job)s") % {"job": job_id}, zorder=3)
            y_max = max(y_max, max(i for _t, i in pts))
        if target_iter and target_iter <= 1.3 * y_max:
            y_max = max(y_max, float(target_iter))
            ax.axhline(target_iter, color=GREY, lw=1.2, ls=":",
                       label=_("target %(iter)s") % {"iter": f"{target_iter:,}"})
        for k, (start, end) in enumerate(stalls):
            ax.axvspan(tx(start), tx(end), color=RED, alpha=0.15, lw=0, zorder=1,
                       label=_("no progress for %(duration)s") % {
                           "duration": duration_text(end - start, _)} if k == 0 else None)
        for k, t in enumerate(saves):
            ax.axvline(tx(t), color=GREEN, lw=1.2, ls="--", alpha=0.8, zorder=2,
                       label=_("checkpoint saved") if k == 0 else None)
        for k, t in enumerate(unfinished_saves):
            ax.axvline(tx(t), color=ORANGE, lw=2, ls="--", zorder=2,
                       label=_("checkpoint save started, never finished") if k == 0 else None)
        for t, label in failures:
            y = _iter_at(attempts, t)
            ax.plot([tx(t)], [y], marker="X", ms=14, color=RED, zorder=5, linestyle="none",
                    markeredgecolor="white", label=_("failed: %(cause)s") % {"cause": label})
        ax.set_ylim(0, y_max * 1.1 if y_max > 0 else 1)
        pad = (hi - lo) * 0.02
        ax.set_xlim(lo - pad, hi + pad)
        ticks, step = time_ticks(lo + origin, hi + origin)
        ax.xaxis.set_major_locator(FixedLocator([t - origin for t in ticks]))
        ax.xaxis.set_major_formatter(FuncFormatter(
            lambda x, _pos: _time_label(x + origin, step, epoch)))
        ax.yaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        if epoch:
            ax.set_xlabel(_("time (UTC)"))
        elif step < 60:
            ax.set_xlabel(_("seconds since start"))
        elif step < 3600:
            ax.set_xlabel(_("minutes since start"))
        else:
            ax.set_xlabel(_("hours since start"))
        ax.set_ylabel(_("iteration"))
        ax.set_title(title, loc="left")
        _legend(fig, ax)
        return _png(fig)


def loss_chart(
    points: Sequence[tuple[float, float]],
    *,
    title: str = "Training loss",
    gettext: Gettext = _english,
) -> bytes:
    """Loss vs iteration, with a moving average when noisy; NaN/inf marked in red."""
    _ = gettext
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        pts = sorted((float(i), float(v)) for i, v in points if i is not None and v is not None)
        good = [(i, v) for i, v in pts if math.isfinite(v)]
        bad = [i for i, v in pts if not math.isfinite(v)]
        if not good and not bad:
            _no_data(ax, _("no loss values in the log"))
            ax.set_title(title, loc="left")
            return _png(fig)
        if good:
            xs, ys = [p[0] for p in good], [p[1] for p in good]
            ax.plot(xs, ys, color=BLUE, lw=1.2, alpha=0.45 if len(xs) > 30 else 1.0,
                    label=_("loss"), marker="o" if len(xs) <= 30 else None, ms=4)
            if len(xs) > 30:
                w = max(5, len(xs) // 30)
                avg = [sum(ys[max(0, k - w + 1):k + 1]) / len(ys[max(0, k - w + 1):k + 1])
                       for k in range(len(ys))]
                ax.plot(xs, avg, color=BLUE, lw=2.6,
                        label=_("moving average (%(n)s points)") % {"n": w})
            lo, hi = min(ys), max(ys)
            pad = (hi - lo) * 0.1 or 0.1
            ax.set_ylim(lo - pad, hi + pad)
        for k, i in enumerate(bad):
            ax.axvline(i, color=RED, lw=2, label=_("loss NaN/inf") if k == 0 else None)
        ax.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        ax.xaxis.set_major_locator(MaxNLocator(7, integer=True))
        ax.set_xlabel(_("iteration"))
        ax.set_ylabel(_("loss"))
        ax.set_title(title, loc="left")
        _legend(fig, ax)
        return _png(fig)


__all__ = ["duration_text", "loss_chart", "progress_chart", "rss_chart",
           "time_ticks"]
