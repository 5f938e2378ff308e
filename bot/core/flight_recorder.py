"""After an NCCL watchdog abort: what PyTorch's flight recorder dumped for each rank — the last
collective and sequence number each reached — and the rank(s) that fell behind.

ProcessGroupNCCL writes one pickle per rank when `TORCH_NCCL_DUMP_ON_TIMEOUT=1` and a trace
buffer is on (`TORCH_NCCL_TRACE_BUFFER_SIZE`), to `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` + rank
(default /tmp/nccl_trace_rank_<rank>): a dict with `version`, `pg_config`, `pg_status` and
`entries`, each entry a dict (`collective_seq_id`, `profiling_name` such as
`nccl:all_gather`, `state` scheduled / started / completed, `process_group` (name, desc),
`is_p2p`, …), as torch/distributed/flight_recorder reads it. The files come from the job:
they are read with a restricted unpickler that builds only plain data (`load_dump`), never
with pickle.load. Pure: bytes in, facts out.
"""

from __future__ import annotations

import io
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.core.text import N_, Text

TRACE_BUFFER_ENV = "TORCH_NCCL_TRACE_BUFFER_SIZE"
DUMP_ON_TIMEOUT_ENV = "TORCH_NCCL_DUMP_ON_TIMEOUT"
DUMP_FILE_ENV = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"
DUMP_PREFIX = "nccl_trace_rank_"
TRACE_BUFFER_SIZE = 2000
MAX_DUMP_BYTES = 64 << 20  # a 2000-entry buffer with stack frames is a few MiB
_RANK_RE = re.compile(rf"^{DUMP_PREFIX}(\d+)$")


def flight_recorder_env(directory: str) -> dict[str, str]:
    """The job environment that makes every rank dump its flight recorder into `directory`
    on a watchdog timeout."""
    return {TRACE_BUFFER_ENV: str(TRACE_BUFFER_SIZE), DUMP_ON_TIMEOUT_ENV: "1",
            DUMP_FILE_ENV: directory.rstrip("/") + "/" + DUMP_PREFIX}


def records_on_timeout(env: Mapping[str, str]) -> bool:
    """Does a job with this environment leave flight-recorder dumps after a timeout?"""
    return env.get(DUMP_ON_TIMEOUT_ENV, "").lower() in ("1", "true") and \
        env.get(TRACE_BUFFER_ENV, "0").strip() not in ("", "0")


def rank_of_file(name: str) -> int | None:
    """`nccl_trace_rank_3` -> 3; None for any other file name."""
    m = _RANK_RE.match(name)
    return int(m[1]) if m else None


class DumpRefused(ValueError):
    """The file is not a flight-recorder dump trainbot will read: raised with why, a sentence
    (a Text the thread's language renders; `str()` is the English, for the logs)."""


def dump_too_large(size: int) -> Text:
    """Why a dump of `size` bytes is not read: more than MAX_DUMP_BYTES."""
    return N_("%(size)s bytes, more than the %(limit)s read", size=size, limit=MAX_DUMP_BYTES)


def _as_list(*items: Any) -> list[Any]:
    return list(items[0]) if len(items) == 1 and isinstance(items[0], list | tuple) \
        else list(items)


def _tagged(value: Any, *_type: Any) -> Any:
    return value


# The only globals a dump may name: the list builders and the type tag of TorchScript's
# pickler (torch/jit/_pickle.py), which build plain lists and values. Anything else (os.system,
# builtins.eval, a class) is refused before it is looked up.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("torch.jit._pickle", "build_intlist"): _as_list,
    ("torch.jit._pickle", "build_doublelist"): _as_list,
    ("torch.jit._pickle", "build_boollist"): _as_list,
    ("torch.jit._pickle", "build_generic_list"): _as_list,
    ("torch.jit._pickle", "restore_type_tag"): _tagged,
}


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise DumpRefused(N_("it names %(name)s: not a flight-recorder dump",
                                 name=f"{module}.{name}")) from None

    def persistent_load(self, pid: Any) -> Any:
        raise DumpRefused(N_("it holds a persistent object: not a flight-recorder dump"))


