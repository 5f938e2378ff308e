"""Probes run before or beside a training job: DataLoader memory, worker toolchain, shellcheck."""
