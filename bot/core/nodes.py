"""Which node a hardware or node fault happened on, read from log lines (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Node-naming forms, most specific first; group 1 is the node.
_NODE_PATTERNS = tuple(re.compile(p) for p in (
    # Megatron's rerun machine naming the GPU it suspects (the one the rerun must avoid); not
    # its `Possible persistent error` line, printed on the other, healthy GPU
    r"node ([A-Za-z0-9][\w.-]*), device [0-9]+, iteration #[0-9]+: (?:Possible transient error"
    r"|First rerun: unexpected result is reproducible)",
    r"Got rescheduled on the same GPU\..*\(node: ([A-Za-z0-9][\w.-]*), gpu: [0-9]+\)",
    r"\*\*\* (?:JOB|STEP) \S+ ON (\S+) CANCELLED",  # slurmstepd
    r"Node failure on ([A-Za-z0-9][\w.-]*)",  # srun / salloc
    r"srun: error: ([A-Za-z0-9][\w.-]*): tasks? [0-9]",  # srun: error: gpu-a07: task 0: ...
    r"^([A-Za-z][\w.-]*):[0-9]+:[0-9]+ \[[0-9]+\] ",  # NCCL: host:pid:tid [gpu] ...
    r"[Hh]ostname[=: ]+([A-Za-z0-9][\w.-]*)",  # Torch: Hostname cn-229, hostname=...
    r"\bon (?:node|host) ([A-Za-z0-9][\w.-]*)",
    r"^\S+ \d+ [\d:]+ ([A-Za-z][\w.-]*) kernel: ",  # syslog: Mar 10 01:33:03 cpu-6-2 kernel:
))


def node_in(lines: Iterable[str]) -> str | None:
    """The node the given lines name (the first form that matches, earliest line first)."""
    texts = list(lines)
    for pattern in _NODE_PATTERNS:
        for text in texts:
            m = pattern.search(text)
            if m:
                return m.group(1).rstrip(".,:;")
    return None


def excluding(excluded: str | None, node: str) -> str:
    """An --exclude list (`excluded`, e.g. a recipe's own) with `node` added once."""
    nodes = [n for n in (excluded or "").split(",") if n]
    return ",".join(nodes if node in nodes else [*nodes, node])
