"""YOLO's validation of best.pt after its training loop: a log that ends inside it is still running.

ultralytics' trainer (ultralytics/ultralytics ultralytics/engine/trainer.py 00016300,
BaseTrainer._do_train) logs `\\n{N} epochs completed in {h:.3f} hours.` when its epoch loop ends,
then `final_eval` strips the optimizer from last.pt and best.pt (`Optimizer stripped from …`) and
validates best.pt: `\\nValidating {best}...`, the validator's banner and model summary, its bar
(`Class Images Instances Box(P R mAP50 mAP50-95): …`), the table (`all` and a row per class), and,
as a validation of a saved model (ultralytics/engine/validator.py 12601021, BaseValidator.__call__
not training), `Speed: …ms preprocess, …ms inference, …ms loss, …ms postprocess per image` and
`Results saved to {save_dir}` (with plots or save_json). YOLOv5 (ultralytics/yolov5 train.py)
prints the same `N epochs completed in` and `Validating {best}...`, validates with its training
flag (no Speed line) and ends in its logger's `Results saved to {save_dir}` (on_train_end).
The completion line is the catalogue's marker; a log that ends after it, inside that validation,
has not finished: it reads `none` (evaluating), and `completed` once the validation's closing line
came. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from bot.core.catalogue.scanner import normalize_line

#: The trainer's line as its epoch loop ends (the catalogue's `completed` marker)
_LOOP_DONE = re.compile(r"^[0-9]+ epochs completed in [0-9.]+ (?:hours|minutes|seconds)")
#: final_eval's (and YOLOv5's train.py's) start of the validation of the best checkpoint
_VALIDATING = re.compile(r"^Validating \S*best\.pt\.\.\. *$")
#: the validation's last lines: the saved model's speeds, then where the results went
_CLOSING = re.compile(r"^(?:Speed: .*\bper image\b|Results saved to \S)")
#: what the validation prints before its closing lines, when its start is out of the tail: the
#: bar (its header: `Class  Images  Instances  Box(P ...`) and the table's rows (`all  128  929
#: 0.669  0.554  0.631  0.466`, a class's name, a Mask's or Pose's four columns more)
_VALIDATION_BAR = re.compile(r"^\s*Class\s+Images\s+Instances\s")
_TABLE_ROW = re.compile(r"^\s*\S(?:.*\S)?(?:\s+[0-9]+){2}(?:\s+[-+0-9.e]+){4,}\s*$")


def in_final_validation(matches: Iterable[Any], marker_line: int | None,
                        tail: Sequence[tuple[int, str]]) -> int | None:
    """The line of YOLO's `Validating …best.pt...` (or of its `N epochs completed` marker when
    that start is before the tail) when the log ends inside that validation: after the last
    completion marker, which is the trainer's `N epochs completed in` line (`marker_line`, among
    `matches`), the validation opened and no closing line (`Speed: … per image`, `Results saved
    to`) came after it; or neither is in the tail and every line of it is the validation's bar
    or table. None otherwise (no such marker, the validation closed, other output after it)."""
    marker = next((m for m in matches if m.line_no == marker_line and m.class_id == "completed"
                   and _LOOP_DONE.search(normalize_line(m.text))), None)
    if marker is None:
        return None
    after = [(n, normalize_line(t)) for n, t in tail if n > marker.line_no]
    opened = None
    for n, text in after:
        if _VALIDATING.search(text):
            opened = n
        elif opened is not None and _CLOSING.search(text):
            opened = None
    if opened is not None:
        return opened
    if len(after) < len(tail) or not tail:
        return None  # the marker (or its validation's start) is in the tail: read above
    shown = [text for _, text in after if text.strip()]
    return marker.line_no if shown and all(
        _VALIDATION_BAR.search(t) or _TABLE_ROW.search(t) for t in shown) else None
