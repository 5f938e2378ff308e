"""The error vocabulary's patterns, tested from a line's start instead of from each of its
characters, name the classes they named: real shapes match, near misses do not, and a table of
lines (and of generated word salads) gets the same answer from the former patterns."""
import random
import re

import pytest

from bot.core.diagnose import ending

_FORMER = {
    "cuda_oom": r"(?i)(?=.*\b(?:cuda|gpu|device|vram|hbm|cudnn|cublas)\b).*\b(?:out of memory|oom"
    r"|not enough memory|insufficient memory|memory (?:is )?exhausted)\b",
    "host_oom": r"(?i)\boom[-_ ]?kill|\bmemory cgroup\b|(?=.*\b(?:host|system|cpu|ram|physical)\b)"
    r"(?!.*\b(?:cuda|gpu|device)\b).*\b(?:out of memory|not enough memory"
    r"|insufficient memory|memory (?:is )?exhausted)\b",
    "nan_loss": r"(?i)(?=.*\b(?:loss|grad\w*|norm|diverg\w*)\b).*(?:(?:[=:(\[,]\s*|\b(?:is|was|are"
    r"|became|becomes|become|got|to)\s+)-?(?:nan|inf)\b|non-finite|not finite)",
    "nccl_timeout": r"(?i)(?!.*\bCUDA error\b)"
    r"(?=.*\b(?:nccl|gloo|collective|all_?reduce|all_?gather|reduce_?scatter"
    r"|broadcast|barrier|process ?group|c10d)\b).*\b(?:timed? ?out|timeout|watchdog)\b",
    "dataloader_timeout": r"(?i)(?=.*(?:\bdata ?loader|\bdata ?manager\b|\bbatch data\b"
    r"|\b(?:next|a|the) batch\b|\bprefetch\w*|\binput pipeline\b|\bdata queue\b))"
    r"(?!.*\b(?:nccl|gloo|collective|barrier|process ?group|c10d|socket|store)\b)"
    r".*\b(?:timed? ?out|timeout)\b",
    "time_limit": r"(?i)\b(?:wall ?clock|wall ?time|run ?time|cpu ?time) ?limit\b.*\b(?:exceeded"
    r"|reached)\b|\bexceed\w*\b.*\b(?:wall ?clock|wall ?time|h_rt)\b"
    r"|(?=.*\bjob\b).*\bexceed\w*\b.*\btime ?limit\b",
    "gpu_failure": r"(?i)\b(?:ecc|xid|nvlink)\b.*\b(?:error|fault|uncorrectable)|fallen off the bus"
    r"|\bgpu (?:is |was |has been )?lost\b|\bgpu\b.*\b(?:not responding|reset required"
    r"|hardware (?:error|fault|failure))\b",
    "node_failure": r"(?i)\bnodes?\b.*\b(?:fail(?:ed|ure)|down|lost|unreachable|not responding"
    r"|dead|died|crashed|rebooted|notready)\b",
    "compiler_missing": r"(?i)(?=.*(?:\bcompiler\b|\bgcc\b|\bg\+\+|\bclang\b|\bcl(?:\.exe)?\b"
    r"|\bnvcc\b)).*\b(?:not found|no such file|cannot find|could not find|unable to (?:find"
    r"|execute)|missing|not installed|is required)\b",
}
_VOCABULARY = dict(ending._VOCABULARY)

# (class, a line it names, a near miss it does not name)
SHAPES = [
    ("cuda_oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
     "MemoryError: host out of memory"),
    ("cuda_oom", "RuntimeError: cuDNN error: insufficient memory on device 0",
     "insufficient memory for the dataset"),
    ("host_oom", "MemoryError: system out of memory while loading the dataset",
     "system ok; CUDA out of memory"),
    ("host_oom", "RuntimeError: GPU 0 failed; host out of memory",
     "host out of memory on the gpu"),
    ("nan_loss", "ValueError: loss is nan at step 1200",
     "nan iterations: 0 | loss 1.2"),
    ("nan_loss", "FloatingPointError: Minimum loss scale reached; grad norm: inf",
     "loss 1.2, infinite patience"),
    ("nccl_timeout", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)",
     "Process group watchdog thread terminated with exception: CUDA error: illegal access"),
    ("nccl_timeout", "CUDA error: device-side assert; then NCCL all_reduce timed out",
     "NCCL timed out; CUDA error: device-side assert"),
    ("dataloader_timeout", "RuntimeError: DataLoader timed out after 120 seconds",
     "DataLoader timed out in the NCCL barrier"),
    ("dataloader_timeout", "store ok; the next batch timed out",
     "the next batch timed out at the store"),
    ("time_limit", "slurmstepd: error: job 42 exceeded its time limit",
     "job 42 time limit: 24:00:00"),
    ("time_limit", "job 42 exceeded hard wallclock time - initiate terminate method",
     "job time limit exceeded"),
    ("gpu_failure", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
     "xid 79 logged; ok"),
    ("gpu_failure", "GPU 0 ok, GPU 1: not responding",
     "not responding: the GPU"),
    ("node_failure", "srun: error: Node failure on gpu-a07",
     "failed to start; node gpu-a07"),
    ("node_failure", "slurmstepd: error: *** JOB 42 CANCELLED DUE TO NODE gpu-a07 FAILURE",
     "nodes: 4, all up"),
    ("time_limit", "PBS: job killed: wall clock limit exceeded",
     "wall clock limit: 24:00:00"),
    ("compiler_missing", "error: command 'gcc' failed: No such file or directory",
     "missing semicolon in the model code"),
    ("compiler_missing", "RuntimeError: Ninja needs a C++ compiler, which is not installed",
     "compiler flags: -O2 -g"),
]


@pytest.mark.parametrize(("class_id", "line", "near_miss"), SHAPES)
def test_vocabulary_names_its_shapes_and_not_near_misses(
    class_id: str, line: str, near_miss: str
) -> None:
    assert _VOCABULARY[class_id].search(line)
    assert not _VOCABULARY[class_id].search(near_miss)


_WORDS = [
    "cuda", "gpu", "device", "host", "system", "cpu", "out of memory", "oom", "loss", "grad_norm",
    "=", ": nan", "is inf", "nan", "non-finite", "nccl", "gloo", "barrier", "timed out",
    "timeout", "watchdog", "CUDA error", "data loader", "DataLoader", "next batch", "prefetch",
    "socket", "store", "job", "exceeded", "time limit", "wallclock limit", "reached", "compiler",
    "gcc", "cl.exe", "not found", "missing", "x", "-", "12", "..", "(", "  ", "node", "nodes",
    "failed", "down", "ecc", "xid", "nvlink", "error", "fault", "not responding", "lost",
    "reset required", "wall clock limit", "walltime", "runtime limit", "h_rt", "exceeds",
]


def _salads() -> list[str]:
    rng = random.Random(6)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 9))) for _ in range(1000)]


@pytest.mark.parametrize("class_id", sorted(_FORMER))
def test_vocabulary_names_what_the_former_patterns_named(class_id: str) -> None:
    former = re.compile(_FORMER[class_id])
    lines = [line for _, *pair in SHAPES for line in pair] + _salads()
    assert [line for line in lines if bool(former.search(line))
            != bool(_VOCABULARY[class_id].search(line))] == []
    assert any(former.search(line) for line in lines)
