"""A finished run of widely used training code, as `trainbot diagnose FILE` shows it with no
accounting: each framework's log tail (support.framework_ends, built from its source's format
strings) reads `Training completed` where the code prints a line of its own after its loop or a
counter at its total, and `running, nothing to report` where nothing tells its end from a cut
run. BasicSR's new marker (`End of training. Time consumed`) is held to the end markers' rules
too: an error after it is no finished run."""

from __future__ import annotations

import pytest
from support.end_marker import assert_the_error_decides, read
from support.framework_ends import ENDS, MARKERS

from bot.cli import main

VERDICT = {"completed": "completed - Training completed",
           "none": "none - running, nothing to report"}


@pytest.mark.parametrize(("log", "verdict"), list(ENDS.values()), ids=list(ENDS))
def test_trainbot_diagnose_shows_the_frameworks_end(tmp_path, capsys, log, verdict):
    path = tmp_path / "job.log"
    path.write_text(log, encoding="utf-8")
    assert main(["diagnose", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"{path}: {VERDICT[verdict]}"


@pytest.mark.parametrize("name", list(MARKERS), ids=list(MARKERS))
def test_the_end_is_read_by_its_own_line(name):
    d = read(ENDS[name][0])
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert any(MARKERS[name] in e.text for e in d.evidence)


BASICSR = ENDS["BasicSR (Real-ESRGAN, NAFNet, HAT ...)"][0]


def test_an_error_after_basicsrs_marker_decides():
    assert_the_error_decides(BASICSR)

