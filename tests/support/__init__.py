"""Test support code that is not a fake: the Bolt driver, the watcher harness, and the scripts
that regenerate data under tests/fixtures (story logs, the Slurm snapshot)."""
