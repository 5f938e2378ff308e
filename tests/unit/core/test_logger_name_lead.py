"""Python logging's `%(asctime)s - %(name)s - %(levelname)s - %(message)s` lines read by their
message once the time is read off: the logger's name and the level before it (`-
ModelEvaluator - INFO - `) are a logging library's lead, so a report's heading after the last
epoch (`... - INFO - Confusion Matrix:`) is a heading, and the run that ends there finished.

The logs are synthetic: the lines Python's logging module prints in that format.
"""

from __future__ import annotations

import re

from support.end_marker import read

from bot.core.logprefix import LOG_LEAD

LEAD = "2026-12-07 12:{m:02d}:00,123 - {name} - INFO - "


def _log(*lines: tuple[str, str]) -> str:
    return "".join(LEAD.format(m=m, name=name) + text + "\n"
                   for m, (name, text) in enumerate(lines))


def test_a_heading_after_the_last_epoch_under_a_logger_name_leaves_the_run_completed():
    epochs = [("ModelTrainer", f"Epoch {e}/3, Loss: 0.{9 - e}, Accuracy: 8{e}.0%")
              for e in range(1, 4)]
    log = _log(*epochs, ("ModelEvaluator", "Evaluation Results: Accuracy: 79.21%"),
               ("ModelEvaluator", "Confusion Matrix:"))
    assert read(log).class_id == "completed"


def test_the_logger_name_after_the_time_is_a_lead():
    lead = re.compile(rf"(?i)(?:{LOG_LEAD})*")
    message = "- ModelEvaluator - INFO - Confusion Matrix:"
    match = lead.match(message)
    assert match is not None
    assert message[match.end():] == "Confusion Matrix:"
