"""The watcher: one tick per cluster (`tick`), the logs it follows (`logs`), the events it
publishes through an outbox (`events`, `outbox`) and its automatic resubmits (`resubmit`)."""
