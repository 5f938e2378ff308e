"""The --mem sizes trainbot's check takes (bot.core.units.check_slurm_size: a recipe's `mem`,
its DataLoader probe's `mem`, a `mem=` override) are the ones the dev clusters' sbatch takes,
and the ones it refuses sbatch refuses with "Invalid --mem specification" (`--test-only`:
nothing is queued)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.cluster.ssh import SSHRunner
from bot.core.units import check_slurm_size

pytestmark = pytest.mark.integration

TAKEN = ["64M", "64m", "64MB", "64mb", "65536K", "65536kb", "64", "1G", "1g", "1GB", "0"]
REFUSED = ["1.5G", "0.5G", "1GiB", "64MiB", "512B", "\u0664\u0660M", "64 M", "1P", "64X"]


def taken(size: str) -> bool:
    try:
        check_slurm_size(size)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


def test_the_forms_are_what_the_check_says():
    assert all(map(taken, TAKEN)) and not any(map(taken, REFUSED))


@pytest.mark.parametrize("size", TAKEN + REFUSED)
def test_sbatch_takes_exactly_the_sizes_the_check_takes(slurm_cluster, ssh_runner, size):
    result = ssh_runner.run(
        ["sbatch", "--test-only", f"--mem={size}", f"--partition={slurm_cluster.partition}",
         "--time=1", "--output=/dev/null", "--wrap", "true"], check=False, timeout=60)
    said = result.stdout + result.stderr
    if taken(size):
        assert result.exit_code == 0 and "Invalid --mem" not in said, said
    else:
        assert result.exit_code != 0 and "--mem" in said, said
