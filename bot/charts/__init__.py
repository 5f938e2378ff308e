"""PNG charts for run threads (matplotlib Agg): host RSS, progress, loss. bot.charts.figures
draws them (it imports matplotlib); bot.charts.series picks their data from a log's series and
imports figures only when it draws."""
