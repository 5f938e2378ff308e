"""Verify a `torch.distributed.checkpoint` (DCP) checkpoint before anyone resumes from it."""

from __future__ import annotations

import io
import math
import os
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.core.findings import Finding, Level, worst_level
from bot.core.text import N_

METADATA_FILE = ".metadata"


POINTER_MAX_BYTES = 64 * 1024  # a pointer names one directory: a bigger file is something else


class CheckpointUnreadable(Exception):
    """The checkpoint's metadata cannot be read; the message says why."""


class TorchMissing(CheckpointUnreadable):
    """torch is not importable here, so no DCP metadata can be read (the checkpoint may be fine)."""


class PointerNotText(ValueError):
    """The pointer file is binary, not UTF-8 or too big: not a pointer file at all."""


def require_torch() -> None:
    """Raise TorchMissing, saying how to fix it, when torch's DCP classes cannot be imported."""
    try:
        import torch.distributed.checkpoint.metadata  # noqa: F401
    except ImportError as exc:
        raise TorchMissing(
            f"DCP .metadata can only be read with torch, and this Python cannot import it "
            f"({exc}); pip install torch here, or run the check where the training runs"
        ) from None


# ---------------------------------------------------------------------------- safe metadata


class _CheckpointUnpickler(pickle.Unpickler):
    """Resolves only the globals a DCP `.metadata` pickle needs; refuses everything else."""

    _PATHS = {"PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath", "Path"}

    def find_class(self, module: str, name: str) -> Any:
        import torch

        if module.startswith("torch.distributed.checkpoint"):
            obj = super().find_class(module, name)
            if isinstance(obj, type):
                return obj
        elif module == "torch":
            obj = getattr(torch, name, None)
            if obj is torch.Size or isinstance(
                obj, torch.dtype | torch.layout | torch.memory_format
            ):
                return obj
        elif (module, name) == ("torch.serialization", "_get_layout"):
            return super().find_class(module, name)
        elif module == "pathlib" and name in self._PATHS:
            return super().find_class(module, name)
        elif (module, name) in {("collections", "OrderedDict"), ("builtins", "set"),
                                ("builtins", "frozenset"), ("builtins", "slice")}:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refused to load {module}.{name}: a DCP .metadata file only references torch "
            "checkpoint classes (the file is corrupt or not a DCP checkpoint)"
        )


def load_metadata(ckpt_dir: str | os.PathLike[str]) -> Any:
    """The `torch.distributed.checkpoint.metadata.Metadata` of a checkpoint directory.

    Raises CheckpointUnreadable naming the file and the cause.
    """
    path = Path(ckpt_dir) / METADATA_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise CheckpointUnreadable(
            f"{path} is missing: DCP writes it last, so the save never finished"
        ) from exc
    except OSError as exc:
        raise CheckpointUnreadable(f"cannot read {path}: {exc.strerror}") from exc
    return parse_metadata_bytes(data, str(path))


def parse_metadata_bytes(data: bytes, source: str) -> Any:
    """Unpickle `.metadata` bytes (read locally or over SFTP) with the restricted unpickler."""
    require_torch()
    try:
        metadata = _CheckpointUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # truncated pickle raises EOFError, garbage many other things
        raise CheckpointUnreadable(
            f"{source} is not a readable DCP metadata file ({type(exc).__name__}: {exc})"
        ) from exc
    from torch.distributed.checkpoint.metadata import Metadata

    if not isinstance(metadata, Metadata):
        raise CheckpointUnreadable(
            f"{source} holds a {type(metadata).__name__}, not DCP Metadata"
        )
    return metadata


# ---------------------------------------------------------------------------- the checks


@dataclass(frozen=True)
class StorageExtent:
    relative_path: str
    needed_bytes: int  # the largest offset + length any item records in that file


@dataclass
class CheckpointReport:
    """Each check's result, and what the metadata says the checkpoint holds."""

    directory: str
    findings: list[Finding] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # sub-checkpoints verified (e.g. model/)
    storage_files: int = 0
    storage_bytes: int = 0
    param_count: int | None = None

    @property
    def level(self) -> Level:
        return worst_level(self.findings)

    @property
    def valid(self) -> bool:
        return self.level != "fail"

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "valid": self.valid,
            "level": self.level,
            "parts": self.parts,
            "storage_files": self.storage_files,
            "storage_bytes": self.storage_bytes,
            "param_count": self.param_count,
            "checks": [f.to_json() for f in self.findings],
        }


