"""Constants of the end-to-end tests (tests/e2e), shared by their conftest.py and the test
modules. A plain module: a test module never imports `conftest`, whose name every conftest.py
without a package shares (`pytest tests/e2e tests/unit/services` would hand it another one)."""

from __future__ import annotations

CHANNEL = "C0TRAINRUNS"
NOW = 1_732_871_000.0  # the bot's clock in these tests
