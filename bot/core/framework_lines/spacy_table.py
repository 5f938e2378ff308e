"""spaCy's training table (pure; no I/O): its header, which bot.core.training_lines notes
(`spacy_table_columns`) and bot.core.detectors and bot.core.metrics locate, and its rows, read
for bot.core.framework_lines' `read_framework_line` under such a header: each row's step.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.core.training_lines import Sample

# spaCy's console logger (explosion/spaCy spacy/training/loggers.py 041f47b3, console_logger_v3,
# which console_logger calls): before the loop it writes its table's header, wasabi's msg.row of
# `E`, `#`, each trainable component's `Loss {pipe}`, the score weights' columns and `Score`,
# upper-cased by setup_table (`Loss …` before 3.1; a name over 13 characters cut to 10 and
# `...`), each padded to its width (3, 6, 8 a loss, 6 a score), two blanks apart:
#     `E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE `
# then a rule of dashes; after each evaluation, log_step writes a row of the epoch, the step
# (`info["step"]`), each loss and score `{0:.2f}` and the score, right-aligned:
#     `  3     200         41.79   2123.60   41.19    0.41`
# The step (optimizer steps done, from 0) is the iteration; max_steps is printed nowhere (no
# target), and each loss is one component's sum since the last evaluation (no loss of the
# training's). A row of bare numbers is spaCy's only under its header, as many columns as it:
# rows before any header are another program's, no progress.
SPACY_TABLE_HEADER = r"^E {4}# {7}(?:LOSS|Loss) "
#: The text a spaCy table's header starts with, for a locator of such lines (bot.core.metrics)
SPACY_TABLE_MARKER = "E    #       "
_SPACY_HEADER = re.compile(SPACY_TABLE_HEADER)
_SPACY_COLUMN_GAP = re.compile(r" {2,}")
_SPACY_ROW = re.compile(r"^ *\d+ +(\d+)(?: +(?:-?\d+\.\d\d|nan|-?inf))+ *$")


def spacy_table_columns(body: str) -> int | None:
    """The number of columns of spaCy's training table when a line's message `body` is its
    header (`SPACY_TABLE_HEADER`), else None."""
    if not body.startswith("E ") or _SPACY_HEADER.match(body) is None:
        return None
    return len(_SPACY_COLUMN_GAP.split(body.strip()))


def read_spacy_row(body: str, s: Sample, columns: int) -> None:
    """A row of spaCy's training table (`_SPACY_ROW`, as many columns as its header's): its
    step as the iteration."""
    m = _SPACY_ROW.match(body)
    if m is not None and len(body.split()) == columns:
        s.iteration = int(m.group(1))
