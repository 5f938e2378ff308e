"""PNG charts for run threads (matplotlib Agg): host RSS, progress, loss."""

from bot.charts.figures import loss_chart, progress_chart, rss_chart

__all__ = ["loss_chart", "progress_chart", "rss_chart"]
