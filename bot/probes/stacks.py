"""The Python stacks of a running job's trainer processes, on every node, with py-spy.

One `srun --overlap --jobid=J --ntasks-per-node=1` step runs a small stdlib script on each
node of the job: it finds the job's processes there (`scontrol listpids J`, or the trainer
PIDs the sampler saw on the batch host), keeps the trainers (Python processes with a rank,
not their DataLoader workers), runs `py-spy dump --json` on each in parallel and prints one
JSON line after a marker. bot.core.stacks reads it.

What comes back over SSH is bounded: each node's line keeps within its share of
MAX_OUTPUT_BYTES (the bound over the step's nodes, SLURM_STEP_NUM_NODES), in bytes of UTF-8 as
the SSH runner's output bound and a kept post's file bound count them. A node over its
share sends its processes' main threads only (the ones the grouping compares), then, while
still over, leaves out its largest processes' stacks (each then a failure saying so); its line
says what it left out (`truncated`), and the dump attached to the thread ends saying it
(bot.core.stacks.format_dump). A job of many ranks and threads is not read over SSH whole.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from bot.core.stacks import MARKER, StackReport, build_report

if TYPE_CHECKING:
    from bot.services.ports import Runner

# Runs on each node. Stdlib only, Python >= 3.6. Never raises: every failure is data.
NODE_SCRIPT = r'''
import json, os, re, socket, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
job, pyspy, timeout, hint = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[5]
native = sys.argv[4] == "1"
host = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
out = {"host": host, "procs": []}
MARK = "__MARKER__"
nodes = os.environ.get("SLURM_STEP_NUM_NODES") or os.environ.get("SLURM_NNODES") or "1"
share = int(sys.argv[6]) // max(1, int(nodes) if nodes.isdigit() else 1)

def is_main(p, t):
    return t.get("os_thread_id") == p["pid"] or t.get("thread_name") == "MainThread"

def size(line):
    """The bytes (UTF-8) of the node's output line: what its share counts."""
    return len((MARK + line).encode("utf-8"))

def bounded():
    """out's line, within the node's share: main threads only, then fewer stacks."""
    line = json.dumps(out)
    if size(line) < share:
        return line
    threads = 0
    for p in out["procs"]:
        ts = p.get("threads")
        if p.get("ok") and isinstance(ts, list) and len(ts) > 1:
            main = [t for t in ts if isinstance(t, dict) and is_main(p, t)][:1] or ts[:1]
            threads += len(ts) - len(main)
            p["threads"] = main
    out["truncated"] = {"threads": threads, "procs": 0, "share": share}
    line = json.dumps(out)
    while size(line) >= share:
        kept = [p for p in out["procs"] if p.get("ok")]
        if not kept:
            break
        big = max(kept, key=lambda p: len(json.dumps(p)))
        for k in ("threads", "ok"):
            big.pop(k, None)
        big.update(ok=False, error="left out: this node's stacks are over its %d-byte share "
                   "of what the collection sends back" % share)
        out["truncated"]["procs"] += 1
        line = json.dumps(out)
    return line

def done():
    sys.stdout.write(MARK + bounded() + "\n")
    sys.stdout.flush()
    sys.exit(0)

def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()

def facts(pid):
    cmd = read("/proc/%d/cmdline" % pid).split(b"\0")
    cmd = [c.decode("utf-8", "replace") for c in cmd if c]
    stat = read("/proc/%d/stat" % pid)
    ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
    env = {}
    try:
        for kv in read("/proc/%d/environ" % pid).split(b"\0"):
            k, _, v = kv.partition(b"=")
            if k in (b"RANK", b"SLURM_PROCID", b"SLURM_STEP_ID", b"LOCAL_RANK"):
                env[k.decode()] = v.decode("utf-8", "replace")
    except OSError:
        env = None
    try:
        comm = read("/proc/%d/comm" % pid).decode("utf-8", "replace").strip()
    except OSError:
        comm = ""
    return {"pid": pid, "ppid": ppid, "cmd": cmd, "env": env, "comm": comm}

def is_python(p):
    names = [p["comm"]] + ([os.path.basename(p["cmd"][0])] if p["cmd"] else [])
    return any(re.match(r"python[0-9.]*$", n) or n.startswith("pt_") for n in names)

if not (os.path.isfile(pyspy) and os.access(pyspy, os.X_OK)):
    out["error"] = "pyspy_absent"
    out["detail"] = "%s: not an executable file on %s" % (pyspy, host)
    done()

pids = {}
hinted = dict(h.split("=", 1) for h in hint.split(";") if "=" in h)
if host in hinted:  # the sampler's trainers, when they still run
    pids = dict((int(p), None) for p in hinted[host].split(",")
                if p.isdigit() and os.path.exists("/proc/%s" % p))
