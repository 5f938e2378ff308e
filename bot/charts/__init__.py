"""PNG charts for run threads (matplotlib Agg): host RSS, progress, loss.

Plain data in, PNG bytes out; sized for Slack's preview (800×450 px at 100 dpi) with big
fonts, GiB units and labels an on-call engineer reads at a glance.
"""

from bot.charts.figures import loss_chart, progress_chart, rss_chart

__all__ = ["loss_chart", "progress_chart", "rss_chart"]
