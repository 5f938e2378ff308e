#!/usr/bin/env python3
"""A stand-in training job for trainbot's dev cluster and demo: a realistic log, real failures.

Runs on the cluster node with the system python3 under sbatch (standard library only). It
prints the log a distributed trainer prints (ISO timestamps, `iter=120/8000 loss=0.734
s/iter=4.50 host_rss=72.1GiB` lines, occasional Megatron-style lines), saves "checkpoints" in
the shape of torch.distributed.checkpoint (`<ckpt_dir>/iter_000001000/__0_0.distcp ...`, then
`.metadata` LAST, then `latest_checkpoint.txt` replaced atomically), resumes from
`$TRAINBOT_RESUME_FROM` or the pointer file, and fails the way the incident reports did
(docs/incidents.md in the trainbot repository):

  healthy           reaches --target-iter and prints `Training complete: ...`
  leak              really grows its RSS (a bytearray kept per iteration) and prints it
  stall-then-nccl   stops at --stall-at, prints nothing for --stall-seconds (or until the file
                    --stall-until exists), then prints the NCCL watchdog abort and dies
                    with SIGABRT (os.abort); once per
                    checkpoint dir, so the resumed attempt trains on (a transient hang).
                    With --rank-procs N the trainer is rank 0 of N processes: during the
                    stall every rank waits in `all_gather` <- `train_step`, except
                    --nccl-rank, stuck in `DataLoader._get_data` <- `DataLoader.__next__`
  save-oom          at save number --oom-on-save allocates memory beyond the job's --mem
                    (SLURM_MEM_PER_NODE) so Slurm kills it DURING the save: a partial
                    checkpoint dir is left without .metadata and without pointer update
  nan               the loss becomes nan at --nan-at, then FloatingPointError
  compiler-missing  the Triton "Failed to find C compiler" error at the first compiled step
  cuda-oom          torch.OutOfMemoryError at --cuda-oom-at
  gpu-ecc           `CUDA error: uncorrectable ECC error encountered` at --gpu-fault-at (a GPU
                    fault of the node); once per checkpoint dir, so the resumed run trains on

Scenarios combine with commas (`--scenario leak,stall-then-nccl` is the demo's story).
Arguments may also be given as `key=value` (`target_iter=400`), the form trainbot appends
for a recipe's overrides. Everything random comes from --seed: same seed, same losses.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

SCENARIOS = (
    "healthy",
    "leak",
    "stall-then-nccl",
    "save-oom",
    "nan",
    "compiler-missing",
    "cuda-oom",
    "gpu-ecc",
)
POINTER = "latest_checkpoint.txt"
MIB = 1024**2
GIB = 1024**3


# --- fake library errors, so tracebacks read like the real ones --------------------------


class OutOfMemoryError(RuntimeError):
    """Printed as `torch.OutOfMemoryError: CUDA out of memory. ...` (real traceback)."""


OutOfMemoryError.__module__ = "torch"


class InductorError(RuntimeError):
    """Printed as `torch._inductor.exc.InductorError: RuntimeError: Failed to find C ...`."""


InductorError.__module__ = "torch._inductor.exc"

C_COMPILER_MESSAGE = (
    "Failed to find C compiler. Please specify via CC environment variable or set "
    "triton.knobs.build.impl."
)


# --- log lines ----------------------------------------------------------------------------


def stamp(now: datetime | None = None) -> str:
    """ISO UTC timestamp with milliseconds, as the trainer's logger prints it."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def glog_stamp(level: str = "E") -> str:
    """c10's glog-style prefix time: `E1129 08:50:01.123456789`."""
    now = datetime.now(UTC)
    return f"{level}{now:%m%d %H:%M:%S}.{now.microsecond:06d}{random.randint(100, 999)}"


def log(msg: str, level: str = "INFO") -> None:
    print(f"{stamp()} {level:<5} train: {msg}", flush=True)


