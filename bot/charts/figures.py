"""The three figures, built with matplotlib's object API (no pyplot state). matplotlib's
rcParams are process-global, so renders are serialised by a lock: safe from any thread."""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.dates import DateFormatter, HourLocator, MinuteLocator, date2num  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from bot.core.units import GIB  # noqa: E402

_LOCK = threading.Lock()
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 100  # 800×450 px: Slack's thread preview size

# Colour-blind-safe palette (Okabe-Ito) and one red for danger.
BLUE, ORANGE, GREEN, PURPLE, GREY = "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#666666"
RED = "#D62728"
ATTEMPT_COLOURS = (BLUE, GREEN, PURPLE, ORANGE, "#56B4E9")
EPOCH_MIN = 1e9  # times at or above this are epoch seconds (2001+), else seconds from start

_RC = {
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


def _figure() -> tuple[Figure, object]:
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    return fig, ax


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _iter_fmt(x: float, _pos: int) -> str:
    return f"{int(round(x)):,}"


def _no_data(ax: object, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes,
            fontsize=14, color=GREY)
    ax.set_xticks([])
    ax.set_yticks([])


def rss_chart(
    points: Sequence[tuple[float, float]],
    *,
    mem_limit_bytes: int | None = None,
    trend: tuple[float, float] | None = None,
    projected_oom_iter: int | None = None,
    worker_series: Sequence[tuple[float, float]] | None = None,
    title: str = "Host memory (RSS)",
) -> bytes:
    """Host RSS vs iteration with the memory limit, the fitted trend and the projected OOM.

    `points` are (iteration, rss_bytes); `trend` is (slope_bytes_per_iter, intercept_bytes),
    the line rss = intercept + slope·iteration; `worker_series` (iteration, bytes) is the
    DataLoader workers' RSS (summed over them) when known.
    """
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        pts = sorted((float(i), float(b)) for i, b in points if i is not None and b is not None)
        if not pts:
            _no_data(ax, "no RSS samples in the log")
            ax.set_title(title)
            return _png(fig)
        xs = [p[0] for p in pts]
        ys = [p[1] / GIB for p in pts]
        x_end = max(xs)
        if projected_oom_iter is not None:
            x_end = max(x_end, float(projected_oom_iter))
        ax.plot(xs, ys, color=BLUE, lw=2.2, marker="o" if len(xs) <= 40 else None, ms=4,
                label="host RSS", zorder=3)
        if worker_series:
            w = sorted((float(i), float(b)) for i, b in worker_series)
            ax.plot([p[0] for p in w], [p[1] / GIB for p in w], color=GREEN, lw=1.8,
                    label="DataLoader workers", zorder=3)
        if trend is not None:
            slope, intercept = trend
            x0 = min(xs)
            ys_trend = [(intercept + slope * x0) / GIB, (intercept + slope * x_end) / GIB]
            ax.plot([x0, x_end], ys_trend,
                    color=ORANGE, lw=2, ls="--",
                    label=f"trend {slope * 100 / GIB:+.1f} GiB / 100 iter", zorder=2)
        if mem_limit_bytes:
            limit = mem_limit_bytes / GIB
            ax.axhline(limit, color=RED, lw=2, zorder=2)
            ax.text(0.01, limit, f" memory limit {limit:,.0f} GiB", color=RED, va="bottom",
                    ha="left", transform=ax.get_yaxis_transform(), fontsize=12,
                    fontweight="bold")
        if projected_oom_iter is not None and mem_limit_bytes:
            ax.plot([projected_oom_iter], [mem_limit_bytes / GIB], marker="X", ms=14, color=RED,
                    zorder=4, linestyle="none")
            ax.annotate(f"projected OOM\n≈ iter {projected_oom_iter:,}",
                        xy=(projected_oom_iter, mem_limit_bytes / GIB),
                        xytext=(-12, -16), textcoords="offset points", ha="right", va="top",
                        color=RED, fontsize=12, fontweight="bold")
        last_x, last_y = xs[-1], ys[-1]
        x_lo = min(0.0, min(xs))
        right_side = (last_x - x_lo) / max(x_end - x_lo, 1e-9) > 0.6
        ax.annotate(f"last {last_y:,.0f} GiB @ iter {int(last_x):,}", xy=(last_x, last_y),
                    xytext=(-4, 10) if right_side else (8, -4), textcoords="offset points",
                    fontsize=12, color=BLUE, ha="right" if right_side else "left",
                    va="bottom" if right_side else "top", fontweight="bold")
        top = max(ys + ([mem_limit_bytes / GIB] if mem_limit_bytes else []))
        ax.set_ylim(0, top * 1.12)
        ax.set_xlim(x_lo, x_end * 1.04 if x_end > 0 else 1)
        ax.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        ax.xaxis.set_major_locator(MaxNLocator(7, integer=True))
        ax.set_xlabel("iteration")
        ax.set_ylabel("GiB")
        ax.set_title(title, loc="left")
        if trend is not None or worker_series:  # one line needs no legend: the title says it
            ax.legend(loc="lower right", frameon=False)
        measured_span = max(xs) - min(xs)
        if len(xs) >= 3 and measured_span > 0 and measured_span < 0.2 * (x_end - x_lo):
            _zoom_inset(ax, xs, ys, trend)
        return _png(fig)


def _zoom_inset(ax: object, xs: list[float], ys: list[float],
                trend: tuple[float, float] | None) -> None:
    """The measured samples are a sliver of a projection's x range: show them zoomed."""
    inset = ax.inset_axes((0.06, 0.46, 0.33, 0.34))
    inset.plot(xs, ys, color=BLUE, lw=2, marker="o" if len(xs) <= 40 else None, ms=3)
    if trend is not None:
        slope, intercept = trend
        inset.plot([xs[0], xs[-1]], [(intercept + slope * xs[0]) / GIB,
                                      (intercept + slope * xs[-1]) / GIB],
                   color=ORANGE, lw=1.6, ls="--")
    inset.set_title(f"measured: {ys[0]:,.0f} → {ys[-1]:,.0f} GiB", fontsize=11, loc="left",
                    fontweight="normal")
    inset.tick_params(labelsize=9)
    inset.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
    inset.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    inset.yaxis.set_major_locator(MaxNLocator(4))
    inset.set_facecolor("#F7F7F7")
    inset.grid(alpha=0.3)


def _time_axis(times: Sequence[float]) -> tuple[bool, float]:
    """(epoch?, origin): epoch times plot as UTC clock times, others as hours from start."""
    epoch = bool(times) and min(times) >= EPOCH_MIN
    return epoch, (0.0 if epoch else min(times, default=0.0))


def _clock_locator(lo: float, hi: float) -> object:
    """Round clock ticks (:00, :15, :30 …) for a span given in matplotlib day numbers."""
    span_min = (hi - lo) * 24 * 60
    for step in (5, 10, 15, 30):
        if span_min / step <= 8:
            return MinuteLocator(byminute=range(0, 60, step), tz=UTC)
    hours = max(1, math.ceil(span_min / 60 / 8))
    return HourLocator(interval=hours, tz=UTC)


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
) -> bytes:
    """Iteration vs wall time for every attempt of a chain on one time axis.

    `attempts` are (job_id, [(time, iteration)]); `stalls` (start, end) are shaded,
    `saves` (times of checkpoint saves) drawn as ticks, `failures` (time, label) marked ✕,
    `unfinished_saves` (start times of saves that never finished: partial checkpoints).
    Times are epoch seconds (shown as UTC HH:MM) or seconds from the start.
    """
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        all_times = [t for _, pts in attempts for t, _ in pts]
        all_times += [s for s, _ in stalls] + list(saves) + [t for t, _ in failures]
        all_times += list(unfinished_saves)
        if not any(pts for _, pts in attempts):
            _no_data(ax, "no iteration lines in the log")
            ax.set_title(title)
            return _png(fig)
        epoch, origin = _time_axis(all_times)

        def tx(t: float) -> float:
            if epoch:
                return float(date2num(datetime.fromtimestamp(t, tz=UTC)))
            return (t - origin) / 3600.0

        y_max = 0.0
        for n, (job_id, pts) in enumerate(attempts):
            pts = sorted(pts)
            if not pts:
                continue
            colour = ATTEMPT_COLOURS[n % len(ATTEMPT_COLOURS)]
            ax.plot([tx(t) for t, _ in pts], [i for _, i in pts], color=colour, lw=2.4,
                    label=f"job {job_id}", zorder=3)
            y_max = max(y_max, max(i for _, i in pts))
        if target_iter and target_iter <= 1.3 * y_max:
            y_max = max(y_max, float(target_iter))
            ax.axhline(target_iter, color=GREY, lw=1.2, ls=":")
            ax.text(0.01, target_iter, f" target {target_iter:,}", color=GREY, va="bottom",
                    transform=ax.get_yaxis_transform(), fontsize=11)
        for k, (start, end) in enumerate(stalls):
            ax.axvspan(tx(start), tx(end), color=RED, alpha=0.15, lw=0, zorder=1,
                       label="no progress" if k == 0 else None)
            minutes = (end - start) / 60.0
            ax.text((tx(start) + tx(end)) / 2, 0.5, f"stalled\n{minutes:,.0f} min",
                    transform=ax.get_xaxis_transform(), ha="center", va="center", color=RED,
                    fontsize=12, fontweight="bold")
        for k, t in enumerate(saves):
            ax.axvline(tx(t), color=GREEN, lw=1.2, ls="--", alpha=0.8, zorder=2,
                       label="checkpoint saved" if k == 0 else None)
        for k, t in enumerate(unfinished_saves):
            ax.axvline(tx(t), color=ORANGE, lw=2, ls="--", zorder=2,
                       label="checkpoint save started, never finished" if k == 0 else None)
        for k, (t, label) in enumerate(failures):
            y = _iter_at(attempts, t)
            ax.plot([tx(t)], [y], marker="X", ms=14, color=RED, zorder=5, linestyle="none",
                    label="failure" if k == 0 else None)
            ax.annotate(label, xy=(tx(t), y), xytext=(0, 12), textcoords="offset points",
                        ha="center", va="bottom", color=RED, fontsize=11, fontweight="bold",
                        zorder=6, bbox={"boxstyle": "round,pad=0.2", "fc": "white",
                                        "ec": "none", "alpha": 0.85})
        ax.set_ylim(0, y_max * 1.22 if y_max > 0 else 1)
        ax.yaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        if epoch:
            ax.xaxis.set_major_locator(_clock_locator(tx(min(all_times)), tx(max(all_times))))
            ax.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))
            ax.set_xlabel("time (UTC)")
        else:
            ax.xaxis.set_major_locator(MaxNLocator(8))
            ax.set_xlabel("hours since start")
        ax.set_ylabel("iteration")
        ax.set_title(title, loc="left")
        ax.legend(loc="upper left", frameon=False)
        return _png(fig)


