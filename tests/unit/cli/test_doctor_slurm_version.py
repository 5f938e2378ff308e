"""`trainbot doctor`'s Slurm version check: the release, its parsers, refusals and warnings."""

from __future__ import annotations

from fakes import FakeRunner

from bot.cli.doctor import format_check, slurm_version_check
from bot.config import ClusterConfig


def _cluster(**extra) -> ClusterConfig:
    return ClusterConfig(host="127.0.0.1", port=2222, user="u", key_file="/k", **extra)


def test_prints_the_version_and_the_parsers():
    runner = FakeRunner({"sinfo": (0, "slurm 24.11.5\n", "")})
    check = slurm_version_check("dev", _cluster(), runner)
    assert check.ok and check.name == "slurm version dev"
    assert check.detail == ("Slurm 24.11.5; reads squeue --Format (columns), sacct --parsable2, "
                            "sstat --parsable2")


def test_json_parsers_named_with_their_data_parser():
    runner = FakeRunner({"sinfo": (0, "slurm 24.11.5\n", "")})
    check = slurm_version_check("dev", _cluster(use_json=True), runner)
    assert check.ok and "squeue --json (v0.0.42)" in check.detail


def test_use_json_on_22_05_fails_with_the_reason_and_the_fix():
    runner = FakeRunner({"sinfo": (0, "slurm-wlm 22.05.8\n", "")})
    check = slurm_version_check("dev", _cluster(use_json=True), runner)
    assert not check.ok
    assert "use_json refused: Slurm 22.05's sacct --json reports" in check.detail
    assert "remove clusters.dev.use_json" in format_check(check)


def test_a_newer_release_passes_with_a_warning():
    runner = FakeRunner({"sinfo": (0, "slurm 25.11.1\n", "")})
    check = slurm_version_check("dev", _cluster(), runner)
    assert check.ok and "warning: Slurm 25.11 is newer than the newest" in check.detail


def test_unreadable_version_fails():
    runner = FakeRunner({"sinfo": (0, "something else\n", "")})
    check = slurm_version_check("dev", _cluster(), runner)
    assert not check.ok and "does not contain a Slurm version" in check.detail