def storage_extents(metadata: Any) -> list[StorageExtent]:
    """Every storage file the metadata names, with the bytes it must hold at least."""
    needed: dict[str, int] = {}
    for info in (metadata.storage_data or {}).values():
        rel = str(info.relative_path)
        end = int(info.offset) + int(info.length)
        needed[rel] = max(needed.get(rel, 0), end)
    return [StorageExtent(p, n) for p, n in sorted(needed.items())]


def _dcp_parts(root: Path) -> list[Path]:
    """The DCP checkpoints under `root`: itself, or its sub-directories (`model/`, `optim/`)."""
    if (root / METADATA_FILE).exists():
        return [root]
    parts = []
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        if (child / METADATA_FILE).exists() or any(child.glob("*.distcp")):
            parts.append(child)
    if not parts and any(root.glob("*.distcp")):
        return [root]  # storage files but no metadata: reported as an unfinished save
    return parts


_DO_NOT_RESUME = N_("do not resume from this checkpoint; use the previous complete one")

def _check_part(part: Path, root: Path, report: CheckpointReport,
                on_file: Callable[[], None] | None = None) -> Any:
    label = "." if part == root else part.relative_to(root).as_posix()
    report.parts.append(label)
    try:
        metadata = load_metadata(part)
    except CheckpointUnreadable as exc:
        report.findings.append(Finding(
            f"metadata[{label}]", "fail", None, str(exc), _DO_NOT_RESUME,
        ))
        return None
    n_items = len(metadata.state_dict_metadata)
    report.findings.append(Finding(
        f"metadata[{label}]", "pass", None,
        N_("%(path)s read: %(n)s state-dict entries", path=str(part / METADATA_FILE),
           n=n_items),
    ))
    missing: list[str] = []
    short: list[str] = []
    for extent in storage_extents(metadata):
        if on_file is not None:
            on_file()
        path = part / extent.relative_path
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            missing.append(extent.relative_path)
            continue
        report.storage_files += 1
        report.storage_bytes += size
        if size < extent.needed_bytes:
            short.append(f"{extent.relative_path} ({size} of {extent.needed_bytes} bytes)")
    fix = _DO_NOT_RESUME
    if missing:
        report.findings.append(Finding(
            f"storage[{label}]", "fail", None,
            N_("%(n)s storage file(s) named in the metadata are missing: %(files)s",
               n=len(missing), files=", ".join(missing[:5]) + ("…" if len(missing) > 5 else "")),
            fix,
        ))
    if short:
        report.findings.append(Finding(
            f"storage[{label}]", "fail", None,
            N_("%(n)s storage file(s) are shorter than the metadata records (truncated): "
               "%(files)s", n=len(short),
               files=", ".join(short[:5]) + ("…" if len(short) > 5 else "")), fix,
        ))
    if not missing and not short:
        report.findings.append(Finding(
            f"storage[{label}]", "pass", None,
            N_("all %(n)s storage file(s) present and complete",
               n=len(storage_extents(metadata))),
        ))
    return metadata


def resolve_pointer(pointer: Path) -> tuple[Path | None, str]:
    """The directory a pointer file names (absolute, relative to the pointer, or a step number).

    Returns (directory or None, explanation). Raises PointerNotText for a binary file.
    """
    try:
        with pointer.open("rb") as fh:
            data = fh.read(POINTER_MAX_BYTES + 1)
    except FileNotFoundError:
        return None, f"pointer file {pointer} does not exist"
    except OSError as exc:
        return None, f"cannot read pointer file {pointer}: {exc.strerror}"
    text = _pointer_text(pointer, data).strip()
    if not text:
        return None, f"pointer file {pointer} is empty"
    first = text.splitlines()[0].strip()
    candidate = Path(first)
    if not candidate.is_absolute():
        candidate = pointer.parent / candidate
    if candidate.is_dir():
        return candidate, f"pointer {pointer} names {candidate}"
    if first.isdigit():  # a bare step number: find the directory ending in that number
        n = int(first)
        for child in sorted(pointer.parent.iterdir()):
            m = re.search(r"(\d+)$", child.name)
            if child.is_dir() and m and int(m.group(1)) == n:
                return child, f"pointer {pointer} names step {n}: {child}"
    return None, f"pointer {pointer} names {first!r}, which is not an existing directory"


