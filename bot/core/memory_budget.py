"""Estimate the host-memory peak of a checkpoint save on one node, before the job runs (pure)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import StrEnum
from typing import Any

from bot.core.findings import Finding, Level
from bot.core.text import N_, SEMICOLONS_OR, Text, join_text, render_text
from bot.core.units import GIB, format_size, quote_value

CHECK_MEMORY_BUDGET = "memory_budget"


class SaveMode(StrEnum):
    """How the training code materialises state on the CPU during a save."""

    FULL_PER_RANK = "full_per_rank"  # every rank gathers the full state (job 87870)
    SHARDED = "sharded"  # DCP sharded state dict: each rank holds 1/world_size
    RANK0 = "rank0"  # full state gathered on rank 0 only, other ranks hold nothing extra


@dataclass(frozen=True)
class SaveMemoryInputs:
    """What the estimate needs; byte sizes are per parameter unless named otherwise."""

    params: int
    ranks_per_node: int
    gpus_per_node: int | None = None  # defaults to ranks_per_node
    nodes: int = 1
    weight_bytes: float = 2.0  # bf16 weights copied to the CPU
    master_bytes: float = 4.0  # fp32 master weights
    optimizer_bytes: float = 8.0  # Adam exp_avg + exp_avg_sq in fp32
    ema_bytes: float = 4.0  # fp32 EMA copy; 0 when the run keeps no EMA
    save_mode: SaveMode = SaveMode.FULL_PER_RANK
    workers_per_rank: int = 0  # DataLoader num_workers (per rank, as in the training config)
    worker_rss_bytes: int = 0  # measured per worker (`trainbot probe dataloader`)
    rank_base_bytes: int = 4 * GIB  # Python + torch + CUDA host context per rank
    overhead_factor: float = 1.2  # allocator fragmentation, staging/pickle buffers

    def __post_init__(self) -> None:
        if self.params <= 0:
            raise ValueError("params must be a positive parameter count (e.g. 1.4e9)")
        if self.ranks_per_node <= 0:
            raise ValueError("ranks_per_node must be at least 1")
        if self.nodes <= 0:
            raise ValueError("nodes must be at least 1")
        if self.overhead_factor < 1.0:
            raise ValueError("overhead_factor must be >= 1.0")


@dataclass(frozen=True)
class BudgetPart:
    name: str  # its id, English (`model+optimizer state`); `label` is the sentence to show
    bytes: int
    why: Text

    @property
    def label(self) -> Text:
        return _PART_LABELS[self.name]


_PART_LABELS = {"model+optimizer state": N_("model+optimizer state"),
                "rank processes": N_("rank processes"),
                "DataLoader workers": N_("DataLoader workers")}


@dataclass(frozen=True)
class MemoryBudget:
    """The estimate, its parts and the verdict against `--mem` and the site cap."""

    parts: tuple[BudgetPart, ...]
    subtotal_bytes: int
    peak_bytes: int  # subtotal × overhead_factor
    mem_limit_bytes: int | None
    cap_bytes: int | None
    floor_bytes: int | None
    level: Level
    text: Text  # the verdict, translated where shown; its finding's `message` is its English
    suggested_mem: str | None  # an `--mem` value that fits, e.g. "580G"; None if none does
    fix_text: Text | str

    def to_json(self) -> dict[str, Any]:
        """The budget in the JSON report; its verdict and fix in English, as its finding
        renders them."""
        finding = self.finding()
        return {
            "parts": [{"name": p.name, "bytes": p.bytes, "gib": round(p.bytes / GIB, 1),
                       "why": render_text(p.why)} for p in self.parts],
            "subtotal_bytes": self.subtotal_bytes,
            "peak_bytes": self.peak_bytes,
            "peak_gib": round(self.peak_bytes / GIB, 1),
            "mem_limit_bytes": self.mem_limit_bytes,
            "cap_bytes": self.cap_bytes,
            "floor_bytes": self.floor_bytes,
            "level": self.level,
            "message": finding.message,
            "suggested_mem": self.suggested_mem,
            "fix": finding.fix,
        }

    def finding(self) -> Finding:
        return Finding(CHECK_MEMORY_BUDGET, self.level, None, self.text, self.fix_text)


def parse_count(text: str) -> int:
    """A parameter count: `1400000000`, `1.4e9`, `1.4B`, `350M`, `7b`."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kKmMbBtT]?)\s*", text)
    if not m:
        raise ValueError(
            f"{quote_value(text)} is not a parameter count; use e.g. 1.4e9, 1.4B or 350M"
        )
    number = Decimal(m.group(1))
    exponent = {"": 0, "k": 3, "m": 6, "b": 9, "t": 12}[m.group(2).lower()]
    if number.adjusted() + exponent >= 15:  # compared before multiplying: 1e99999999 fits
        raise ValueError(
            f"{quote_value(text)} is too large for a parameter count; at most 999T"
        )
    return int(number.scaleb(exponent))


