"""The watcher: one tick per cluster (`tick`), the logs it follows (`logs`), how it judges a job
without I/O (`judge`), host memory from sstat (`sstat`), its chains and attempt rows (`chains`),
recipe settings (`recipes`), cluster outages (`health`), the events it publishes through an
outbox (`events`, `outbox`) and its automatic resubmits (`resubmit`)."""