def _pointer_text(pointer: Path, data: bytes) -> str:
    why = None
    if len(data) > POINTER_MAX_BYTES:
        why = f"it is over {POINTER_MAX_BYTES // 1024} KiB"
    elif b"\0" in data:
        why = f"it holds a NUL byte at offset {data.index(0)}"
    else:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            why = f"byte {exc.start} is not UTF-8"
    raise PointerNotText(
        f"{pointer} is not a text file ({why}); give the pointer file the training writes, "
        "which names the checkpoint directory (e.g. latest_checkpoint.txt)"
    )


def verify_checkpoint(
    ckpt_dir: str | os.PathLike[str], pointer: str | os.PathLike[str] | None = None, *,
    on_file: Callable[[], None] | None = None,
) -> CheckpointReport:
    """Check a DCP checkpoint directory (and optionally its pointer file); never raises for a
    broken checkpoint — every problem is a `fail` finding; `on_file()` is told each storage
    file checked (a progress bar). Raises FileNotFoundError when
    `ckpt_dir` is not a directory at all, PointerNotText when `pointer` is not a pointer file,
    TorchMissing when torch is not installed (nothing can be judged then)."""
    root = Path(ckpt_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    require_torch()
    report = CheckpointReport(directory=str(root))
    parts = _dcp_parts(root)
    if not parts:
        report.findings.append(Finding(
            "metadata", "fail", None,
            N_("%(path)s holds no DCP checkpoint (no %(metadata)s and no *.distcp files)",
               path=str(root), metadata=METADATA_FILE),
            N_("point at the checkpoint directory the training code passed to dcp.save"),
        ))
    params: int | None = None
    for part in parts:
        metadata = _check_part(part, root, report, on_file)
        if metadata is not None and part.name not in ("optim", "optimizer"):
            params = (params or 0) + param_count_from_metadata(metadata)
    report.param_count = params
    if pointer is not None:
        target, why = resolve_pointer(Path(pointer))
        if target is None:
            report.findings.append(Finding(
                "pointer", "fail", None, why,
                N_("the save did not finish writing its pointer; resume from the previous "
                   "checkpoint the pointer history names, or rewrite the pointer by hand"),
            ))
        elif target.resolve() != root.resolve():
            report.findings.append(Finding(
                "pointer", "warn", None,
                N_("%(pointer)s, not the directory being verified (%(path)s)", pointer=why,
                   path=str(root)),
                N_("verify %(path)s too before resuming from it", path=str(target)),
            ))
        else:
            report.findings.append(Finding("pointer", "pass", None, why))
    return report


# ---------------------------------------------------------------------------- parameter count

_NOT_PARAMS = re.compile(
    r"(^|\.)(optim|optimizer|optim_state|scheduler|lr_scheduler|ema|ema_model|dataloader|rng)"
    r"(\.|$)|exp_avg|momentum_buffer|\.step$"
)


def param_count_from_metadata(metadata: Any) -> int:
    """Parameters in a checkpoint: tensor elements of the model's entries.

    When entries are namespaced under `model.` only those count; otherwise optimizer, EMA
    and scheduler entries are left out so Adam's moments are not counted three times.
    """
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    tensors = {
        k: v for k, v in metadata.state_dict_metadata.items()
        if isinstance(v, TensorStorageMetadata)
    }
    model_keys = [k for k in tensors if k.startswith("model.")]
    keys = model_keys or [k for k in tensors if not _NOT_PARAMS.search(k)]
    return sum(math.prod(tensors[k].size) for k in keys)


def read_param_count(ckpt_dir: str | os.PathLike[str]) -> int:
    """Parameter count from a DCP checkpoint's metadata (for the checkpoint memory budget).

    Raises CheckpointUnreadable when no part of `ckpt_dir` has readable metadata.
    """
    root = Path(ckpt_dir)
    if not root.is_dir():
        raise CheckpointUnreadable(f"{root} is not a directory")
    require_torch()
    total = 0
    found = False
    for part in _dcp_parts(root):
        if part.name in ("optim", "optimizer"):
            continue
        total += param_count_from_metadata(load_metadata(part))
        found = True
    if not found:
        raise CheckpointUnreadable(f"{root} holds no DCP checkpoint with model parameters")
    return total
