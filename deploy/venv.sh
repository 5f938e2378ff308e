#!/usr/bin/env bash
# Creates (or reuses) the project's virtualenv in .venv and installs trainbot into it, editable,
# with the test dependencies (torch pinned to the 2.13.0 CPU build) and the PostgreSQL driver
# (the store's tests run on PostgreSQL too). Prints nothing on success.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test,postgres]'
