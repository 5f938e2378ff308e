"""Progress bars on stderr (bot.cli.progress): `diagnose` / `report` of a log over 64 MiB,
`checkpoint verify`, `probe dataloader`; none when stderr is not a terminal or with --json."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli import progress as cli_progress

STORY = Path(__file__).resolve().parents[2] / "fixtures" / "stories" / "88154.log"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def small_threshold(monkeypatch):
    """The story's log (a few hundred KiB) counts as big, and bars show at once."""
    monkeypatch.setattr(cli_progress, "BIG_LOG_BYTES", STORY.stat().st_size - 1)
    monkeypatch.setattr(cli_progress, "DELAY_S", 0)


def diagnose_stderr(monkeypatch, stderr: io.StringIO, *args: str) -> str:
    monkeypatch.setattr(sys, "stderr", stderr)
    main(["diagnose", str(STORY), "--state", "FAILED", "--exit-code", "1:0", *args])
    return stderr.getvalue()


def test_a_big_log_is_read_under_a_bar_on_a_terminal(monkeypatch, small_threshold) -> None:
    err = diagnose_stderr(monkeypatch, Terminal())
    assert "88154.log:" in err and "256k" in err  # the bar: name, size


def test_no_bar_with_json_when_not_a_terminal_or_for_a_small_log(monkeypatch,
                                                                   small_threshold) -> None:
    assert diagnose_stderr(monkeypatch, Terminal(), "--json") == ""
    assert diagnose_stderr(monkeypatch, io.StringIO()) == ""
    monkeypatch.setattr(cli_progress, "BIG_LOG_BYTES", STORY.stat().st_size)
    assert diagnose_stderr(monkeypatch, Terminal()) == ""


def test_checkpoint_verify_counts_storage_files_under_a_bar(monkeypatch, tmp_path) -> None:
    import torch
    import torch.distributed.checkpoint as dcp

    ckpt = tmp_path / "ckpt"
    dcp.save({"model.w": torch.zeros(4), "model.b": torch.ones(2)}, checkpoint_id=str(ckpt))
    monkeypatch.setattr(cli_progress, "DELAY_S", 0)
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert main(["checkpoint", "verify", str(ckpt)]) == 0
    assert isinstance(sys.stderr, io.StringIO)  # the Terminal above
    assert "storage files" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert main(["checkpoint", "verify", str(ckpt), "--json"]) == 0
    assert sys.stderr.getvalue() == ""
