#!/usr/bin/env bash
# The newcomer's first command (Debian 12, as root): installs trainbot into .venv and runs
# `trainbot demo`, which brings up (or reuses) the dev cluster and plays one training run's
# story with the terminal standing in for Slack. Arguments go to `trainbot demo` (e.g. --yes).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
deploy/venv.sh
exec .venv/bin/trainbot demo "$@"
