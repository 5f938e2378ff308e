"""A command that changes something (sbatch, scontrol hold, ...) cut for flooding its output
(SSHSettings.max_output_bytes) was stopped before its end: it may have taken effect, so it is
an OutcomeUnknown (what looks the job up, or takes the click over, runs), never a plain
failure that reads as 'did not run'. A read cut the same way stays OutputTooLarge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.sftp_peer import serve_peer

from bot.cluster.errors import ClusterError, OutcomeUnknown, OutputTooLarge
from bot.cluster.slurm import SlurmClient
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.text import Text
from bot.slack.render import translator


def _raised(tmp_path: Path, act: Callable[[SlurmClient], object]) -> Exception:
    """What `act` raises against a cluster whose every command floods its stdout (1 MiB
    bound)."""
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        peer.exec_floods = True
        runner = peer.runner(max_output_bytes=1 << 20)
        try:
            with pytest.raises(ClusterError) as raised:
                act(SlurmClient(runner))
        finally:
            runner.close()
    return raised.value


def test_a_flooding_sbatch_may_have_submitted_and_says_to_look_its_name_up(
        tmp_path: Path) -> None:
    error = _raised(tmp_path, lambda slurm: slurm.submit(
        SubmitSpec(job_name="mix", script_path="/home/u/t.sbatch")))
    assert isinstance(error, OutcomeUnknown)
    assert "sent more than 1 MiB of output, so trainbot stopped it before its end; it may " \
           "or may not have taken effect" in str(error)
    assert "look for that name in squeue before submitting again" in str(error)


def test_a_flooding_hold_may_have_held(tmp_path: Path) -> None:
    error = _raised(tmp_path, lambda slurm: slurm.hold(88154))
    assert isinstance(error, OutcomeUnknown)
    assert str(error) == ("`scontrol hold 88154` sent more than 1 MiB of output, so trainbot "
                          "stopped it before its end; it may or may not have taken effect")


def test_a_flooding_read_stays_a_cut_read(tmp_path: Path) -> None:
    error = _raised(tmp_path, lambda slurm: slurm.jobs([88154]))
    assert isinstance(error, OutputTooLarge) and not isinstance(error, OutcomeUnknown)


def test_the_flooded_outcome_is_said_in_korean() -> None:
    error = OutcomeUnknown.flooded(OutputTooLarge(["scancel", "88154"], 64 << 20))
    ko = error.text.format(translator("ko").gettext) if isinstance(error.text, Text) else ""
    assert ko == ("`scancel 88154`의 출력이 64 MiB를 넘어 trainbot이 끝나기 전에 멈췄습니다. "
                  "적용되었는지 알 수 없습니다")