def loss_chart(
    points: Sequence[tuple[float, float]],
    *,
    title: str = "Training loss",
) -> bytes:
    """Loss vs iteration, with a moving average when noisy; NaN/inf marked in red."""
    with _LOCK, matplotlib.rc_context(_RC):
        fig, ax = _figure()
        pts = sorted((float(i), float(v)) for i, v in points if i is not None and v is not None)
        good = [(i, v) for i, v in pts if math.isfinite(v)]
        bad = [i for i, v in pts if not math.isfinite(v)]
        if not good and not bad:
            _no_data(ax, "no loss values in the log")
            ax.set_title(title)
            return _png(fig)
        if good:
            xs, ys = [p[0] for p in good], [p[1] for p in good]
            ax.plot(xs, ys, color=BLUE, lw=1.2, alpha=0.45 if len(xs) > 30 else 1.0,
                    label="loss", marker="o" if len(xs) <= 30 else None, ms=4)
            if len(xs) > 30:
                w = max(5, len(xs) // 30)
                avg = [sum(ys[max(0, k - w + 1):k + 1]) / len(ys[max(0, k - w + 1):k + 1])
                       for k in range(len(ys))]
                ax.plot(xs, avg, color=BLUE, lw=2.6, label=f"moving average ({w} points)")
            lo, hi = min(ys), max(ys)
            pad = (hi - lo) * 0.1 or 0.1
            ax.set_ylim(lo - pad, hi + pad)
        for k, i in enumerate(bad):
            ax.axvline(i, color=RED, lw=2, label="loss NaN/inf" if k == 0 else None)
        ax.xaxis.set_major_formatter(FuncFormatter(_iter_fmt))
        ax.xaxis.set_major_locator(MaxNLocator(7, integer=True))
        ax.set_xlabel("iteration")
        ax.set_ylabel("loss")
        ax.set_title(title, loc="left")
        ax.legend(loc="upper right", frameon=False)
        return _png(fig)