def format_params(n: float) -> str:
    """A parameter count as people say it: 1.40B, 350M, 1,010."""
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.0f}M"
    return f"{n:,.0f}"


def _state_bytes_per_rank(inp: SaveMemoryInputs) -> tuple[float, Text]:
    """Bytes of model + optimizer state one rank holds on the CPU, and the mode's description."""
    per_param = inp.weight_bytes + inp.master_bytes + inp.optimizer_bytes + inp.ema_bytes
    full = per_param * inp.params
    world = inp.ranks_per_node * inp.nodes
    if inp.save_mode is SaveMode.SHARDED:
        return full / world, N_("1/%(world)s of %(bytes)s B/param (sharded)", world=world,
                                bytes=f"{per_param:g}")
    if inp.save_mode is SaveMode.RANK0:
        return full / inp.ranks_per_node, N_("%(bytes)s B/param on rank 0 only",
                                             bytes=f"{per_param:g}")
    return full, N_("%(bytes)s B/param gathered by every rank", bytes=f"{per_param:g}")


def _parts(inp: SaveMemoryInputs) -> list[BudgetPart]:
    state, how = _state_bytes_per_rank(inp)
    ranks = inp.ranks_per_node
    parts = [
        BudgetPart(
            "model+optimizer state",
            int(state * ranks),
            N_("%(ranks)s rank(s) × %(size)s (%(how)s: weights %(weights)s + master %(master)s "
               "+ Adam %(adam)s + EMA %(ema)s B × %(params)s params)", ranks=ranks,
               size=format_size(state), how=how, weights=f"{inp.weight_bytes:g}",
               master=f"{inp.master_bytes:g}", adam=f"{inp.optimizer_bytes:g}",
               ema=f"{inp.ema_bytes:g}", params=format_params(inp.params)),
        ),
        BudgetPart(
            "rank processes",
            inp.rank_base_bytes * ranks,
            N_("%(ranks)s × %(size)s Python/torch/CUDA host context", ranks=ranks,
               size=format_size(inp.rank_base_bytes)),
        ),
    ]
    workers = inp.workers_per_rank * ranks
    if workers:
        parts.append(BudgetPart(
            "DataLoader workers",
            workers * inp.worker_rss_bytes,
            N_("%(workers)s workers (%(per_rank)s/rank) × %(size)s RSS each", workers=workers,
               per_rank=inp.workers_per_rank, size=format_size(inp.worker_rss_bytes)),
        ))
    return parts


def _round_up_mem(n_bytes: float, step_gib: int = 10) -> tuple[int, str]:
    """Round up to a whole number of `step_gib` GiB; returns (bytes, Slurm `--mem` string)."""
    gib = math.ceil(n_bytes / GIB / step_gib) * step_gib
    return gib * GIB, f"{gib}G"


