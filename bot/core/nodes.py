"""Which node a hardware or node fault happened on, read from log lines (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.core.hostlist import HostlistError, parse_hostlist, render_hostlist

#: Node-naming forms, most specific first; group 1 is the node.
_NODE_PATTERNS = tuple(re.compile(p) for p in (
    # Megatron's rerun machine naming the GPU it suspects (the one the rerun must avoid); not
    # its `Possible persistent error` line, printed on the other, healthy GPU
    r"node ([A-Za-z0-9][\w.-]*), device [0-9]+, iteration #[0-9]+: (?:Possible transient error"
    r"|First rerun: unexpected result is reproducible)",
    r"Got rescheduled on the same GPU\..*\(node: ([A-Za-z0-9][\w.-]*), gpu: [0-9]+\)",
    # slurmstepd, naming its own node (one name: a bracket there is no node of its)
    r"\*\*\* (?:JOB|STEP) \S+ ON ([A-Za-z0-9][\w.-]*) CANCELLED",
    r"Node failure on ([A-Za-z0-9][\w.,\[\]-]*)",  # srun / salloc: a hostlist, `gpu[01-02]`
    r"srun: error: ([A-Za-z0-9][\w.-]*): tasks? [0-9]",  # srun: error: gpu-a07: task 0: ...
    r"^([A-Za-z][\w.-]*):[0-9]+:[0-9]+ \[[0-9]+\] ",  # NCCL: host:pid:tid [gpu] ...
    r"[Hh]ostname[=: ]+([A-Za-z0-9][\w.-]*)",  # Torch: Hostname cn-229, hostname=...
    r"\bon (?:node|host) ([A-Za-z0-9][\w.-]*)",
    r"^\S+ \d+ [\d:]+ ([A-Za-z][\w.-]*) kernel: ",  # syslog: Mar 10 01:33:03 cpu-6-2 kernel:
))


#: The most nodes a log's line is taken to name as faulty (srun's `Node failure on` hostlist):
#: a line naming more (`n[1-40000]`) names no node to leave out.
LOG_NODES_MAX = 64


def node_in(lines: Iterable[str]) -> str | None:
    """The node (or, from srun's `Node failure on`, the hostlist of at most LOG_NODES_MAX
    nodes) the given lines name: the first form that matches, earliest line first, whose
    name reads as a hostlist (bot.core.hostlist) of that many nodes at most."""
    texts = list(lines)
    for pattern in _NODE_PATTERNS:
        for text in texts:
            m = pattern.search(text)
            if m and (nodes := _log_nodes(m.group(1).rstrip(".,:;"))):
                return render_hostlist(nodes)
    return None


def _log_nodes(text: str) -> list[str]:
    """The nodes a log's `text` names, read as a hostlist of at most LOG_NODES_MAX nodes;
    none when Slurm would not read it or it names more."""
    try:
        return parse_hostlist(text, limit=LOG_NODES_MAX)
    except HostlistError:
        return []


def hostlist_nodes(text: str | None) -> list[str]:
    """The node names of hostlist `text` (bot.core.hostlist.parse_hostlist); a text Slurm's
    grammar does not read (written by hand, stored before hostlists were read) is one name."""
    try:
        return parse_hostlist(text)
    except HostlistError:
        return [text.strip()] if text and text.strip() else []


def excluding(excluded: str | None, nodes: str | Iterable[str]) -> str:
    """An --exclude hostlist: `excluded` (e.g. a recipe's own `gpu[01-03,07]`, kept as it is
    written) with the nodes of `nodes` (a hostlist, or node names) it does not name yet after
    it, folded into one hostlist; `excluded` ('' for None) when it names them all. Brackets
    are read, never cut at their commas."""
    have = set(hostlist_nodes(excluded))
    named = hostlist_nodes(nodes) if isinstance(nodes, str) else list(nodes)
    extra = [n for n in dict.fromkeys(named) if n and n not in have]
    return ",".join(p for p in (excluded or "", render_hostlist(extra)) if p)


def left_out_beyond(own: str | None, exclude: str | None) -> str | None:
    """The nodes of --exclude hostlist `exclude` that `own` (a recipe's own list) does not
    name, as one hostlist: the nodes a submit left out beyond its recipe's; None when none."""
    have = set(hostlist_nodes(own))
    return render_hostlist(n for n in hostlist_nodes(exclude) if n not in have) or None
