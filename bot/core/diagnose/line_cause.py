"""The cause within a class that a log's lines name, when its fix differs from the class's hint.

`line_cause` reads the catalogue matches of the class the decision chose (and, for some causes,
only those in the error the log ends in, after its last progress line): a DataLoader worker out
of open files or of /dev/shm, NCCL's shared-memory transport out of /dev/shm, a C++ extension
without ninja, the compiler or CUDA tool not found, slurmstepd's failure to start the program
(its execve), torch.compile's data-dependent guard, an MPI message over the library's size
limit. The decision (bot.core.diagnose.decide) asks it for the chosen class's explanation
after the findings that decided the class. Pure: no file or clock access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.core.diagnose.cause import (
    Cause,
    DataDependentGuard,
    LaunchFailed,
    MissingTool,
    MpiMessageSize,
    NcclSharedMemory,
    NoNinja,
    OpenFileLimit,
    SharedMemory,
)
from bot.core.metrics import MetricSeries

# A DataLoader worker that died of exhausted shared memory (/dev/shm), not of host RAM.
_SHM = re.compile(r"[Bb]us error|shared memory|</torch_[^>]*>")
# NCCL's shared-memory transport that could not create its segment in /dev/shm (an
# unknown_failure of its own, with NCCL's own fix: a larger /dev/shm or NCCL_SHM_DISABLE=1), as
# the catalogue's NCCL lines name it.
_NCCL_SHM = re.compile(r"/dev/shm/nccl-|shared memory segment [^ ]*nccl|Call to posix_fallocate")
# ... or of the process's open-file limit (errno 24, EMFILE), not /dev/shm space: torch opening
# a batch's shared memory object (`unable to open shared memory object </torch_…> in read-write
# mode: Too many open files (24)`), or multiprocessing receiving a worker's file descriptors
# with none left to receive them into (`RuntimeError: received 0 items of ancdata`).
_FD_LIMIT = re.compile(r"Too many open files|received 0 items of ancdata")
# A worker the kernel's OOM killer ended (SIGKILL: torch's `is killed by signal: Killed`): host
# memory, never /dev/shm or open files, whatever else the log says of shared memory.
_OOM_KILLED = re.compile(r"killed by signal: Killed\b")
# The tool a compiler_missing line names as missing: XLA's CUDA toolkit binaries and libdevice
# (`Couldn't find a suitable version of ptxas`, `libdevice not found at ./libdevice.10.bc`), the
# CUDA compiler (`command 'nvcc' failed`, `CUDA_HOME environment variable is not set`, CMake's
# `No CMAKE_CUDA_COMPILER`), or a C/C++ compiler, quoted or as a shell reports it (`'gcc'`,
# `'x86_64-linux-gnu-gcc'`, `(None, 'g++')`, `/bin/sh: 1: gcc: not found`, `Compiler: cl is not
# found`); a line that names no tool (`Failed to find C compiler`) names none.
_CUDA_TOOL = re.compile(r"\b(ptxas|nvlink|fatbinary|libdevice|nvcc)\b")
_NVCC = re.compile(r"CUDA_HOME environment variable is not set|CMAKE_CUDA_COMPILER")
# As one pattern, `(?:'|\b)((?:[\w.]+-)*(?:gcc|…|cl))(?:\.exe)?(?:'|: not found|…)`, its first
# match; `_c_compiler` finds the same without retrying a long run of `[\w.-]` from each of its
# word boundaries: a name followed by its report at each position (`_COMPILER_REPORTED`), and
# each chain of hyphen-ended words (`_HYPHEN_CHAIN`), which a name after its last hyphen ends.
_COMPILER_REPORTED = re.compile(
    r"(?=(gcc|g\+\+|clang\+\+|clang|c\+\+|cc|cl)(?:\.exe)?(?:'|: (?:command )?not found"
    r"| is not found))")
_HYPHEN_CHAIN = re.compile(r"(?<![\w.])(?:[\w.]++-)++")
_WORD_START = re.compile(r"\b(?!-)")
# torch's C++ extension loader finding no ninja to build a JIT extension with: a failure of no
# class of its own whose fix is known (install ninja in the job's environment).
_NO_NINJA = re.compile(r"Ninja is required to load C\+\+ extensions")
# torch's symbolic shapes refusing to guard on a data-dependent value under torch.compile or
# torch.export (the catalogue's unknown_failure hint): the model code's, with its own fix.
_DATA_DEPENDENT_GUARD = re.compile(
    r"GuardOnDataDependentSymNode|Could not guard on data-dependent expression")
# An MPI message larger than the MPI library carries in one message (the catalogue's
# unknown_failure hints): a limit of the library's transport or collectives (Open MPI's PSM2
# transport, IBM Spectrum MPI's collectives), ...
_MPI_TRANSPORT_LIMIT = re.compile(r"Message size [0-9]+ bigger than supported by PSM2 API"
                                  r"|coll:ibm:.*overflowed integer range")
# ... or a count past a 32-bit int, wrapped negative, that the library refuses before sending
# whatever the transport (Open MPI's MPI_ERR_COUNT, MPICH's negative count): its fix is large
# counts or smaller messages, not another transport.
_MPI_WRAPPED_COUNT = re.compile(r"MPI_ERR_COUNT: invalid count argument"
                                r"|Negative count, value is -[0-9]+")
# slurmstepd failing to start a task's program (Slurm's src/slurmd/slurmstepd/task.c:
# `error("execve(): %s: %m", task->argv[0])`, and for a script whose #! line names an
# interpreter the node cannot run, `execve(): bad interpreter(%s): %m`): the program or
# interpreter and the system's reason.
_EXECVE_FAILED = re.compile(
    r"execve\(\): (?:bad interpreter\((?P<interpreter>[^)]*)\)|(?P<program>.+)): "
    r"(?P<reason>[^:]+?) *$")
# ... of which a batch job's own script is slurmd's copy of it in its spool directory
# (src/slurmd/slurmd/req.c writes it to `<SlurmdSpoolDir>/job%05u/slurm_script`, e.g.
# `/var/spool/slurmd/job00089/slurm_script`, `/tmp/slurmd/job2997813/slurm_script`): a copy
# the node lost is the node's fault (its spool's disk or file system), not the user's script.
_SPOOL_SCRIPT = re.compile(r"/job[0-9]+/slurm_script$")


def line_cause(class_id: str, matches: Sequence[Any], series: MetricSeries) -> Cause | None:
    """The cause within the class that the log's lines name, when its fix differs from or
    narrows the class's hint: a DataLoader worker out of open files or of /dev/shm, NCCL's
    shared-memory transport out of /dev/shm (a failure of its own, no worker's), a C++
    extension without ninja, the compiler or CUDA tool not found, and in the error the log
    ends in (after its last progress line) slurmstepd's failure to start the program (its
    execve), torch.compile's data-dependent guard or an MPI message over the library's size
    limit; None otherwise."""
    texts = [m.text for m in matches]
    ending = [m.text for m in matches if m.line_no > (series.last_iteration_line or 0)]
    if class_id == "dataloader_worker_killed":
        # only the worker's death and its own lines (the class's: `signal: Bus error`, torch's
        # `Too many open files` opening a batch) name its cause, no other line that speaks of
        # shared memory (NCCL's /dev/shm segment); a worker killed by SIGKILL ran out of RAM
        own = [m.text for m in matches if m.class_id == class_id]
        if not any(_OOM_KILLED.search(t) for t in own):
            if any(_FD_LIMIT.search(t) for t in own):
                return OpenFileLimit()
            if any(_SHM.search(t) for t in own):
                return SharedMemory()
    if class_id == "unknown_failure" and any(_NCCL_SHM.search(m.text) for m in matches
                                             if m.primary and m.class_id == class_id):
        return NcclSharedMemory()
    if class_id == "unknown_failure" and any(_NO_NINJA.search(t) for t in texts):
        return NoNinja()
    if class_id == "unknown_failure" and (launch := next(
            (m for t in reversed(ending) if (m := _EXECVE_FAILED.search(t))), None)):
        interpreter = launch.group("interpreter")
        program = interpreter if interpreter is not None else launch.group("program")
        return LaunchFailed(program=program, reason=launch.group("reason"),
                            interpreter=interpreter is not None,
                            spool=interpreter is None and _SPOOL_SCRIPT.search(program) is not None)
    if class_id == "unknown_failure" and any(_DATA_DEPENDENT_GUARD.search(t) for t in ending):
        return DataDependentGuard()
    if class_id == "unknown_failure" and (refused := next(
            (t for t in reversed(ending)
             if _MPI_WRAPPED_COUNT.search(t) or _MPI_TRANSPORT_LIMIT.search(t)), None)):
        # the last of them is the error the run ended in, whose fix the explanation gives
        return MpiMessageSize(wrapped_count=_MPI_WRAPPED_COUNT.search(refused) is not None)
    if class_id == "compiler_missing" and (tool := _missing_tool(
            [m.text for m in matches if m.primary and m.class_id == class_id])):
        return MissingTool(tool)
    return None


def _missing_tool(texts: Sequence[str]) -> str | None:
    """The tool that compiler_missing's lines name as missing (`ptxas`, `nvcc`, `gcc`), if any."""
    for text in texts:
        if cuda := _CUDA_TOOL.search(text):
            return cuda.group(1)
        if _NVCC.search(text):
            return "nvcc"
        if compiler := _c_compiler(text):
            return compiler
    return None


def _c_compiler(text: str) -> str | None:
    """The C/C++ compiler a line reports missing, the name as quoted or as the shell gives it
    with the hyphen-joined words before it (`x86_64-linux-gnu-gcc`): the first report's, by
    where its name's words start (after a quote or at a word boundary)."""
    reported = {m.start(): m.group(1) for m in _COMPILER_REPORTED.finditer(text)}
    if not reported:
        return None
    found: list[tuple[int, int, int]] = []  # (where the match starts, name's start, its end)
    for at, name in reported.items():
        if at > 0 and text[at - 1] == "'":
            found.append((at - 1, at, at + len(name)))
        elif _WORD_START.match(text, at):
            found.append((at, at, at + len(name)))
    for chain in _HYPHEN_CHAIN.finditer(text):
        name = reported.get(chain.end())
        if name is None:
            continue
        start = chain.start()
        if start > 0 and text[start - 1] == "'":
            found.append((start - 1, start, chain.end() + len(name)))
        elif word := _WORD_START.search(text, start, chain.end()):
            found.append((word.start(), word.start(), chain.end() + len(name)))
    if not found:
        return None
    _, start, end = min(found)
    return text[start:end]