def estimate_save_peak(
    inp: SaveMemoryInputs,
    *,
    mem_limit_bytes: int | None = None,
    per_gpu_cap_bytes: int | None = None,
    site_floor_bytes: int | None = None,
) -> MemoryBudget:
    """Host peak per node during a save, and whether it fits `--mem` and the site cap.
    `mem_limit_bytes` 0 is Slurm's --mem=0, all of each node's memory: a size preflight does
    not know, so the peak is told against no limit (a warning), never against 0 bytes."""
    parts = _parts(inp)
    subtotal = sum(p.bytes for p in parts)
    peak = int(subtotal * inp.overhead_factor)
    gpus = inp.gpus_per_node or inp.ranks_per_node
    cap = per_gpu_cap_bytes * gpus if per_gpu_cap_bytes else None
    need_bytes, need = _round_up_mem(peak)
    if site_floor_bytes and need_bytes < site_floor_bytes:
        # the site charges the floor anyway: asking for it costs nothing extra
        need_bytes, need = _round_up_mem(site_floor_bytes, step_gib=1)
    biggest = max(parts, key=lambda p: p.bytes)
    breakdown = join_text([N_("%(part)s %(size)s = %(why)s", part=p.label,
                              size=format_size(p.bytes), why=p.why) for p in parts])
    said = {"peak": format_size(peak), "biggest": biggest.label, "breakdown": breakdown,
            "overhead": f"{inp.overhead_factor:g}"}

    if cap is not None and peak > cap:
        return MemoryBudget(
            tuple(parts), subtotal, peak, mem_limit_bytes, cap, site_floor_bytes, "fail",
            N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
               "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. This cannot fit "
               "under the site cap of %(cap)s (%(gpus)s GPUs × %(per_gpu)s)", cap=format_size(cap),
               gpus=gpus, per_gpu=format_size(per_gpu_cap_bytes or 0), **said),
            None,
            _cannot_fit_fix(inp, cap),
        )
    if mem_limit_bytes == 0:
        return MemoryBudget(
            tuple(parts), subtotal, peak, None, cap, site_floor_bytes, "warn",
            N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
               "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. --mem=0 gives "
               "the job all of each node's memory, which preflight does not know: the nodes "
               "need at least %(need)s", need=need, **said),
            need, N_("run on nodes with at least %(need)s of memory, or set --mem=%(need)s "
                     "so Slurm checks it", need=need),
        )
    if mem_limit_bytes is None:
        return MemoryBudget(
            tuple(parts), subtotal, peak, None, cap, site_floor_bytes, "warn",
            N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
               "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. The recipe sets "
               "no --mem; ask for at least --mem=%(need)s", need=need, **said),
            need, N_("set --mem=%(need)s in the recipe", need=need),
        )
    if peak > mem_limit_bytes:
        return MemoryBudget(
            tuple(parts), subtotal, peak, mem_limit_bytes, cap, site_floor_bytes, "fail",
            N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
               "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. That is above "
               "--mem=%(mem)s: the first save will be OOM-killed (job 87870)",
               mem=format_size(mem_limit_bytes), **said),
            need, N_("submit with --mem=%(need)s (site cap %(cap)s); or reduce DataLoader "
                     "workers / save sharded", need=need, cap=format_size(cap)) if cap else
            N_("submit with --mem=%(need)s; or reduce DataLoader workers / save sharded",
               need=need),
        )
    if peak > 0.9 * mem_limit_bytes:
        return MemoryBudget(
            tuple(parts), subtotal, peak, mem_limit_bytes, cap, site_floor_bytes, "warn",
            N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
               "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. That is within "
               "10%% of --mem=%(mem)s; a small leak will tip it over",
               mem=format_size(mem_limit_bytes), **said),
            need, N_("consider --mem=%(need)s", need=need),
        )
    return MemoryBudget(
        tuple(parts), subtotal, peak, mem_limit_bytes, cap, site_floor_bytes, "pass",
        N_("estimated host peak during a checkpoint save: %(peak)s per node, mostly "
           "%(biggest)s. Breakdown: %(breakdown)s; × %(overhead)s overhead. Fits under "
           "--mem=%(mem)s", mem=format_size(mem_limit_bytes), **said),
        need, "",
    )


def _cannot_fit_fix(inp: SaveMemoryInputs, cap: int) -> Text:
    """Concrete ways down: how many workers would fit, what sharding or rank-0 saving gives."""
    options: list[Text] = []
    no_workers = _parts_total(inp, workers_per_rank=0)
    if inp.worker_rss_bytes and inp.workers_per_rank:
        room = cap / inp.overhead_factor - no_workers
        per_rank = int(room // (inp.worker_rss_bytes * inp.ranks_per_node)) if room > 0 else 0
        if per_rank > 0:
            options.append(N_("reduce DataLoader workers to %(n)s/rank", n=per_rank))
    for mode, label in ((SaveMode.SHARDED, N_("save sharded (DCP sharded state dict)")),
                        (SaveMode.RANK0, N_("gather the full state on rank 0 only"))):
        if mode is inp.save_mode:
            continue
        peak = _parts_total(inp, save_mode=mode) * inp.overhead_factor
        if peak <= cap:
            options.append(N_("%(way)s: ≈ %(size)s", way=label, size=format_size(peak)))
    if not options:
        options.append(N_("reduce workers / shard / save from fewer ranks (none fits alone)"))
    return N_("cannot fit under the cap: %(ways)s", ways=join_text(options, SEMICOLONS_OR))


def _parts_total(inp: SaveMemoryInputs, **changes: Any) -> int:
    return sum(p.bytes for p in _parts(replace(inp, **changes)))
