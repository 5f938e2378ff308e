"""What `trainbot run` tells its operators: Prometheus metrics, the health endpoints, and the
outlets used without Slack (the log, a JSON webhook)."""