if not pids:
    try:
        r = subprocess.run(["scontrol", "listpids", job], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        if r.returncode != 0:
            out["error"] = "failed"
            err = r.stderr.decode("utf-8", "replace").strip()[-300:]
            out["detail"] = "scontrol listpids %s: %s" % (job, err)
            done()
        for line in r.stdout.decode("utf-8", "replace").splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3 and cols[0].isdigit():
                pids[int(cols[0])] = cols[2]
    except Exception as exc:
        out["error"] = "failed"
        out["detail"] = "scontrol listpids %s: %s" % (job, exc)
        done()
me = os.environ.get("SLURM_STEP_ID")
procs = []
for pid, step in sorted(pids.items()):
    if step is not None and (step == me or step == "extern") or pid == os.getpid():
        continue
    try:
        p = facts(pid)
    except OSError:
        continue  # ended meanwhile
    if not is_python(p) or any("bot.probes.sampler" in c for c in p["cmd"]):
        continue
    p["step"] = step
    procs.append(p)

def key(p, name):
    env = p["env"] or {}
    return env.get(name)

use = "RANK" if any(key(p, "RANK") is not None for p in procs) else "SLURM_PROCID"
by_pid = dict((p["pid"], p) for p in procs)

def same_rank(a, b):
    """b is a's DataLoader worker: same rank, or (environ unreadable) forked from it."""
    if a["env"] is not None and b["env"] is not None:
        return key(a, use) == key(b, use)
    return a["env"] is None and b["env"] is None and a["cmd"] == b["cmd"]

launchers = set()
for p in procs:  # a Python parent, of no rank, of processes of other ranks: torchrun and the like
    parent = by_pid.get(p["ppid"])
    if parent is not None and key(parent, "RANK") is None and not same_rank(parent, p):
        launchers.add(parent["pid"])
trainers = []
for p in procs:
    rank = key(p, use)
    if p["pid"] in launchers or (p["env"] is not None and use == "RANK" and rank is None):
        continue  # a launcher above the ranks
    parent = by_pid.get(p["ppid"])
    if parent is not None and parent["pid"] not in launchers and same_rank(parent, p):
        continue  # a DataLoader worker of its rank
    p["rank"] = int(rank) if rank is not None and rank.isdigit() else None
    trainers.append(p)
if not trainers:
    out["error"] = "no_processes"
    out["detail"] = "no Python process of job %s on %s" % (job, host)
    done()

def dump(p):
    argv = [pyspy, "dump", "--pid", str(p["pid"]), "--json"] + (["--native"] if native else [])
    res = {"pid": p["pid"], "ppid": p["ppid"], "rank": p.get("rank"), "step": p["step"],
           "cmd": " ".join(p["cmd"])[:200]}
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        res.update(ok=False, error="py-spy dump timed out after %.0f s" % timeout)
        return res
    except OSError as exc:
        res.update(ok=False, error=str(exc))
        return res
    if r.returncode == 0:
        try:
            res.update(ok=True, threads=json.loads(r.stdout.decode("utf-8", "replace")))
            return res
        except ValueError:
            pass
    res.update(ok=False, error=(r.stderr or r.stdout).decode("utf-8", "replace")[-600:],
               gone=not os.path.exists("/proc/%d" % p["pid"]))
    return res

with ThreadPoolExecutor(max_workers=min(8, len(trainers))) as pool:
    out["procs"] = list(pool.map(dump, trainers))
done()
'''.replace("__MARKER__", MARKER)


def hint_arg(trainer_pids: Mapping[str, Iterable[int]] | None) -> str:
    """`host=pid,pid;host=…` for the node script: the trainer PIDs the sampler saw, by host."""
    if not trainer_pids:
        return ""
    return ";".join(f"{host}={','.join(str(p) for p in pids)}"
                    for host, pids in sorted(trainer_pids.items()) if pids)


# The most the collection's nodes send back over SSH, all together (each node its share).
MAX_OUTPUT_BYTES = 4 << 20


def build_stacks_argv(job_id: str, pyspy: str, *, per_process_timeout_s: float = 10.0,
                      native: bool = False, python: str = "python3",
                      trainer_pids: Mapping[str, Iterable[int]] | None = None,
                      max_output_bytes: int = MAX_OUTPUT_BYTES) -> list[str]:
    """The `srun` argv that runs the node script once on every node of running job `job_id`,
    beside its steps (`--overlap`, no memory of its own so a full job still admits it), the
    nodes' lines within `max_output_bytes` together (see module doc)."""
    if not job_id.isdigit():
        raise ValueError(f"job id {job_id!r} is not a number")
    return ["srun", f"--jobid={job_id}", "--overlap", "--ntasks-per-node=1", "--mem=0",
            "--quiet", "--kill-on-bad-exit=0", python, "-c", NODE_SCRIPT, job_id, pyspy,
            f"{per_process_timeout_s:.1f}", "1" if native else "0", hint_arg(trainer_pids),
            str(max_output_bytes)]


def shown(argv: Sequence[str]) -> str:
    """The argv as a person would type it, the node script elided."""
    return shlex.join("<stacks script>" if a == NODE_SCRIPT else a for a in argv)


def collect_stacks(runner: Runner, job_id: str, pyspy: str, *, timeout_s: float,
                   collected_at: str, native: bool = False,
                   trainer_pids: Mapping[str, Iterable[int]] | None = None) -> StackReport:
    """Run the collection through `runner` within `timeout_s`; every outcome is a report
    (a timeout is the `timed_out` problem). Raises the runner's ClusterUnavailable."""
    from bot.cluster.errors import CommandTimedOut

    per_process = max(2.0, min(10.0, timeout_s / 3))
    argv = build_stacks_argv(job_id, pyspy, per_process_timeout_s=per_process, native=native,
                             trainer_pids=trainer_pids)
    try:
        result = runner.run(argv, timeout=timeout_s, check=False)
    except CommandTimedOut as exc:
        return build_report(job_id, None, "", str(exc), collected_at=collected_at)
    return build_report(job_id, result.exit_code, result.stdout, result.stderr,
                        collected_at=collected_at)
