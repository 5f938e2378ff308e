#!/usr/bin/env bash
# Creates (or reuses) a world-readable virtualenv for the dev cluster's jobs, /opt/trainbot-jobenv
# (override: TRAINBOT_JOBENV), with torch 2.13.0 (the CPU wheel), numpy and psutil, so that
# jobs of the unprivileged user slurmci can run real PyTorch programs: slurmci cannot run the
# project's root-owned .venv, whose python comes from root's pyenv. Built from Debian's own
# /usr/bin/python3 (python3-venv is installed if missing). Run as root after up.sh
# (deploy/run-tests.sh does). Idempotent: when the venv already imports that torch it does
# nothing (~2 s); a fresh build takes about a minute from the local wheel.
set -euo pipefail

DEST=${TRAINBOT_JOBENV:-/opt/trainbot-jobenv}
TORCH=2.13.0 # exactly: `torch==2.13.0` is the CPU wheel; another spec pulls a multi-GB CUDA build

[[ $EUID -eq 0 ]] || { echo "job-env: must run as root" >&2; exit 2; }

ready() {
    [[ -x $DEST/bin/python ]] && "$DEST/bin/python" - "$TORCH" <<'PY' >/dev/null 2>&1
import sys

import numpy  # noqa: F401
import psutil  # noqa: F401
import torch

sys.exit(torch.__version__.split("+")[0] != sys.argv[1])
PY
}

ready && exit 0

if [[ $(dpkg-query -W -f='${db:Status-Status}' python3-venv 2>/dev/null) != installed ]]; then
    echo "job-env: installing python3-venv" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi

umask 022
echo "job-env: building $DEST (torch==$TORCH, numpy, psutil)" >&2
[[ -x $DEST/bin/python ]] || /usr/bin/python3 -m venv "$DEST"
"$DEST/bin/python" -m pip install --quiet --upgrade pip
"$DEST/bin/python" -m pip install --quiet "torch==$TORCH" numpy psutil
chmod -R a+rX "$DEST"
ready || { echo "job-env: $DEST does not import torch $TORCH" >&2; exit 1; }
echo "job-env: ready: $DEST/bin/python" >&2
