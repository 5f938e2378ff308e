#!/usr/bin/env bash
# Runs trainbot's whole test suite on a fresh Debian 12 machine, as root:
#   1. a virtualenv in .venv with trainbot and its test dependencies (torch pinned, CPU build);
#   2. the dev cluster (real Slurm + MariaDB + munge + sshd on 127.0.0.1), see deploy/dev-cluster;
#   3. ruff, the import-linter contracts (the layers), then pytest over tests/ (extra
#      arguments are passed to pytest).
# Idempotent: a second run reuses the venv and the running cluster.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

deploy/venv.sh

deploy/dev-cluster/up.sh

.venv/bin/ruff check bot handlers tests bench docs
.venv/bin/lint-imports --no-logo  # the layers: pyproject.toml [tool.importlinter]
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