def load_dump(data: bytes) -> dict[str, Any]:
    """The dump's dict, built from plain data only (raises DumpRefused)."""
    if len(data) > MAX_DUMP_BYTES:
        raise DumpRefused(dump_too_large(len(data)))
    try:
        obj = _PlainDataUnpickler(io.BytesIO(data)).load()
    except DumpRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - any malformed pickle is one refusal
        raise DumpRefused(N_("unreadable (%(error)s)",
                             error=f"{type(exc).__name__}: {exc}")) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("entries"), list):
        raise DumpRefused(N_("no `entries` list: not a flight-recorder dump"))
    return obj


@dataclass(frozen=True)
class RankTrace:
    """What one rank's dump says about its default process group's collectives."""

    rank: int
    last_seq: int | None  # the last collective it enqueued (collective_seq_id)
    last_op: str | None  # e.g. all_gather
    last_state: str | None  # scheduled / started / completed
    last_completed_seq: int | None
    version: str = ""


@dataclass(frozen=True)
class FlightRecorderSummary:
    """Every rank's last collective; `behind` are the ranks whose last collective is older
    than the others' (they never reached the collective the others wait in, `waiting_seq`
    / `waiting_op`); `unread` names the ranks whose dump could not be read, and why (a
    sentence, a Text)."""

    ranks: tuple[RankTrace, ...]
    behind: tuple[int, ...]
    waiting_seq: int | None
    waiting_op: str | None
    unread: tuple[tuple[int, Text | str], ...] = ()

    def to_view(self) -> dict[str, Any]:
        return {"ranks": [{"rank": r.rank, "seq": r.last_seq, "op": r.last_op,
                           "state": r.last_state, "completed": r.last_completed_seq}
                          for r in self.ranks],
                "behind": [{"rank": r.rank, "seq": r.last_seq, "op": r.last_op,
                            "state": r.last_state} for r in self.ranks if r.rank in self.behind],
                "waiting_seq": self.waiting_seq, "waiting_op": self.waiting_op,
                "unread": [{"rank": rank, "why": why} for rank, why in self.unread]}


def _op(entry: Mapping[str, Any]) -> str:
    name = str(entry.get("profiling_name") or "?")
    return name.split(":", 1)[1].split(" ", 1)[0] if ":" in name else name


def _default_pg(entries: Sequence[Mapping[str, Any]]) -> str | None:
    """The process group most collectives ran in (the default one, in a plain DDP/FSDP job)."""
    counts: dict[str, int] = {}
    for e in entries:
        pg = e.get("process_group")
        name = str(pg[0]) if isinstance(pg, list | tuple) and pg else str(e.get("pg_id", ""))
        counts[name] = counts.get(name, 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else None


def rank_trace(rank: int, dump: Mapping[str, Any]) -> RankTrace:
    entries = [e for e in dump.get("entries") or () if isinstance(e, Mapping)
               and not e.get("is_p2p") and isinstance(e.get("collective_seq_id"), int)]
    pg = _default_pg(entries)

    def in_pg(e: Mapping[str, Any]) -> bool:
        p = e.get("process_group")
        name = str(p[0]) if isinstance(p, list | tuple) and p else str(e.get("pg_id", ""))
        return name == pg

    mine = [e for e in entries if in_pg(e)]
    version = str(dump.get("version") or "")
    if not mine:
        return RankTrace(rank, None, None, None, None, version)
    last = max(mine, key=lambda e: e["collective_seq_id"])
    completed = [e["collective_seq_id"] for e in mine if e.get("state") == "completed"]
    return RankTrace(rank, int(last["collective_seq_id"]), _op(last), str(last.get("state")),
                     max(completed) if completed else None, version)


def summarize_dumps(traces: Sequence[RankTrace],
                    unread: Sequence[tuple[int, Text | str]] = ()) -> FlightRecorderSummary:
    """The ranks behind: those whose last enqueued collective is older than the newest any
    rank enqueued (the collective the others wait in)."""
    known = [t for t in traces if t.last_seq is not None]
    ranks = tuple(sorted(traces, key=lambda t: t.rank))
    if not known:
        return FlightRecorderSummary(ranks, (), None, None, tuple(unread))
    newest = max(t.last_seq for t in known if t.last_seq is not None)
    waiting = next(t for t in sorted(known, key=lambda t: t.rank) if t.last_seq == newest)
    behind = tuple(sorted(t.rank for t in known if t.last_seq is not None
                          and t.last_seq < newest))
    return FlightRecorderSummary(ranks, behind, newest, waiting.last_op, tuple(unread))
