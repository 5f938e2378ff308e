"""The readings every framework end marker is held to, for the end-marker tests: a log with no
accounting that ends in the framework's own end line reads `completed` by that signature; the
same line with more training progress after it is no end (`none`, still running); an error
after it still names the failure."""

from __future__ import annotations

from functools import cache

import pytest

from bot.core.catalogue import Catalogue
from bot.core.models import Diagnosis
from support.diagnosis import read_log

# a closing summary a script prints after its training loop
SUMMARY = "Final test accuracy: 0.9312\n"

# an error a script can hit after its training loop, saving or evaluating
LATE_ERROR = ("Traceback (most recent call last):\n"
              '  File "train.py", line 212, in <module>\n'
              "    main(args)\n"
              "OSError: [Errno 28] No space left on device\n")


def epochs(done: int, total: int | None = None, *, val_acc: bool = False) -> str:
    """The reports of the first `done` epochs of a loop of `total` (default: `done`) epochs
    (`Epoch 3/20 - loss: 0.57 - val_loss: 0.67`), each followed by its `val acc: 0.53` line
    when `val_acc`."""
    acc = "val acc: 0.5{e}\n" if val_acc else ""
    return "".join(f"Epoch {e}/{total or done} - loss: 0.{60 - e} - val_loss: 0.{70 - e}\n"
                   + acc.format(e=e) for e in range(1, done + 1))


def each_end(ends: dict[str, str]) -> pytest.MarkDecorator:
    """A test run once per end form of `ends` (its name: the test's id)."""
    return pytest.mark.parametrize("end", list(ends.values()), ids=list(ends))


@cache
def _catalogue() -> Catalogue:
    return Catalogue.load()


def read(text: str) -> Diagnosis:
    """`text` read as a log with no accounting, the catalogue loaded once for every test."""
    return read_log(_catalogue(), text)


def assert_ends_the_run(text: str, marker: str) -> None:
    d = read(text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert any(marker in e.text for e in d.evidence)


def assert_still_running(text: str) -> None:
    d = read(text)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def assert_the_error_decides(text: str) -> None:
    assert read(text + LATE_ERROR).class_id == "disk_full"
