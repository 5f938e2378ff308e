"""Progress bars on stderr (tqdm) for long CLI work: reading a log over `BIG_LOG_BYTES`,
verifying a checkpoint's files, a DataLoader probe's samples. Off when stderr is not a
terminal or the command prints JSON; a bar appears only once the work has lasted `DELAY_S`."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from tqdm import tqdm

BIG_LOG_BYTES = 64 << 20  # logs smaller than this are read without a bar
DELAY_S = 0.5


def wanted(args: argparse.Namespace) -> bool:
    """A bar is wanted: stderr is a terminal and the command does not print JSON."""
    return not getattr(args, "json", False) and sys.stderr.isatty()


def bar(*, enabled: bool, total: float | None = None, desc: str = "", unit: str = "it"
        ) -> tqdm:
    """A tqdm bar on stderr (a no-op when not `enabled`); close it (or use `with`)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled,
                delay=DELAY_S, leave=False, dynamic_ncols=True,
                unit_scale=unit == "B", unit_divisor=1024 if unit == "B" else 1000)


class ReadProgress:
    """A binary stream whose reads move `progress` by the bytes read."""

    def __init__(self, stream: IO[bytes], progress: tqdm) -> None:
        self._stream, self._progress = stream, progress

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._progress.update(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
