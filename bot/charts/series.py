"""Charts straight from a log's `MetricSeries` and its `Diagnosis` (for reports and the
watcher's run threads): picks the data, the stall window, saves and the failure mark, and the
sampler's per-role RSS when there is one, then draws. matplotlib (bot.charts.figures) is
imported when a chart is drawn, not with this module: the bot's process, which builds the chart
port at start, pays its import (a second or more) only once it draws."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from bot.core.detectors import leak_trend
from bot.core.metrics import MIN_RSS_CHART_POINTS
from bot.core.models import QUIET_CLASSES, AttemptTrace, Diagnosis
from bot.core.sampler_series import rss_by_iteration, rss_metric_series
from bot.core.units import GIB

if TYPE_CHECKING:
    from bot.charts.figures import Gettext
    from bot.core.catalogue import Catalogue

MIN_TREND_GIB_PER_100 = 0.5  # flatter than this, a trend line only adds noise
CHART_NAMES = ("rss.png", "progress.png", "loss.png")


def N_(message: str) -> str:  # noqa: N802 - gettext's name: marks a message id to extract
    return message


# The title of each chart's uploaded file, and the stage it was drawn at (message ids).
FILE_TITLES = {"rss.png": N_("Host RSS · job %(job)s"),
               "progress.png": N_("Progress · job %(job)s"),
               "loss.png": N_("Loss · job %(job)s")}
STAGE_TITLES = {"final": N_("%(chart)s (final)"), "leak": N_("%(chart)s (leak)")}


def charts_for(
    series: Any,
    diagnosis: Diagnosis,
    *,
    job_id: str,
    mem_limit_bytes: int | None,
    earlier_attempts: Sequence[AttemptTrace] = (),
    sampler: Any = None,
    skew: float | None = None,
    names: Collection[str] = CHART_NAMES,
    gettext: Gettext | None = None,
    cause_name: Callable[[str], str] | None = None,
) -> dict[str, bytes]:
    """Those of `names` ("rss.png", "progress.png", "loss.png") the series has data for (2+
    RSS samples, 2+ timed iterations, 2+ loss values). `earlier_attempts` are drawn before
    this job on the progress chart's shared time axis, each with its saves and failure.
    `gettext` words the titles and labels (the thread's language; default English);
    `cause_name` names a failure class on the progress chart's failure marks, in that
    language (cause_names: the catalogue's title; default: the class id).

    `sampler` (a bot.core.sampler_series.SamplerSeries, wall-clock times; `skew` = log clock
    minus wall clock, None: the same clock) adds the DataLoader workers' RSS to the RSS chart,
    and is the host RSS there when the log prints none (then any sstat samples in the series
    are not drawn: one source per line)."""
    _ = gettext or _english
    out: dict[str, bytes] = {}
    if "rss.png" in names:
        rss = _rss_png(series, job_id, mem_limit_bytes, sampler, skew, _)
        if rss is not None:
            out["rss.png"] = rss
    if "progress.png" in names:
        progress = _progress_png(series, diagnosis, job_id, earlier_attempts, _,
                                 cause_name or str)
        if progress is not None:
            out["progress.png"] = progress
    losses = [(s.iteration, s.loss) for s in series.samples
              if s.iteration is not None and s.loss is not None]
    if "loss.png" in names and (
            len(losses) >= 2 or any(not math.isfinite(v) for _, v in losses)):
        from bot.charts import figures  # matplotlib: when a chart is drawn (module doc)

        out["loss.png"] = figures.loss_chart(
            losses, title=_("Loss · job %(job)s") % {"job": job_id}, gettext=_)
    return out


def _english(message: str) -> str:
    return message


def cause_names(catalogue: Catalogue, lang: str = "en",
                override_dir: str | None = None) -> Callable[[str], str]:
    """A failure class's name on a chart: its catalogue title in `lang` (the site file's own
    `title_<lang>`, else the message catalogue's, as an incident's headline has it); the id of
    a class the catalogue does not know."""
    from bot.slack.render import catalogue_text  # the message catalogue of `lang`

    def name(class_id: str) -> str:
        fc = catalogue.classes.get(class_id)
        return class_id if fc is None else catalogue_text(fc.title, lang, fc.translations,
                                                          "title", override_dir)
    return name


def file_title(name: str, *, job_id: str, stage: str, gettext: Gettext | None = None) -> str:
    """The uploaded file's title of chart `name` of `job_id` drawn at `stage` ("final": with
    the job's incident or completion, "leak": with a leak warning), worded by `gettext`."""
    _ = gettext or _english
    return _(STAGE_TITLES[stage]) % {"chart": _(FILE_TITLES[name]) % {"job": job_id}}


def _rss_png(series: Any, job_id: str, mem_limit_bytes: int | None, sampler: Any,
             skew: float | None, _: Gettext) -> bytes | None:
    host, workers = series, None
    title = _("Host RSS · job %(job)s") % {"job": job_id}
    if sampler is not None and sampler.points:
        # The log's progress on the sampler's (wall) clock places its points at iterations.
        progress = [(s.time - (skew or 0.0), s.iteration) for s in series.samples
                    if s.time is not None and s.iteration is not None]
        if any(p.rss["worker"] for p in sampler.points):
            workers = rss_by_iteration(sampler, progress, role="worker")
            workers = workers if len(workers) >= 2 else None
        if not series.log_rss_seen:
            mapped = rss_metric_series(sampler, progress)
            if len(mapped.samples) >= 2:
                host = mapped
                title = _("Host RSS (sampler) · job %(job)s") % {"job": job_id}
    rss = host.rss_at_iterations()
    if len(rss) < MIN_RSS_CHART_POINTS:
        return None
    line = projected = None
    trend = leak_trend(host, mem_limit_bytes)
    if trend is not None and abs(trend.slope_gib_per_100_iter) >= MIN_TREND_GIB_PER_100:
        f = trend.finding
        slope = f.slope_gib_per_100_iter / 100 * GIB
        last_iter = f.last.iteration or 0  # never None: the trend's points have iterations
        line = (slope, f.rss_now_bytes - slope * last_iter)
        projected = f.projected_oom_iter
    from bot.charts import figures  # matplotlib: when a chart is drawn (module doc)

    return figures.rss_chart(rss, mem_limit_bytes=mem_limit_bytes, trend=line,
                             projected_oom_iter=projected, worker_series=workers,
                             title=title, gettext=_)


def _progress_png(series: Any, diagnosis: Diagnosis, job_id: str,
                  earlier_attempts: Sequence[AttemptTrace], _: Gettext,
                  cause_name: Callable[[str], str]) -> bytes | None:
    timed = [(s.time, s.iteration) for s in series.samples
             if s.time is not None and s.iteration is not None]
    if len(timed) < 2:
        return None
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
    for earlier in earlier_attempts:  # every attempt keeps its saves and its failure mark
        saves = [*earlier.saves, *saves]
        if earlier.failure is not None:
            failures.append((earlier.failure[0], _("%(cause)s (job %(job)s)") % {
                "cause": cause_name(earlier.failure[1]), "job": earlier.job_id}))
    if diagnosis.class_id not in QUIET_CLASSES and end:
        failures.append((end, _("%(cause)s (job %(job)s)") % {
            "cause": cause_name(diagnosis.class_id), "job": job_id}))
    from bot.charts import figures  # matplotlib: when a chart is drawn (module doc)

    return figures.progress_chart(
        [*((a.job_id, a.points) for a in earlier_attempts), (job_id, timed)], stalls=stalls,
        saves=saves, failures=failures, unfinished_saves=unfinished,
        target_iter=diagnosis.metrics.target_iter,
        title=_("Progress · job %(job)s") % {"job": job_id}, gettext=_)


class SeriesCharts:
    """The chart port (bot.services.ports.ChartMaker): `charts_for` on matplotlib; failure
    marks named from `catalogue` (the bot's, loaded once; None: by class id)."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self.catalogue = catalogue

    def charts_for(self, series: Any, diagnosis: Diagnosis, *, job_id: str,
                   mem_limit_bytes: int | None,
                   earlier_attempts: Sequence[AttemptTrace] = (),
                   sampler: Any = None, skew: float | None = None,
                   names: Collection[str] = CHART_NAMES, lang: str = "en",
                   override_dir: str | None = None) -> dict[str, bytes]:
        from bot.slack.render import translator  # the message catalogue of `lang`

        return charts_for(series, diagnosis, job_id=job_id, mem_limit_bytes=mem_limit_bytes,
                          earlier_attempts=earlier_attempts, sampler=sampler, skew=skew,
                          names=names, gettext=translator(lang, override_dir).gettext,
                          cause_name=cause_names(self.catalogue, lang, override_dir)
                          if self.catalogue is not None else None)

    def file_title(self, name: str, *, job_id: str, stage: str, lang: str = "en",
                   override_dir: str | None = None) -> str:
        from bot.slack.render import translator

        return file_title(name, job_id=job_id, stage=stage,
                          gettext=translator(lang, override_dir).gettext)
