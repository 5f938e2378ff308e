"""What one remote command sends back is bounded (SSHSettings.max_output_bytes): a command
that floods its output (a site's srun wrapper gone wild, a huge squeue) is cut at the bound
with an error naming it and the bound, its channel closed, instead of growing the bot's
memory until the command's timeout."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.sftp_peer import serve_peer

from bot.cluster.errors import OutputTooLarge
from bot.config import ClusterConfig
from bot.core.ssh_settings import SSHSettings
from bot.core.text import Text
from bot.slack.render import translator


def test_a_flood_of_output_stops_at_the_bound_with_its_channel_closed(tmp_path: Path) -> None:
    """The peer's command writes stdout without end; the runner's bound is 1 MiB: run raises
    OutputTooLarge naming the command and the bound well before the 30 s timeout, and the
    channel is closed (the peer's writer ends, having sent about the bound and SSH's window,
    not the flood). Before, the runner read until the timeout, holding all of it."""
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        peer.exec_floods = True
        runner = peer.runner(max_output_bytes=1 << 20)
        try:
            started = time.monotonic()
            with pytest.raises(OutputTooLarge) as raised:
                runner.run(["squeue", "--all"], timeout=30)
            assert time.monotonic() - started < 10
            assert str(raised.value) == ("`squeue --all` sent more than 1 MiB of output; "
                                         "trainbot stopped reading it and closed its channel")
            assert peer.flood_ended.wait(10)
            assert peer.flooded < 8 << 20
        finally:
            runner.close()


def test_a_clusters_lower_max_output_mib_cuts_a_flood_there(tmp_path: Path) -> None:
    """The bound the cluster's config sets (clusters.<name>.max_output_mib: 8) is the one the
    runner cuts at: a command flooding its output fails saying 8 MiB, having sent about
    that, not the default's 64."""
    cluster = ClusterConfig(host="login", key_file="/k", max_output_mib=8)
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        peer.exec_floods = True
        runner = peer.runner(max_output_bytes=cluster.ssh_settings().max_output_bytes)
        try:
            with pytest.raises(OutputTooLarge) as raised:
                runner.run(["squeue", "--all"], timeout=30)
            assert "sent more than 8 MiB of output" in str(raised.value)
            assert peer.flood_ended.wait(10)
            assert 8 << 20 < peer.flooded < 16 << 20
        finally:
            runner.close()


def test_the_bound_is_64_mib_by_default_and_said_in_korean() -> None:
    assert SSHSettings(host="h").max_output_bytes == 64 << 20
    assert ClusterConfig(host="h", key_file="/k").ssh_settings().max_output_bytes == 64 << 20
    error = OutputTooLarge(["squeue", "--all"], 64 << 20)
    ko = error.text.format(translator("ko").gettext) if isinstance(error.text, Text) else ""
    assert ko == ("`squeue --all`의 출력이 64 MiB를 넘어 trainbot이 읽기를 멈추고 채널을 "
                  "닫았습니다")