def host_rss_bytes() -> int:
    """This process's resident set size (what Slurm's jobacct_gather and psutil see)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def fmt_mem(n: int) -> str:
    """`72.1GiB` from 1 GiB up, else `312.4MiB` (both units trainbot's metrics read)."""
    return f"{n / GIB:.1f}GiB" if n >= GIB else f"{n / MIB:.1f}MiB"


def loss_at(iteration: int, seed: int) -> float:
    """Deterministic per iteration (independent of where the run resumed): 1.3 -> ~0.7."""
    noise = random.Random(seed * 1_000_003 + iteration).uniform(-0.06, 0.06)
    return 0.7 + 0.6 * math.exp(-iteration / 150.0) + noise


def job_mem_limit_bytes(args: argparse.Namespace) -> int | None:
    """The job's memory limit: --mem-limit-mib, else Slurm's SLURM_MEM_PER_NODE (MiB)."""
    if args.mem_limit_mib:
        return int(args.mem_limit_mib * MIB)
    value = os.environ.get("SLURM_MEM_PER_NODE")
    if value and value.isdigit() and int(value) > 0:
        return int(value) * MIB
    return None


def mem_available_bytes() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# --- checkpoints --------------------------------------------------------------------------


def checkpoint_dir(root: str, iteration: int) -> str:
    return os.path.join(root, f"iter_{iteration:09d}")


def write_pointer(root: str, target: str) -> None:
    """Replace the pointer file atomically: readers see the old or the new one, never half."""
    tmp = os.path.join(root, f".{POINTER}.tmp.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(target + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(root, POINTER))


def write_shard(path: str, size: int, rng: random.Random) -> None:
    with open(path, "wb") as f:
        f.write(rng.randbytes(size))
        f.flush()
        os.fsync(f.fileno())


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.scenarios = set(args.scenario)
        self.rng = random.Random(args.seed)
        self.leaked: list[bytes] = []
        self.saves = 0
        self.gathered: list[bytes] = []
        self.peers: list[subprocess.Popen] = []
        self.stall_file: str | None = args.stall_file
        self.parent = os.getppid()

    def orphaned(self) -> bool:
        """A peer rank's rank 0 has ended (the peer ends too)."""
        return os.getppid() != self.parent

    # ---- resume ----

    def resume_point(self) -> tuple[int, str | None]:
        """(iteration to continue after, checkpoint path) from $TRAINBOT_RESUME_FROM or the
        pointer file; (0, None) for a fresh start."""
        path = (self.args.resume or "").strip()
        source = "--resume"
        if not path:
            path = os.environ.get("TRAINBOT_RESUME_FROM", "").strip()
            source = "$TRAINBOT_RESUME_FROM"
        if not path:
            pointer = os.path.join(self.args.ckpt_dir, POINTER)
            if not os.path.exists(pointer):
                log(f"no checkpoint in {self.args.ckpt_dir}: starting from iteration 0")
                return 0, None
            with open(pointer) as f:
                path = f.read().strip()
            source = POINTER
            if not path.startswith("/"):
                path = os.path.join(self.args.ckpt_dir, path)
        # Like torch.distributed.checkpoint.load: the .metadata file is read first, and a
        # checkpoint without it fails here with FileNotFoundError.
        log(f"resuming from {source} -> {path}")
        t0 = time.monotonic()
        with open(os.path.join(path, ".metadata")) as f:
            meta = json.load(f)
        iteration = int(meta["iteration"])
        for name in meta["shards"]:
            with open(os.path.join(path, name), "rb") as f:
                f.read()
        log(
            f"Loaded checkpoint from {path} (iteration {iteration}) in "
            f"{time.monotonic() - t0:.2f} s"
        )
        return iteration, path

    # ---- saving ----

    def save(self, iteration: int) -> None:
        a = self.args
        self.saves += 1
        path = checkpoint_dir(a.ckpt_dir, iteration)
        t0 = time.monotonic()
        log(f"Saving checkpoint at iteration {iteration} to {path}")
        os.makedirs(path, exist_ok=True)
        shard_bytes = int(a.shard_kib * 1024)
        pause = a.save_seconds / max(1, a.ranks)
        for rank in range(a.ranks):
            write_shard(os.path.join(path, f"__{rank}_0.distcp"), shard_bytes, self.rng)
            time.sleep(pause)
            if "save-oom" in self.scenarios and self.saves == a.oom_on_save and rank == 0:
                self.gather_beyond_limit(iteration)  # killed here: no .metadata, no pointer
        meta = {
            "iteration": iteration,
            "world_size": a.ranks,
            "shards": [f"__{r}_0.distcp" for r in range(a.ranks)],
            "shard_bytes": shard_bytes,
            "seed": a.seed,
        }
        # .metadata is written LAST (as DCP does): its presence marks a complete checkpoint.
        tmp = os.path.join(path, ".metadata.tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(path, ".metadata"))
        write_pointer(a.ckpt_dir, path)
        self.gathered.clear()
        log(
            f"Saved checkpoint at iteration {iteration} to {path} in "
            f"{time.monotonic() - t0:.2f} s (host_rss={fmt_mem(host_rss_bytes())})"
        )

    def gather_beyond_limit(self, iteration: int) -> None:
        """Gather 'full state dicts' on the CPU until past the job's --mem (story 1).

        Slurm's OverMemoryKill (or the cgroup) kills the job while this memory is held. The
        amount is bounded by the job's limit x --save-oom-factor and by half of the node's
        available memory, so a missing limit never takes the shared node down.
        """
        a = self.args
        limit = job_mem_limit_bytes(a)
        if limit is None:
            raise SystemExit(
                "fake_train: --scenario save-oom needs the job's memory limit: submit with "
                "sbatch --mem=... (SLURM_MEM_PER_NODE) or pass --mem-limit-mib"
            )
        goal = int(limit * a.save_oom_factor)
        ceiling = mem_available_bytes() // 2
        if goal > ceiling:
            raise SystemExit(
                f"fake_train: save-oom would allocate {fmt_mem(goal)} but only "
                f"{fmt_mem(ceiling)} may be used safely on this node; lower --mem"
            )
        log(
            f"gathering full optimizer state on CPU for rank 0 "
            f"(bf16 weights + fp32 master + Adam + EMA), host_rss={fmt_mem(host_rss_bytes())}"
        )
        chunk = 16 * MIB
        while host_rss_bytes() < goal:
            self.gathered.append(b"\x5a" * chunk)  # bytes(): every page really touched
            time.sleep(0.02)
        deadline = time.monotonic() + a.save_oom_hold_s
        while time.monotonic() < deadline:  # Slurm's accounting polls every second or so
            time.sleep(0.2)
        log(
            f"WARNING: still alive {a.save_oom_hold_s:.0f} s after passing the memory limit "
            f"({fmt_mem(host_rss_bytes())} > {fmt_mem(limit)}): is memory enforced here?",
            level="WARN",
        )

    # ---- failures ----

    def start_peer_ranks(self) -> None:
        """Ranks 1..N-1 as processes of their own (RANK in their environment, as torchrun
        sets it), waiting with rank 0 until the stall, then where the stall leaves them."""
        a = self.args
        if a.rank_procs <= 1:
            return
        self.stall_file = os.path.join(a.ckpt_dir, f".fake_train_stall.{os.getpid()}")
        for rank in range(1, a.rank_procs):
            env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(a.rank_procs))
            self.peers.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--as-rank", str(rank),
                 "--nccl-rank", str(a.nccl_rank), "--stall-file", self.stall_file], env=env))

    def stall_then_abort(self, iteration: int, last_progress: float) -> None:
        """Progress stops (a rank is stuck), nothing is logged, then rank 3's NCCL watchdog."""
        a = self.args
        if a.as_rank is not None:  # a peer rank: where the stall leaves it, until rank 0 ends
            if a.as_rank == a.nccl_rank:
                next(DataLoader(self.orphaned))
            else:
                train_step(self.orphaned, None)
            return
        if self.stall_file:
            with open(self.stall_file, "w") as f:
                f.write(f"{iteration}\n")
        # rank 0 waits for the others' all_gather: --stall-seconds, or until --stall-until exists
        if a.stall_until:
            train_step(lambda: os.path.exists(a.stall_until), None)
        else:
            train_step(lambda: False, a.stall_seconds)
        if self.stall_file:
            os.unlink(self.stall_file)
        ran_ms = int((time.monotonic() - last_progress) * 1000)
        timeout_ms = a.nccl_timeout_ms or max(1, int(a.stall_seconds * 1000))
        rank = a.nccl_rank
        seq = iteration * 313 + 17
        work = (
            f"WorkNCCL(SeqNum={seq}, OpType=ALLGATHER, NumelIn=1, NumelOut={a.world_size}, "
            f"Timeout(ms)={timeout_ms}) ran for {ran_ms} milliseconds before timing out."
        )
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
        lines = [
            f"[Rank {rank}] Watchdog caught collective operation timeout: {work}",
            f"{pg} Exception (either an error or timeout) detected by watchdog at work: {seq}, "
            f"last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
            f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
            f"{pg} Process group watchdog thread terminated with exception: [Rank {rank}] "
            f"Watchdog caught collective operation timeout: {work}",
        ]
        cpp_lines = (616, 1785, 630, 636, 1595)
        for cpp, text in zip(cpp_lines, lines, strict=True):
            print(f"[rank{rank}]:[{glog_stamp()} ProcessGroupNCCL.cpp:{cpp}] {text}", flush=True)
        lib = "/opt/conda/envs/wm/lib/python3.11/site-packages/torch/lib"
        trace = [
            "Exception raised from checkTimeout at "
            "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call "
            "first):",
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 "
            f"(0x7f3b6d41df86 in {lib}/libc10.so)",
            "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono"
            "::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 "
            f"(0x7f3b6e71a8d2 in {lib}/libtorch_cuda.so)",
            "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 "
            f"(0x7f3b6e721313 in {lib}/libtorch_cuda.so)",
            "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c "
            f"(0x7f3b6e7236fc in {lib}/libtorch_cuda.so)",
            "",
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {pg} Process group watchdog thread terminated with exception: "
            f"[Rank {rank}] Watchdog caught collective operation timeout: {work}",
        ]
        sys.stderr.write("\n".join(trace) + "\n")
        sys.stderr.flush()
        os.abort()  # SIGABRT, as std::terminate does; faulthandler prints the Python stack

    def may_stall(self) -> bool:
        """A hang is transient: once per checkpoint dir (a marker file), so the resumed
        attempt of the same run trains on, unless --stall-every-run."""
        marker = os.path.join(self.args.ckpt_dir, ".fake_train_stalled")
        if os.path.exists(marker) and not self.args.stall_every_run:
            log("(stall-then-nccl already played for this run: training on)", level="DEBUG")
            return False
        with open(marker, "w") as f:
            f.write(f"{os.environ.get('SLURM_JOB_ID', os.getpid())}\n")
        return True

    def once(self, what: str) -> bool:
        """True the first time `what` happens in this checkpoint dir (a marker file)."""
        marker = os.path.join(self.args.ckpt_dir, f".fake_train_{what}")
        if os.path.exists(marker):
            return False
        with open(marker, "w") as f:
            f.write(f"{os.environ.get('SLURM_JOB_ID', os.getpid())}\n")
        return True

    def cuda_oom(self) -> None:
        raise OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.10 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process "
            "has 78.07 GiB memory in use. Of the allocated memory 75.50 GiB is allocated by "
            "PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )

    def compile_kernels(self) -> None:
        """The first compiled step builds Triton kernels, which needs a C compiler."""
        try:
            _build("flex_attention_fwd")
        except RuntimeError as exc:
            raise InductorError(f"RuntimeError: {exc}") from exc

    # ---- the loop ----

    def run(self) -> int:
        a = self.args
        if a.as_rank is not None:  # a peer rank (--rank-procs): steps with rank 0, silently
            while not self.orphaned() and not os.path.exists(a.stall_file):
                train_step(self.orphaned, 0.2)
            if not self.orphaned():
                self.stall_then_abort(0, 0.0)
            return 0
        print(
            f"[trainer] pid {os.getpid()} on {os.uname().nodename}, job "
            f"{os.environ.get('SLURM_JOB_ID', '-')}, scenario {','.join(a.scenario)}",
            flush=True,
        )
        log(
            f"world_size={a.world_size} target_iter={a.target_iter} seed={a.seed} "
            f"save_every={a.save_every} attention=flex compile=true"
        )
        os.makedirs(a.ckpt_dir, exist_ok=True)
        start, _ = self.resume_point()
        if start >= a.target_iter:
            log(f"Training complete: reached iteration {start}/{a.target_iter} (nothing to do)")
            return 0
        todo = a.target_iter - start
        self.start_peer_ranks()
        stall_at = a.stall_at if a.stall_at is not None else start + max(1, todo // 3)
        nan_at = a.nan_at if a.nan_at is not None else start + max(1, todo // 2)
        oom_at = a.cuda_oom_at if a.cuda_oom_at is not None else start + 3
        leak_bytes = int(a.leak_mib_per_iter * MIB) if "leak" in self.scenarios else 0
        t_start = time.monotonic()
        next_tick = t_start
        last_log_t, last_log_iter = t_start, start
        last_progress = t_start
        nan_seen = 0
        for it in range(start + 1, a.target_iter + 1):
            if "compiler-missing" in self.scenarios and it == start + 1:
                self.compile_kernels()
            if "cuda-oom" in self.scenarios and it == oom_at:
                self.cuda_oom()
            if "gpu-ecc" in self.scenarios and it == a.gpu_fault_at and self.once("gpu_fault"):
                raise RuntimeError(
                    "CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might "
                    "be asynchronously reported at some other API call, so the stacktrace "
                    "below might be incorrect.")
            next_tick += a.sec_per_iter
            time.sleep(max(0.0, next_tick - time.monotonic()))
            if leak_bytes:
                self.leaked.append(b"\x5a" * leak_bytes)  # kept forever: the decoder cache
            loss = loss_at(it, a.seed)
            if "nan" in self.scenarios and it >= nan_at:
                loss = float("nan")
                nan_seen += 1
            now = time.monotonic()
            if it % a.log_every == 0 or it == a.target_iter or nan_seen:
                spi = (now - last_log_t) / max(1, it - last_log_iter)
                log(
                    f"iter={it}/{a.target_iter} loss={loss:.4f} s/iter={spi:.2f} "
                    f"host_rss={fmt_mem(host_rss_bytes())} lr={3e-4 * min(1.0, it / 100):.2e}"
                )
                last_log_t, last_log_iter = now, it
            if a.megatron_every and it % a.megatron_every == 0:
                self.megatron_line(it, loss, (now - last_progress) * 1000)
            last_progress = now
            if nan_seen >= 2:
                raise FloatingPointError(
                    f"Loss is nan at iteration {it} (grad norm inf): training diverged"
                )
            if a.save_every and it % a.save_every == 0 and it < a.target_iter:
                self.save(it)
                next_tick = time.monotonic()
            if "stall-then-nccl" in self.scenarios and it == stall_at and self.may_stall():
                self.stall_then_abort(it, last_progress)
        if a.save_every:
            self.save(a.target_iter)
        log(
            f"Training complete: reached iteration {a.target_iter}/{a.target_iter} in "
            f"{time.monotonic() - t_start:.1f} s"
        )
        return 0

    def megatron_line(self, it: int, loss: float, ms: float) -> None:
        now = datetime.now(UTC)
        print(
            f" [{now:%Y-%m-%d %H:%M:%S}] iteration {it:>8}/{self.args.target_iter:>8} | "
            f"consumed samples: {it * 32:>10} | elapsed time per iteration (ms): {ms:.1f} | "
            f"learning rate: {3e-4 * min(1.0, it / 100):.6E} | global batch size:    32 | "
            f"lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {0.4 + loss / 10:.3f} | "
            "number of skipped iterations:   0 | number of nan iterations:   "
            f"{1 if math.isnan(loss) else 0} |",
            flush=True,
        )


def _build(kernel: str) -> None:
    """What triton/runtime/build.py does on a worker without a compiler.

    The scenario plays a worker image without gcc, so only an explicit, existing `$CC` (the
    fix of story 5 in docs/incidents.md) gets past it.
    """
    cc = os.environ.get("CC", "")
    if cc and os.path.isfile(cc) and os.access(cc, os.X_OK):
        return
    raise RuntimeError(C_COMPILER_MESSAGE)


# --- arguments ----------------------------------------------------------------------------


def normalize_argv(argv: list[str]) -> list[str]:
    """`key=value` (trainbot's override form) -> `--key=value`, with `_` read as `-`."""
    out = []
    for arg in argv:
        if not arg.startswith("-") and "=" in arg:
            key, value = arg.split("=", 1)
            out.append(f"--{key.replace('_', '-')}={value}")
        else:
            out.append(arg)
    return out


def scenario_list(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown scenario {', '.join(unknown) or repr(text)}; use one or more of "
            f"{', '.join(SCENARIOS)} (comma-separated)"
        )
    return names


def positive(kind):  # noqa: ANN001, ANN201 - argparse type factory
    def parse(text: str):  # noqa: ANN202
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fake_train.py",
        description="Fake distributed trainer: realistic logs, DCP-shaped checkpoints, real "
        "failures (see the module docstring).",
    )
    p.add_argument("--scenario", type=scenario_list, default=["healthy"],
                   help=f"one or more of {', '.join(SCENARIOS)}, comma-separated")
    p.add_argument("--target-iter", type=positive(int), default=200)
    p.add_argument("--sec-per-iter", type=float, default=0.05, help="seconds per iteration")
    p.add_argument("--log-every", type=positive(int), default=1)
    p.add_argument("--megatron-every", type=int, default=25,
                   help="also print a Megatron-style line every N iterations (0: never)")
    p.add_argument("--save-every", type=int, default=50, help="checkpoint every K (0: never)")
    p.add_argument("--ckpt-dir", default="checkpoints")
    p.add_argument("--resume", metavar="CKPT_DIR", default=None,
                   help="resume from this checkpoint (default: $TRAINBOT_RESUME_FROM, then "
                   "the pointer file in --ckpt-dir)")
    p.add_argument("--save-seconds", type=float, default=0.2, help="time one save takes")
    p.add_argument("--shard-kib", type=float, default=64, help="size of each shard file")
    p.add_argument("--ranks", type=positive(int), default=1, help="shard files per save")
    p.add_argument("--world-size", type=positive(int), default=4, help="as printed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--leak-mib-per-iter", type=float, default=2.0)
    p.add_argument("--stall-at", type=int, default=None,
                   help="iteration after which progress stops (default: a third of the way)")
    p.add_argument("--stall-seconds", type=float, default=6.0)
    p.add_argument("--stall-until", metavar="FILE", default=None,
                   help="the stall lasts until FILE exists, not --stall-seconds (a test "
                   "creates it once the bot has seen the stall; the time limit ends it else)")
    p.add_argument("--nccl-timeout-ms", type=int, default=None,
                   help="Timeout(ms) printed by the watchdog (default: the stall)")
    p.add_argument("--nccl-rank", type=int, default=3)
    p.add_argument("--rank-procs", type=positive(int), default=1,
                   help="run as N rank processes (rank 0 trains and logs, the others wait "
                   "with it); in stall-then-nccl, --nccl-rank is stuck in its data loader")
    p.add_argument("--as-rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--stall-file", default=None, help=argparse.SUPPRESS)
    p.add_argument("--stall-every-run", action="store_true",
                   help="stall on every run; default: once per --ckpt-dir (a transient hang)")
    p.add_argument("--oom-on-save", type=positive(int), default=1,
                   help="save-oom: which save of this run blows the memory limit")
    p.add_argument("--save-oom-factor", type=float, default=1.6,
                   help="save-oom: grow RSS to this multiple of the job's limit")
    p.add_argument("--save-oom-hold-s", type=float, default=30.0,
                   help="save-oom: how long to hold the memory waiting for the kill")
    p.add_argument("--mem-limit-mib", type=float, default=None,
                   help="save-oom: the memory limit when not under sbatch --mem")
    p.add_argument("--nan-at", type=int, default=None)
    p.add_argument("--cuda-oom-at", type=int, default=None)
    p.add_argument("--gpu-fault-at", type=int, default=None)
    return p


# --- the other ranks (--rank-procs) ---------------------------------------------------------


def all_gather(done: Callable[[], bool], seconds: float | None) -> None:
    """Waits as a rank waits for the others in a collective: until `done()` or `seconds`."""
    end = None if seconds is None else time.monotonic() + seconds
    while not done() and (end is None or time.monotonic() < end):
        time.sleep(min(0.2, max(0.0, end - time.monotonic())) if end is not None else 0.2)


def train_step(done: Callable[[], bool], seconds: float | None) -> None:
    all_gather(done, seconds)


class DataLoader:
    """The stuck rank's data loader: its next batch never comes."""

    def __init__(self, done: Callable[[], bool]) -> None:
        self.done = done

    def __next__(self) -> None:
        return self._get_data()

    def _get_data(self) -> None:
        while not self.done():
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(normalize_argv(sys.argv[1:] if argv is None else argv))
    if args.rank_procs > 1 and "RANK" not in os.environ and argv is None:
        # Rank 0 too has RANK in its environment (what a stack collector reads), as torchrun
        # starts it.
        env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE=str(args.rank_procs))
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]],
                  env)
    args.ckpt_dir = os.path.abspath(os.path.expanduser(args.ckpt_dir))
    random.seed(args.seed)
    faulthandler.enable()  # "Fatal Python error: Aborted" + stack on SIGABRT, like torch jobs
    return Trainer(args).run()


if __name__ == "__main__":
    sys.exit(main())
