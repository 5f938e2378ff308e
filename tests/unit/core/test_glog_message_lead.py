"""glog's and absl's line prefix (`I1207 12:34:56.789012 12345 train.py:42] `: the level's
letter, month and day, time, thread id, source file and line) is stripped before the message
as a time is (bot.core.line_time `message_after_time`), and bot.core.logprefix `LOG_LEAD`
covers it (a C++ source's `solver.cpp:411] ` too), so the ending rules read the message: a
report's heading after the last epoch is a heading under glog's prefix as without it.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import re

import pytest
from support.end_marker import read

from bot.core.line_time import message_after_time
from bot.core.logprefix import LOG_LEAD


@pytest.mark.parametrize("line", [
    "I1207 12:34:56.789012 12345 train.py:42] Test results:",
    "W1207 12:34:56.789012  1234 solver.cpp:411] Test results:",
    "E1207 12:34:56 77 absl_app.py:9] Test results:",
    "[I1207 12:34:56.789 123 train.py:1] Test results:",
])
def test_glog_and_absl_prefixes_are_stripped_before_the_message(line):
    assert message_after_time(line) == "Test results:"


@pytest.mark.parametrize(("line", "message"), [
    ("Iteration 5 loss 0.3", "Iteration 5 loss 0.3"),
    ("E1207 is an error code", "E1207 is an error code"),
    ("I1207 12:34:56 no source line", "no source line"),
])
def test_a_line_that_only_looks_like_glog_keeps_its_message(line, message):
    assert message_after_time(line) == message


@pytest.mark.parametrize("source", ["train.py:42]", "solver.cpp:411]", "trainer.cc:7]"])
def test_log_lead_covers_glog_prefixes(source):
    line = f"I1207 12:34:56.789012 12345 {source} msg"
    lead = re.match(rf"(?i)^(?:{LOG_LEAD})*", line)
    assert lead is not None and line[lead.end():] == "msg"


def _glog(i: int, message: str) -> str:
    return f"I1207 12:{10 + i // 60:02d}:{i % 60:02d}.789012 12345 train.py:42] {message}\n"


def test_a_report_heading_under_glog_prefix_ends_the_run_as_without_it():
    epochs = "".join(_glog(e, f"Epoch {e}/10 - loss: 0.{60 - e} - acc: 0.{30 + e}")
                     for e in range(1, 11))
    report = (_glog(20, "Best Model Performance on Test Data:")
              + _glog(21, "Accuracy: 94.20%"))
    plain = "".join(line.split("] ", 1)[1] for line in (epochs + report).splitlines(True))
    assert read(plain).class_id == "completed"
    assert read(epochs + report).class_id == "completed"
