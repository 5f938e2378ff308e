"""Progress bars redrawn in place, one draw at a time, as a log file receives them (a carriage
return before each update, no newline until the bar's line ends), built from the frameworks'
format strings: for tests of a log whose last line is a bar still drawing."""

from __future__ import annotations


def mmcv_draw(done: int, total: int) -> bytes:
    """mmcv's ProgressBar (open-mmlab/mmcv mmcv/utils/progressbar.py) over an evaluation's
    images, 40 marks wide, 10 images a second: its start (`done` 0), else one update."""
    if done == 0:
        return f"[{' ' * 40}] 0/{total}, elapsed: 0s, ETA:".encode()
    marks = 40 * done // total
    return (f"\r[{'>' * marks}{' ' * (40 - marks)}] {done}/{total}, 10.0 task/s, elapsed: "
            f"{done // 10}s, ETA: {(total - done) // 10:5}s").encode()


def lightning_validation_draw(done: int, total: int) -> bytes:
    """Lightning's validation bar (TQDMProgressBar's `Validation DataLoader 0`), one tqdm draw
    after a carriage return, 10 batches a second."""
    return (f"\rValidation DataLoader 0: {100 * done // total:3d}%|#         | {done}/{total} "
            f"[{_clock(done // 10)}<{_clock((total - done) // 10)}, 10.00it/s]").encode()


def _clock(seconds: int) -> str:
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
