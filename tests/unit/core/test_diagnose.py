"""diagnose(): the stories of docs/incidents.md, the causal chain, wrappers, accounting-only
classes, running-job warnings, and the incremental/streaming analysis."""

from __future__ import annotations

import calendar
import io
import json
import random
from pathlib import Path

import pytest
from fakes import present
from support.diagnosis import read_log
from support.log_times import TIMES_BEFORE_A_BAR

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis, analyze_file
from bot.core.models import STOP_CLASSES, Accounting, Action, NeverStarted
from bot.core.units import parse_size
from bot.slack.render import explain, explain_title

STORIES = Path(__file__).resolve().parents[2] / "fixtures" / "stories"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def story(job: str) -> tuple[bytes, Accounting, int]:
    sacct = json.loads((STORIES / f"{job}.sacct.json").read_text())
    code, signal = (int(x) for x in sacct["exit_code"].split(":"))
    acct = Accounting(state=sacct["state"], exit_code=code, signal=signal,
                      elapsed_s=sacct["elapsed_s"], mem_limit_bytes=parse_size(sacct["mem_limit"]))
    return (STORIES / f"{job}.log").read_bytes(), acct, sacct["target_iter"]


def diagnose_story(catalogue, job: str, **kw):
    data, acct, target = story(job)
    analysis = analyze_file(io.BytesIO(data), catalogue)
    return analysis.diagnose(acct, target_iter=target, **kw), data.decode().split("\n")


def line(lines: list[str], n: int) -> str:
    return lines[n - 1]


# --- the stories --------------------------------------------------------------------------


def test_87870_checkpoint_save_oom(catalogue):
    d, lines = diagnose_story(catalogue, "87870")
    assert d.class_id == "host_oom"
    assert d.during_checkpoint_save
    assert d.action is Action.ASK and not d.retryable
    assert d.metrics.last_iter == 999
    assert d.metrics.sec_per_iter == pytest.approx(4.5, abs=0.05)
    assert 0.7 <= d.metrics.last_loss <= 0.9
    texts = {e.line: e.text for e in d.evidence}
    assert any("oom_kill event in StepId=87870.0" in line(lines, n) for n in texts)
    assert any(line(lines, n).endswith("Saving checkpoint at iteration 1000 to "
                                       "/scratch/wm/mix/checkpoints/iter_000001000")
               for n in texts)
    assert "partial" in explain(d)


def test_88016_leak_warns_while_running(catalogue):
    d, lines = diagnose_story(catalogue, "88016")
    assert d.class_id == "memory_leak"
    assert d.action is Action.NONE
    assert abs(d.metrics.projected_oom_iter - 5000) <= 500
    assert 15 <= d.metrics.rss_gib_per_100_iter <= 22
    assert d.metrics.last_iter == 170
    assert all("host RSS" in line(lines, e.line) for e in d.evidence)
    assert str(d.metrics.projected_oom_iter) in explain(d)


def test_88154_hang_then_nccl_watchdog(catalogue):
    d, lines = diagnose_story(catalogue, "88154")
    assert d.class_id == "nccl_timeout"
    assert d.retryable and d.action is Action.RESUBMIT
    assert "hang" in d.secondary
    up = d.upstream
    assert up is not None and up.class_id == "hang"
    assert up.started_at == pytest.approx(calendar.timegm((2025, 5, 14, 19, 8, 57)), abs=1)
    assert up.last_iter == 3470
    assert up.seconds_before_failure == pytest.approx(1800, abs=1)
    assert d.metrics.stall_seconds == pytest.approx(1800, abs=1)
    assert d.metrics.last_iter == 3470
    by_line = {e.line: e.text for e in d.evidence}
    watchdog = [n for n in by_line if "OpType=ALLGATHER" in line(lines, n)]
    assert watchdog and "Timeout(ms)=1800000" in line(lines, watchdog[0])
    assert any("iter: 3470/8000" in line(lines, n) for n in by_line)


def test_a_hang_across_new_years_midnight_is_upstream_of_the_watchdog(catalogue):
    # glog prints no year: the abort half an hour after the last progress is in the new one
    text = "".join(f"2025-12-31 23:{m:02d}:00 iter={m} loss=0.5\n" for m in range(30, 51)) + (
        "[rank3]:[E0101 00:20:00.000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800000"
        " milliseconds before timing out.\n")
    d = run_log(catalogue, text, Accounting(state="FAILED", exit_code=0, signal=6))
    assert d.class_id == "nccl_timeout"
    assert d.upstream is not None and d.upstream.class_id == "hang"
    assert d.upstream.seconds_before_failure == pytest.approx(1800, abs=1)


def test_88154_still_running_is_a_hang_long_before_the_watchdog(catalogue):
    data, acct, target = story("88154")
    cut = data.split(b"\n[rank3]")[0] + b"\n"  # the log as it was at 19:14
    analysis = analyze_file(io.BytesIO(cut), catalogue)
    running = Accounting(state="RUNNING", mem_limit_bytes=acct.mem_limit_bytes)
    at_1914 = calendar.timegm((2025, 5, 14, 19, 14, 0))
    d = analysis.diagnose(running, now=at_1914, target_iter=target)
    assert d.class_id == "hang"
    assert d.metrics.stall_seconds == pytest.approx(303, abs=1)
    assert analysis.diagnose(running, now=at_1914 - 120, target_iter=target).class_id == "none"


def test_108687_completed_in_ten_seconds_is_a_silent_exit(catalogue):
    d, lines = diagnose_story(catalogue, "108687")
    assert d.class_id == "silent_exit"
    assert d.action is Action.STOP and not d.retryable
    assert any(line(lines, e.line).startswith("ls: cannot access") for e in d.evidence)
    assert "only 10 s" in explain(d) and "no training iteration" in explain(d)


def test_108903_missing_compiler(catalogue):
    d, lines = diagnose_story(catalogue, "108903")
    assert d.class_id == "compiler_missing"
    assert d.action is Action.STOP and not d.retryable
    assert any("Failed to find C compiler" in line(lines, e.line) for e in d.evidence)
    assert "CC" in explain(d)


def test_108915_healthy_slow_run_is_no_incident(catalogue):
    d, _ = diagnose_story(catalogue, "108915")
    assert d.class_id == "none"
    assert d.action is Action.NONE
    assert d.evidence == ()
    assert d.metrics.sec_per_iter == pytest.approx(13.3)
    assert d.metrics.last_iter == 1234
    assert d.metrics.projected_oom_iter is None
    assert "GPU util" in explain(d)


@pytest.mark.parametrize("job", ["87870", "88016", "88154", "108687", "108903", "108915"])
def test_stories_fast_scan_equals_the_catalogue_block_scanner(catalogue, job):
    data, acct, target = story(job)
    fast = analyze_file(io.BytesIO(data), catalogue)
    slow = analyze_file(io.BytesIO(data), catalogue, fast_scan=False)
    assert [(m.class_id, m.line_no) for m in fast.matches] == [
        (m.class_id, m.line_no) for m in slow.matches
    ]
    assert fast.diagnose(acct, target_iter=target) == slow.diagnose(acct, target_iter=target)


@pytest.mark.parametrize("job", ["87870", "88154", "108903"])
def test_without_google_re2_the_same_matches_and_diagnosis(catalogue, job, monkeypatch):
    """google-re2 is an optional extra (`trainbot[re2]`): without it the same answers."""
    import bot.core.metrics

    data, acct, target = story(job)
    fast = analyze_file(io.BytesIO(data), catalogue)
    assert fast._prefilter is not None  # RE2 is installed with the test extra
    monkeypatch.setattr(bot.core.metrics, "_re2", None)
    plain = analyze_file(io.BytesIO(data), catalogue)
    assert plain._prefilter is None
    assert [(m.class_id, m.line_no) for m in plain.matches] == [
        (m.class_id, m.line_no) for m in fast.matches
    ]
    assert plain.diagnose(acct, target_iter=target) == fast.diagnose(acct, target_iter=target)


@pytest.mark.parametrize("job", ["87870", "88154"])
def test_feeding_random_pieces_gives_the_same_diagnosis(catalogue, job):
    data, acct, target = story(job)
    whole = analyze_file(io.BytesIO(data), catalogue).diagnose(acct, target_iter=target)
    rnd = random.Random(3)
    analysis = LogAnalysis(catalogue)
    pos = 0
    while pos < len(data):
        step = rnd.randint(1, 40000)
        analysis.feed(data[pos:pos + step])
        pos += step
    analysis.finish()
    assert analysis.diagnose(acct, target_iter=target) == whole
    for pipeline in (True, False):
        small_chunks = analyze_file(io.BytesIO(data), catalogue, chunk_bytes=4096,
                                    pipeline=pipeline)
        assert small_chunks.diagnose(acct, target_iter=target) == whole
        assert small_chunks.lines == data.count(b"\n")


# --- rules --------------------------------------------------------------------------------


def run_log(catalogue, text: str, acct: Accounting, **kw):
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    analysis.finish()
    return analysis.diagnose(acct, **kw)


FAILED = Accounting(state="FAILED", exit_code=1, signal=0)
# The progress line (iteration 120 of 8000) before the lines under test of a log that ends in them.
PROGRESS_AT_120 = "[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n"
PROGRESS = "".join(f"2025-05-20 10:00:{i:02d} iter={i} loss=0.5\n" for i in range(1, 40))


def test_child_failed_error_alone_is_unknown_failure_with_last_lines(catalogue):
    text = PROGRESS + (
        "Traceback (most recent call last):\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "  exitcode  : -6 (pid: 2248)\n"
    )
    d = run_log(catalogue, text, FAILED)
    assert d.class_id == "unknown_failure"
    assert d.action is Action.ASK
    assert {e.line for e in d.evidence} >= {40, 41, 42}


def test_child_failed_error_resolves_to_the_error_it_wraps(catalogue):
    text = PROGRESS + (
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "  exitcode  : -6 (pid: 2248)\n"
    )
    d = run_log(catalogue, text, FAILED)
    assert d.class_id == "cuda_oom"
    assert not d.retryable
    assert [e.line for e in d.evidence][0] == 40


@pytest.mark.parametrize(
    ("state", "exit_code", "signal", "class_id", "charges"),
    [
        ("TIMEOUT", 0, 0, "time_limit", True),
        ("PREEMPTED", 0, 0, "preempted", False),
        ("NODE_FAIL", 0, 0, "node_failure", False),
        ("OUT_OF_MEMORY", 0, 125, "host_oom", True),
    ],
)
def test_accounting_alone_decides(catalogue, state, exit_code, signal, class_id, charges):
    d = run_log(catalogue, PROGRESS, Accounting(state=state, exit_code=exit_code,
                                                 signal=signal))
    assert d.class_id == class_id
    assert d.charges_budget is charges


@pytest.mark.parametrize("line", [
    # PBS/Torque (walltime or CPU time), Moab, LSF and SGE's words for the time limit
    "=>> PBS: job killed: walltime 86415 exceeded limit 86400",
    "=>> PBS: job killed: cput 3601 exceeded limit 3600",
    "MOAB_INFO:  job exceeded wallclock limit",
    "job 123 exceeded hard wallclock time - initiate terminate method",
    "TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
    'job 7 exceeds job hard limit "h_rt" of queue "all.q@node1" (3600.00000 > limit:3600.00000)',
])
def test_other_batch_systems_time_limits_are_a_time_limit(catalogue, line: str):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == ("time_limit", "signature")


@pytest.mark.parametrize(("line", "class_id"), [
    # PBS Pro's and Torque's kills say the limit they enforced, time or memory alike
    ("=>> PBS: job killed: walltime 3700 exceeded limit 3600", "time_limit"),
    ("=>> PBS: job killed: mem 4194304kb exceeded limit 2097152kb", "host_oom"),
    ("=>> PBS: job killed: mem job total 4323312 kb exceeded limit 3145728 kb", "host_oom"),
    ("=>> PBS: job killed: vmem job total 9437184 kb exceeded limit 8388608 kb", "host_oom"),
])
def test_pbs_kills_at_its_walltime_and_memory_limits_name_their_limit(catalogue, line, class_id):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == (class_id, "signature")


def test_a_pbs_epilogues_walltime_used_is_no_time_limit(catalogue):
    # near miss: the resources a job used, printed at every end, name no kill
    text = ("[2025-03-02 10:00:00] iter 8000/8000 loss 0.21\nTraining complete.\n"
            "   Walltime requested: 01:00:00            Walltime Used: 00:41:40\n")
    assert read_log(catalogue, text).class_id == "completed"


RAY_SYSTEM_ERROR = (
    "(raylet) A worker died or was killed while executing a task by an unexpected system error. "
    "RayTask ID: c3f4 Worker ID: 7e75 Node ID: b5b5 Worker IP address: 10.0.0.1 Worker port: "
    "10176 Worker PID: 1633485 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
    "unexpectedly exits with a connection error code 2. End of file. There are some potential "
    "root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. "
    "(2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or "
    "other unexpected errors.")


@pytest.mark.parametrize("line", [
    # Ray's memory monitor reporting the worker it killed, whatever finished before it
    "Memory on the node (IP: 10.1.180.84, ID: ba65) where the task (task ID: d221, name=head, "
    "rank=0,, pid=4503, memory used=1900.5GB) was running was 1990.2GB / 2015.4GB (0.98), which "
    "exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 9a1) because it was "
    "the most recently scheduled task",
    "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
    "Worker exit type: SYSTEM_ERROR Worker exit detail: Task was killed due to the node running "
    "low on memory.",
])
def test_a_worker_rays_memory_monitor_killed_is_a_host_oom(catalogue, line: str):
    text = ("{'train_runtime': 23328.5, 'train_loss': 0.628, 'epoch': 1.0}\n"
            "(head, rank=0, pid=4503) " + line + "\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")


MXNET_HOST = "src/storage/./cpu_device_storage.h:73: Failed to allocate CPU Memory"


@pytest.mark.parametrize(("line", "class_id"), [
    # MXNet's CPU storage out of host memory, raised or thrown from its native code
    ("mxnet.base.MXNetError: [10:21:55] " + MXNET_HOST, "host_oom"),
    ("  what():  [10:21:55] " + MXNET_HOST, "host_oom"),
    # its GPU storage's counterpart is the device's
    ("mxnet.base.MXNetError: [10:21:55] src/storage/./pooled_storage_manager.h:157: cudaMalloc "
     "failed: out of memory", "cuda_oom"),
])
def test_mxnets_storage_out_of_memory_names_the_host_or_the_gpu(catalogue, line, class_id):
    text = "[10:21:50] Epoch[3] Batch [400]\tSpeed: 211.3 samples/sec\tloss=1.21\n" + line + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == (class_id, "signature")
    failed = Accounting(state="FAILED", exit_code=1, signal=0, elapsed_s=600)
    assert read_log(catalogue, text, failed).class_id == class_id


def test_mxnet_failing_to_allocate_another_devices_memory_is_no_host_oom(catalogue):
    text = ("[10:21:50] Epoch[3] Batch [400]\tloss=1.21\n"
            "mxnet.base.MXNetError: [10:21:55] src/storage/storage.cc:119: Failed to allocate "
            "GPU Memory\n")
    assert read_log(catalogue, text).class_id != "host_oom"


def test_a_ray_worker_dead_of_a_system_error_is_a_host_oom_only_by_hint(catalogue):
    # Ray names the OOM killer as the first likely cause; a segfault reads the same
    text = PROGRESS_AT_120 + RAY_SYSTEM_ERROR + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("host_oom", "hint")
    # and a job that goes on after it is running
    more = text + "[2025-03-02 10:00:05] iter 121/8000 loss 1.20\n"
    assert read_log(catalogue, more).class_id == "none"


@pytest.mark.parametrize("line", [
    "RuntimeError: walltime limit reached, saving and exiting",
    "ERROR: job 42 exceeded its time limit and was killed",
])
def test_an_error_that_names_a_time_limit_in_its_own_words_ends_a_log_as_one(catalogue, line):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == ("time_limit", "hint")


@pytest.mark.parametrize("line", [
    "TimeoutError: prefetching the next batch timed out after 120 s",
    "RuntimeError: input pipeline timeout (60 s) in worker 3",
    "ERROR data_manager.py:88 data loader timed out: no batch in 300 seconds",
])
def test_an_error_that_names_a_loaders_timeout_in_its_own_words_ends_a_log_as_one(catalogue,
                                                                                   line):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == ("dataloader_timeout", "hint")


@pytest.mark.parametrize("line", [
    "TimeoutError: timed out",  # a socket's
    "TimeoutError: The client socket has timed out after 1800s while trying to connect to "
    "(node01, 29500).",
    "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
    "for key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
    "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
    "clients joined.",
    "RuntimeError: NCCL timed out in batch_isend_irecv after 600000 ms",
    "UserWarning: data loader timed out waiting for the next batch, retrying",
])
def test_other_timeouts_do_not_end_a_log_as_a_loaders(catalogue, line):
    assert _after_progress(catalogue, line).class_id != "dataloader_timeout"


def test_a_request_that_exceeded_a_time_limit_is_not_the_jobs(catalogue):
    line = "ERROR: the request exceeded the time limit of the server"
    d = _after_progress(catalogue, line)
    assert d.class_id == "unknown_failure"


@pytest.mark.parametrize("line", [
    # CUDA's unknown error in older frameworks' words: 30 before CUDA 10, 999 after
    "F0302 10:00:01.123 syncedmem.cpp:56] Check failed: error == cudaSuccess (30 vs. 0)"
    "  unknown error",
    "[2025-03-02 10:00:01] Error: CUDA error 999 'unknown error' file 'src/tensors/gpu/device.cu'",
])
def test_older_frameworks_unknown_cuda_error_is_a_gpu_failure(catalogue, line: str):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == ("gpu_failure", "signature")


@pytest.mark.parametrize("line", [
    "CUDA Error: an illegal memory access was encountered",
    "CUDA Error: an illegal instruction was encountered",
])
def test_darknets_illegal_access_alone_is_not_blamed_on_the_gpu(catalogue, line: str):
    # its threads end in a rebuild for the GPU's architecture or a cfg fix, not a drained node
    d = _after_progress(catalogue, line)
    assert d.class_id == "unknown_failure"
    assert not d.retryable


@pytest.mark.parametrize("line, class_id", [
    ("[Rank 6] Watchdog caught collective", "nccl_timeout"),
    ("[2025-03-02 10:00:01] [1,0]<stderr>:  what():  [Rank 0] Watchdog caught collective op",
     "nccl_timeout"),
    ("srun: error: Some of the step tasks have been OOM", "host_oom"),
])
def test_a_log_cut_off_in_a_deciding_line_is_named_by_its_start(catalogue, line, class_id):
    d = _after_progress(catalogue, line)
    assert (d.class_id, d.decided_by) == (class_id, "hint")
    assert any(line in e.text for e in d.evidence)


@pytest.mark.parametrize("line", [
    "[Rank 6] Watchdog caught collec",  # too little of it to be sure
    "Number of training examples",  # the deciding figure (`= 0`) was cut off
])
def test_too_little_of_a_deciding_line_at_the_end_decides_nothing(catalogue, line):
    d = _after_progress(catalogue, line)
    assert d.class_id == "none"


def test_a_cut_off_line_before_more_output_decides_nothing(catalogue):
    text = ("[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n[Rank 6] Watchdog caught collective\n"
            "[2025-03-02 10:00:05] iter 121/8000 loss 1.20\n")
    assert read_log(catalogue, text).class_id == "none"


NCCL_REMOTE_ERROR = (
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1347,"
    " remote process exited or there was a network error, NCCL version 2.18.5\n"
    "[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process"
    " exiting prematurely.\n[rank0]: Last error:\n"
)


def test_nccl_remote_error_after_an_infiniband_fault_is_the_nodes(catalogue):
    text = (PROGRESS_AT_120 + NCCL_REMOTE_ERROR
            + "[rank0]: NET/IB : Got completion from peer 10.0.35.1<49189> with error 12, opcode 0,"
            " len 0, vendor err 129 (Send)\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("node_failure", "hint")
    assert any("Got completion from peer" in e.text for e in d.evidence)


def test_nccl_remote_error_is_the_symptom_of_another_ranks_error(catalogue):
    text = (PROGRESS_AT_120 +
            "[rank3]: RuntimeError: GPU 3 ran out of memory in the fused attention kernel\n"
            + NCCL_REMOTE_ERROR)
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("cuda_oom", "hint")
    assert not d.retryable


def test_nccl_remote_error_alone_names_no_cause(catalogue):
    text = (PROGRESS_AT_120 + NCCL_REMOTE_ERROR
            + "[rank0]: socketProgressOpt: Call to recv from 10.0.0.2<33759> failed :"
            " Connection reset by peer\n")
    assert read_log(catalogue, text).class_id == "unknown_failure"


IB_FAULT = ("[rank0]: NET/IB : Got completion from peer 10.0.35.1<49189> with error 12, opcode 0,"
            " len 0, vendor err 129 (Send)\n")
RANK_OOM = "[rank3]: RuntimeError: GPU 3 ran out of memory in the fused attention kernel\n"
TORCHRUN_ABORT = "  traceback : Signal 6 (SIGABRT) received by PID 2248\n"
SIGABRT = Accounting(state="FAILED", exit_code=0, signal=6)
EXIT_1 = Accounting(state="FAILED", exit_code=1, signal=0)


@pytest.mark.parametrize("acct", [None, SIGABRT, EXIT_1], ids=["log-only", "0:6", "1:0"])
@pytest.mark.parametrize(("cause", "class_id", "evidence"), [
    (NCCL_REMOTE_ERROR + IB_FAULT, "node_failure", "Got completion from peer"),
    (RANK_OOM + NCCL_REMOTE_ERROR, "cuda_oom", "ran out of memory"),
], ids=["fabric", "other-rank"])
def test_nccl_remote_error_names_the_same_cause_with_and_without_accounting(
        catalogue, acct, cause, class_id, evidence):
    # the reporting rank's SIGABRT (torchrun's line, sacct's 0:6) or exit 1 is the symptom's
    text = PROGRESS_AT_120 + cause + TORCHRUN_ABORT
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == (class_id, "hint")
    assert any(evidence in e.text for e in d.evidence)


@pytest.mark.parametrize("acct", [SIGABRT, Accounting(state="FAILED", exit_code=134, signal=0)],
                         ids=["0:6", "134:0"])
@pytest.mark.parametrize(("cause", "class_id"), [
    (NCCL_REMOTE_ERROR + IB_FAULT, "node_failure"),
    (RANK_OOM + NCCL_REMOTE_ERROR, "cuda_oom"),
    ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
     + NCCL_REMOTE_ERROR, "cuda_oom"),
], ids=["fabric", "other-rank", "other-rank-signature"])
def test_the_abort_of_the_rank_that_reported_the_remote_error_is_not_a_second_class(
        catalogue, acct, cause, class_id):
    """Its SIGABRT is the named cause's symptom: the incident's "also seen" does not list an
    NCCL timeout beside it."""
    text = PROGRESS_AT_120 + cause + TORCHRUN_ABORT
    d = read_log(catalogue, text, acct)
    assert d.class_id == class_id
    assert "nccl_timeout" not in d.secondary


def test_a_watchdog_timeout_beside_the_remote_error_is_still_listed(catalogue):
    """A watchdog that fired has its own line: it stays among the classes seen."""
    text = (PROGRESS_AT_120 +
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "[rank0]:[E302 10:30:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught"
            " collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for"
            " 1800000 milliseconds before timing out.\n" + NCCL_REMOTE_ERROR + TORCHRUN_ABORT)
    d = read_log(catalogue, text, SIGABRT)
    assert d.class_id == "cuda_oom" and "nccl_timeout" in d.secondary


@pytest.mark.parametrize(("acct", "class_id"), [(SIGABRT, "nccl_timeout"),
                                                (EXIT_1, "unknown_failure")])
def test_nccl_remote_error_naming_no_cause_is_decided_by_accounting(catalogue, acct, class_id):
    text = (PROGRESS_AT_120 + NCCL_REMOTE_ERROR
            + TORCHRUN_ABORT)
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == (class_id, "accounting")


NCCL_SYSTEM_ERROR = (
    "[rank0]: RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825,"
    " unhandled system error, NCCL version 2.10.3\n"
)


@pytest.mark.parametrize("acct", [None, SIGABRT, EXIT_1], ids=["log-only", "0:6", "1:0"])
@pytest.mark.parametrize(("error", "fault"), [
    # NCCL's net_ib WARN, as each version prints it (`host:pid:tid [dev] NCCL WARN ...`)
    (NCCL_REMOTE_ERROR, "NET/IB : Got completion from peer 10.0.35.1<49189> with error 12, "
     "opcode 0, len 0, vendor err 129 (Send)"),
    (NCCL_REMOTE_ERROR, "NET/IB : Got completion from peer 10.0.35.1<49189> with status=12 "
     "opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.35.2 remoteGids::ffff:10.0.35.1"),
    (NCCL_REMOTE_ERROR, "NET/IB: Got completion from peer 10.0.35.1<49189> with status=12 "
     "opcode=0 len=0 vendor err 129 (Send) hca mlx5_3"),
    (NCCL_REMOTE_ERROR, "NET/IB: Got completion from peer 10.0.35.1<49189> with "
     "status=transport retry counter exceeded(12) opcode=Send(0) vendor_err=129  hca mlx5_3"),
    # its async thread: the port went down
    (NCCL_REMOTE_ERROR, "NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)"),
    # NCCL before 2.13 returned the completion error as a system error
    (NCCL_SYSTEM_ERROR, "NET/IB : Got completion from peer 10.0.35.1<49189> with error 12, "
     "opcode 0, len 0, vendor err 129"),
], ids=["2.18", "2.21", "2.23", "2.28", "port-error", "2.10-system-error"])
def test_an_infiniband_fault_nccl_reports_in_any_version_is_the_nodes(catalogue, acct, error,
                                                                     fault):
    text = (PROGRESS_AT_120 + error
            + "gpu-a017:12345:12400 [0] NCCL WARN " + fault + "\n" + TORCHRUN_ABORT)
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == ("node_failure", "hint")
    assert d.retryable and not d.charges_budget


PEER_VALUE_ERROR = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "train.py", line 88, in <module>\n'
    "[rank0]:     main()\n"
    "[rank0]: ValueError: expected input of shape (8, 512), got (8, 511)\n")
# the survivor's sends to the rank that died fail: InfiniBand's retry counter runs out
IB_AFTER_PEER_DIED = ("gpu-a017:12345:12400 [0] NCCL WARN NET/IB: Got completion from peer "
                      "10.0.35.1<49189> with status=12 opcode=0 len=0 vendor err 129 (Send) hca "
                      "mlx5_3\n")
LAUNCHER_WRAPPER = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                    "[rank1]: RuntimeError: Connection reset by peer\n")


@pytest.mark.parametrize("acct", [None, SIGABRT, EXIT_1], ids=["log-only", "0:6", "1:0"])
@pytest.mark.parametrize(("peer", "class_id", "evidence"), [
    (PEER_VALUE_ERROR, "unknown_failure", "ValueError: expected input"),
    (RANK_OOM, "cuda_oom", "ran out of memory"),
], ids=["value-error", "oom"])
def test_an_infiniband_fault_after_another_rank_died_of_its_own_error_is_that_errors_symptom(
        catalogue, acct, peer, class_id, evidence):
    # rank 0 died of its own error; rank 1's NCCL reports the remote error and, as its last
    # error, the failed sends to the dead peer: not the node's fabric, nothing to --exclude
    for order in (peer + NCCL_REMOTE_ERROR + IB_AFTER_PEER_DIED,
                  NCCL_REMOTE_ERROR + IB_AFTER_PEER_DIED + peer):
        d = read_log(catalogue, PROGRESS_AT_120 + order
                     + LAUNCHER_WRAPPER + TORCHRUN_ABORT, acct)
        assert (d.class_id, d.decided_by, d.retryable, d.node) == (class_id, "hint", False, None)
        assert any(evidence in e.text for e in d.evidence)
    # the same fault with no other rank's error (only collateral ones) is the node's
    alone = (PROGRESS_AT_120 + NCCL_REMOTE_ERROR
             + IB_AFTER_PEER_DIED + LAUNCHER_WRAPPER + TORCHRUN_ABORT)
    assert read_log(catalogue, alone, acct).class_id == "node_failure"


def test_an_nccl_system_error_without_a_network_fault_names_no_node(catalogue):
    text = (PROGRESS_AT_120 + NCCL_SYSTEM_ERROR
            + "gpu-a017:12345:12400 [0] NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-Bzp5M1 (size 9637888), error: No space left on device (28)\n")
    # a full /dev/shm (test_nccls_shared_memory_segment_that_dev_shm_cannot_hold_is_a_...)
    for acct in (None, EXIT_1):
        d = read_log(catalogue, text, acct)
        assert (d.class_id, d.detail, d.node) == ("unknown_failure", {"kind": "nccl_shm"}, None)


def test_a_scheduler_verdict_still_decides_over_nccl_remote_errors_cause(catalogue):
    text = PROGRESS_AT_120 + RANK_OOM + NCCL_REMOTE_ERROR
    d = read_log(catalogue, text, Accounting(state="NODE_FAIL", exit_code=0, signal=0))
    assert (d.class_id, d.decided_by) == ("node_failure", "accounting")


HOROVOD_STALL = (
    "[2025-03-02 10:01:00.123] [1,0]<stderr>:W stall_inspector.cc:107] One or more tensors were"
    " submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for"
    " remainder of ranks for more than 60 seconds. This may indicate that different ranks are"
    " trying to submit different tensors or that only subset of ranks is submitting tensors,"
    " which will cause deadlock.\n[1,0]<stderr>:Missing ranks:\n"
    "[1,0]<stderr>:1: [DistributedAdam_Allreduce/cond_1/HorovodAllreduce_grads_1_0]\n"
)


def test_a_log_that_ends_in_horovods_stall_warning_is_a_hang(catalogue):
    d = read_log(catalogue, PROGRESS_AT_120 + HOROVOD_STALL)
    assert (d.class_id, d.decided_by) == ("hang", "hint")


def test_horovods_stall_warning_followed_by_progress_is_survived(catalogue):
    text = (PROGRESS_AT_120 + HOROVOD_STALL
            + "[2025-03-02 10:01:05] iter 121/8000 loss 1.20\n")
    assert read_log(catalogue, text).class_id == "none"


JAX_STEP = "I0501 10:00:30.000000 140 train.py:88] step 200, loss 2.1011\n"
XLA_STUCK = ("E0501 10:05:00.000000 140 rendezvous.cc:120] This thread has been waiting for "
             "`all-reduce RendezvousKey{run_id=RunId: 12, global_devices=[0,1]}` for 20 seconds "
             "and may be stuck. All 2 threads must join the rendezvous, however only 1 of them "
             "arrived on time.\n")


def test_a_log_that_ends_in_xlas_stuck_rendezvous_warning_is_a_hang(catalogue):
    d = read_log(catalogue, JAX_STEP + XLA_STUCK)
    assert (d.class_id, d.decided_by) == ("hang", "hint")
    unstuck = ("E0501 10:05:10.000000 140 rendezvous.cc:121] Thread is unstuck! Warning above "
               "was a false-positive. Perhaps the timeout is too short.\n")
    assert read_log(catalogue, JAX_STEP + XLA_STUCK + unstuck + JAX_STEP).class_id == "none"


@pytest.mark.parametrize("line", [
    # TensorFlow's collective ops past their timeout
    "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective has timed out "
    "waiting for other workers.",
    # XLA's rendezvous (JAX) exiting when a participant never arrived, new and old wording
    "E0501 10:05:30.000000 140 rendezvous.cc:125] Termination timeout for `acquire clique for "
    "rank 3; clique=devices=[0,1,2,3]; stream=0; run_id=12` of 30 seconds exceeded. Exiting to "
    "ensure a consistent program state. Expected 4 threads to join the rendezvous, but only 3 "
    "of them arrived on time.",
    "E0501 10:05:30.000000 140 rendezvous.h:220] Termination timeout of 40 seconds exceeded. "
    "Exiting to ensure a consistent program state.",
])
def test_tensorflows_and_xlas_collective_timeouts_are_an_nccl_timeout(catalogue, line: str):
    d = read_log(catalogue, JAX_STEP + line + "\n")
    assert (d.class_id, d.decided_by) == ("nccl_timeout", "signature")
    assert d.retryable


@pytest.mark.parametrize("ending", [
    # XLA's coordination service: another task stopped, for one of several reasons it lists
    "E0501 10:05:00.000000 140 coordination_service.cc:1028] /job:jax_worker/replica:0/task:3 "
    "has been set to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0"
    "/task:3 heartbeat timeout. This indicates that the remote task has failed, got preempted, "
    "or crashed unexpectedly. Check the task logs for an earlier error to debug further.",
    "F0926 17:26:32.075587  157988 client.h:77] Terminating process because the JAX distributed "
    "service detected fatal errors. This most likely indicates that another task died; see the "
    "other task logs for more details. absl::Status: UNAVAILABLE: The following tasks are "
    "unhealthy (stopped sending heartbeats):\n/job:jax_worker/replica:0/task:3\nThe tasks have "
    "crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
    "eviction) to debug further.",
])
def test_a_task_lost_for_one_of_several_reasons_is_not_named_a_preemption(catalogue, ending):
    """The coordination service lists preemption among a lost task's possible causes: the words
    name no one cause, so the log ends in an unknown failure (the cause is in that task's own
    output)."""
    assert read_log(catalogue, JAX_STEP + ending + "\n").class_id == "unknown_failure"


def _interrupted(*frames: tuple[str, str]) -> str:
    """A traceback ended by Ctrl-C; each frame is (file, "function:source line"), innermost
    last."""
    lines = []
    for path, where in frames:
        func, _, source = where.partition(":")
        lines.append(f'  File "{path}", line 41, in {func}\n    {source}\n')
    return "Traceback (most recent call last):\n" + "".join(lines) + "KeyboardInterrupt\n"


# the main loop waiting on a worker pool's result, then on a pipe
WAITING_ON_A_LOCK = _interrupted(
    ("fit.py", "<module>:trainer.run(cfg)"), ("fit.py", "run:batch = pool_result.get()"),
    ("/usr/lib/python3.10/multiprocessing/pool.py", "get:self.wait(timeout)"),
    ("/usr/lib/python3.10/threading.py", "wait:signaled = self._cond.wait(timeout)"),
    ("/usr/lib/python3.10/threading.py", "wait:waiter.acquire()"))
WAITING_ON_A_PIPE = _interrupted(
    ("fit.py", "<module>:for batch in loader:"),
    ("/usr/lib/python3.10/multiprocessing/queues.py", "get:res = self._reader.recv_bytes()"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", "recv_bytes:buf = self._recv(4)"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", "_recv:chunk = read(handle, left)"))
COMPUTING = _interrupted(
    ("fit.py", "<module>:trainer.run(cfg)"), ("fit.py", "run:loss.backward()"),
    ("/opt/torch/_tensor.py", "backward:torch.autograd.backward(self)"))
# an idle DataLoader worker's traceback, printed beside the main process's on Ctrl-C
IDLE_WORKER = ("Process Process-2:\n" + _interrupted(
    ("/usr/lib/python3.10/multiprocessing/process.py", "_bootstrap:self.run()"),
    ("/opt/torch/utils/data/_utils/worker.py", "_worker_loop:r = index_queue.get(timeout=5)"),
    ("/usr/lib/python3.10/multiprocessing/queues.py", "get:if not self._poll(timeout):"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", "poll:return self._poll(timeout)"),
    ("/usr/lib/python3.10/selectors.py", "select:ready = self._selector.poll(timeout)")))
SIGINT = Accounting(state="FAILED", exit_code=0, signal=2)


@pytest.mark.parametrize("acct", [None, SIGINT, Accounting(state="FAILED", exit_code=130,
                                                           signal=0)],
                         ids=["log-only", "0:2", "130:0"])
@pytest.mark.parametrize("interrupt", [WAITING_ON_A_LOCK, WAITING_ON_A_PIPE,
                                       "^C" + WAITING_ON_A_LOCK + IDLE_WORKER],
                         ids=["lock", "pipe", "with-idle-worker"])
def test_a_run_interrupted_by_hand_while_it_waited_had_hung(catalogue, acct, interrupt):
    text = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n" + interrupt
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == ("hang", "hint")
    assert any(e.text == "KeyboardInterrupt" for e in d.evidence)


@pytest.mark.parametrize("acct", [None, SIGINT], ids=["log-only", "0:2"])
@pytest.mark.parametrize("interrupt", [
    COMPUTING,  # interrupted while it computed: it was making progress
    COMPUTING + IDLE_WORKER,  # only a worker waited, as idle workers do
    WAITING_ON_A_LOCK + "RuntimeError: DataLoader worker (pid 4242) exited unexpectedly\n",
], ids=["computing", "idle-worker-only", "another-error"])
def test_an_interrupt_names_no_hang_unless_the_main_process_waited(catalogue, acct, interrupt):
    text = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n" + interrupt
    assert read_log(catalogue, text, acct).class_id != "hang"


def _raised(exception: str, *frames: tuple[str, str]) -> str:
    """A traceback ending in `exception`; each frame is (file, "function:source line"),
    innermost last."""
    return _interrupted(*frames).replace("KeyboardInterrupt\n", exception + "\n")


AMP = "/opt/conda/lib/python3.8/site-packages/apex/amp"
TO_APEX_SCALER = (("train.py", "<module>:trainer.fit()"),
                  ("train.py", "fit:scaled_loss.backward()"),
                  (f"{AMP}/handle.py", "scale_loss:optimizer._post_amp_backward(loss_scaler)"),
                  (f"{AMP}/_process_optimizer.py",
                   "post_backward_models_are_masters:scale_override=(grads_have_scale, 1.))"))


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("innermost", [
    (f"{AMP}/scaler.py", "unscale_with_stashed:out_scale/grads_have_scale,"),
    (f"{AMP}/scaler.py", "unscale:1./scale,"),
    ("C:\\Anaconda3\\lib\\site-packages\\apex\\amp\\scaler.py",  # on Windows
     "unscale_with_stashed:out_scale/grads_have_scale,"),
], ids=["unscale_with_stashed", "unscale", "windows"])
def test_apex_dividing_by_its_underflowed_loss_scale_is_a_divergence(catalogue, acct, innermost):
    """apex halves its dynamic loss scale at every overflow; once it reaches zero its unscale
    divides by it: the gradients kept overflowing, as a diverging run's do."""
    text = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n" + _raised(
        "ZeroDivisionError: float division by zero", *TO_APEX_SCALER, innermost)
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "hint", False)
    assert any("scaler.py" in e.text for e in d.evidence)


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("traceback", [
    # the user's own division, with or without apex on the stack
    _raised("ZeroDivisionError: division by zero", ("train.py", "<module>:main()"),
            ("train.py", "main:acc = correct / total")),
    _raised("ZeroDivisionError: float division by zero", *TO_APEX_SCALER,
            ("train.py", "log_scale:ratio = 1. / scaler.loss_scale()")),
    # another error in apex's scaler
    _raised("RuntimeError: expected scalar type Half but found Float", *TO_APEX_SCALER,
            (f"{AMP}/scaler.py", "unscale:1./scale,")),
], ids=["user-code", "user-code-under-apex", "other-error-in-apex"])
def test_other_errors_and_divisions_by_zero_stay_unknown(catalogue, acct, traceback):
    text = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n" + traceback
    assert read_log(catalogue, text, acct).class_id == "unknown_failure"


TORCH = "/opt/conda/lib/python3.10/site-packages/torch"
TO_TORCH_LOAD = (("train.py", "<module>:main()"),
                 ("train.py", "main:state = torch.load(args.resume, map_location='cpu')"),
                 (f"{TORCH}/serialization.py",
                  "load:return _legacy_load(opened_file, map_location, pickle_module, "
                  "**pickle_load_args)"))


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize(("exception", "innermost"), [
    ("EOFError: Ran out of input",
     (f"{TORCH}/serialization.py", "_legacy_load:magic_number = pickle_module.load(f, "
                                   "**pickle_load_args)")),
    ("_pickle.UnpicklingError: pickle data was truncated",
     (f"{TORCH}/serialization.py", "_load:result = unpickler.load()")),
    ("_pickle.UnpicklingError: invalid load key, '\\x00'.",
     (f"{TORCH}/serialization.py", "_legacy_load:magic_number = pickle_module.load(f, "
                                   "**pickle_load_args)")),
    ("EOFError: Ran out of input",  # on Windows
     ("C:\\Anaconda3\\lib\\site-packages\\torch\\serialization.py",
      "load:result = unpickler.load()")),
], ids=["eof", "truncated", "zero-bytes", "windows"])
def test_a_pickle_that_ends_early_in_torch_load_is_a_truncated_checkpoint(catalogue, acct,
                                                                        exception, innermost):
    """torch.load of an empty or cut-short checkpoint fails inside its own frames with
    pickle's end-of-data errors: the checkpoint the run resumed from is incomplete."""
    text = "[2025-03-02 10:00:00] Resuming from /ckpt/run/iter_000001000/model.pt\n" + _raised(
        exception, *TO_TORCH_LOAD, innermost)
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by, d.action) == ("checkpoint_corrupt", "hint", Action.ASK)
    assert any("serialization.py" in e.text for e in d.evidence)
    assert "previous complete checkpoint" in explain(d)


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("traceback", [
    # a DataLoader worker's pipe on Windows, and a cache file the user's code unpickles
    _raised("EOFError: Ran out of input", ("train.py", "<module>:for batch in loader:"),
            ("C:\\Python38\\lib\\multiprocessing\\spawn.py",
             "_main:self = reduction.pickle.load(from_parent)")),
    _raised("EOFError: Ran out of input", ("train.py", "<module>:main()"),
            ("train.py", "main:cache = pickle.load(f)")),
    # another error in torch.load: a checkpoint of another device, not a broken file
    _raised("RuntimeError: Attempting to deserialize object on a CUDA device", *TO_TORCH_LOAD,
            (f"{TORCH}/serialization.py", "_legacy_load:result = unpickler.load()")),
], ids=["worker-pipe", "user-pickle", "other-error-in-torch-load"])
def test_other_ends_of_input_and_load_errors_are_no_truncated_checkpoint(catalogue, acct,
                                                                         traceback):
    text = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n" + traceback
    assert read_log(catalogue, text, acct).class_id == "unknown_failure"


SAVE_INTO_FULL_DISK = (
    "[2026-11-29 10:00:00] iter 990/8000 loss 0.71 4.5 s/iter\n"
    "[2026-11-29 10:00:45] iter 1000/8000 loss 0.70 4.5 s/iter\n"
    "[2026-11-29 10:00:46] Saving checkpoint to /ckpt/run/iter_000001000\n"
    "[rank1]:[E1129 10:30:46.1 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLGATHER, NumelIn=1, NumelOut=4, "
    "Timeout(ms)=1800000) ran for 1800043 milliseconds before timing out.\n"
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 210, in <module>\n"
    "    torch.save(state, path)\n"
    "OSError: [Errno 28] No space left on device\n")


@pytest.mark.parametrize("acct", [None, FAILED, Accounting(state="FAILED", exit_code=0,
                                                              signal=6)],
                         ids=["log-only", "1:0", "SIGABRT"])
def test_a_full_disk_during_a_save_is_the_cause_and_leaves_that_checkpoint_partial(catalogue,
                                                                                   acct):
    """Rank 0 writing the checkpoint fails on the full disk; the other ranks' watchdog fires
    while they wait for it: the disk is the cause, the save it broke is partial, and no
    resubmit happens by itself (a resubmit fails again until space is freed)."""
    d = read_log(catalogue, SAVE_INTO_FULL_DISK, acct)
    assert (d.class_id, d.decided_by) == ("disk_full", "signature")
    assert (d.action, d.retryable) == (Action.ASK, False)
    assert d.during_checkpoint_save
    assert "nccl_timeout" in d.secondary
    texts = [e.text for e in d.evidence]
    assert "[2026-11-29 10:00:46] Saving checkpoint to /ckpt/run/iter_000001000" in texts
    assert "OSError: [Errno 28] No space left on device" in texts
    said = explain(d)
    assert said.startswith("Free space before you resubmit, which fails again until then")
    assert "`df -h`" in said and "`quota -s`" in said
    assert said.endswith("A checkpoint that was being written when the disk filled up is "
                         "incomplete: never resume from it.")


def test_a_full_disk_outside_a_save_says_no_save_was_cut_short(catalogue):
    text = ("[2026-11-29 10:00:45] iter 1000/8000 loss 0.70 4.5 s/iter\n"
            "tee: train_log.txt: No space left on device\n")
    d = read_log(catalogue, text, FAILED)
    assert d.class_id == "disk_full" and not d.during_checkpoint_save and d.detail is None


@pytest.mark.parametrize("error", [
    # no catalogue line: the error's own words name a full disk or quota
    "IOError: No space left on device\n",
    "ERROR: could not save the model: disk quota exceeded on /home/u\n",
    "write /scratch/run/ckpt/iter_4000.pt: No space left on device, giving up\n",
])
def test_an_error_that_names_a_full_disk_in_its_own_words_is_one(catalogue, error):
    d = read_log(catalogue, "[2026-11-29 10:00:45] iter 1000/8000 loss 0.70\n" + error)
    assert (d.class_id, d.decided_by) == ("disk_full", "hint")


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
def test_a_full_dev_shm_in_the_same_words_is_no_full_disk(catalogue, acct):
    """NCCL's shared-memory segments live in /dev/shm: no checkpoint to clean up there."""
    text = ("[2026-11-29 10:00:45] iter 1000/8000 loss 0.70\n"
            "gpu-a017:1234:1300 [0] NCCL INFO Error: failed to extend /dev/shm/nccl-Xb2 to "
            "9637892 bytes: No space left on device\n")
    assert read_log(catalogue, text, acct).class_id != "disk_full"


def test_a_wait_interrupted_before_more_progress_is_survived(catalogue):
    text = (PROGRESS_AT_120 + WAITING_ON_A_LOCK
            + "[2025-03-02 10:01:05] iter 121/8000 loss 1.20\n")
    assert read_log(catalogue, text).class_id == "none"


def test_time_limit_wins_over_collateral_errors_in_the_log(catalogue):
    text = PROGRESS + "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(...)\n"
    d = run_log(catalogue, text, Accounting(state="TIMEOUT", exit_code=0, signal=0))
    assert d.class_id == "time_limit"
    assert "nccl_timeout" in d.secondary


def test_completed_with_target_reached(catalogue):
    d = run_log(catalogue, PROGRESS + "Training complete.\n",
                Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=3600),
                target_iter=39)
    assert d.class_id == "completed"
    assert d.action is Action.NONE


def test_completed_below_target_is_silent_exit(catalogue):
    d = run_log(catalogue, PROGRESS,
                Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=3600),
                target_iter=8000)
    assert d.class_id == "silent_exit"
    assert not d.retryable


def test_no_accounting_and_no_failure_target_reached_is_completed(catalogue):
    assert run_log(catalogue, PROGRESS, Accounting(), target_iter=39).class_id == "completed"


def test_running_healthy_job_is_none(catalogue):
    d = run_log(catalogue, PROGRESS, Accounting(state="RUNNING"), target_iter=8000)
    assert d.class_id == "none" and d.action is Action.NONE and not d.secondary


def test_nonzero_exit_without_signature_is_unknown_failure_with_tail(catalogue):
    text = PROGRESS + "some custom error nobody catalogued\n"
    d = run_log(catalogue, text, FAILED)
    assert d.class_id == "unknown_failure"
    assert d.evidence[-1].line == 40


@pytest.mark.parametrize(("ending", "class_id"), [
    ("Killed", "host_oom"),  # the shell's kill notice; exit 1 is the wrapper's around it
    ("torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0"
     " (pid: 4242) of binary: /usr/bin/python", "host_oom"),
    ("Bus error (core dumped)", "dataloader_worker_killed"),
    # the error's own words
    ("RuntimeError: the data loader timed out after 600 s waiting for the next batch",
     "dataloader_timeout"),
])
@pytest.mark.parametrize("acct", [FAILED, Accounting(state="FAILED", exit_code=2, signal=0)],
                         ids=["1:0", "2:0"])
def test_an_exit_code_that_names_no_cause_lets_the_logs_ending_name_it(catalogue, acct, ending,
                                                                        class_id):
    """sacct's exit 1 says the job failed, not why: the log's ending is read as it is without
    accounting, and decides by hint."""
    text = PROGRESS + ending + "\n"
    assert run_log(catalogue, text, Accounting()).class_id == class_id
    d = run_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == (class_id, "hint")


@pytest.mark.parametrize(("text", "acct"), [
    # progress after the kill notice: the run survived it
    (PROGRESS + "Killed\n2025-05-20 10:01:00 iter=40 loss=0.4\n", FAILED),
    # an exit code or a signal that names a cause of its own, which the log does not confirm
    (PROGRESS + "RuntimeError: the data loader timed out after 600 s waiting for the next batch\n",
     Accounting(state="FAILED", exit_code=137, signal=0)),
    (PROGRESS + "Bus error (core dumped)\n", Accounting(state="FAILED", exit_code=0, signal=15)),
])
def test_the_logs_ending_does_not_override_what_an_exit_or_a_signal_says(catalogue, text, acct):
    d = run_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "accounting")


@pytest.mark.parametrize(("ending", "class_id"), [
    # darknet: CUDA's out of memory in C code, then its assert aborts
    ("CUDA Error: out of memory\ndarknet: ./src/cuda.c:36: check_error: Assertion `0' failed.\n"
     "Aborted (core dumped)", "cuda_oom"),
])
@pytest.mark.parametrize("acct", [SIGABRT, Accounting(state="FAILED", exit_code=134, signal=0)],
                         ids=["0:6", "134:0"])
def test_an_abort_lets_the_logs_ending_name_its_cause(catalogue, acct, ending, class_id):
    """SIGABRT is how any native fatal error ends; with no watchdog evidence it names no cause,
    so the log's ending decides as it does without accounting (the watcher always has sacct:
    before this, a darknet CUDA out of memory under SIGABRT read as unknown_failure)."""
    d = run_log(catalogue, PROGRESS + ending + "\n", acct)
    assert (d.class_id, d.decided_by) == (class_id, "hint")


def test_an_abort_with_nothing_named_stays_unknown_by_accounting(catalogue):
    d = run_log(catalogue, PROGRESS + "Aborted (core dumped)\n", SIGABRT)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "accounting")


def test_stop_classes_are_never_retryable(catalogue):
    for cid in STOP_CLASSES:
        cls = catalogue.classes[cid]
        assert cls.action is Action.STOP and not cls.retryable
    text = PROGRESS + "iter=40 loss=nan\n"
    d = run_log(catalogue, text, FAILED)
    assert d.class_id == "nan_loss" and not d.retryable


def test_bounded_memory_for_long_logs(catalogue):
    analysis = LogAnalysis(catalogue, max_samples=128, tail_lines=10)
    for block in range(20):
        analysis.feed_text("".join(
            f"iter={block * 5000 + i} loss=0.5 rss=40GiB\n" for i in range(5000)))
    analysis.finish()
    assert len(analysis.series.samples) <= 129
    assert len(analysis.tail) == 10
    assert analysis.series.last_iteration == 99_999
    assert analysis.lines == 100_000


def test_no_accounting_log_ending_in_a_traceback_is_unknown_failure(catalogue):
    text = PROGRESS + "Traceback (most recent call last):\n  File 'x.py'\nValueError: boom\n"
    assert run_log(catalogue, text, Accounting()).class_id == "unknown_failure"
    assert run_log(catalogue, PROGRESS, Accounting()).class_id == "none"


def test_pending_job_is_not_a_failure(catalogue):
    assert run_log(catalogue, "", Accounting(state="PENDING")).class_id == "none"


def test_exit_137_with_a_killed_line_is_host_oom_but_sigabrt_alone_is_not_nccl(catalogue):
    killed = PROGRESS + "/var/spool/slurmd/job123/slurm_script: line 9:  4242 Killed  python\n"
    d = run_log(catalogue, killed, Accounting(state="FAILED", exit_code=137, signal=0))
    assert d.class_id == "host_oom"
    abort = PROGRESS + "  traceback : Signal 6 (SIGABRT) received by PID 2248\n"
    d = run_log(catalogue, abort, Accounting(state="FAILED", exit_code=0, signal=6))
    assert d.class_id == "unknown_failure"


def test_log_now_for_a_watcher_uses_the_log_clock(catalogue):
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(PROGRESS)
    assert analysis.log_now(600) == present(analysis.series.last_time) + 600
    d = analysis.diagnose(Accounting(state="RUNNING"), now=analysis.log_now(600))
    assert d.class_id == "hang"
    assert LogAnalysis(catalogue).log_now(5) is None


def test_completed_zero_zero_with_a_logged_failure_names_the_failure(catalogue):
    text = PROGRESS + "[rank1]: torch.OutOfMemoryError: CUDA out of memory.\n"
    d = run_log(catalogue, text, Accounting(state="COMPLETED", exit_code=0, signal=0,
                                            elapsed_s=3600))
    assert d.class_id == "cuda_oom"
    assert "silent_exit" in d.secondary


def test_completion_marker_without_parsable_iterations_is_completed(catalogue):
    text = "epoch 3 done\nTraining completed.\n"
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=3600)
    assert run_log(catalogue, text, done).class_id == "completed"
    assert run_log(catalogue, text, Accounting()).class_id == "completed"


def test_hard_wrapped_signature_is_found_by_the_fast_scan(catalogue):
    text = PROGRESS + (
        "RuntimeError: Failed to find C compiler. Please specify via CC envir\n"
        "onment variable or set triton.knobs.build.impl.\n"
    )
    fast = LogAnalysis(catalogue)
    slow = LogAnalysis(catalogue, fast_scan=False)
    for a in (fast, slow):
        a.feed_text(text)
        a.finish()
    assert [(m.class_id, m.line_no) for m in fast.matches] == [
        (m.class_id, m.line_no) for m in slow.matches
    ]
    assert fast.diagnose(FAILED).class_id == "compiler_missing"


def test_long_log_with_saves_finds_every_save_and_an_oom_inside_the_last(catalogue):
    lines = []
    for i in range(1, 60001):
        lines.append(f"2025-05-20 10:00:00 iter={i} loss=0.5 rss=40GiB")
        if i % 1000 == 0:
            lines.append(f"2025-05-20 10:00:00 Saving checkpoint at iteration {i}")
            if i < 60000:
                lines.append("2025-05-20 10:00:00 checkpoint saved in 4.0s")
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=1.0. Some of the "
                 "step tasks have been OOM Killed.")
    analysis = analyze_file(io.BytesIO("\n".join(lines).encode()), catalogue,
                            chunk_bytes=1 << 20, max_samples=256)
    assert len(analysis.series.samples) <= 257
    windows = analysis.series.save_windows()
    assert len(windows) == 60
    assert windows[-1].end_line is None and windows[-1].iteration == 60000
    d = analysis.diagnose(Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=125))
    assert d.class_id == "host_oom" and d.during_checkpoint_save
    assert d.metrics.last_iter == 60000


def test_fast_scan_matches_prefixed_coloured_and_anchored_lines(catalogue):
    text = PROGRESS + (
        "\x1b[31m[rank1]: torch.OutOfMemoryError: CUDA out of \x1b[1mmemory\x1b[0m\n"
        "[rank0]: Killed\n"
        "0: DataLoader timed out after 900 seconds\n"
        "  3%|▎ | 12/400 [00:10<05:00]\r[rank2]: Loss is NaN, stopping training\n"
    )
    fast, slow = LogAnalysis(catalogue), LogAnalysis(catalogue, fast_scan=False)
    for a in (fast, slow):
        a.feed_text(text)
        a.finish()
    found = [(m.class_id, m.line_no) for m in fast.matches]
    assert found == [(m.class_id, m.line_no) for m in slow.matches]
    assert {"cuda_oom", "host_oom", "dataloader_timeout", "nan_loss"} <= {c for c, _ in found}


def test_running_job_stuck_in_a_save_is_a_hang_naming_the_save(catalogue):
    text = PROGRESS + "2025-05-20 10:00:40 Saving checkpoint at iteration 39\n"
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    running = Accounting(state="RUNNING")
    assert analysis.diagnose(running, now=analysis.log_now(500)).class_id == "none"
    d = analysis.diagnose(running, now=analysis.log_now(700))
    assert d.class_id == "hang"
    assert "line 40" in explain(d)


# --- logs that end in an error, GPU faults, checkpoint loading ------------------------------


def _after_progress(catalogue, line: str, acct: Accounting | None = None):
    """The diagnosis of a log that reached iteration 120, then said `line`."""
    return read_log(catalogue, PROGRESS_AT_120 + line + "\n", acct)


NATIVE_ABORT = (
    PROGRESS_AT_120 +
    "[2025-03-02 10:00:04] iter 121/8000 loss 1.20\n"
    "terminate called after throwing an instance of 'std::system_error'\n"
    "  what():  Operation not permitted\n"
    "Aborted (core dumped)\n"
)


def test_a_log_that_ends_in_a_native_abort_is_a_failure_without_accounting(catalogue):
    assert read_log(catalogue, NATIVE_ABORT).class_id == "unknown_failure"


MODULE_NOT_LOADED = "GCCcore/7.3.0 exists but could not be loaded as requested.\n"


def test_a_log_that_ends_in_a_module_the_launcher_could_not_load_is_a_failure(catalogue):
    # Lmod refused the environment the job needs; nothing ran after it
    text = "Loading modules for the run\n" + MODULE_NOT_LOADED
    assert read_log(catalogue, text).class_id == "unknown_failure"


def test_a_module_not_loaded_before_training_progress_is_survived(catalogue):
    # near miss: the run went on without it
    text = (MODULE_NOT_LOADED + "[2025-03-02 10:00:00] iter 1/8000 loss 2.31\n"
            "[2025-03-02 10:00:04] iter 2/8000 loss 2.30\n")
    assert read_log(catalogue, text).class_id == "none"


def test_a_log_that_ends_in_progress_is_running_whatever_it_survived_before(catalogue):
    survived = NATIVE_ABORT + (
        "[2025-03-02 10:01:00] iter 122/8000 loss 1.19\n"
        "[2025-03-02 10:01:04] iter 123/8000 loss 1.18\n"
    )
    assert read_log(catalogue, survived).class_id == "none"


@pytest.mark.parametrize("prefix", [
    "[task 2025-03-02T10:00:01.188Z] ", "2025-03-02T10:00:01.1234567Z ", "[pod/trainer-0/pytorch] ",
    "11: ", "(TorchTrainer pid=123) ", "(RayTrainWorker pid=4567, ip=10.0.0.3) ",
])
def test_a_decisive_line_behind_a_runner_prefix_decides(catalogue, prefix: str):
    text = (prefix + PROGRESS_AT_120
            + prefix + "MemoryError\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")


@pytest.mark.parametrize("last_line", [
    "MemoryError`", "      MemoryError`", "`MemoryError`", "**MemoryError**", "> MemoryError",
    '"MemoryError"', "> `MemoryError: Unable to allocate 3.2 GiB for an array`",
])
def test_an_error_quoted_in_markdown_keeps_its_class(catalogue, last_line: str):
    # a line pasted into an issue or a chat keeps its quoting: backticks, emphasis, `> `
    d = _after_progress(catalogue, last_line)
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")


@pytest.mark.parametrize("last_line", [
    "ValueError: could not broadcast input array from shape (3,) into shape (4,)",
    "slurmstepd: error: execve(): python: No such file or directory",
    "srun: error: gpu-a07: task 0: Exited with exit code 2",
    "mpirun detected that one or more processes exited with non-zero status, thus causing",
    # pasted into an issue or a chat: the quoting stays in front of the exception
    "`RuntimeError: CUDA error: an illegal instruction was encountered`",
    "> OSError: [Errno 5] Input/output error",
    # an error, failure or abort reported anywhere in the line
    "[E socket.cpp:860] [c10d] The client socket has failed to connect to gpu-a01:29500",
    "loader: unexpected Bus Error while reading shard 17",
    # a bare exception class, and an exception name followed by more than a colon
    "Exception: checkpoint directory is not writable",
    "OSError (see above for traceback): input/output error on /scratch",
    # an IDE's last line for a crashed run
    "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)",
    # a shell that cannot run the launcher's command, in each shell's wording
    "bash: torchrun: command not found",
    "command torchrun not found",
    "/var/spool/slurmd/job0042/slurm_script: line 12: deepspeed: command not found",
    "sh: 1: accelerate: not found",
    # torchrun's failure summary of a rank that died of a signal, without the traceback
    "  exitcode  : -11 (pid: 6421)\n  error_file: <N/A>\n"
    "  traceback : Signal 11 (SIGSEGV) received by PID 6421\n"
    "======================================================",
    # a shell's notice of a fatal signal that no error word covers: bare, bash's, zsh's
    "Floating point exception   ",
    "./train.sh: line 3:  1098 Terminated              python train.py --epochs 90",
    "zsh: floating point exception  python train.py",
    "[1]  + 4242 hangup     python train.py",
    # an error that mentions a warning is still an error
    "Job failed: the step was cancelled. Reason: received termination warning signal",
    "RuntimeError: checkpoint shard 3 is corrupt (see the warning above)",
    # an error whose subject reads like a metric's name, with no metric's value after it
    "Validation error: config.yaml has no field `lr`",
    "Test error: 3 of 8 shards failed to load",
    # a file it could not open or write: darknet's words when its backup directory is missing
    "Couldn't open file: /home/x/backup//yolo-obj_last.weights",
    "cannot open file",
    "Can\u2019t open file /data/voc/train.txt",
    "Unable to open file (unable to open file: name = 'model.h5', errno = 2, error message = "
    "'No such file or directory', flags = 0, o_flags = 0)",
    "Could not write file /scratch/run/model_final.pth",
    "fopen /data/voc/2007_train.txt: No such file or directory (errno 2)",
])
def test_a_log_that_ends_in_an_error_line_is_a_failure(catalogue, last_line: str):
    assert _after_progress(catalogue, last_line).class_id == "unknown_failure"


@pytest.mark.parametrize("last_line", [
    "UserWarning: the error handling of this function is deprecated",
    "[W socket.cpp:464] [c10d] WARNING: connect to [::1]:29500 failed, retrying",
    "Epoch 3:  40%|####      | 200/500 [00:25<00:37, 8.0it/s, loss=0.213]",
    # a signal's name as a word of an ordinary line
    "Training terminated early by the scheduler's plan: 0 of 4 workers, quit rate 0.1",
    "env step: 12 terminated=0 truncated=1",
    "eval ratio: 3 quit  (of 40 episodes)",
    # a warning Python shows with its source line, and a compiler's warning label
    "/opt/lib/torch/utils/cpp_extension.py:346: UserWarning: Error checking compiler version "
    "for cl\n  warnings.warn(f'Error checking compiler version for {compiler}: {error}')",
    "cc1plus: warning: command-line option '-Wstrict-prototypes' is not valid: error prone",
    # a line that only names a file, or looks for one
    "Opening file /data/voc/train.txt",
    "saved to file /home/x/backup/yolo-obj_last.weights",
    "Open file: train.txt",
    "Cannot openly compare these runs yet",
    "Could not find a checkpoint in /scratch/run, starting from scratch",
    # glog's and TensorFlow's warning severity (`W`), at start-up: not an error report
    "2021-03-02 10:00:01.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:64]"
    " Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open "
    "shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/cuda/lib64",
    "W0302 10:00:01.123456 4242 loader.cc:88] cannot open /data/cache.idx: No such file or "
    "directory, rebuilding it",
])
def test_a_log_that_ends_in_a_warning_or_progress_is_running(catalogue, last_line: str):
    assert _after_progress(catalogue, last_line).class_id == "none"


@pytest.mark.parametrize("metrics", [
    "Test Error: avg loss: 0.4172",
    "Epoch 7 train error: 0.1180, val_error=0.1412",
    "top-5 error: 7.25 %",
    "Mean squared error: 0.031 (best 0.029)",
    # anywhere on a line, not only at its start
    "Finished training epoch: Avg Loss: 0.31, Avg Error: 0.09",
    "Epoch 3 - loss: 0.3100 - val error: 0.1200",
    "[INFO] eval done: top-1 error: 23.5 %, top-5 error: 7.1 %",
])
def test_a_metric_named_error_is_not_an_error_report(catalogue, metrics: str):
    assert _after_progress(catalogue, metrics).class_id == "none"


@pytest.mark.parametrize("error", [
    "Error: could not read batch 12 of /data/train.bin (0.5 GiB)",
    "RuntimeError: mean error = 0.5 exceeds the tolerance",
    "error: learning rate 0.5 is out of range",
    # a metric first does not hide the error after it
    "Avg Error: 0.09, Failed to save checkpoint to /ckpt/step_120",
])
def test_an_error_with_a_number_or_a_metric_on_its_line_is_still_an_error(catalogue, error: str):
    d = _after_progress(catalogue, error)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")


@pytest.mark.parametrize("finish", [
    "Training completed. Do not forget to share your model on huggingface.co/models =)",
    "[2025-03-02 10:00:04] iter 8000/8000 loss 0.91",
])
def test_an_error_after_the_end_of_training_is_a_failure(catalogue, finish: str):
    text = "[2025-03-02 10:00:00] iter 7999/8000 loss 0.92\n" + finish + "\n"
    assert read_log(catalogue, text).class_id == "completed"
    crashed = text + ("Traceback (most recent call last):\n"
                      "OSError: [Errno 122] Disk quota exceeded: 'out/final/model.safetensors'\n")
    d = read_log(catalogue, crashed)
    assert (d.class_id, d.decided_by) == ("disk_full", "signature")


TF_PROGRESS = "".join(
    f"I0814 17:34:0{i}.763399 139699710150400 tf_logging.py:115] loss = 0.9, step = {step} "
    "(2.289 sec)\n" for i, step in enumerate((31000, 31100, 31200)))


def test_a_log_that_ends_in_the_final_off_grid_checkpoint_save_is_completed(catalogue):
    """TensorFlow's Estimator writes a checkpoint at the step training stops at: past the last
    progress line and off its step grid (progress every 100 steps, the end at 31250)."""
    final = ("I0814 17:34:05.256262 139699710150400 tf_logging.py:115] Saving checkpoints for "
             "31250 into /scratch/resnet/model.ckpt.\n")
    assert read_log(catalogue, TF_PROGRESS + final).class_id == "completed"
    # a periodic save on the grid, or any save followed by more progress, is a running job
    periodic = final.replace("31250", "31300")
    assert read_log(catalogue, TF_PROGRESS + periodic).class_id == "none"
    assert read_log(catalogue, TF_PROGRESS + final + TF_PROGRESS.replace(
        "step = 31", "step = 32")).class_id == "none"


EPOCH_TABLE = (
    "+-------+------------+----------------+\n"
    "| Epoch | Train loss | Validation acc |\n"
    "+-------+------------+----------------+\n"
    + "".join(f"| {n:<5} | {1.9 - n / 10:<10.3f} | {0.4 + n / 20:<14.3f} |\n" for n in range(1, 9))
)
TABLE_BORDER = "+-------+------------+----------------+\n"


def test_a_log_that_ends_in_a_closed_progress_table_is_completed(catalogue):
    """A trainer that prints its progress as a table (Turi Create's toolkits) closes it with a
    border when its loop ends; the table still open is a running job."""
    assert read_log(catalogue, EPOCH_TABLE + TABLE_BORDER).class_id == "completed"
    assert read_log(catalogue, EPOCH_TABLE).class_id == "none"


def test_a_closed_table_of_other_figures_is_not_the_end(catalogue):
    per_class = ("[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n"
                 "+-------+-----+-------+\n| class | gts | ap    |\n+-------+-----+-------+\n"
                 "| car   | 412 | 0.612 |\n| bike  | 98  | 0.405 |\n+-------+-----+-------+\n")
    assert read_log(catalogue, per_class).class_id == "none"
    # the border followed by more output: the table was one of several
    assert read_log(catalogue, EPOCH_TABLE + TABLE_BORDER
                    + "Resuming with a lower learning rate\n").class_id == "none"


@pytest.mark.parametrize("line", [
    # Lightning's progress-bar postfix and logger keys
    "Epoch 0:  71%|#######   | 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, "
    "train_loss_step=nan.0",
    "Epoch 3: 100%|##########| 500/500 [01:02<00:00, 8.0it/s, loss=nan, v_num=1]",
    "Epoch 3: 100%|##########| 500/500 [01:02<00:00, val_loss_epoch=inf, v_num=1]",
    # a DETR-family matcher's assert on the predicted boxes: only NaN breaks x1 >= x0
    "    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()",
])
def test_nan_in_a_progress_bar_postfix_or_predicted_boxes_is_a_nan_loss(catalogue, line: str):
    assert _after_progress(catalogue, line).class_id == "nan_loss"


@pytest.mark.parametrize("line", [
    "Epoch 3: 100%|##########| 500/500 [01:02<00:00, loss_scale=inf, v_num=1]",
    "    assert (boxes2[:, 2:] >= boxes2[:, :2]).all()",  # the labels: a data problem
    # DeepSpeed's dynamic loss scaler skipping an fp16 step: routine in a healthy run
    "[2025-03-02 10:01:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "[2025-03-02 10:01:00,000] [INFO] [fused_optimizer.py:171:step] [deepspeed] fp16 dynamic "
    "loss scale overflow! Skipping step. Attempted loss scale: 4096, reducing to 2048",
    "[2025-03-02 10:01:00,000] [INFO] [unfused_optimizer.py:406:step] Grad overflow on "
    "iteration 120",
])
def test_a_loss_scale_or_a_label_box_assert_is_not_a_nan_loss(catalogue, line: str):
    assert _after_progress(catalogue, line).class_id != "nan_loss"


DEEPSPEED_OVERFLOW = ("[2023-05-01 10:0{n}:00,000] [INFO] [stage_1_and_2.py:1765:step] "
                      "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale},"
                      " reducing to {new}\n")


def _overflows(*scales: int) -> str:
    return "".join(DEEPSPEED_OVERFLOW.format(n=n, scale=s, new=max(s // 2, 1))
                   for n, s in enumerate(scales))


def test_deepspeeds_overflow_again_and_again_at_its_minimum_loss_scale_is_a_divergence(
        catalogue):
    # the gradients overflow unscaled, step after step: the run diverged
    text = "[2023-05-01 10:00:00] step 120 loss 1.21\n" + _overflows(2, 1, 1, 1)
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("nan_loss", "signature")


@pytest.mark.parametrize("scales", [
    (65536, 32768, 16384, 8192),  # routine fp16: the scale still large
    (2, 1, 1),  # one or two at the minimum: a spike the run may survive
], ids=["large-scale", "two-at-minimum"])
def test_deepspeeds_routine_or_few_overflows_at_its_minimum_are_no_divergence(catalogue, scales):
    text = ("[2023-05-01 10:00:00] step 120 loss 1.21\n" + _overflows(*scales)
            + "[2023-05-01 10:09:00] step 121 loss 1.20\n")
    assert read_log(catalogue, text).class_id == "none"


@pytest.mark.parametrize("line", [
    "Detected inf/nan during batch_number=0",
    "ValueError: DebugUnderflowOverflow: inf/nan detected, aborting as there is no point "
    "running further. Please scroll up above this traceback to see the activation values prior "
    "to this event.",
])
def test_transformers_underflow_overflow_detector_finding_inf_or_nan_is_a_divergence(
        catalogue, line):
    text = "[2023-05-01 10:00:00] step 0 loss 1.21\n" + line + "\n"
    assert read_log(catalogue, text).class_id == "nan_loss"


def test_transformers_underflow_overflow_detectors_tracing_is_no_divergence(catalogue):
    # near miss: the detector tracing batches (trace_batch_nums) reports no inf/nan
    text = ("[2023-05-01 10:00:00] step 0 loss 1.21\n"
            "                  *** Starting batch number=1 ***\n"
            "abs min  abs max  metadata\n"
            "                  *** Starting batch number=3 ***\n"
            "[2023-05-01 10:00:09] step 4 loss 1.10\n")
    assert read_log(catalogue, text).class_id == "none"


@pytest.mark.parametrize("empty", [
    "No data found. Please verify arguments (train_data_dir must be the parent of folders)",
    "WARNING: the training dataset is empty, nothing to do",
    "No training images found in /data/train",
    # a zero-length loader or data set as scripts print it, HF Trainer's count
    "len(training_loader)=0",
    "  Num examples = 0",
    # the framework itself saying it did not train (ms-swift)
    "[WARNING:swift] No training was carried out, which may be due to the dataset being too "
    "small or incorrect usage of resume_from_checkpoint.",
    # Lightning finding no batch, Keras's directory iterator finding no file
    "INFO:lightning_fabric.utilities.rank_zero:`Trainer.fit` stopped: No training batches.",
    "UserWarning: Total length of `DataLoader` across ranks is zero. Please make sure this was "
    "your intention.",
    "Found 0 images belonging to 2 classes.",
    # Hugging Face's Trainer finding no batch in an epoch (trainer.py)
    "There seems not to be a single sample in your epoch_iterator, stopping training at step 0! "
    "This is expected if you're using an IterableDataset and set num_steps (1000) higher than "
    "the number of available samples.",
])
def test_an_empty_data_set_is_a_silent_exit_even_when_the_script_says_it_finished(
        catalogue, empty: str):
    text = "0 train images with repeating.\n" + empty + "\nTraining finished\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "signature") and not d.retryable
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=30)
    assert read_log(catalogue, text, done).class_id == "silent_exit"


@pytest.mark.parametrize("warning", [
    "WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your "
    "dataset or generator can generate at least `steps_per_epoch * epochs` batches (in this "
    "case, 250000 batches). You may need to use the repeat() function when building your "
    "dataset.",
    "W1105 09:12:44.120331 data_adapter.py:1280] Your dataset iterator ran out of data; "
    "interrupting training.",
])
def test_keras_interrupting_fit_when_its_input_runs_dry_is_a_silent_exit(catalogue,
                                                                        warning: str):
    """Keras stops fit() early when the data set yields fewer than steps_per_epoch * epochs
    batches: the run ends without an error, whatever the epoch's end prints after it."""
    text = ("Epoch 1/40\n 212/5000 [>.............................] - ETA: 41:07 - loss: 1.9042"
            + warning + "\n"
            "Epoch 00001: saving model to ./checkpoints/model_01.h5\n"
            " 212/5000 [>.............................]\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "signature") and not d.retryable
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=600)
    assert read_log(catalogue, text, done).class_id == "silent_exit"
    # ... and the epochs simply going on are a running job
    going = "Epoch 1/40\n5000/5000 [==============================] - 610s - loss: 0.41\n"
    assert read_log(catalogue, going + "Epoch 2/40\n").class_id == "none"


@pytest.mark.parametrize("end", [
    "Done training for 0 steps.",
    "INFO:root:Finished training after 0 epochs",
    "Stopped training after 0 iterations (target already reached)",
])
def test_a_trainer_saying_it_trained_zero_steps_is_a_silent_exit(catalogue, end: str):
    """A run that restored its weights (or found its step target already reached) and says
    it is done after 0 steps trained nothing, though it ends as a finished run would."""
    text = ("EPOCHS: 200\nNo checkpoint file found\n"
            "Restoring ImageNet Pretrained: vgg16_weights.npz\n" + end + "\n")
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "signature") and not d.retryable
    # ... while the same end after real steps is no silent exit
    trained = text.replace(" 0 ", " 10 ")
    assert read_log(catalogue, trained).class_id != "silent_exit"


KERAS_EPOCHS = "".join(
    f"Epoch {n}/50\n250/250 [==============================] - 12s 48ms/step - loss: "
    f"{0.3 - n / 100:.4f} - val_loss: {0.29 + abs(n - 6) / 100:.4f}\n" for n in range(1, 9))


@pytest.mark.parametrize("stopped", [
    "Epoch 8: early stopping\n",
    "Epoch 00008: early stopping\n",  # Keras before 2.9
    # with restore_best_weights, in either order (Keras 2 restores first, Keras 3 after)
    "Restoring model weights from the end of the best epoch: 6.\nEpoch 8: early stopping\n",
    "Epoch 8: early stopping\nRestoring model weights from the end of the best epoch: 6.\n",
])
def test_keras_early_stopping_is_the_run_ending_as_configured(catalogue, stopped: str):
    """Keras's EarlyStopping ends fit() before its last epoch by design: a completion."""
    d = read_log(catalogue, KERAS_EPOCHS + stopped)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    # ... but an error after it is still a failure
    crashed = (KERAS_EPOCHS + stopped + "Traceback (most recent call last):\n"
               "OSError: Unable to create file (unable to open file: name = 'best.h5')\n")
    assert read_log(catalogue, crashed).class_id == "unknown_failure"


@pytest.mark.parametrize("line", [
    "EarlyStopping counter: 3 out of 10",  # a patience count while training goes on
    "Epoch 8: val_loss did not improve from 0.29000",
    "Epoch 8: early stopping is enabled with patience 3",
])
def test_a_patience_count_or_an_early_stopping_setting_is_no_completion(catalogue, line: str):
    assert read_log(catalogue, KERAS_EPOCHS + line + "\n").class_id == "none"


@pytest.mark.parametrize("finished", [
    "Finished training.",
    "Finished Training",  # PyTorch's CIFAR-10 tutorial
    "finished training",
    "2025-03-02 10:42:01,123 - INFO - Finished training.",
    "Finished Training! Final Loss: 0.0123 Accuracy: 0.98",
    "Finished training. Reached maximum number of epochs.",
    "Finished training the model.",
    "Rank 0 finished training.",
    "Finished training in 812.4 seconds",
])
def test_finished_training_is_a_completion(catalogue, finished: str):
    d = read_log(catalogue, KERAS_EPOCHS + finished + "\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")


@pytest.mark.parametrize("line", [
    "Finished training epoch 3, stats averaged over workers: {'loss': 0.31}",
    "Finished Training Epoch: 3 \t Training Time: 0.512",
    "[main]: Finished training epoch 3",
])
def test_finishing_one_epoch_is_no_completion(catalogue, line: str):
    assert read_log(catalogue, KERAS_EPOCHS + line + "\n").class_id == "none"


LIGHTNING_EPOCH = ("Epoch {epoch}: {n:>3}%|          | {n}/100 [00:10<00:00,  9.80it/s, "
                   "loss=0.31]\n")


def _lightning_epochs(first: int, last: int, *, last_n: int = 100) -> str:
    """Lightning's bar of each epoch from `first` to `last`, the last one at `last_n` of 100."""
    return "".join(LIGHTNING_EPOCH.format(epoch=e, n=100 if e < last else last_n)
                   for e in range(first, last + 1))


@pytest.mark.parametrize("marker", [
    # Lightning's EarlyStopping signals a stop that waits for min_epochs
    "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.123. "
    "Signaling Trainer to stop.",
    "Training completed",
    "Finished training.",
])
def test_a_completion_marker_followed_by_training_is_not_the_end(catalogue, marker: str):
    """Training after a completion marker: the marker did not end the run, its later lines
    decide (here an epoch's bar mid-pass: running)."""
    text = _lightning_epochs(0, 4) + marker + "\n" + _lightning_epochs(5, 6, last_n=40)
    d = read_log(catalogue, text)
    assert d.class_id == "none"
    # ... the marker still decides when nothing trains after it
    d = read_log(catalogue, _lightning_epochs(0, 6, last_n=40) + marker + "\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    # ... and so does a later one, after the last progress
    d = read_log(catalogue, text + "`Trainer.fit` stopped: `max_epochs=7` reached.\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")


# Hugging Face Trainer: its training loop, its end (trainer.py `_inner_training_loop`: the
# marker, the train metrics, ProgressCallback closing the training bar where it stopped), then
# the example scripts' trainer.evaluate() (`evaluation_loop`, its unlabelled prediction_bar)
HF_TRAINED = "".join(
    f"{{'loss': 1.{9 - i}, 'grad_norm': 0.5, 'learning_rate': 5e-05, 'epoch': 0.0{i}}}\n"
    f"  0%|          | {i * 10}/8000 [00:{i:02d}<2:40:00,  1.2it/s]\n" for i in range(1, 4)) + (
    "\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n\n\n"
    "{'train_runtime': 36.1, 'train_samples_per_second': 3.3, 'train_steps_per_second': 0.8, "
    "'train_loss': 1.75, 'epoch': 0.03}\n"
    "  0%|          | 30/8000 [00:36<2:40:00,  1.2it/s]\n"
    "***** train metrics *****\n  epoch = 0.03\n  train_loss = 1.75\n")
HF_EVALUATING = ("***** Running Evaluation *****\n  Num examples = 400\n  Batch size = 8\n"
                 " 45%|####5     | 45/100 [00:10<00:12,  4.50it/s]\n")


@pytest.mark.parametrize("acct", [None, Accounting(state="RUNNING")])
def test_an_evaluation_after_training_completed_is_no_training_progress(catalogue, acct):
    """A log cut off in the evaluation that follows `Training completed`: running, and the
    explanation says it evaluates (its bar counts batches, not steps), not that it trains."""
    d = read_log(catalogue, HF_TRAINED + HF_EVALUATING, acct)
    # the last marker: the train metrics train() prints when it returns
    assert (d.class_id, d.detail) == ("none", {"kind": "evaluating", "line": 12})
    assert explain(d) == ("Training completed (line 12) and the run is evaluating the model now: "
                          "the progress bar after it counts the evaluation's batches, not "
                          "training steps.")
    assert "평가하는 중" in explain(d, "ko")


@pytest.mark.parametrize("acct", [None, Accounting(state="RUNNING")])
def test_an_evaluation_whose_log_is_long_is_still_found_after_training_completed(catalogue,
                                                                                  acct):
    """The evaluation's header is found wherever it is after `Training completed`, not only
    among the log's last lines: an evaluation that logs a lot (here 200 lines of its own
    output, each batch's bar on a line of its own) is still an evaluation."""
    lines = "".join(f"eval batch {i}: 8 examples\n" for i in range(200))
    header, bar = HF_EVALUATING.rsplit(" 45%", 1)
    text = HF_TRAINED + header + lines + " 45%" + bar
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.detail) == ("none", {"kind": "evaluating", "line": 12})
    # ... also fed as a watcher feeds it, a few lines at a time
    analysis = LogAnalysis(catalogue)
    for i in range(0, len(text), 97):
        analysis.feed_text(text[i:i + 97])
    analysis.finish()
    assert analysis.diagnose(acct).detail == {"kind": "evaluating", "line": 12}
    # ... while a header before the marker (an evaluation during training) is not this one
    d = read_log(catalogue, HF_EVALUATING.split(" 45%")[0] + HF_TRAINED + lines
                 + "  0%|          | 31/8000 [00:37<2:40:00,  1.2it/s]\n", acct)
    assert present(d.detail)["kind"] == "running"


@pytest.mark.parametrize("acct", [None, Accounting(state="COMPLETED", exit_code=0, signal=0,
                                                   elapsed_s=900)])
def test_the_training_bar_drawn_again_after_training_completed_is_no_progress(catalogue, acct):
    """Hugging Face's ProgressCallback closes the training bar after `Training completed`,
    drawing it once more where it stopped (early stopping at 30 of 8000): the end of training."""
    d = read_log(catalogue, HF_TRAINED, acct)
    assert (d.class_id, d.decided_by, d.detail) == (
        "completed", "signature", {"kind": "ended_early", "last_iter": 30, "target_iter": 8000})
    # ... a bar that moved on is training
    moved = HF_TRAINED + "  0%|          | 31/8000 [00:37<2:40:00,  1.2it/s]\n"
    assert read_log(catalogue, moved, acct).class_id == (
        "none" if acct is None else "silent_exit")


@pytest.mark.parametrize("logged_loss", [True, False], ids=["after-loss", "before-loss"])
def test_a_run_that_stopped_in_an_evaluation_during_training_is_a_silent_exit(
        catalogue, logged_loss: bool):
    """Hugging Face Trainer's evaluation during training (at eval_steps) draws its own bar
    below the training bar (ProgressCallback.on_prediction_step, position 1: the cursor moved
    back up after each draw) up to its own total: a run whose log ends there stopped at the
    training bar's step, not at the evaluation's 400 of 400; also when it evaluated before
    it first logged its loss (eval_steps below logging_steps)."""
    training = "".join(f"\r  1%|          | {i}/1000 [00:{i % 60:02d}<16:40,  1.00it/s]"
                       for i in range(90, 101))
    evaluation = "".join(f"\n\r{i * 100 // 400:3d}%|#         | {i}/400 [00:{i % 60:02d}<00:40, "
                         "9.00it/s]\x1b[A" for i in range(380, 401))
    logged = "{'loss': 1.91, 'grad_norm': 0.5, 'learning_rate': 5e-05, 'epoch': 0.1}\n"
    text = (logged if logged_loss else "") + training + evaluation + "\n"
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900)
    d = read_log(catalogue, text, done)
    assert d.class_id == "silent_exit"
    reasons = present(d.detail)["reasons"]
    assert {"kind": "stopped", "last_iter": 100, "target_iter": 1000} in reasons


def test_a_run_that_evaluated_after_training_completed_is_completed(catalogue):
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900)
    d = read_log(catalogue, HF_TRAINED + HF_EVALUATING, done)
    assert (d.class_id, d.decided_by, d.detail) == ("completed", "signature", None)
    evaluated = HF_EVALUATING.replace(" 45%|####5     | 45/100 [00:10<00:12,",
                                      "100%|##########| 100/100 [00:22<00:00,")
    d = read_log(catalogue, HF_TRAINED + evaluated + "***** eval metrics *****\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    # ... an error in the evaluation is still the failure
    crashed = HF_TRAINED + HF_EVALUATING + ("Traceback (most recent call last):\n"
                                            "ValueError: expected 400 labels, got 399\n")
    assert read_log(catalogue, crashed).class_id == "unknown_failure"
    # ... and training after the marker, then an evaluation, is training (a mid-run one)
    trained_on = HF_TRAINED + "  0%|          | 40/8000 [00:45<2:40:00,  1.2it/s]\n"
    d = read_log(catalogue, trained_on + HF_EVALUATING)
    assert present(d.detail)["kind"] == "running"
    assert read_log(catalogue, trained_on + HF_EVALUATING, done).class_id == "silent_exit"


# Hugging Face Trainer at its default verbosity (transformers' logger at WARNING: no `*****
# Running training *****`, no `Training completed`, no `***** Running Evaluation *****`): the
# training bar (ProgressCallback's, tqdm(total=max_steps)) redrawn at each step and its logged
# dicts, the train metrics train() prints when it returns (on_log: `train_runtime`), the
# training bar closed where it ended, then the script's trainer.evaluate(): its prediction_bar,
# unlabelled and, the training bar closed, drawn at the top (no cursor moved back up).
HF_TRAINED_QUIETLY = "".join(
    "\r" + "\r".join(f"{n * 100 // 60:3d}%|{'#' * (n // 6):<10}| {n}/60 "
                      f"[00:{n:02d}<00:{60 - n:02d},  1.00it/s]" for n in range(step - 9, step + 1))
    + f"{{'loss': {1.9 - step / 100:.2f}, 'grad_norm': 0.5, 'learning_rate': 5e-05, "
      f"'epoch': {step / 60:.2f}}}\n" for step in range(10, 61, 10)) + (
    "\r100%|##########| 60/60 [01:00<00:00,  1.00it/s]{'train_runtime': 61.2, "
    "'train_samples_per_second': 7.84, 'train_steps_per_second': 0.98, 'train_loss': 1.63, "
    "'epoch': 1.0}\n"
    "\r100%|##########| 60/60 [01:00<00:00,  1.00it/s]\n")
HF_EVALUATING_QUIETLY = (
    "\r  0%|          | 0/100 [00:00<?, ?it/s]\r  2%|2         | 2/100 [00:00<00:10,  9.50it/s]"
    "\r 45%|####5     | 45/100 [00:10<00:12,  4.50it/s]\n")


def test_an_evaluation_bar_after_the_train_metrics_is_no_training_progress(catalogue):
    """The evaluation a script runs after train() returned, its bar drawn at the top with no
    header before it: its 45 of 100 batches are not training's progress (was: the target read
    as 100, and a COMPLETED run that reached its 60 steps a silent exit 'stopped at
    iteration 60 of 100'); the run trained its 60 steps and completed."""
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900)
    d = read_log(catalogue, HF_TRAINED_QUIETLY + HF_EVALUATING_QUIETLY, done)
    # (the run reached its target: the marker that agrees with sacct decides)
    assert (d.class_id, d.decided_by, d.detail) == ("completed", "signature", None)
    assert (d.metrics.last_iter, d.metrics.target_iter) == (60, 60)
    assert "of 100" not in explain(d)
    # ... the log alone, cut in that evaluation: evaluating after training completed
    d = read_log(catalogue, HF_TRAINED_QUIETLY + HF_EVALUATING_QUIETLY)
    assert (d.class_id, d.detail, d.metrics.target_iter) == (
        "none", {"kind": "evaluating", "line": 7}, 60)
    # ... and once the evaluation's metrics are logged, completed
    evaluated = HF_EVALUATING_QUIETLY.replace(" 45%|####5     | 45/100 [00:10<00:12,",
                                              "100%|##########| 100/100 [00:22<00:00,")
    d = read_log(catalogue, HF_TRAINED_QUIETLY + evaluated + "{'eval_loss': 1.71, "
                 "'eval_runtime': 22.1, 'epoch': 1.0}\n")
    assert (d.class_id, d.decided_by, d.metrics.last_iter) == ("completed", "signature", 60)
    # ... while a bar of the training bar's total after the train metrics is training again
    trained_on = HF_TRAINED_QUIETLY + "\r  1%|          | 1/60 [00:01<00:59,  1.00it/s]\n"
    assert present(read_log(catalogue, trained_on).detail)["kind"] == "running"


# Ray Train's report after each iteration (ray/tune/experimental/output.py, `on_trial_result`),
# the table it prints under it, and the end of its run (`on_trial_complete`)
RAY_ITERATION = (
    "Training finished iteration {n} at 2025-08-20 08:4{n}:43. Total running time: {n}min 34s\n"
    "\u256d\u2500\u2500\u2500\u256e\n"
    "\u2502 Training result        \u2502\n"
    "\u2502 training_iteration   {n} \u2502\n"
    "\u2502 loss           0.52336 \u2502\n"
    "\u2570\u2500\u2500\u2500\u256f\n")
RAY_END = ("Training completed after 2 iterations at 2025-08-20 08:45:43. Total running time: "
           "15min 34s\n")


@pytest.mark.parametrize("line", [
    "Training finished iteration 3 at 2025-08-20 08:40:43. Total running time: 10min 34s",
    # older Ray's wording
    "Training finished iteration 3 at 2023-03-22 15:29:25 (running for 00:10:34.21).",
])
def test_ray_trains_report_after_each_iteration_is_no_completion(catalogue, line: str):
    assert "completed" not in {m.class_id for m in catalogue.match_line(line)}
    # ... while `Training finished.` and Ray's end of the run are
    for end in ("Training finished.", "Training is finished", "Training finished in 3h 2m",
                RAY_END.strip()):
        assert "completed" in {m.class_id for m in catalogue.match_line(end)}


def test_a_ray_train_log_that_ends_after_an_iteration_is_not_completed(catalogue):
    """Ray Train reports every iteration in words that read like an end (`Training finished
    iteration 2 at ...`): it is progress, not a completion marker that Slurm's COMPLETED 0:0
    would show as the evidence of the end."""
    text = "Training started with configuration:\n" + RAY_ITERATION.format(
        n=1) + RAY_ITERATION.format(n=2)
    assert read_log(catalogue, text).class_id == "none"
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900)
    d = read_log(catalogue, text, done)
    assert (d.class_id, d.decided_by) == ("completed", "accounting")
    assert not [e for e in d.evidence if "Training finished iteration" in e.text]
    # Ray's own end of the run is the end, by its signature
    d = read_log(catalogue, text + RAY_END)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def test_a_completion_marker_followed_by_training_is_no_evidence_of_the_end_for_slurm(
        catalogue):
    """COMPLETED 0:0 after a completion marker that training followed, short of the target: the
    marker is not the end (as without accounting), so the run's 20 seconds and its stop short
    of the target are both why it is a silent exit."""
    text = ("[2025-03-02 10:00:00] iter 10/8000 loss 1.21\n"
            "Training completed\n"
            "[2025-03-02 10:00:04] iter 20/8000 loss 1.20\n")
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    d = read_log(catalogue, text, short)
    assert (d.class_id, d.decided_by) == ("silent_exit", "detector")
    assert d.detail == {"kind": "silent_exit", "reasons": [
        {"kind": "short_run", "elapsed_s": 20},
        {"kind": "stopped", "last_iter": 20, "target_iter": 8000}]}
    assert explain(d).startswith(
        "COMPLETED 0:0, but it ran for only 20 s; it stopped at iteration 20 of 8000.")
    # ... a marker that ends the log still stands for the work done in a short run, and for
    # its end short of the target (test_a_completion_marker_that_ends_the_log_short_of_...)
    ended = read_log(catalogue, text + "Training completed\n", short)
    assert (ended.class_id, ended.decided_by) == ("completed", "signature")


@pytest.mark.parametrize(("acct", "class_id", "decided_by"), [
    (Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900), "completed",
     "signature"),
    (Accounting(state="FAILED", exit_code=1, signal=0, elapsed_s=900), "unknown_failure",
     "accounting"),
])
def test_a_completion_marker_decides_when_sacct_agrees_never_when_it_contradicts(
        catalogue, acct, class_id, decided_by):
    """At its target, a marker that ends the log and agrees with COMPLETED 0:0 decides (a
    person reads "a decisive log line", never "the log does not say why: look closer"); a
    FAILED run whose log ends in a marker is not decided by that marker: accounting alone."""
    text = "".join(f"[2025-03-02 10:00:0{i}] iter {n}/30 loss 1.2\n"
                   for i, n in enumerate((10, 20, 30))) + "Training complete: 30 iterations\n"
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == (class_id, decided_by)


@pytest.mark.parametrize("marker", [
    # Lightning's end of fit (its EarlyStopping, or max_steps lower than the recipe's target)
    "`Trainer.fit` stopped: `max_steps=30` reached.",
    # Hugging Face Trainer's end of its training loop (EarlyStoppingCallback stops it too)
    "Training completed. Do not forget to share your model on huggingface.co/models =)",
])
@pytest.mark.parametrize("acct", [None, Accounting(state="COMPLETED", exit_code=0, signal=0,
                                                   elapsed_s=900)])
def test_a_completion_marker_that_ends_the_log_short_of_the_target_is_completed(
        catalogue, marker, acct):
    """The framework's own word that training finished, with nothing trained after it, is the
    end with and without Slurm's COMPLETED 0:0, even short of the recipe's target (early
    stopping is legitimate); the explanation says where it ended."""
    text = "".join(f"[2025-03-02 10:00:0{i}] iter {n}/8000 loss 1.2\n"
                   for i, n in enumerate((10, 20, 30))) + marker + "\n"
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert d.detail == {"kind": "ended_early", "last_iter": 30, "target_iter": 8000}
    assert explain(d).startswith("Training ended at iteration 30 of 8,000, before the recipe's "
                                 "target: early stopping, or a max_steps / max_epochs lower")
    assert "iteration 30에서 끝났습니다" in explain(d, "ko")
    # a launcher that exits 0 with no such marker stays a silent exit
    if acct is not None:
        d = read_log(catalogue, text.replace(marker + "\n", ""), acct)
        assert d.class_id == "silent_exit"
        assert d.detail == {"kind": "silent_exit", "reasons": [
            {"kind": "stopped", "last_iter": 30, "target_iter": 8000}]}


def test_a_completed_run_short_of_its_target_by_less_than_a_logging_interval_ran_it_all(
        catalogue):
    """A loop that prints every 10 of its 8,000 steps counting from 0 last prints 7990: its
    completion marker then ends no early stop (no `ended_early` hint); 7980 and below is."""
    for last, detail in ((7990, None), (7980, {"kind": "ended_early", "last_iter": 7980,
                                               "target_iter": 8000})):
        text = "".join(f"[2025-03-02 10:00:{i:02d}] iter {n}/8000 loss 1.2\n"
                       for i, n in enumerate(range(last - 40, last + 1, 10)))
        d = read_log(catalogue, text + "Training completed. Do not forget to share your model "
                     "on huggingface.co/models =)\n")
        assert (d.class_id, d.detail) == ("completed", detail), last


@pytest.mark.parametrize(("line", "class_id"), [
    # NVIDIA's Xid catalogue: the GPU's or driver's own faults
    ("NVRM: Xid (PCI:0000:db:00): 79, pid=3643, GPU has fallen off the bus.", "gpu_failure"),
    ("NVRM: Xid (PCI:0000:db:00): 46, pid=3643, GPU stopped processing", "gpu_failure"),
    ("NVRM: Xid (PCI:0000:db:00): 48, pid=3643, An uncorrectable double bit error",
     "gpu_failure"),
    # ... and the application's (RESTART_APP there): an illegal access, not the node's fault
    ("NVRM: Xid (PCI:0000:db:00): 13, pid=3643, Graphics SM Warp Exception on (GPC 2, TPC 5, "
     "SM 0): Out Of Range Address", "unknown_failure"),
    ("NVRM: Xid (PCI:0000:db:00): 31, pid=3643, Ch 0000003b, intr 10000000. MMU Fault",
     "unknown_failure"),
    ("NVRM: Xid (PCI:0000:db:00): 43, pid=3643, Ch 00000010", "unknown_failure"),
])
def test_only_the_xid_codes_of_a_gpu_or_driver_fault_are_a_gpu_failure(
        catalogue, line: str, class_id: str):
    assert _after_progress(catalogue, line).class_id == class_id


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
    "  what():  CUDA error: uncorrectable NVLink error detected during the execution",
    "CUDA_ERROR_CONTAINED: Invalid access of peer GPU memory over nvlink or a hardware error",
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: cudaErrorContained",
])
def test_an_nvlink_fabric_fault_is_a_gpu_failure(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by) == ("gpu_failure", "signature")
    assert d.retryable and not d.charges_budget


def test_a_gpu_fault_is_the_cause_of_the_nccl_watchdog_abort_it_triggers(catalogue):
    text = (
        "[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with "
        "exception: CUDA error: uncorrectable ECC error encountered\n"
    )
    d = read_log(catalogue, text)
    # the watchdog only reports the CUDA error: no collective timed out
    assert d.class_id == "gpu_failure" and "nccl_timeout" not in d.secondary
    assert d.retryable and not d.charges_budget and d.action is Action.RESUBMIT


@pytest.mark.parametrize("loading", [
    "Loading checkpoint shards: 100%|##########| 4/4 [00:02<00:00,  1.52it/s]",
    "[2025-03-02 10:00:05] successfully loaded checkpoint at iteration 3000",
    "Resuming training from checkpoint iter_0008000 (iteration 8000/8000)",
])
def test_loading_a_checkpoint_is_not_progress(catalogue, loading: str):
    """A run that loaded a checkpoint and exited is a silent exit, not `completed`."""
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=300)
    d = read_log(catalogue, loading + "\n", done)
    assert d.class_id == "silent_exit" and d.metrics.last_iter is None
    assert read_log(catalogue, loading + "\n").class_id == "none"


START_UP_BARS = [
    "Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.33 examples/s]",
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:06<00:00,  1.7s/it]",
    "Tokenizing: 100%|██████████| 500/500 [00:02<00:00, 200.10it/s]",
    "Downloading data: 100%|██████████| 21.0M/21.0M [00:01<00:00, 14.2MB/s]",
    "Filter: 100%|██████████| 1000/1000 [00:00<00:00, 20811.27 examples/s]",
    "Generating train split: 100%|██████████| 36718/36718 [00:00<00:00, 412051.20 examples/s]",
    "Running tokenizer on dataset: 100%|██████████| 36718/36718 [00:09<00:00, 3851.76 "
    "examples/s]",
]


@pytest.mark.parametrize("bar", START_UP_BARS)
def test_a_log_that_ends_after_start_up_bars_ended_before_training(catalogue, bar: str):
    """Data preparation and loading bars at 100 % are no target reached: the run ended (or
    runs) before its training began, as after any other start-up output."""
    done = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=300)
    d = read_log(catalogue, bar + "\n", done)
    assert d.class_id == "silent_exit" and d.metrics.last_iter is None
    assert d.metrics.target_iter is None
    assert read_log(catalogue, bar + "\n").class_id == "none"
    # the shell's prompt after them: a program that returned without training, and says so
    text = START_UP + bar + "\n(venv) user@host:~/proj$ \n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "hint")
    assert d.detail is not None and d.detail["progress"] is False
    assert "returned without training" in explain(d)


@pytest.mark.parametrize("bar", [
    "Training: 100%|██████████| 1000/1000 [02:19<00:00,  7.20it/s]",
    "100%|██████████| 1000/1000 [08:20<00:00,  2.00it/s]",  # Hugging Face Trainer's bare bar
])
def test_a_training_bar_after_start_up_bars_still_reaches_the_target(catalogue, bar: str):
    text = "".join(b + "\n" for b in START_UP_BARS) + bar + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.metrics.last_iter, d.metrics.target_iter) == ("completed", 1000, 1000)


@pytest.mark.parametrize("time", TIMES_BEFORE_A_BAR)
@pytest.mark.parametrize("bar", [
    *START_UP_BARS,
    # an evaluation pass alone (`trainer.validate`) is no training either
    "Validation DataLoader 0: 100%|##########| 10/10 [00:01<00:00,  9.80it/s]",
])
def test_a_timestamped_start_up_bar_before_the_prompt_is_no_training_progress(
        catalogue, time: str, bar: str):
    """The time a log puts before a bar (and a rank's prefix around it) is no part of its
    label: a run that only prepared or loaded (`Generating train split: 100%|`) and returned
    is told as one that never trained."""
    text = START_UP + time + bar + "\n(venv) user@host:~/proj$ \n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "hint")
    assert d.detail is not None and d.detail["progress"] is False, d.detail
    assert "returned without training" in explain(d)


@pytest.mark.parametrize("time", TIMES_BEFORE_A_BAR)
@pytest.mark.parametrize("progress", [
    "      1/49     11.9G    0.0217    0.0123   0.00512        64       640: 100%|#####|",
    " 45%|####5     |",  # Hugging Face Trainer's bare bar, drawn without its count
    "Training:  45%|####5     |",
])
def test_timestamped_progress_the_series_does_not_count_is_still_progress(
        catalogue, time: str, progress: str):
    """A bar or epoch row after the line's time reads as the training progress it shows."""
    d = read_log(catalogue, START_UP + time + progress + "\n(venv) user@host:~/proj$ \n")
    assert (d.class_id, d.decided_by) == ("silent_exit", "hint")
    assert d.detail is not None and d.detail["progress"] is True, d.detail
    assert "returned without finishing training" in explain(d)


# Lightning's TQDMProgressBar (BAR_FORMAT) over two epochs: each epoch's bar reset to the
# epoch's batches, the validation's bar below it (position 1, cleared at its end)
LIGHTNING_FIT = "".join(
    "".join(f"\rEpoch {e}:  {25 * b:3d}%|##        | {b}/4 [00:0{b}<00:03,  1.00it/s, v_num=0, "
            f"train_loss=0.{9 - e}00]" for b in range(5))
    + "".join(f"\n\rValidation DataLoader 0:  50%|#####     | {b}/2 [00:00<00:00,  9.00it/s]"
              "\x1b[A" for b in range(3))
    + "\n\r" + " " * 60 + "\x1b[A" for e in range(2)) + "\n"


@pytest.mark.parametrize(("ending", "class_id"), [
    ("", "none"),  # another epoch or the end may follow: the log alone does not say
    ("`Trainer.fit` stopped: `max_epochs=2` reached.\n", "completed"),
    # the program returned with no word of the end (EarlyStopping stops silently)
    ("(venv) user@host:~/proj$ \n", "silent_exit"),
])
def test_an_epoch_bar_at_its_total_is_no_end_of_training(catalogue, ending: str,
                                                          class_id: str):
    """Lightning's `Epoch 1` bar at 4 of 4 is the end of an epoch, not of the run: the
    run's end is Lightning's `Trainer.fit` stopped line; its batches count on across epochs
    and its validation's bar is no training progress."""
    d = read_log(catalogue, LIGHTNING_FIT + ending)
    assert (d.class_id, d.metrics.last_iter, d.metrics.target_iter) == (class_id, 8, None)


@pytest.mark.parametrize("ending", [
    "Killed",
    # the shell's `Killed` after a progress bar that left the cursor mid-line
    "Loading checkpoint shards:  50%|#####     | 1/2 [00:03<00:03,  3.1s/it]Killed",
    "**Killed**",  # pasted into an issue in markdown bold
    # DeepSpeed's launcher reports its SIGKILLed ranks
    "[2023-03-05 06:40:35,705] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python', "
    "'-u', 'train.py', '--local_rank=7'] exits with return code = -9",
    "/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed    python3 main.py",
    # a shell's job-control notice of the kill (zsh, bash)
    "[1]    2843557 killed",
    "[1]+  Killed                  python train.py --epochs 40",
    # torch.multiprocessing.spawn's and accelerate launch's (subprocess) report of a SIGKILL
    "Exception: process 0 terminated with signal SIGKILL",
    "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'train_network.py']' died "
    "with <Signals.SIGKILL: 9>.",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 "
    "(pid: 5343) of binary: /usr/bin/python\nTraceback (most recent call last):\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    # any launcher's negative exit code of signal 9 (NVIDIA DIGITS, a job runner)
    "ERROR: error code -9",
    "Training process failed with exit code -9",
    # srun's report of a task SIGKILLed by no Slurm action (src/srun/launch.c)
    "srun: error: gpu-a017: task 3: Killed\nsrun: Terminating StepId=4242.0",
    # Open MPI's mpirun (orte help-orterun.txt) and PRRTE's prterun, the signal part wrapped
    "--------------------------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "--------------------------------------------------------------------------\n"
    "mpirun noticed that process rank 3 with PID 0 on node gpu-a017 exited on signal 9 "
    "(Killed).\n"
    "--------------------------------------------------------------------------",
    "prterun noticed that process rank 3 with PID 4123 on node gpu-a017 exited on\n"
    "signal 9 (Killed).",
    # Open MPI's first failed process, its exit code 128 + SIGKILL
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "the job to be terminated. The first process to do so was:\n\n"
    "  Process name: [[29521,1],3]\n  Exit code:    137",
])
def test_a_log_that_ends_sigkilled_is_a_host_oom_without_accounting(catalogue, ending: str):
    text = PROGRESS_AT_120 + ending + "\n"
    d = read_log(catalogue, text)
    assert d.class_id == "host_oom"
    # ... but a SIGKILL beside another cause's hint (a rank's SIGABRT) decides nothing alone
    mixed = text + "  traceback : Signal 6 (SIGABRT) received by PID 3431\n"
    assert read_log(catalogue, mixed).class_id == "unknown_failure"


RUNNER_FAILED = "run.pl: job failed, log is in exp/train_nodev/train.log\nrun.sh done.\n"


@pytest.mark.parametrize("killed", [
    # bash's notice with the command it ran wrapped to the next line, or left out
    "bash: line 1:  6508 Killed\n( asr_train.py --config conf/train.yaml --ngpu 0 ) 2>> "
    "exp/train_nodev/train.log >> exp/train_nodev/train.log\n\n",
    "./run.sh: line 45: 12345 Killed\n",
    "bash: line 1: 25413 Killed                  ( python3 -m espnet2.bin.asr_train --ngpu 0 ) "
    "2>> exp/asr/train.log >> exp/asr/train.log\n",
    "Killed\n",
])
def test_a_kill_is_not_hidden_by_the_recipe_runners_failure_lines_after_it(catalogue, killed):
    """Kaldi's and ESPnet's run.pl report the job it ran failed, and the recipe ends: that is
    the kill's aftermath, not another cause."""
    text = PROGRESS_AT_120 + killed
    assert read_log(catalogue, text).class_id == "host_oom"
    d = read_log(catalogue, text + RUNNER_FAILED)
    assert (d.class_id, d.decided_by) == ("host_oom", "hint")


@pytest.mark.parametrize("aftermath", [
    "make: *** [Makefile:3: train] Error 137\n",
    "make: *** [Makefile:3: train] Killed\n",
    "make[2]: *** [Makefile:3: train] Error 137\nmake[1]: *** [Makefile:5: all] Error 2\n"
    "make: *** [all] Error 2\n",
])
def test_make_reporting_its_recipe_sigkilled_is_a_host_oom(catalogue, aftermath):
    text = PROGRESS_AT_120
    for ending in (aftermath, "Killed\n" + aftermath):
        d = read_log(catalogue, text + ending)
        assert (d.class_id, d.decided_by) == ("host_oom", "hint")


@pytest.mark.parametrize("ending", [
    RUNNER_FAILED,  # the runner's failure alone names no cause
    "make: *** [Makefile:3: train] Error 1\n",
    "make: *** [Makefile:3: train] Error 1370\n",
    "Workers: 4 alive, 2 Killed\n",  # a count of killed workers, not a shell's notice
])
def test_a_runners_failure_without_a_kill_is_an_unknown_failure(catalogue, ending):
    text = PROGRESS_AT_120 + ending
    assert read_log(catalogue, text).class_id == "unknown_failure"


@pytest.mark.parametrize(("line", "class_id"), [
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor"
     " with shape[8,509,3072] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by"
     " allocator GPU_0_bfc", "cuda_oom"),
    ("ResourceExhaustedError (see above for traceback): OOM when allocating tensor with "
     "shape[90,17,17,32]", "cuda_oom"),  # no device named: TensorFlow's GPU wording
    # the host's CPU allocator: host memory
    ("ResourceExhaustedError (see above for traceback): OOM when allocating tensor with "
     "shape[32,52,52,256] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by "
     "allocator cpu", "host_oom"),
])
def test_tensorflow_oom_is_gpu_or_host_memory_by_its_allocator(catalogue, line: str,
                                                               class_id: str):
    assert read_log(catalogue, line + "\n").class_id == class_id


@pytest.mark.parametrize("line", [
    "RuntimeError: MPS backend out of memory (MPS allocated: 9.48 GiB, other allocations: "
    "480.00 KiB, max allowed: 9.47 GiB).",
    "RuntimeError: XPU out of memory. Tried to allocate 1.71 GiB (GPU 0; 15.56 GiB total "
    "capacity; 0 bytes already allocated; 0 bytes reserved in total by PyTorch)",
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total "
    "capacity; 58.10 GiB already allocated)",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating "
    "20029400304 bytes.",
    # NCCL's spelling of cudaErrorMemoryAllocation, with its number
    "node-1:2999605:3004403 [0] include/alloc.h:228 NCCL WARN Cuda failure 2 'out of memory'",
    # XLA on a TPU: the runtime allocator and the compiler
    "E tensorflow/compiler/xla/xla_client/xla_util.cc:88] RESOURCE_EXHAUSTED: Attempting to "
    "reserve 6.48G at the bottom of memory. That was not possible. There are 6.78G free.",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent "
    "error. Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm.",
    # PyTorch before 1.0 (THC): the check's line and the exception, each alone
    "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out "
    "of memory",
    "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/"
    "THCTensorRandom.cu:25",
    "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
    # TensorFlow's BFC allocator failing a GPU allocation (TF 2, TF 1.x), and XLA's under JAX
    "2024-05-01 10:02:11.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:479] "
    "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)"
    "requested by op model/dense/MatMul",
    "2017-06-20 20:25:42.825757: W tensorflow/core/common_runtime/bfc_allocator.cc:273] "
    "Allocator (GPU_0_bfc) ran out of memory trying to allocate 286.00MiB.  Current allocation "
    "summary follows.",
    "W0501 10:01:00.000000 140 bfc_allocator.cc:512] Allocator (GPU_0_bfc) ran out of memory "
    "trying to allocate 12.50GiB (rounded to 13421772800)requested by op ",
    # TensorFlow copying onto the GPU a tensor it found no GPU memory for
    "tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor from "
    "/job:localhost/replica:0/task:0/device:CPU:0 to /job:localhost/replica:0/task:0/device:"
    "GPU:0 in order to run _EagerConst: Dst tensor is not initialized.",
    # XLA's device allocator, as JAX raises it
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 32.00MiB "
    "(33554432B) on device ordinal 0",
    "numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in "
    "CUDA_ERROR_OUT_OF_MEMORY",
])
def test_every_accelerators_out_of_memory_is_a_device_oom(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert d.class_id == "cuda_oom" and not d.retryable
    assert d.decided_by == "signature"


KERAS_RUNNING = ("Epoch 2/20\n 600/1250 [=============>................] - ETA: 24s - loss: "
                 "0.5912 - accuracy: 0.6420\n")


@pytest.mark.parametrize("line", [
    # the BFC allocator's note that a caller will cope without the memory
    "2020-04-29 16:25:36.594950: W tensorflow/core/common_runtime/bfc_allocator.cc:243] "
    "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25GiB with freed_by_count=0. "
    "The caller indicates that this is not a failure, but may mean that there could be "
    "performance gains if more memory were available.",
    # TensorFlow reserving less device memory after a refusal
    "[1,1]<stderr>:2019-08-26 18:41:15.943905: E tensorflow/stream_executor/cuda/"
    "cuda_driver.cc:828] failed to allocate 2.96G (3173555200 bytes) from device: "
    "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    # the CPU allocator's size warning
    "2024-05-01 10:01:00.000000: W tensorflow/core/framework/cpu_allocator_impl.cc:83] "
    "Allocation of 1073741824 exceeds 10% of free system memory.",
])
def test_tensorflows_memory_warnings_a_run_goes_on_after_are_no_oom(catalogue, line: str):
    text = "Epoch 1/20\n" + line + "\n" + KERAS_RUNNING
    assert read_log(catalogue, text).class_id == "none"


def test_a_log_that_ends_in_tensorflows_refused_reservations_is_a_device_oom(catalogue):
    retries = "".join(
        f"2019-08-26 18:41:15.94{n}905: E tensorflow/stream_executor/cuda/cuda_driver.cc:828] "
        f"failed to allocate {size} from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        for n, size in enumerate(["2.96G (3173555200 bytes)", "2.66G (2856199680 bytes)"]))
    d = read_log(catalogue, "Epoch 1/20\n" + retries)
    assert (d.class_id, d.decided_by) == ("cuda_oom", "hint")


# PyTorch's own messages, verbatim from its sources (ProcessGroupNCCL.cpp, ProcessGroupGloo.cpp,
# torch/csrc/DataLoader.cpp, aten MapAllocator.cpp, c10/cuda, torch/utils/cpp_extension.py)
PYTORCH_MESSAGES = [
    ("[rank1]:[E1003 18:37:01.833621509 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 1] "
     "Timeout at NCCL work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.",
     "nccl_timeout"),
    ("[rank2]:[E1003 18:37:01.8 ProcessGroupNCCL.cpp:1405] [PG ID 0 PG GUID 0(default_pg) Rank "
     "2] Received a global timeout from another rank and will start to dump the debug info. "
     "Last enqueued NCCL work: 166, last completed NCCL work: 166.", "nccl_timeout"),
    ("[rank2]:[E1003 18:37:02.1 ProcessGroupNCCL.cpp:1450] [PG ID 0 PG GUID 0(default_pg) Rank "
     "2] ProcessGroupNCCL's watchdog detected a collective timeout and notified current rank. "
     "This is most likely caused by incorrect usages of collectives", "nccl_timeout"),
    ("[rank0]:[F919 07:00:13.418192812 ProcessGroupNCCL.cpp:1653] [PG ID 0 PG GUID "
     "0(default_pg) Rank 0] Terminating the process after attempting to dump debug info, due to "
     "ProcessGroupNCCL watchdog hang.", "nccl_timeout"),
    ("RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 1800000 ms",
     "nccl_timeout"),
    ("RuntimeError: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms",
     "nccl_timeout"),
    ("RuntimeError: DataLoader worker (pid 109) exited unexpectedly with exit code 1. Details "
     "are lost due to multiprocessing. Rerunning with num_workers=0 may give better error "
     "trace.", "dataloader_worker_killed"),
    ("RuntimeError: unable to mmap 128 bytes from file </torch_6409_1637078694_63344>: Cannot "
     "allocate memory (12)", "dataloader_worker_killed"),
    ("RuntimeError: CUDA driver error: out of memory", "cuda_oom"),
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
     "run some cuda functions before calling NumCudaDevices() that might have already set an "
     "error? Error 999: unknown error", "gpu_failure"),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install "
     "root.", "compiler_missing"),
    ("subprocess.CalledProcessError: Command '['which', 'c++']' returned non-zero exit status "
     "1.", "compiler_missing"),
]


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize(("line", "class_id"), PYTORCH_MESSAGES, ids=lambda v: str(v)[:50])
def test_pytorchs_own_failure_messages_decide_their_class(catalogue, acct, line, class_id):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n", acct)
    assert (d.class_id, d.decided_by) == (class_id, "signature")


@pytest.mark.parametrize("line", [
    "tensorflow.python.training.basic_session_run_hooks.NanLossDuringTrainingError: NaN loss "
    "during training.",
    "InvalidArgumentError: Tensor had NaN values",  # tf.debugging.check_numerics
    "InvalidArgumentError: Nan in summary histogram for: conv1/weights_0",
    "Batch 1234: Invalid loss, terminating training",  # Keras's TerminateOnNaN
    # tf.debugging.check_numerics finding both, and enable_check_numerics naming the op
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: loss : Tensor had Inf and "
    "NaN values",
    '!!! Detected Infinity or NaN in output 0 of eagerly-executing op "Log" (# of outputs: 1) '
    "!!!",
    # Keras 3's TerminateOnNaN(raise_error=True)
    "RuntimeError: NaN or Inf loss encountered at batch 512. Loss value: nan. Terminating "
    "training immediately.",
    # JAX: jax_debug_nans / jax_debug_infs, and checkify
    "FloatingPointError: invalid value (nan) encountered in jit(train_step)",
    "FloatingPointError: Invalid value (inf) encountered in sharded computation.",
    "jax._src.checkify.JaxRuntimeError: nan generated by primitive: log.",
])
def test_the_frameworks_own_nan_guards_are_a_nan_loss(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by) == ("nan_loss", "signature")


@pytest.mark.parametrize("line", [
    # autograd's anomaly mode names the backward op that produced the NaN, whatever the op
    "RuntimeError: Function 'PowBackward0' returned nan values in its 0th output.",
    "RuntimeError: Function 'MulBackward0' returned nan values in its 1th output.",
    "RuntimeError: Function 'Log1PBackward0' returned inf values in its 0th output.",
    # a loss printed as the tensor itself
    "epoch 3 loss: tensor(nan, device='cuda:0', grad_fn=<AddBackward0>)",
    "loss tensor([inf], device='cuda:1')",
    # ... as a tensor subclass, which torch's repr names by its class (_tensor_str.py), and
    # one that is a parameter too, inside `Parameter(...)`
    "epoch 3 loss: T(nan, device='cuda:0', grad_fn=<AddBackward0>)",
    "train_loss=ScaledTensor(-inf)",
    "loss: Parameter(MyTensor([nan, 0.5], device='cuda:0', requires_grad=True))",
])
def test_a_nan_named_by_autograd_or_a_printed_loss_tensor_is_a_nan_loss(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)


@pytest.mark.parametrize("line", [
    # the loss as a perplexity or a cross-entropy, running on after it went NaN
    "[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; "
    "lr: 0.00070; 1928/2310 tok/s;  21110 sec",
    "epoch 3 | valid perplexity: inf",
    # a Chinese log's full-width colon, and the value spelled Nan
    "训练次数：800, Loss：nan",
    "Epoch 4 Loss: Nan",
])
def test_a_loss_logged_as_nan_in_other_words_is_a_nan_loss_while_training_goes_on(
        catalogue, line: str):
    text = "[2018-11-26 15:02:57,162 INFO] Step 5600/50000; ppl:  9.83\n" + line + "\n"
    text += "[2018-11-26 15:12:08,893 INFO] Step 5750/50000; ppl:   9.1\n"  # more progress
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)


@pytest.mark.parametrize("line", [
    # a plural or another loss key, a detector's dict of losses
    "epoch 3 iter 200 losses : nan",
    "step 200 total_loss nan lr 0.001",
    "{'loss_cls': nan, 'loss_bbox': nan, 'loss': nan}",
    # YOLO's epoch table with its loss columns nan (v5's box obj cls, v8's box_loss ...)
    "      3/49     11.9G       nan       nan       nan        12       640",
    "      1/100      2.61G        nan        nan        nan         20        640: 100%|",
    # the framework's or the script's own words
    "Loss is diverging, stopping the run",
    "ValueError: loss diverged at step 300",
    "Training has diverged; restore the last checkpoint",
    "NaN loss detected at step 300, skipping the batch",
    "Detected NaN or Inf values in the gradients of rank 3",
])
def test_a_loss_that_diverged_in_other_keys_or_words_is_a_nan_loss(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)


@pytest.mark.parametrize("line", [
    "      3/49     11.9G    0.0412    0.0213   0.00812        12       640",
    "{'loss_cls': 0.42, 'loss_scale': inf}",
    "Training did not diverge; loss 0.3",
])
def test_finite_losses_in_those_forms_are_not_a_nan_loss(catalogue, line: str):
    assert read_log(catalogue, "step 10 loss 1.2\n" + line + "\n").class_id != "nan_loss"


def test_a_finite_loss_tensor_is_progress_not_a_nan_loss(catalogue):
    line = "epoch 3 loss: tensor(0.4312, device='cuda:0', grad_fn=<AddBackward0>)"
    assert read_log(catalogue, "step 10 loss 1.2\n" + line + "\n").class_id == "none"


# a plain Parameter's repr puts its tensor on the line after its head (torch/nn/parameter.py,
# __repr__: `Parameter containing:\n` and the tensor's repr): a printed `loss: {param}` is split
PARAMETER_LOSS = "epoch 3 loss: Parameter containing:\ntensor({value}, {suffix})"


@pytest.mark.parametrize(("value", "suffix"), [
    ("nan", "device='cuda:0', requires_grad=True"),
    ("-inf", "requires_grad=True"),
    ("[nan, 0.5000]", "device='cuda:0', requires_grad=True"),
], ids=["nan-on-a-gpu", "inf-on-the-cpu", "a-vector"])
def test_a_loss_printed_as_a_non_finite_parameter_is_a_nan_loss(catalogue, value, suffix):
    log = "step 10 loss 1.2\n" + PARAMETER_LOSS.format(value=value, suffix=suffix) + "\n"
    d = read_log(catalogue, log)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)
    assert any(e.text.startswith("epoch 3 loss: Parameter containing: tensor(") for e in d.evidence)


@pytest.mark.parametrize("log", [
    # a finite Parameter
    PARAMETER_LOSS.format(value="0.4312", suffix="device='cuda:0', requires_grad=True"),
    # a NaN Parameter that is no loss, and a loss's head with no tensor after it
    "epoch 3 weight: Parameter containing:\ntensor(nan, device='cuda:0', requires_grad=True)",
    "epoch 3 loss: Parameter containing:\nstep 11 loss 1.1",
], ids=["finite", "not-a-loss", "no-tensor-after-it"])
def test_a_parameter_that_is_no_non_finite_loss_is_no_nan_loss(catalogue, log):
    assert read_log(catalogue, "step 10 loss 1.2\n" + log + "\n").class_id != "nan_loss"


@pytest.mark.parametrize("finish", [
    "{'train_runtime': 1234.56, 'train_samples_per_second': 12.3, 'train_steps_per_second': "
    "0.4, 'train_loss': 1.23, 'epoch': 3.0}",  # Hugging Face's Trainer when train() returns
    "  train_runtime            = 0:12:34.56",  # its `***** train metrics *****` table
    "[2023-01-01 10:00:00,000] [INFO] [launch.py:351:main] Process 1234 exits successfully.",
    "I0728 00:22:59.593730 24418 solver.cpp:411] Optimization Done.",  # Caffe's solver
    "21-02-14 23:52:56.557 - INFO: End of training.",  # a BasicSR-style trainer
    # Lightning's EarlyStopping(verbose=True) ending fit() (callbacks/early_stopping.py)
    "INFO: Monitored metric val_loss did not improve in the last 3 records. Best score: 0.213. "
    "Signaling Trainer to stop.",
    "INFO: Stopping threshold reached: val_acc = 0.9912 > 0.99. Signaling Trainer to stop.",
    # submitit: the submitted function returned (core/submission.py), its own and Hydra's format
    "submitit INFO (2024-05-01 20:38:57,100) - Job completed successfully",
    "[2024-05-01 20:38:57,100][submitit][INFO] - Job completed successfully",
])
def test_the_frameworks_end_of_training_lines_are_completion(catalogue, finish: str):
    text = "step 10 loss 1.2\n" + finish + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    # an error after it is a failure: a full disk, its message cut off (saving the final model)
    crashed = text + "Traceback (most recent call last):\nOSError: [Errno 28] No space left\n"
    ended = read_log(catalogue, crashed)
    assert (ended.class_id, ended.decided_by) == ("disk_full", "hint")
    failed = text + "Traceback (most recent call last):\nOSError: [Errno 5] Input/output error\n"
    assert read_log(catalogue, failed).class_id == "unknown_failure"


@pytest.mark.parametrize("line", [
    "Your TPU node has been preempted. Restart training from the latest checkpoint.",
    "W0101 10:00:00.000 worker.py:88] Instance was preempted by the cloud provider",
    # Kubernetes' reason for the pod's disruption, Kueue's for evicting the workload
    "  Type: DisruptionTarget  Status: True  Reason: PreemptionByScheduler",
    "Warning  Evicted  workload/train-88154  Preempted to accommodate a workload (UID: 42) due "
    "to prioritization in the ClusterQueue",
    # hyphenated, as Azure ML words a low-priority node's eviction
    "AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. Check if the "
    "run has failed or restarted. Reason: Received pre-emption warning signal",
    "The job was pre-empted by the cluster's fair-share policy",
    # TensorFlow's CloudTPUPreemptedHook polling the TPU's state
    "WARNING:tensorflow:TPUPollingThread found TPU my-tpu in state PREEMPTED, and health "
    "UNKNOWN.",
    "WARNING:tensorflow:TPU node my-tpu reached an unrecoverable state PREEMPTED, terminating "
    "the session now.",
])
def test_a_cloud_node_preempted_is_a_preemption(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert d.class_id == "preempted" and d.retryable and not d.charges_budget


@pytest.mark.parametrize("line", [
    # the kernel's OOM killer, pasted from dmesg / syslog / journalctl -k
    "Apr 25 06:31:56 gpu-a07 kernel: [594675.027262] python invoked oom-killer: "
    "gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0",
    "[Sun Mar 30 08:24:00 2025] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
    "mems_allowed=0,global_oom,task_memcg=/init.scope,task=python,pid=7899,uid=0",
    "[594677.436088] oom_reaper: reaped process 29918 (python), now anon-rss:0kB, file-rss:0kB",
    "Aug 18 03:19:11 169 kernel: Killed process 7748 (python) total-vm:12907828kB, "
    "anon-rss:11500204kB, file-rss:0kB",
])
def test_the_kernels_oom_killer_in_a_pasted_kernel_log_is_a_host_oom(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")


@pytest.mark.parametrize("ending", [
    "已杀死",  # a shell in zh_CN: glibc's name of SIGKILL
    "죽었음",  # ko
    "Getötet",  # de
    "./run.sh: 행 66: 777016 죽었음               python train.py",
    "./train.sh: 行 9: 4727 已杀死     python train.py --config a.yaml",
])
def test_a_shells_kill_notice_in_another_language_ends_a_log_as_a_host_oom(catalogue,
                                                                           ending: str):
    text = PROGRESS_AT_120 + ending + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("host_oom", "hint")
    # a hint only: training that goes on after such a word is running
    more = text + "[2025-03-02 10:10:00] iter 121/8000 loss 1.20\n"
    assert read_log(catalogue, more).class_id == "none"


@pytest.mark.parametrize("line", [
    # Windows: Inductor's and torch's C++ extensions' search for MSVC's cl
    "torch._inductor.exc.InductorError: RuntimeError: Compiler: cl is not found.",
    "subprocess.CalledProcessError: Command '['where', 'cl']' returned non-zero exit status 1.",
    "error: Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ Build "
    "Tools\"",
    # distutils / setuptools building an extension at start, CMake configuring one
    "error: command 'gcc' failed: No such file or directory",
    "unable to execute 'x86_64-linux-gnu-gcc': No such file or directory",
    "CMake Error at CMakeLists.txt:3 (project): No CMAKE_CUDA_COMPILER could be found.",
    # XLA (JAX, TensorFlow) with no CUDA toolkit to compile its GPU kernels with, raised
    "jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of ptxas. "
    "The following locations were considered: /usr/local/cuda/bin/ptxas",
    "tensorflow.python.framework.errors_impl.InternalError: libdevice not found at "
    "./libdevice.10.bc [Op:__inference_train_function_1234]",
    "W0501 10:00:00.000000 140 nvptx_compiler.cc:120] libdevice is required by this HLO module "
    "but was not found at ./libdevice.10.bc",
])
def test_every_toolchains_missing_compiler_is_compiler_missing(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.retryable) == ("compiler_missing", False)
    assert d.decided_by == "signature"


@pytest.mark.parametrize(("line", "tool", "fix"), [
    ("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of "
     "ptxas. The following locations were considered: /usr/local/cuda/bin/ptxas", "ptxas",
     "XLA_FLAGS=--xla_gpu_cuda_data_dir="),
    ("tensorflow.python.framework.errors_impl.InternalError: libdevice not found at "
     "./libdevice.10.bc [Op:__inference_train_function_1234]", "libdevice",
     "XLA_FLAGS=--xla_gpu_cuda_data_dir="),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install "
     "root.", "nvcc", "export CUDA_HOME="),
    ("error: command '/usr/local/cuda/bin/nvcc' failed: No such file or directory", "nvcc",
     "export CUDA_HOME="),
    ("/bin/sh: 1: gcc: not found", "gcc", "Set CC/CXX"),
    ("unable to execute 'x86_64-linux-gnu-gcc': No such file or directory",
     "x86_64-linux-gnu-gcc", "Set CC/CXX"),
    ("torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in "
     "torch._inductor.config.cpp.cxx: (None, 'g++')", "g++", "Set CC/CXX"),
])
def test_a_missing_compiler_names_the_tool_and_its_own_fix(catalogue, line, tool, fix):
    """A CUDA toolkit's tool is not fixed by CC/CXX; a C compiler is."""
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert d.class_id == "compiler_missing"
    assert d.detail == {"kind": "missing_tool", "tool": tool}
    text = explain(d)
    assert tool in text and fix in text
    assert ("gcc_linux-64" in text) == (fix == "Set CC/CXX")
    korean = explain(d, "ko")
    assert tool in korean and fix.split("=")[0].split()[-1] in korean


def test_a_missing_compiler_line_that_names_no_tool_keeps_the_hint_alone(catalogue):
    d = read_log(catalogue, "RuntimeError: Failed to find C compiler. Please specify via "
                 "CC environment variable.\n")
    assert d.class_id == "compiler_missing" and d.detail is None
    assert explain(d).startswith("Set CC/CXX on the worker")


INDUCTOR_CPP = "/tmp/torchinductor_u/ab/cabc.cpp"
INDUCTOR_COMPILE_ERROR = (
    "[2025-03-02 10:00:00] step 0 starting\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    out = model(x)\n"
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    "CppCompileError: C++ compile error\n\n"
    f"Command:\ng++ {INDUCTOR_CPP} -shared -fPIC -O3 -o /tmp/torchinductor_u/ab/cabc.so\n\n"
    "Output:\n"
    "{output}\n\n"
    'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information\n'
)


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
def test_inductors_cpp_compile_error_from_a_compiler_that_ran_is_no_missing_compiler(
        catalogue, acct):
    # the compiler is there and rejected the generated code: a bug, not a CC to set
    output = (f"{INDUCTOR_CPP}:14:53: error: no matching function for call to "
              "'max_propagate_nan(float&, int)'")
    d = read_log(catalogue, INDUCTOR_COMPILE_ERROR.replace("{output}", output), acct)
    assert d.class_id == "unknown_failure"
    assert "CC/CXX" not in explain(d)


@pytest.mark.parametrize("output", [
    "",  # Inductor's wrapper alone, its output cut off
    "/bin/sh: 1: g++: not found",
    f"{INDUCTOR_CPP}:1:10: fatal error: Python.h: No such file or directory",
], ids=["wrapper-alone", "no-gxx", "no-python-h"])
def test_inductors_cpp_compile_error_without_a_compiler_that_ran_stays_a_missing_compiler(
        catalogue, output):
    d = read_log(catalogue, INDUCTOR_COMPILE_ERROR.replace("{output}", output))
    assert d.class_id == "compiler_missing"


@pytest.mark.parametrize("warning", [
    "2020-09-22 11:42:03.984823: W tensorflow/stream_executor/cuda/redzone_allocator.cc:312] "
    "Internal: Couldn't invoke ptxas --version\nRelying on driver to perform ptx compilation. "
    "This message will be only logged once.",
    "2024-05-01 10:00:00.000000: W tensorflow/stream_executor/gpu/redzone_allocator.cc:314] "
    "NOT_FOUND: Couldn't find a suitable version of ptxas. The following locations were "
    "considered: /usr/local/cuda/bin/ptxas\nRelying on driver to perform ptx compilation. "
    "\nModify $PATH to customize ptxas location.\nThis message will be only logged once.",
    "2024-05-01 10:00:00.000000: W tensorflow/compiler/xla/service/gpu/nvptx_helper.cc:56] "
    "Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation "
    "or runtime failures, if the program we try to run uses routines from libdevice.",
])
def test_tensorflows_fallback_to_the_drivers_ptx_compiler_is_no_missing_compiler(catalogue,
                                                                                  warning):
    """TensorFlow warns when it finds no ptxas or libdevice directory and compiles through the
    driver instead: a run that goes on is healthy."""
    assert read_log(catalogue, warning + "\n" + KERAS_RUNNING).class_id == "none"


@pytest.mark.parametrize(("ending", "class_id"), [
    # wordings no catalogue line knows, each ending a log in an unhandled error
    # (gloo's own `Timed out waiting 1800000ms for recv operation` is a catalogue line now)
    ("RuntimeError: the all_reduce collective timed out after 1800 s", "nccl_timeout"),
    ("RuntimeError: GPU 3 ran out of memory while packing the batch", "cuda_oom"),
    ("RuntimeError: the grad norm became inf at step 1200, stopping", "nan_loss"),
    ("RuntimeError: host ran out of memory while pinning the batch", "host_oom"),
    ("RuntimeError: GPU 2 reports an uncorrectable hardware error; the GPU needs a reset",
     "gpu_failure"),
    ("SystemError: the worker was preempted by a higher-priority workload", "preempted"),
    ("RuntimeError: the allocation was pre-empted, aborting", "preempted"),
    ("ConnectionError: node gpu-b12 is unreachable, aborting the run", "node_failure"),
    ("OSError: the C++ compiler (g++) was not found on PATH", "compiler_missing"),
])
def test_an_error_in_words_the_catalogue_lacks_is_named_by_its_vocabulary_as_a_hint(
        catalogue, ending: str, class_id: str):
    text = PROGRESS_AT_120 + ending + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == (class_id, "hint")
    assert [e.text for e in d.evidence] == [ending]  # the thread shows the words it went by
    if class_id in STOP_CLASSES:
        assert not d.retryable


def test_an_errors_vocabulary_decides_only_a_log_that_ends_in_it_and_names_one_cause(
        catalogue):
    progress = PROGRESS_AT_120
    # two causes' words: no guess
    both = progress + "RuntimeError: NCCL barrier timed out after the GPU ran out of memory\n"
    assert read_log(catalogue, both).class_id == "unknown_failure"
    # a traceback's frames and source lines mention anything; a warning decides nothing
    frames = progress + ("Traceback (most recent call last):\n"
                         '  File "train.py", line 88, in step\n'
                         "    dist.barrier(timeout=nccl_timeout)\n"
                         "UserWarning: the NCCL barrier timed out once, retrying\n"
                         "KeyError: 'labels'\n")
    assert read_log(catalogue, frames).class_id == "unknown_failure"
    # words before more progress: the job survived them
    survived = progress + ("RuntimeError: GPU 3 ran out of memory while packing the batch\n"
                           "[2025-03-02 10:10:00] iter 121/8000 loss 1.20\n")
    assert read_log(catalogue, survived).class_id == "none"
    # Megatron's progress counter of skipped NaN steps is not a NaN loss
    megatron = progress + ("iteration 182/250000 | lm loss: 2.1E+00 | number of nan "
                           "iterations: 0 |\nRuntimeError: shard 4 is truncated\n")
    assert read_log(catalogue, megatron).class_id == "unknown_failure"


@pytest.mark.parametrize("notice", [
    # PBS/Torque's mail: the job was "preempted" because its node failed
    "PBS Job Id: 7730.headnode\nExec host:  gpu-a07/3\nJob deleted at request of root@headnode\n"
    "job preempted (node failure)",
    "MOAB_INFO: job 7730 requeued (node down)",
    "job 7730 was killed (due to node failure)",
])
def test_a_batch_systems_notice_that_names_a_node_fault_is_a_node_failure(catalogue, notice):
    d = read_log(catalogue, "step 10 loss 1.2\n" + notice + "\n")
    assert (d.class_id, d.decided_by) == ("node_failure", "signature")
    assert d.retryable and not d.charges_budget


@pytest.mark.parametrize("notice", ["job preempted (higher priority job)",
                                    "job preempted (node reserved for maintenance)"])
def test_a_preemption_for_another_reason_stays_a_preemption(catalogue, notice):
    assert read_log(catalogue, "step 10 loss 1.2\n" + notice + "\n").class_id == "preempted"


@pytest.mark.parametrize("line", [
    # Ray's GCS giving up on a node (verl / OpenRLHF / vLLM workers on Ray)
    "2024-04-11 16:38:16,464\tWARNING worker.py:2037 -- The node with node id: 75b2eec8 and "
    "address: 10.4.4.107 has been marked dead because the detector has missed too many "
    "heartbeats from it.",
    "The node with client ID 1eadc9db has been marked dead because the monitor has missed too "
    "many heartbeats from it.",
    # torch elastic's rendezvous losing a node
    "The node 'gpu-b12_4242_0' has failed to send a keep-alive heartbeat to the rendezvous "
    "'88154' due to an error of type RendezvousConnectionError.",
    "slurmstepd: error: *** JOB 88154 ON gpu-b12 CANCELLED AT 2025-03-02T10:00:00 *** Reason: "
    "Node unexpectedly rebooted",
])
def test_a_node_lost_by_ray_torch_elastic_or_slurm_is_a_node_failure(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by) == ("node_failure", "signature")
    assert d.retryable and not d.charges_budget


@pytest.mark.parametrize("line", [
    # PyTorch 2.4+'s lines around the watchdog's abort, when its first line is cut off
    "[rank2]:[E723 01:58:45.511299168 ProcessGroupNCCL.cpp:2268] [PG ID 1 PG GUID 1 Rank 2]  "
    "failure detected by watchdog at work sequence id: 45390 PG status: last enqueued work: "
    "45403, last completed work: 45389",
    "[rank2]:[E723 01:58:45.541902539 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 2] Received a dump signal due to a collective timeout from this local rank and we "
    "will try our best to dump the debug info.",
])
def test_the_watchdogs_newer_lines_are_an_nccl_timeout(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert (d.class_id, d.decided_by) == ("nccl_timeout", "signature")


def test_a_partitions_preemption_banner_decides_nothing(catalogue):
    banner = "NOTE: jobs in the 'scavenger' partition may be preempted by higher priority jobs\n"
    running = banner + "step 10 loss 1.2\nstep 20 loss 1.1\n"
    assert read_log(catalogue, running).class_id == "none"
    crashed = running + "KeyError: 'labels'\n"
    assert read_log(catalogue, crashed).class_id == "unknown_failure"


def test_enomem_is_a_host_oom(catalogue):
    text = (PROGRESS_AT_120 +
            "  File \"/usr/lib/python3.10/multiprocessing/popen_fork.py\", line 66, in _launch\n"
            "OSError: [Errno 12] Cannot allocate memory\n")
    assert read_log(catalogue, text).class_id == "host_oom"


def test_the_fast_scan_finds_a_signature_that_ends_its_line_mid_block(catalogue):
    """A pattern ending in `( |$)` matches at the end of any line, not only of the block."""
    data = b"Training model...\n[1]    2843557 killed\nlater line\n"
    fast = analyze_file(io.BytesIO(data), catalogue).matches
    assert fast == analyze_file(io.BytesIO(data), catalogue, fast_scan=False).matches
    assert [m.class_id for m in fast] == ["host_oom"]


@pytest.mark.parametrize("ending", [
    # torchrun's summary of ranks killed by SIGBUS (a write to a full /dev/shm)
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "  exitcode  : -7 (pid: 3111)\n  error_file: <N/A>\n"
    "  traceback : Signal 7 (SIGBUS) received by PID 3111",
    # DeepSpeed's launcher
    "[2023-10-29 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
    "'-u', 'train.py', '--local_rank=0'] exits with return code = -7",
    "Exception: process 1 terminated with signal SIGBUS",
    "subprocess.CalledProcessError: Command '['python', 'train.py']' died with "
    "<Signals.SIGBUS: 7>.",
])
def test_ranks_killed_by_sigbus_are_a_shared_memory_case_without_accounting(catalogue,
                                                                            ending: str):
    text = PROGRESS_AT_120 + ending + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("dataloader_worker_killed", "hint")
    assert not d.retryable
    # ... and a SIGBUS is no decision when the log names another cause
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + text
    assert read_log(catalogue, oom).class_id == "cuda_oom"


@pytest.mark.parametrize("notice", [
    "Bus error (core dumped)",
    "Bus error",
    "/var/spool/slurmd/job4242/slurm_script: line 19: 31337 Bus error               "
    "(core dumped) python train.py --workers 8",
    "zsh: bus error  python train.py",
    # srun's and Open MPI's report of a rank killed by SIGBUS
    "srun: error: gpu-a017: task 3: Bus error",
    "--------------------------------------------------------------------------\n"
    "mpirun noticed that process rank 3 with PID 0 on node gpu-a017 exited on signal 7 "
    "(Bus error).\n"
    "--------------------------------------------------------------------------",
])
def test_a_process_the_shell_reports_killed_by_sigbus_is_a_shared_memory_case(catalogue,
                                                                             notice: str):
    """The shell's notice of SIGBUS (a write to a full /dev/shm) after the last progress line
    decides by hint; with sacct's SIGBUS (0:7) or exit 135 it decides as the accounting."""
    text = PROGRESS_AT_120 + notice + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("dataloader_worker_killed", "hint")
    assert not d.retryable
    for acct in (Accounting(state="FAILED", exit_code=0, signal=7),
                 Accounting(state="FAILED", exit_code=135, signal=0)):
        assert read_log(catalogue, text, acct).class_id == "dataloader_worker_killed"
    # ... a SIGBUS is no decision when the log names another cause, nor when training went on
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + text
    assert read_log(catalogue, oom).class_id == "cuda_oom"
    more = text + "[2025-03-02 10:10:00] iter 121/8000 loss 1.20\n"
    assert read_log(catalogue, more).class_id == "none"


def test_sacct_s_sigbus_alone_decides_nothing_more_than_a_failure(catalogue):
    text = "[2025-03-02 10:00:00] iter 120/8000 loss 1.21\nKeyError: 'labels'\n"
    acct = Accounting(state="FAILED", exit_code=0, signal=7)
    assert read_log(catalogue, text, acct).class_id == "unknown_failure"


@pytest.mark.parametrize(("ending", "class_id"), [
    # Lightning's SLURM plugin caught --signal=USR1@90 before the time limit and its requeue
    # failed (one Slurm took starts again by itself: test_framework_signals)
    ("Handling auto-requeue signal: 10\nrequeing job 88154...\n"
     "Requeuing SLURM job 88154 failed with error code 1", "time_limit"),
])
def test_a_log_that_ends_in_the_framework_requeueing_names_the_scheduler_verdict(
        catalogue, ending: str, class_id: str):
    text = PROGRESS_AT_120 + ending + "\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == (class_id, "hint") and d.retryable
    # ... and nothing of it when training went on afterwards
    more = text + "[2025-03-02 10:10:00] iter 121/8000 loss 1.20\n"
    assert read_log(catalogue, more).class_id == "none"


MEGATRON_ITER = (" iteration    33240/  311541 | consumed samples:     15019344 | elapsed time per "
                 "iteration (ms): 23491.4 | learning rate: 9.702E-05 | lm loss: 2.722675E+00 |\n")


@pytest.mark.parametrize("acct", [None, Accounting(state="COMPLETED", exit_code=0, signal=0)])
def test_megatron_stopping_itself_before_the_allocation_ends_is_a_time_limit(catalogue, acct):
    # --exit-duration-in-mins: Megatron saves and exits 0 ahead of the wall-clock limit; Slurm
    # says COMPLETED, but the run is far from its target and resumes from that checkpoint
    text = (MEGATRON_ITER
            + "saving checkpoint at iteration   33241 to /scratch/tr1/checkpoints\n"
            + "  successfully saved checkpoint at iteration   33241 to /scratch/tr1/checkpoints\n"
            + "[exiting program after 1190.0357275923093 minutes] datetime: 2021-08-08 01:00:51\n")
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("time_limit", "signature", True)
    assert "training framework stopped it" in catalogue.get("time_limit").explanation


@pytest.mark.parametrize("acct", [None, Accounting(state="COMPLETED", exit_code=0, signal=0)])
def test_megatron_stopping_itself_at_its_exit_interval_resumes_from_that_checkpoint(catalogue,
                                                                                   acct):
    # --exit-interval: at an iteration the interval divides, Megatron saves and exits 0
    # (training.py: print_datetime(f'exiting program at iteration {iteration}')); the run is
    # far from its target and a resume goes on to the next interval
    text = (MEGATRON_ITER
            + "saving checkpoint at iteration   33250 to /scratch/tr1/checkpoints\n"
            + "  successfully saved checkpoint at iteration   33250 to /scratch/tr1/checkpoints\n"
            + "[exiting program at iteration 33250] datetime: 2024-05-01 10:00:00.123456 \n")
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("time_limit", "signature", True)
    assert d.detail == {"kind": "exit_interval", "iteration": 33250}
    assert "silent_exit" not in d.secondary  # its exit 0 is by design
    # --phase-transition-iterations prints the same line: the text names both
    assert ("stopped itself at iteration 33250, as its --exit-interval or"
            " --phase-transition-iterations asks" in explain(d))
    assert "resuming from it continues from that iteration" in explain(d)
    assert ("--exit-interval 또는 --phase-transition-iterations 설정대로 iteration 33250에서"
            in explain(d, "ko"))
    assert "at a planned iteration" in catalogue.get("time_limit").explanation
    # an interval that divides the run's length stops it at its target: the run is done
    last = (" iteration   311541/  311541 | consumed samples:     15019344 | lm loss: 2.1 |\n"
            "[exiting program at iteration 311541] datetime: 2024-05-09 10:00:00.123456 \n")
    assert read_log(catalogue, last, acct).class_id == "completed"


@pytest.mark.parametrize("acct", [None, Accounting(state="FAILED", exit_code=1, signal=0)])
def test_a_rank_announcing_sigterm_after_another_error_is_not_a_time_limit(catalogue, acct):
    # one rank's ValueError ended the job; srun / torchrun then SIGTERMs the others, whose
    # handlers announce it: resubmitting it as a time limit would only fail again
    text = (PROGRESS_AT_120 +
            "Traceback (most recent call last):\n"
            '  File "train.py", line 88, in <module>\n'
            "    main()\n"
            "ValueError: expected input of shape (8, 512), got (8, 511)\n"
            "[rank: 1] Received SIGTERM: 15\n"
            "Bypassing SIGTERM: 15\n")
    d = read_log(catalogue, text, acct)
    assert d.class_id == "unknown_failure" and not d.retryable
    # the signal's own exception before the announcement is no such error, and names no sender
    own = text.replace("ValueError: expected input of shape (8, 512), got (8, 511)",
                       "torch.distributed.elastic.multiprocessing.api.SignalException: "
                       "Process 4242 got signal: 15")
    d = read_log(catalogue, own)
    assert (d.class_id, d.detail) == ("unknown_failure",
                                      {"kind": "sigterm", "launcher": "torchrun"})


TORCHRUN_SIGTERM = (
    "W0302 10:05:00.123000 1234 torch/distributed/elastic/agent/server/api.py:704] Received 15 "
    "death signal, shutting down workers\n"
    "W0302 10:05:00.124000 1234 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
    "process 1300 closing signal SIGTERM\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/'
    'api.py", line 84, in _terminate_process_handler\n'
    '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)\n'
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 15\n")


@pytest.mark.parametrize(("acct", "class_id", "retryable"), [
    # the log alone: a time limit, a preemption, scancel or srun ending the step: a person asks
    (None, "unknown_failure", False),
    (Accounting(state="TIMEOUT", exit_code=0, signal=15), "time_limit", True),
    (Accounting(state="PREEMPTED", exit_code=0, signal=0), "preempted", True),
    (Accounting(state="CANCELLED", exit_code=0, signal=15), "unknown_failure", False),
])
def test_torchrun_stopped_by_sigterm_follows_sacct_and_alone_asks_a_person(catalogue, acct,
                                                                           class_id, retryable):
    d = read_log(catalogue, PROGRESS_AT_120
                 + TORCHRUN_SIGTERM, acct)
    assert (d.class_id, d.retryable) == (class_id, retryable)
    if acct is None:
        assert d.detail == {"kind": "sigterm", "launcher": "torchrun"}
        assert all(w in explain(d) for w in ("SIGTERM", "time limit", "preemption", "scancel",
                                             "does not say which", "A person should check"))
        assert "SIGTERM" in explain(d, "ko") and "sacct" in explain(d, "ko")


def test_torchrun_sigterm_after_another_error_does_not_blame_the_signal(catalogue):
    text = (PROGRESS_AT_120 +
            "ValueError: expected input of shape (8, 512), got (8, 511)\n" + TORCHRUN_SIGTERM)
    d = read_log(catalogue, text)
    assert d.class_id == "unknown_failure" and d.detail is None


@pytest.mark.parametrize("line", [
    "[E ProcessGroupNCCL.cpp:414] NCCL watchdog thread terminated with exception: CUDA error: "
    "an illegal memory access was encountered",
    "[PG 0 Rank 1] Process group watchdog thread terminated with exception: CUDA error: an "
    "illegal memory access was encountered",
])
def test_a_watchdog_reporting_a_cuda_error_is_not_a_collective_timeout(catalogue, line):
    # the CUDA error is the cause (often the job's own bug): not retried as a timeout
    d = read_log(catalogue, "iter 10/100 loss 1.0\n" + line + "\n")
    assert d.class_id == "unknown_failure" and not d.retryable
    timeout = line.split("CUDA error")[0] + ("[Rank 1] Watchdog caught collective operation "
                                              "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE)")
    assert read_log(catalogue, "iter 10/100 loss 1.0\n" + timeout + "\n").class_id == (
        "nccl_timeout")


SLURM_REVOKED = (
    "[2023-09-15 12:20:00] iter 120/8000 loss 1.21\n"
    "slurmstepd: error: *** STEP 608.0 ON gpub003 CANCELLED AT 2023-09-15T12:22:07 ***\n"
    "salloc: Job allocation 608 has been revoked.\n"
    "srun: forcing job termination\n"
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    "srun: error: gpub003: task 0: Killed\n"
)


def test_a_task_killed_after_slurm_revoked_its_allocation_is_a_preemption_not_a_host_oom(
        catalogue):
    # salloc's word for an allocation Slurm ended from outside; the kill after it is Slurm's:
    # offering more --mem would be wrong
    d = read_log(catalogue, SLURM_REVOKED)
    assert (d.class_id, d.decided_by) == ("preempted", "hint")
    assert not d.charges_budget and "--mem" not in explain(d)


def test_a_task_killed_after_its_step_was_cancelled_is_no_host_oom(catalogue):
    # no revoked allocation: a scancel or a preemption alike, so no cause; not the OOM killer
    cancelled = SLURM_REVOKED.replace("salloc: Job allocation 608 has been revoked.\n", "")
    assert read_log(catalogue, cancelled).class_id == "unknown_failure"


def test_a_task_killed_with_no_slurm_cancel_before_it_is_still_a_host_oom(catalogue):
    # near miss: srun's `Killed` with nothing from Slurm before it is the OOM killer's
    killed = SLURM_REVOKED.splitlines(keepends=True)
    assert read_log(catalogue, killed[0] + killed[-1]).class_id == "host_oom"
    # a kill reported before the cancel stays the OOM killer's
    before = killed[0] + killed[-1] + killed[1]
    assert read_log(catalogue, before).class_id == "host_oom"


def test_srun_aborting_a_step_names_no_time_limit_by_itself(catalogue):
    # srun prints it on every step abort (scancel, a failed task, a node failure); only
    # slurmstepd's `DUE TO TIME LIMIT` says the limit was the reason
    text = ("iter 10/100 loss 1.0\n"
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
            "slurmstepd: error: *** STEP 4242.0 ON node07 CANCELLED AT 2025-03-02T10:00:00 ***\n")
    assert read_log(catalogue, text).class_id != "time_limit"
    limit = text.replace(" ***", " DUE TO TIME LIMIT ***")
    assert read_log(catalogue, limit).class_id == "time_limit"


def test_megatron_exiting_on_slurms_sigterm_reads_as_a_time_limit_by_hint(catalogue):
    # --exit-signal-handler: Slurm's --signal warning before the limit, then a save and exit
    text = MEGATRON_ITER + "[2021-08-08 01:00:51] exiting program after receiving SIGTERM.\n"
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("time_limit", "hint")
    # it exits 0 after its save (training.py: print_datetime('exiting program after receiving
    # SIGTERM.')): Slurm's COMPLETED 0:0 is that stop, not a silent exit; offered, not automatic
    done = MEGATRON_ITER + ("[exiting program after receiving SIGTERM.] datetime: 2024-05-01 "
                            "10:00:00.123456 \n")
    d = read_log(catalogue, done, Accounting(state="COMPLETED", exit_code=0, signal=0))
    assert (d.class_id, d.decided_by, d.detail) == ("time_limit", "hint", {"kind": "signal_stop",
                                                     "framework": "megatron"})
    assert "silent_exit" not in d.secondary
    assert "caught SIGTERM (--exit-signal-handler)" in explain(d) and "scancel" in explain(d)
    assert "사람이 확인" in explain(d, "ko")
    # progress after it: not what ended the run
    later = done + MEGATRON_ITER.replace("33240", "33300")
    assert read_log(catalogue, later, Accounting(state="COMPLETED", exit_code=0,
                                                 signal=0)).class_id == "silent_exit"


MEGATRON_NAN = "found NaN in local forward loss calculation"


@pytest.mark.parametrize(("line", "class_id"), [
    # Megatron-LM: the RuntimeError with --rerun-mode disabled, the older asserts, Megatron-FSDP
    ("RuntimeError: Rank 3, node gpu-a07, device 3, iteration 71: Unexpected result nan "
     "(message='found NaN in local grad norm for bucket #0 in backward pass before "
     "data-parallel communication collective')", "nan_loss"),
    ("RuntimeError: Rank 0, node gpu-a07, device 0, iteration 71: Unexpected result inf "
     "(message='found Inf in local forward loss calculation')", "nan_loss"),
    ("AssertionError: Rank 0: found NaN in local forward loss calculation. Device: 0, node: "
     "gpu-a07", "nan_loss"),
    ("RuntimeError: [Megatron-FSDP](check_for_nan_in_grad=True) Detected NaN or Inf in wgrad: "
     "tensor([nan, nan], device='cuda:0')", "nan_loss"),
    # Lightning: terminate_on_nan (before 1.5), EarlyStopping's check_finite and divergence
    ("ValueError: The loss returned in `training_step` is nan or inf.", "nan_loss"),
    ("ValueError: Detected nan and/or inf values in `layer.weight`. Check your forward pass "
     "for numerically unstable operations.", "nan_loss"),
    ("INFO: Monitored metric val_loss = nan is not finite. Previous best value was 0.213. "
     "Signaling Trainer to stop.", "nan_loss"),
    ("INFO: Divergence threshold reached: val_loss = 12.5 > 10.0. Signaling Trainer to stop.",
     "nan_loss"),
    # submitit giving up on a timed-out job (Lightning's max_time Timer is its owner's own
    # budget, a completion: test_lightning_stops.py)
    ("submitit INFO (2024-05-01 19:38:57,100) - Job not requeued because: timed-out and not "
     "checkpointable.", "time_limit"),
    ("submitit.core.utils.UncompletedJobError: Job not requeued because: timed-out too many "
     "times.", "time_limit"),
])
def test_a_training_frameworks_own_stop_names_its_reason(catalogue, line: str, class_id: str):
    d = read_log(catalogue, MEGATRON_ITER + line + "\n")
    assert (d.class_id, d.decided_by) == (class_id, "signature")


RERUN_FIRST = ("Unexpected result nan on rank 3 at iteration #71 invocation #1 "
               f"(message='{MEGATRON_NAN}')\n")


SRUN_EXIT_17 = "srun: error: gpu-b11: task 3: Exited with exit code 17\n"


@pytest.mark.parametrize(("verdict", "class_id", "node"), [
    # the step's rerun did not give the NaN again: Megatron blames the GPU it ran on
    ("Rank 3, node gpu-a07, device 3, iteration #71: First rerun: unexpected result is not "
     "reproducible within the tolerance (2.31 != nan)!\n"
     "Rank 3, node gpu-a07, device 3, iteration #71: Possible transient error!!\n"
     "Exiting now. The job can be resumed from a previous checkpoint\n", "gpu_failure", "gpu-a07"),
    # rank 0's exit line alone (the failing rank's lines went to another file)
    ("Exiting now. The job can be resumed from a previous checkpoint\n", "gpu_failure", None),
    # the rerun on another GPU did not give it: the previous run's GPU is faulty, not this
    # run's node (gpu-b11 ran the step correctly), so no node to exclude is read from here
    ("Second rerun: unexpected result is not reproducible on a different GPU, therefore was "
     "likely incorrect (2.31 != nan)\n"
     "Rank 3, node gpu-b11, device 3, iteration #71: Possible persistent error!!\n"
     "Exiting now. A checkpoint at the last iteration already exists if further examination "
     "is needed\n" + SRUN_EXIT_17, "gpu_failure", None),
    # ... or did, on another GPU too: the model's own NaN
    ("Second rerun: unexpected result is reproducible on a different GPU, therefore it was "
     "likely correct (nan = nan)\n"
     f"Rank 3, node gpu-b11, device 3, iteration #71: Correct result (but possible Application "
     f"error) ({MEGATRON_NAN})!\n", "nan_loss", None),
])
def test_megatrons_rerun_machine_verdict_names_the_gpu_or_the_model(catalogue, verdict,
                                                                     class_id, node):
    acct = Accounting(state="FAILED", exit_code=17, signal=0)
    d = read_log(catalogue, MEGATRON_ITER + RERUN_FIRST + verdict, acct)
    assert (d.class_id, d.decided_by, d.node) == (class_id, "signature", node)


# A non-fatal check (megatron/core/rerun_state_machine.py, validate_result(..., fatal=False):
# pretrain_gpt.py's spiky loss, the large-grads check) that its rerun did not reproduce: the
# verdict is a warning, and Megatron trains on
NON_FATAL_TRANSIENT = (
    "Unexpected result 812.5 on rank 3 at iteration #71 invocation #1 (message='Spiky loss')\n"
    "Rank 3, node gpu-a07, device 3, iteration #71: First rerun: unexpected result is not "
    "reproducible within the tolerance (2.31 != 812.5)!\n"
    "Rank 3, node gpu-a07, device 3, iteration #71: Possible transient error!!\n"
    "Continuing normal execution because failed validation was not fatal\n")


@pytest.mark.parametrize(("after", "acct", "class_id"), [
    # training went on and is running, or is cut off right after Megatron's notice
    (MEGATRON_ITER.replace("33240", "33241"), None, "none"),
    ("", None, "none"),
    (MEGATRON_ITER.replace("33240", "33241"), Accounting(state="RUNNING"), "none"),
    # ... and later ended of another cause, or finished at COMPLETED 0:0 (short of the target)
    (MEGATRON_ITER.replace("33240", "33241") + "Traceback (most recent call last):\n"
     "ValueError: expected input of shape (8, 512), got (8, 511)\n",
     Accounting(state="FAILED", exit_code=1, signal=0), "unknown_failure"),
    (MEGATRON_ITER.replace("33240", "33241"), Accounting(state="COMPLETED", exit_code=0,
                                                         signal=0), "silent_exit"),
])
def test_megatrons_non_fatal_transient_error_that_training_survived_is_not_the_cause(
        catalogue, after, acct, class_id):
    d = read_log(catalogue, MEGATRON_ITER + NON_FATAL_TRANSIENT + after, acct)
    assert d.class_id == class_id and "gpu_failure" not in d.secondary
    if class_id == "silent_exit":  # short of its target; the warning is no failure it hid
        assert [r["kind"] for r in present(d.detail)["reasons"]] == ["stopped"]


def test_megatrons_transient_error_that_ends_the_log_is_still_a_gpu_fault(catalogue):
    # the fatal check: no notice and no progress after it, the exit 17 line (or nothing) next
    fatal = NON_FATAL_TRANSIENT.replace(
        "Continuing normal execution because failed validation was not fatal\n", "")
    d = read_log(catalogue, MEGATRON_ITER + fatal)
    assert (d.class_id, d.decided_by, d.node) == ("gpu_failure", "signature", "gpu-a07")


@pytest.mark.parametrize("exit_lines", [
    # the step's rerun gave the NaN again on the same GPU: a checkpoint, exit 16
    "Rank 3, node gpu-a07, device 3, iteration #71: First rerun: unexpected result is "
    "reproducible within the tolerance (nan = nan). Need to rerun on a different GPU to verify "
    "correctness.!\n"
    "Saving a checkpoint and exiting now. Please resume the job from the checkpoint to rerun "
    "the last iteration and establish a diagnostic\n"
    "saving checkpoint at iteration      71 to /scratch/tr1/checkpoints\n"
    "  successfully saved checkpoint at iteration      71 to /scratch/tr1/checkpoints\n",
    # the resume landed on that GPU again: exit 16 once more
    "Got rescheduled on the same GPU. Need to resume again from the same checkpoint "
    "(node: gpu-a07, gpu: 3)\n"
    "Exiting now. Please resume the job from the same checkpoint to rerun the last iteration "
    "and establish a diagnostic\n",
])
def test_megatrons_rerun_machine_asking_for_another_gpu_resumes_without_the_suspected_node(
        catalogue, exit_lines):
    # EXIT_CODE_RESUME_TO_DISAMBIGUATE (16): only a rerun on another GPU gives the verdict, so
    # the resume goes elsewhere, and the explanation says no verdict is in yet
    acct = Accounting(state="FAILED", exit_code=16, signal=0)
    d = read_log(catalogue, MEGATRON_ITER + RERUN_FIRST + exit_lines, acct)
    assert (d.class_id, d.decided_by, d.retryable, d.node) == (
        "gpu_failure", "signature", True, "gpu-a07")
    assert d.detail == {"kind": "rerun_elsewhere"}
    assert "exited with code 16" in explain(d) and "verdict is still to come" in explain(d)
    assert "종료 코드 16" in explain(d, "ko")


def test_a_gpu_fault_named_only_by_the_logs_ending_is_no_request_to_rerun_elsewhere(catalogue):
    # no deciding line at all, so none of Megatron's: its rerun check is not what the log says
    d = read_log(catalogue, "iter 10 loss 1.2\nTraceback (most recent call last):\n"
                 "RuntimeError: Xid 79 fault on device 3\n")
    assert (d.class_id, d.decided_by, d.detail) == ("gpu_failure", "hint", None)
    assert "exited with code 16" not in explain(d)


@pytest.mark.parametrize(("text", "acct", "class_id", "decided_by"), [
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered\n", None,
     "gpu_failure", "signature"),
    ("iter 10/100 loss 1.0\nAborted (core dumped)\n", None, "unknown_failure", "hint"),
    ("iter 10/100 loss 1.0\n", Accounting(state="FAILED", exit_code=1, signal=0),
     "unknown_failure", "accounting"),
    ("iter 10/100 loss 1.0\n", Accounting(state="TIMEOUT", exit_code=0, signal=15),
     "time_limit", "accounting"),
    ("Loaded checkpoint at iteration 3000\n",
     Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=300),
     "silent_exit", "detector"),
    ("iter 10/100 loss 1.0\n", None, "none", "progress"),
])
def test_each_diagnosis_says_what_decided_it(catalogue, text, acct, class_id, decided_by):
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == (class_id, decided_by)
    assert d.to_json()["decided_by"] == decided_by


def test_a_worker_killed_by_a_bus_error_is_a_shared_memory_case_with_its_own_fix(catalogue):
    d = read_log(catalogue, "ERROR: Unexpected bus error encountered in worker. This "
                 "might be caused by insufficient shared memory (shm).\n")
    assert d.class_id == "dataloader_worker_killed" and d.detail == {"kind": "shm"}
    text = explain(d)
    assert "/dev/shm" in text and "file_system" in text and "fewer DataLoader workers" in text
    killed = read_log(catalogue, "RuntimeError: DataLoader worker (pid 7) is killed by "
                      "signal: Killed.\n")
    assert killed.class_id == "dataloader_worker_killed" and killed.detail is None


@pytest.mark.parametrize("line", [
    "RuntimeError: unable to open shared memory object </torch_12345_678_9> in read-write mode: "
    "Too many open files (24)",
    "RuntimeError: received 0 items of ancdata",
])
def test_a_worker_out_of_open_files_is_told_to_raise_the_limit_not_dev_shm(catalogue, line):
    """errno 24 (EMFILE) is the process's open-file limit: a larger /dev/shm does not help."""
    d = read_log(catalogue, "iter 10/100 loss 1.0\n" + line + "\n")
    assert d.class_id == "dataloader_worker_killed" and d.detail == {"kind": "fd_limit"}
    text = explain(d)
    assert "open-file limit (errno 24, EMFILE" in text and "`ulimit -n 65536`" in text
    assert "set_sharing_strategy('file_system')" in text
    assert "larger /dev/shm" not in text and "--mem" not in text
    korean = explain(d, "ko")
    assert "열린 파일 수 한도" in korean and "`ulimit -n 65536`" in korean


# NCCL's shared-memory transport creating its segment in a /dev/shm too small (src/os/linux.cc,
# before src/misc/shmutils.cc; before 2.12 include/shm.h with SYSCHECK's `Call to ... failed`)
NCCL_SHM_FULL = {
    "2.12-2.29": (
        "gpu-a07:1234:1290 [3] misc/shmutils.cc:72 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-sK3D7t to 9637892 bytes\n"
        "gpu-a07:1234:1290 [3] misc/shmutils.cc:113 NCCL WARN Error while creating shared "
        "memory segment /dev/shm/nccl-sK3D7t (size 9637888)\n"),
    "2.30": (
        "gpu-a07:1234:1290 [3] os/linux.cc:796 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-sK3D7t to 9637892 bytes, error: No space left on device (28)\n"
        "gpu-a07:1234:1290 [3] os/linux.cc:833 NCCL WARN Error while creating shared memory "
        "segment /dev/shm/nccl-sK3D7t (size 9637888), error: No space left on device (28)\n"),
    "2.7-2.11": (
        "gpu-a07:1234:1290 [3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No "
        "space left on device\n"
        "gpu-a07:1234:1290 [3] include/shm.h:48 NCCL WARN Error while creating shared memory "
        "segment nccl-shm-recv-b3a5c1e8d9f7-0-1-0 (size 9637888)\n"),
}

@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("version", sorted(NCCL_SHM_FULL))
def test_nccls_shared_memory_segment_that_dev_shm_cannot_hold_is_a_failure_of_its_own(
        catalogue, version, acct):
    """Not a disk to free (its `No space left on device` is /dev/shm's) nor a DataLoader
    worker's death (no fewer workers, no more --mem): NCCL's own fix, a larger /dev/shm or
    NCCL_SHM_DISABLE=1."""
    d = read_log(catalogue, PROGRESS_AT_120
                 + NCCL_SHM_FULL[version] + NCCL_SYSTEM_ERROR, acct)
    assert (d.class_id, d.decided_by, d.detail) == (
        "unknown_failure", "signature", {"kind": "nccl_shm"})
    assert not d.retryable and "disk_full" not in d.secondary
    text = explain(d)
    assert all(w in text for w in ("NCCL could not create the shared-memory segment",
                                   "--shm-size", "NCCL_SHM_DISABLE=1"))
    assert "DataLoader" not in text and "--mem" not in text
    assert explain_title(d) == "NCCL ran out of shared memory (/dev/shm)"
    assert "NCCL_SHM_DISABLE=1" in explain(d, "ko") and "공유 메모리" in explain_title(d, "ko")


def test_nccls_failure_to_attach_to_a_peers_segment_is_no_full_dev_shm(catalogue):
    # the rank that created it is gone: no shared-memory case
    text = (PROGRESS_AT_120 +
            "gpu-a07:1234:1290 [3] misc/shmutils.cc:49 NCCL WARN Call to open failed : No such "
            "file or directory\n"
            "gpu-a07:1234:1290 [3] misc/shmutils.cc:113 NCCL WARN Error while attaching to "
            "shared memory segment /dev/shm/nccl-sK3D7t (size 9637888)\n" + NCCL_SYSTEM_ERROR)
    d = read_log(catalogue, text)
    assert d.class_id != "dataloader_worker_killed" and d.detail != {"kind": "nccl_shm"}


@pytest.mark.parametrize("cause", [
    # 2.12-2.29: no /dev/shm to create the file in (mkstemp), then the creating line
    "gpu-a07:1234:1290 [3] misc/shmutils.cc:61 NCCL WARN Error: failed to create shared memory "
    "file /dev/shm/nccl-XXXXXX, error No such file or directory (2)\n",
    # mmap refusing the segment: host memory, not /dev/shm's size
    "gpu-a07:1234:1290 [3] os/linux.cc:812 NCCL WARN Error: Could not map /dev/shm/nccl-sK3D7t "
    "size 9637892, error: Cannot allocate memory (12)\n",
    # the fallocate line with another errno than ENOSPC
    "gpu-a07:1234:1290 [3] os/linux.cc:796 NCCL WARN Error: failed to extend /dev/shm/nccl-sK3D7t"
    " to 9637892 bytes, error: Operation not supported (95)\n",
], ids=["no-dev-shm", "mmap-enomem", "fallocate-eopnotsupp"])
def test_nccls_segment_that_failed_for_another_reason_than_a_full_dev_shm_is_not_that_class(
        catalogue, cause):
    """NCCL prints `Error while creating shared memory segment` after any failure to set the
    segment up (src/os/linux.cc ncclShmOpen's `fail:`): only a full /dev/shm's errno, or the
    fallocate line, is NCCL's full /dev/shm with its fix."""
    errno = cause.rsplit("error", 1)[1].split(" ", 1)[1].rstrip("\n")
    text = (PROGRESS_AT_120 + cause
            + "gpu-a07:1234:1290 [3] misc/shmutils.cc:113 NCCL WARN Error while creating shared "
            f"memory segment /dev/shm/nccl-sK3D7t (size 9637888), error: {errno}\n"
            + NCCL_SYSTEM_ERROR)
    d = read_log(catalogue, text, FAILED)
    assert d.class_id != "dataloader_worker_killed" and d.detail != {"kind": "nccl_shm"}


CPP_EXTENSION = "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py"
NO_NINJA = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    '    fused = load(name="fused_adam", sources=["fused_adam.cu"])\n'
    f'  File "{CPP_EXTENSION}", line 1284, in load\n'
    "    return _jit_compile(\n"
    f'  File "{CPP_EXTENSION}", line 1653, in verify_ninja_availability\n'
    '    raise RuntimeError("Ninja is required to load C++ extensions")\n'
    "RuntimeError: Ninja is required to load C++ extensions\n")


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
def test_no_ninja_for_a_cpp_extension_is_an_unknown_failure_that_says_to_install_it(catalogue,
                                                                                    acct):
    """ninja is a build tool, not a compiler: no class of its own, but the fix is known."""
    d = read_log(catalogue, PROGRESS_AT_120 + NO_NINJA,
                 acct)
    assert d.class_id == "unknown_failure" and d.detail == {"kind": "no_ninja"}
    assert "pip install ninja" in explain(d) and "job's environment" in explain(d)
    assert "pip install ninja" in explain(d, "ko") and "설치" in explain(d, "ko")
    other = read_log(catalogue, "RuntimeError: Error building extension 'fused_adam'\n",
                     acct)
    assert other.class_id == "unknown_failure" and other.detail is None


@pytest.mark.parametrize(("line", "node"), [
    ("slurmstepd: error: *** JOB 32391783 ON cn119 CANCELLED AT 2021-06-18T13:05:36 DUE TO "
     "NODE FAILURE ***", "cn119"),
    ("srun: error: gpu-a07: task 3: Aborted (core dumped)", "gpu-a07"),
    ("salloc: error: Node failure on worker-1", "worker-1"),
    ("node17-2:36748:36748 [0] NCCL WARN Cuda failure 'unknown error'", "node17-2"),
])
def test_a_gpu_or_node_fault_names_its_node(catalogue, line: str, node: str):
    text = line + "\nRuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    d = read_log(catalogue, text)
    assert d.class_id in ("gpu_failure", "node_failure") and d.node == node
    assert d.to_json()["node"] == node


def test_only_faults_of_a_node_name_one(catalogue):
    text = "srun: error: gpu-a07: task 0: Exited with exit code 1\nValueError: bad shape\n"
    assert read_log(catalogue, text).node is None


def test_tensorflows_exhausted_allocator_ends_a_log_as_a_device_oom(catalogue):
    """A Jupyter traceback's header names TensorFlow's exception class without its message:
    the log ending there is a device OOM; with the host allocator's line it is a host OOM."""
    text = ("Epoch 1/3\n"
            "ResourceExhaustedError                    Traceback (most recent call last)\n"
            "<ipython-input-15-331b28c97632> in <module>()\n"
            "---> 10 history = model.fit(X_train, y_train, epochs=3, batch_size=4)\n")
    assert read_log(catalogue, text).class_id == "cuda_oom"
    host = ("OOM when allocating tensor with shape[32,52,52,256] and type float on "
            "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n")
    assert read_log(catalogue, host + text).class_id == "host_oom"
    # training that goes on after it is not ended by it
    assert read_log(catalogue, text + "step 11 loss 1.1\n").class_id == "none"


@pytest.mark.parametrize("line", [
    # Ray's memory monitor (verl, OpenRLHF, vLLM on Ray)
    "(raylet) node_manager.cc:3099: 1 Workers (tasks / actors) killed due to memory pressure "
    "(OOM), 0 Workers crashed due to other reasons at node (ID: 87d7, IP: 10.22.68.9)",
    "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
    # a C++ allocation failing on the host heap
    "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc"
    "\nAborted (core dumped)",
])
def test_ray_memory_monitor_kills_and_cpp_bad_alloc_are_a_host_oom(catalogue, line: str):
    d = read_log(catalogue, "step 10 loss 1.2\n" + line + "\n")
    assert d.class_id == "host_oom" and d.decided_by == "signature"


@pytest.mark.parametrize("frames", [
    "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
    ":565 (most recent call first):",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
    "duration<long, std::ratio<1l, 1000l> > >) + 0x282 (0x7f6aaafa5672 in libtorch_cuda.so)",
    "(RayWorkerWrapper pid=4009) /usr/local/lib/python3.9/site-packages/torch/lib/"
    "libtorch_cuda.so(+0xe0845a) [0x7f9a817d745a] c10d::ProcessGroupNCCL::ncclCommWatchdog()\n"
    "(RayWorkerWrapper pid=4009) *** SIGABRT received at time=1720159248 on cpu 5 ***",
])
def test_the_nccl_watchdogs_own_frames_are_an_nccl_timeout(catalogue, frames: str):
    """A stack dump cut before the watchdog's message still shows where the abort came from."""
    d = read_log(catalogue, "step 10 loss 1.2\n" + frames + "\n")
    assert d.class_id == "nccl_timeout" and d.retryable
    # a GPU fault the watchdog reports is still the cause
    ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    assert read_log(catalogue, "step 10 loss 1.2\n" + ecc + frames + "\n").class_id == (
        "gpu_failure")


@pytest.mark.parametrize(("epoch", "class_id"), [
    ("Epoch 4/50", "none"),  # one epoch's bar at 100 %, 46 epochs to go
    ("Epoch [12/300]", "none"),
    ("      3/49     11.9G   0.02173     0.035   0.00129", "none"),  # YOLO's epoch column
    ("Epoch 50/50", "completed"),  # the last epoch (1-based) ...
    ("     49/49     11.9G   0.02173     0.035   0.00129", "completed"),  # ... or 0-based
])
def test_a_per_epoch_progress_bar_at_100_percent_is_not_the_end_of_training(
        catalogue, epoch: str, class_id: str):
    bar = "100%|##########| 1626/1626 [22:53<00:00,  1.18it/s]"
    text = "".join(f"Epoch {e}/50\n{bar}\n" for e in (1, 2)) + epoch + "\n" + bar + "\n"
    assert read_log(catalogue, text).class_id == class_id


CLOSED_BARS = ("100%|##########| 1500/1500 [31:07<00:00,  1.24s/it]\n"
               "100%|##########| 80/80 [01:05<00:00,  1.22it/s]\n") * 2


@pytest.mark.parametrize("last", [
    " 41%|####1     | 615/1500 [12:40<18:14,  1.24s/it]",  # tqdm mid-epoch
    "Epoch 3:  41%|####1     | 615/1500 [12:40<18:14, loss=0.213]",  # Lightning's bar
    "1499/1500 [31:05<00:01,  1.24s/it]",  # one batch short (tqdm rounds it to 100 %)
    "Steps:   0%|",  # the next pass's bar, just opened
    " 615/1500 [===========>..................] - ETA: 18:14 - loss: 0.2130",  # Keras
])
def test_a_log_ending_in_an_open_progress_bar_after_closed_ones_is_still_running(
        catalogue, last: str):
    """Each pass's bar closes at 100 % and the next one opens: earlier bars reaching their
    total is no end of training when the last line is a bar short of its own."""
    assert read_log(catalogue, CLOSED_BARS + last + "\n").class_id == "none"


def test_a_log_ending_in_a_closed_progress_bar_keeps_its_reading(catalogue):
    assert read_log(catalogue, CLOSED_BARS).class_id == "completed"
    # ... and an open bar before more output is not the log's end
    bar = " 41%|####1     | 615/1500 [12:40<18:14,  1.24s/it]\n"
    assert read_log(catalogue, bar + CLOSED_BARS).class_id == "completed"


@pytest.mark.parametrize(("ending", "class_id"), [
    ("(TaskRunner pid=130397, ip=10.0.0.1) Killed", "host_oom"),  # the shell's kill notice
    ("\x1b[36m(WorkerDict pid=3175143)\x1b[0m MemoryError", "host_oom"),
    ("[36m(main_task pid=1748945)[0m ValueError: shape mismatch", "unknown_failure"),
])
def test_a_ray_workers_prefix_does_not_hide_how_the_log_ends(catalogue, ending: str,
                                                             class_id: str):
    """verl / OpenRLHF / vLLM print every worker line behind Ray's `(Name pid=N, ip=...)`."""
    text = "(TaskRunner pid=130397) step 10 loss 1.2\n" + ending + "\n"
    assert read_log(catalogue, text).class_id == class_id


# --- a shell's prompt as the log's last line ----------------------------------------------

SHELL_RUN = "(venv) user@host:~/proj$ python train.py --lr 3e-4\n" + PROGRESS


@pytest.mark.parametrize("prompt", [
    "(venv) user@host:~/proj$ ",
    "root@abc123:/workspace# ",
    "$ ",
    "PS C:\\x>",
    "C:\\Users\\me\\proj>",
    "(base) [alice@login01 proj]$ ",
    "alice@MacBook-Pro ~ % ",
    "bash-4.2$ ",
    "user@host:~/proj (main)$ ",
    "\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~/proj\x1b[00m$ ",
])
def test_a_shell_prompt_after_progress_is_a_process_that_ended_with_nothing_said(
        catalogue, prompt: str):
    """The shell got the terminal back: the run ended, with no error and no end of training."""
    for ending in (prompt, prompt + "\n\n"):
        d = read_log(catalogue, SHELL_RUN + ending)
        assert (d.class_id, d.decided_by) == ("silent_exit", "hint"), repr(ending)
        assert d.evidence[-1].line == SHELL_RUN.count("\n") + 1
        assert not d.retryable


@pytest.mark.parametrize("last", [
    "loss: 0.3 $",
    "epoch 3 #",
    "cost so far 12 $",  # (not `total cost`: a closing summary, closing_summary.py)
    "step 40 >",
    "#",
    ">",
    "%",
    "Sending the report to alice@example.com",
    "wrote C:\\runs\\best.pt",
    "user@host:~/proj$ python eval.py",  # a new command at the prompt: it is running
])
def test_lines_that_only_look_like_a_prompt_do_not_end_the_run(catalogue, last: str):
    assert read_log(catalogue, SHELL_RUN + last + "\n").class_id == "none"


def test_a_prompt_followed_by_a_new_command_and_its_output_is_not_the_end(catalogue):
    text = SHELL_RUN + "user@host:~/proj$ \nuser@host:~/proj$ python train.py --resume\n" + (
        "2025-05-20 10:01:00 iter=40 loss=0.4\n")
    assert read_log(catalogue, text).class_id == "none"


@pytest.mark.parametrize(("before", "class_id"), [
    ("Training complete.\n", "completed"),
    ("Killed\n", "host_oom"),
    ("RuntimeError: shapes do not match\n", "unknown_failure"),
    ("^C\n", "none"),  # interrupted by hand: not an end with nothing said
])
def test_a_prompt_after_the_end_of_training_or_an_error_keeps_their_reading(
        catalogue, before: str, class_id: str):
    assert read_log(catalogue, SHELL_RUN + before + "user@host:~/proj$ \n").class_id == (
        class_id)


def test_a_prompt_after_the_target_is_reached_is_completed(catalogue):
    d = run_log(catalogue, SHELL_RUN + "root@abc123:/workspace# \n", Accounting(), target_iter=39)
    assert d.class_id == "completed"


def test_with_accounting_a_prompt_decides_nothing(catalogue):
    d = run_log(catalogue, SHELL_RUN + "root@abc123:/workspace# \n", FAILED)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "accounting")


# start-up output, then the prompt: the program returned before it trained at all
START_UP = ("(venv) user@host:~/proj$ python train.py --cfg configs/base.yaml\n"
            "Loading config from configs/base.yaml\n"
            "Building model resnet50 (25.6M parameters)\n"
            "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:558: UserWarning:"
            " This DataLoader will create 16 worker processes in total.\n")


@pytest.mark.parametrize("text", [
    START_UP + "(venv) user@host:~/proj$ \n",
    START_UP + "(venv) user@host:~/proj$\n\n",
    # pasted without the command that was run
    "Loading config from configs/base.yaml\nBuilding model resnet50\nroot@abc123:/workspace# \n",
    # an earlier command's output, then the training command's own start-up
    "$ nvidia-smi -L\nGPU 0: NVIDIA A100\n$ python train.py\nLoading data\n$ \n",
])
def test_a_prompt_after_start_up_output_is_a_program_that_returned_without_training(
        catalogue, text: str):
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("silent_exit", "hint")
    prompt_line = text.rstrip("\n").count("\n") + 1
    assert d.evidence[-1].line == prompt_line and not d.retryable
    assert d.detail == {"kind": "returned", "line": prompt_line, "progress": False,
                        "last_iter": None}


@pytest.mark.parametrize("progress", [
    "Epoch 1/10\n",  # Keras's epoch header: training had begun
    "      1/49     11.9G    0.0217    0.0123   0.00512        64       640: 100%|#####|\n",
    "Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.29\n",
])
def test_a_prompt_after_progress_the_series_does_not_count_is_not_called_start_up(
        catalogue, progress: str):
    """The explanation must not say training never started when the log shows it had."""
    d = read_log(catalogue, START_UP + progress + "(venv) user@host:~/proj$ \n")
    assert (d.class_id, d.decided_by) == ("silent_exit", "hint")
    assert d.detail is not None and d.detail["progress"] is True


@pytest.mark.parametrize(("error", "class_id"), [
    ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
     "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'\n",
     "unknown_failure"),
    ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "cuda_oom"),
    ("Killed\n", "host_oom"),
    ("bash: torchrun: command not found\n", "unknown_failure"),
])
def test_a_prompt_after_start_up_and_an_error_reads_as_that_error(catalogue, error: str,
                                                                  class_id: str):
    d = read_log(catalogue, START_UP + error + "(venv) user@host:~/proj$ \n")
    assert d.class_id == class_id and (d.detail or {}).get("kind") != "returned"


@pytest.mark.parametrize("text", [
    "(venv) user@host:~/proj$ python train.py --cfg configs/base.yaml\n(venv) user@host:~/proj$ \n",
    "$ python train.py\n\n$ \n$ \n",
    # the earlier command printed something; the training command printed nothing
    "$ nvidia-smi -L\nGPU 0: NVIDIA A100\n$ python train.py\n$ \n",
    "user@host:~/proj$ \n",
    START_UP + "^C\n(venv) user@host:~/proj$ \n",  # stopped by hand
])
def test_a_prompt_after_nothing_but_commands_or_an_interrupt_is_not_a_silent_exit(
        catalogue, text: str):
    assert read_log(catalogue, text).class_id == "none"


def test_with_accounting_a_prompt_after_start_up_decides_nothing(catalogue):
    d = run_log(catalogue, START_UP + "(venv) user@host:~/proj$ \n", FAILED)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "accounting")


# torch's symbolic shapes refusing to guard on a data-dependent value, as pytorch/pytorch issues
# quote it: raised through a traceback (https://github.com/pytorch/pytorch/issues/127830), logged
# by recording.py at E level (#143249), and Dynamo's UserError (#147672).
DATA_DEPENDENT_GUARD = {
    "traceback": (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    loss = model(batch)\n"
        "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on "
        "data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  (Size-like symbols: none)\n"),
    "logged": (
        "E1213 17:31:51.629000 3722811 pytorch/torch/fx/experimental/recording.py:299] [0/0] "
        "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on "
        "data-dependent expression Eq(-Min(4, Max(0, u0)) + Min(4, Max(u0 + 1, Max(0, u0))), 1) "
        "(unhinted: Eq(-Min(4, Max(0, u0)) + Min(4, Max(u0 + 1, Max(0, u0))), 1)).  (Size-like "
        "symbols: none)\n"
        "E1213 17:31:51.629000 3722811 pytorch/torch/fx/experimental/recording.py:299] [0/0] "
        "Caused by: (_inductor/lowering.py:1014 in squeeze)\n"
        "E1213 17:31:51.629000 3722811 pytorch/torch/fx/experimental/recording.py:299] [0/0] "
        'For more information, run with TORCH_LOGS="dynamic"\n'),
    "dynamo-usererror": (
        "torch._dynamo.exc.UserError: Could not guard on data-dependent expression Eq(256*u0, "
        "256) (unhinted: Eq(256*u0, 256)).\n"),
}


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("wording", sorted(DATA_DEPENDENT_GUARD))
def test_a_data_dependent_guard_the_log_ends_in_is_a_failure_with_the_compilers_fix(
        catalogue, wording, acct):
    """torch.compile's GuardOnDataDependentSymNode ending the log is the model code's failure
    under tracing (a resubmit fails the same way), with its own fix: torch._check,
    mark_unbacked, a graph break instead of fullgraph=True; never `none`, never retried."""
    d = read_log(catalogue, PROGRESS_AT_120
                 + DATA_DEPENDENT_GUARD[wording], acct)
    assert (d.class_id, d.detail) == ("unknown_failure", {"kind": "data_dependent_guard"})
    assert not d.retryable
    assert any("data-dependent expression" in e.text for e in d.evidence)
    text = explain(d)
    assert all(w in text for w in ("torch._check", "mark_unbacked", "fullgraph=True"))
    assert "add the signature" not in text
    assert explain_title(d) == "torch.compile could not guard on a data-dependent value"
    assert "torch._check" in explain(d, "ko") and "가드" in explain_title(d, "ko")


def test_a_data_dependent_guard_the_run_trains_on_after_is_survived(catalogue):
    # Inductor's warning of a compile that fell back (#193693): training goes on after it
    text = (PROGRESS_AT_120 +
            "W0815 22:53:17.219000 9155 torch/_functorch/_aot_autograd/graph_compile.py:2122] "
            "[0/0] torch._inductor.exc.InductorError: GuardOnDataDependentSymNode: Could not "
            "guard on data-dependent expression Eq(Max(1, u0), 1) (unhinted: Eq(Max(1, u0), 1))."
            "  (Size-like symbols: u0)\n"
            "[2025-03-02 10:01:00] iter 121/8000 loss 1.20\n")
    assert read_log(catalogue, text).class_id == "none"
    # a later failure of another kind does not take the guard's fix
    later = read_log(catalogue, text + "RuntimeError: CUDA error: unknown error\n", FAILED)
    assert later.detail != {"kind": "data_dependent_guard"}


# An MPI message over the library's size limit: Open MPI's PSM2 transport (its help text,
# ompi/mca/mtl/psm2/help-mtl-psm2.txt `[message too big]`, as the MPI_Allgather abort quotes it)
# and IBM Spectrum MPI's collectives (https://github.com/QMCPACK/qmcpack/issues/1343).
MPI_MESSAGE_SIZE = {
    "open-mpi-psm2": (
        "Message size 5326413824 bigger than supported by PSM2 API. Max = 4294967296\n"
        "[node-1:04815] *** An error occurred in MPI_Allgather\n"
        "[node-1:04815] *** reported by process [3170238465,0]\n"
        "[node-1:04815] *** on communicator MPI_COMM_WORLD\n"
        "[node-1:04815] *** MPI_ERR_OTHER: known error not in list\n"
        "[node-1:04815] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now "
        "abort,\n"
        "[node-1:04815] ***    and potentially your MPI job)\n"),
    "spectrum-mpi": "[h23n07:134979] coll:ibm:module: datatype_prepare_recvv overflowed integer "
                    "range\n",
    # a count past a 32-bit int, wrapped negative: Open MPI's fatal handler
    # (ompi/errhandler/errhandler_predefined.c, `*** An error occurred in %s`, `*** %s` of
    # ompi/errhandler/errcode.c's `MPI_ERR_COUNT: invalid count argument`) ...
    "open-mpi-count": (
        "[node-1:04815] *** An error occurred in MPI_Bcast\n"
        "[node-1:04815] *** reported by process [3170238465,0]\n"
        "[node-1:04815] *** on communicator MPI_COMM_WORLD\n"
        "[node-1:04815] *** MPI_ERR_COUNT: invalid count argument\n"
        "[node-1:04815] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now "
        "abort,\n"
        "[node-1:04815] ***    and potentially your MPI job)\n"),
    # ... and MPICH's abort (src/mpid/ch4/src/ch4_globals.c, `Abort(%d)%s%s: %s%s`) of its error
    # stack (src/mpi/errhan/errutil.c, `Fatal error in %s: `; src/mpi/errhan/errnames.txt,
    # `**count:Invalid count`, `**countneg %d:Negative count, value is %d`)
    "mpich-count": (
        "Abort(940171526) on node 3 (rank 3 in comm 0): Fatal error in PMPI_Send: Invalid "
        "count, error stack:\n"
        "PMPI_Send(157): MPI_Send(buf=0x7f3a2c000010, count=-2147483648, MPI_BYTE, dest=0, "
        "tag=0, MPI_COMM_WORLD) failed\n"
        "PMPI_Send(95).: Negative count, value is -2147483648\n"),
}


#: The wordings whose count the library refused whatever the transport (a 32-bit int wrapped).
MPI_WRAPPED_COUNT = frozenset({"open-mpi-count", "mpich-count"})


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("wording", sorted(MPI_MESSAGE_SIZE))
def test_an_mpi_message_over_the_librarys_size_limit_is_a_failure_with_its_fix(
        catalogue, wording, acct):
    """The fix follows the line that matched: a transport's or collective's limit (PSM2's 4 GiB,
    Spectrum MPI's collectives) is smaller messages or another transport; a count refused past
    a 32-bit int fails on every transport, so it is smaller messages, a derived datatype or
    MPI-4's large-count calls (MPICH 4.0, Open MPI 6.0, mpi4py 4.0 and its pkl5), never
    `--mca mtl ^psm2`."""
    d = read_log(catalogue, PROGRESS_AT_120
                 + MPI_MESSAGE_SIZE[wording], acct)
    wrapped = wording in MPI_WRAPPED_COUNT
    assert (d.class_id, d.detail) == ("unknown_failure", {"kind": "mpi_message_size",
                                                          "wrapped_count": wrapped})
    assert not d.retryable
    text, ko = explain(d), explain(d, "ko")
    if wrapped:
        assert all(w in text for w in ("refused the call's count", "fewer than 2^31 elements",
                                       "MPI_Type_contiguous", "MPI_Send_c", "MPICH 4.0",
                                       "mpi4py.util.pkl5", "NCCL"))
        assert "psm2" not in text.lower() and "bucket_cap_mb" not in text
        assert "MPI_Send_c" in ko and "거부했습니다" in ko
    else:
        assert all(w in text for w in ("smaller pieces", "bucket_cap_mb", "--mca mtl ^psm2"))
        assert "MPI_Send_c" not in text
        assert "bucket_cap_mb" in ko
    assert explain_title(d) == "An MPI message exceeded the MPI library's size limit"
    assert "MPI 메시지" in explain_title(d, "ko")


# slurmstepd failing to start a task's program, in Slurm's own words
# (https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/task.c:
# `error("execve(): %s: %m", task->argv[0])`, `error("execve(): bad interpreter(%s): %m", ...)`),
# then srun's report of the task's exit (errno as its exit code).
EXECVE_FAILED = {
    "missing": ("slurmstepd: error: execve(): train.sh: No such file or directory\n"
                "srun: error: gpu-a017: task 0: Exited with exit code 2\n",
                "train.sh", "No such file or directory", False),
    "not-executable": ("slurmstepd: error: execve(): /home/u/run_train.sh: Permission denied\n"
                       "srun: error: gpu-a017: task 0: Exited with exit code 13\n",
                       "/home/u/run_train.sh", "Permission denied", False),
    "bad-interpreter": ("slurmstepd: error: execve(): bad interpreter(/usr/bin/python3.11): No "
                        "such file or directory\n"
                        "srun: error: gpu-a017: task 0: Exited with exit code 2\n",
                        "/usr/bin/python3.11", "No such file or directory", True),
}


@pytest.mark.parametrize("acct", [None, Accounting(state="FAILED", exit_code=2, signal=0)],
                         ids=["log-only", "2:0"])
@pytest.mark.parametrize("case", sorted(EXECVE_FAILED))
def test_a_program_slurm_could_not_start_is_named_with_the_systems_reason(catalogue, case, acct):
    """Nothing ran: a launcher failure, never retried, that names the program (or the #!
    line's interpreter) and why it could not start, where it said only "no known signature"."""
    text, program, reason, interpreter = EXECVE_FAILED[case]
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.detail) == ("unknown_failure", {
        "kind": "launch_failed", "program": program, "reason": reason,
        "interpreter": interpreter, "spool": False})
    assert not d.retryable and any("execve()" in e.text for e in d.evidence)
    said = explain(d)
    assert program in said and reason in said and "add the signature" not in said
    assert ("#! line" in said) is interpreter
    assert explain_title(d) == "Slurm could not start the job's program"
    assert program in explain(d, "ko") and "시작하지 못" in explain_title(d, "ko")


def test_a_later_steps_progress_after_a_failed_start_is_not_that_failure(catalogue):
    # a job script's first srun could not start its program; the next step trains and fails
    text = ("slurmstepd: error: execve(): prepare.sh: No such file or directory\n" +
            PROGRESS_AT_120 +
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert read_log(catalogue, text, FAILED).detail is None


# One rank SIGKILLed, its peers' collectives timing out waiting for it: the watchdog's line is
# PyTorch's (ProcessGroupNCCL.cpp), the kill as srun, torchrun and mpirun report it.
WATCHDOG = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600123 milliseconds before timing out.\n"
            "[rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, we are "
            "taking the entire process down.\n")
TORCHRUN_ROOT_CAUSE_SIGKILL = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n"
    "[1]:\n"
    "  time      : 2025-03-02_10:11:02\n"
    "  host      : gpu-a017\n"
    "  rank      : 1 (local_rank: 1)\n"
    "  exitcode  : -6 (pid: 4568)\n"
    "  error_file: <N/A>\n"
    "  traceback : Signal 6 (SIGABRT) received by PID 4568\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2025-03-02_10:01:00\n"
    "  host      : gpu-a017\n"
    "  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : -9 (pid: 4567)\n"
    "  error_file: <N/A>\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 4567\n"
    "============================================================\n")
RANK_KILLED_THEN_WATCHDOG = {
    "srun": "srun: error: gpu-a017: task 0: Killed\n" + WATCHDOG
            + "srun: error: gpu-a017: task 1: Aborted (core dumped)\n",
    "mpirun": ("mpirun noticed that process rank 0 with PID 4567 on node gpu-a017 exited on "
               "signal 9 (Killed).\n" + WATCHDOG),
    "torchrun-root-cause": WATCHDOG + TORCHRUN_ROOT_CAUSE_SIGKILL,
}


@pytest.mark.parametrize("acct", [None, Accounting(state="FAILED", exit_code=0, signal=6), FAILED],
                         ids=["log-only", "0:6", "1:0"])
@pytest.mark.parametrize("launcher", sorted(RANK_KILLED_THEN_WATCHDOG))
def test_a_rank_killed_before_its_peers_timed_out_is_the_cause_not_the_timeout(
        catalogue, launcher, acct):
    """The root cause wins over the downstream NCCL timeout: no resubmit as a network fault
    of a run whose rank the OOM killer took (by hint: the SIGKILL alone), the timeout said
    too."""
    d = read_log(catalogue, PROGRESS_AT_120
                 + RANK_KILLED_THEN_WATCHDOG[launcher], acct)
    assert (d.class_id, d.decided_by) == ("host_oom", "hint")
    assert not d.retryable and "nccl_timeout" in d.secondary and d.node is None


def test_a_kill_before_training_or_after_the_abort_leaves_the_timeout_the_cause(catalogue):
    # a setup step killed before training progressed, then a timeout of its own
    setup = read_log(catalogue, "bash: line 1:  6508 Killed  python preprocess.py\n" +
                     PROGRESS_AT_120 + WATCHDOG)
    assert setup.class_id == "nccl_timeout"
    # srun's report of the ranks it killed after the abort, not before it
    after = read_log(catalogue, PROGRESS_AT_120
                     + WATCHDOG + "srun: error: gpu-a017: task 0: Killed\n")
    assert after.class_id == "nccl_timeout"


# PBS and Torque jobs' ends as their epilogue or accounting record states them: Torque hands
# the epilogue the requested limits, the resources used and the exit code (arguments 6, 7 and
# 10, http://docs.adaptivecomputing.com/torque/4-2-7/Content/topics/12-appendices/
# scriptEnvironment.htm), printed as https://github.com/sgblanch/pbs-scripts epilogue.sh does
# (`Limits:`, `Resources:`, `Exit Value:`); a PBS Pro site's resource-usage table (its layout
# is the site's epilogue's; `Exit Status:` 256 + the signal for a job PBS killed, as
# https://opus.nci.org.au/display/Help/How+to+interpret+the+PBS+exit+codes explains);
# the accounting record tracejob shows (`Exit_status=`, `Resource_List.mem=`,
# `resources_used.mem=`).
PBS_EPILOGUE = {
    "torque-epilogue": (
        "########################################################################\n"
        "PBS Epilogue:\tMon Jan  1 10:00:00 UTC 2024\n"
        "Job ID:\t\t1234.torque01\n"
        "Limits:\t\tmem=4gb,neednodes=1:ppn=4,nodes=1:ppn=4,walltime=01:00:00\n"
        "Resources:\tcput=00:30:00,mem=4823312kb,vmem=5000000kb,walltime=00:10:00\n"
        "Exit Value:\t137\n"
        "########################################################################\n", 137),
    "pbs-pro-table": (
        "======================================================================================\n"
        "                  Resource Usage on 2024-01-01 10:00:00:\n"
        "   Job Id:             1234.gadi-pbs\n"
        "   Exit Status:        271\n"
        "   Service Units:      0.50\n"
        "   NCPUs Requested:    4                      NCPUs Used: 4\n"
        "   Memory Requested:   4.0GB                 Memory Used: 4.8GB\n"
        "   Walltime requested: 01:00:00            Walltime Used: 00:10:00\n"
        "======================================================================================\n",
        271),
    "tracejob": (
        "01/01/2024 10:00:00  A    user=u group=g jobname=train queue=workq ctime=1704099000 "
        "Exit_status=137 Resource_List.mem=4gb Resource_List.ncpus=4 resources_used.cput=00:30:00 "
        "resources_used.mem=4823312kb resources_used.walltime=00:10:00\n", 137),
}


@pytest.mark.parametrize("form", sorted(PBS_EPILOGUE))
def test_a_pbs_job_killed_with_more_memory_used_than_requested_is_a_host_oom(catalogue, form):
    text, status = PBS_EPILOGUE[form]
    d = read_log(catalogue, PROGRESS_AT_120 +
                 "/var/spool/pbs/mom_priv/jobs/1234.SC: line 12: 5678 Killed   python "
                 "train.py\n" + text)
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")
    assert d.detail is not None and d.detail["kind"] == "epilogue_memory"
    assert d.detail["exit_status"] == status
    assert d.detail["used_gib"] > d.detail["requested_gib"] == 4.0
    said = explain(d)
    assert f"exit status {status}" in said and "over the 4.0 GiB the job requested" in said
    assert "4.0 GiB" in explain(d, "ko") and "epilogue" in explain(d, "ko")
    assert not d.retryable
    # the fix is PBS's memory request, not Slurm's --mem
    assert "qsub -l mem=" in said and "-l select=" in said and "--mem" not in said
    assert "qsub -l mem=" in explain(d, "ko") and "--mem" not in explain(d, "ko")


#: What a launcher and the batch script print after the epilogue when they share its output:
#: mpirun's report of the killed rank and 45 lines of the script's own clean-up.
_AFTER_EPILOGUE = (
    "mpirun noticed that process rank 0 with PID 5678 on node node07 exited on signal 9 "
    "(Killed).\n"
    + "".join(f"removed '/scratch/u/run1/tmp/shard-{i:05d}.bin'\n" for i in range(45)))


@pytest.mark.parametrize("form", ["torque-epilogue", "pbs-pro-table"])
def test_a_pbs_epilogue_followed_by_the_launchers_lines_is_still_read(catalogue, form):
    """The epilogue ends the job's output, but mpirun's lines may follow it: more than the 40
    last lines the scan keeps as text. The epilogue is still found and decides."""
    text, status = PBS_EPILOGUE[form]
    log = ("[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n" + text + _AFTER_EPILOGUE)
    assert _AFTER_EPILOGUE.count("\n") > 40
    d = read_log(catalogue, log)
    assert (d.class_id, d.decided_by) == ("host_oom", "signature")
    assert d.detail is not None and d.detail["exit_status"] == status
    assert "qsub -l mem=" in explain(d)
    # ... as the watcher reads it, a few lines a tick
    analysis = LogAnalysis(catalogue)
    lines = log.splitlines(keepends=True)
    for i in range(0, len(lines), 7):
        analysis.feed_text("".join(lines[i:i + 7]))
    analysis.finish()
    assert analysis.diagnose().detail == d.detail
    # ... but not from further back than the scan looks (EPILOGUE_REACH lines)
    far = log + "".join(f"[2025-03-02 10:00:00] cleanup step {i}\n" for i in range(200))
    assert (read_log(catalogue, far).detail or {}).get("kind") != "epilogue_memory"


def test_an_exit_status_far_from_the_memory_figures_is_no_epilogue(catalogue):
    """The memory figures and the exit status come from one block: a `Memory Used` line a
    hundred lines before an unrelated exit status is not its epilogue."""
    text = ("[2025-03-02 10:00:00] iter 120/8000 loss 1.21\n"
            "   Memory Requested:   4.0GB                 Memory Used: 4.8GB\n"
            + "".join(f"[2025-03-02 10:00:00] iter {121 + i}/8000 loss 1.21\n"
                      for i in range(100))
            + "   Exit Status:        271\n")
    assert (read_log(catalogue, text).detail or {}).get("kind") != "epilogue_memory"


def test_a_pbs_exit_status_without_memory_over_the_request_is_no_decisive_host_oom(catalogue):
    # a SIGKILL's exit status alone: a hint, as a bare `Killed` is
    alone = read_log(catalogue, PROGRESS_AT_120 +
                     "   Exit Status:        265\n"
                     "   Walltime requested: 01:00:00 :      Walltime used: 00:10:00\n")
    assert (alone.class_id, alone.decided_by) == ("host_oom", "hint")
    assert alone.detail is None
    # the memory used within the request: not the memory
    within = read_log(catalogue, PROGRESS_AT_120 +
                      "Traceback (most recent call last):\nValueError: bad shape\n"
                      "   Exit Status:        137\n"
                      "   Memory Requested:   4.0GB    Memory Used: 1.8GB\n")
    assert within.detail is None and within.decided_by != "signature"
    # exit 1 with the memory over the request: not killed by a signal
    exited = read_log(catalogue, "Traceback (most recent call last):\nValueError: bad\n"
                      "Exit_status=1 Resource_List.mem=4gb resources_used.mem=4823312kb\n")
    assert exited.class_id == "unknown_failure"


@pytest.mark.parametrize("state", ["REQUEUED", "PENDING"])
@pytest.mark.parametrize(("ending", "first_run"), [
    ("slurmstepd: error: *** JOB 4242 ON gpu-a017 CANCELLED AT 2025-03-02T10:05:00 DUE TO TIME "
     "LIMIT ***\n", "time_limit"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks have "
     "been OOM Killed.\n", "host_oom"),
], ids=["time-limit", "oom"])
def test_a_job_requeued_after_the_run_its_log_shows_waits_to_start_again(catalogue, state,
                                                                        ending, first_run):
    """sacct says the job waits to start again (requeued) and the log holds the first run's
    end: that run's end is history, not the job's failure; nothing is resubmitted (a resubmit
    would run the job twice), the first run's class is kept as a secondary one."""
    d = read_log(catalogue, PROGRESS_AT_120 + ending,
                 Accounting(state=state, exit_code=0, signal=0))
    assert (d.class_id, d.action, d.retryable) == ("none", Action.NONE, False)
    assert d.detail == {"kind": "requeued", "state": state, "framework": None, "line": None,
                        "remaining": None, "cause": None}
    assert first_run in d.secondary
    assert "starts again by itself" in explain(d) and f"({state})" in explain(d)
    assert "다시 시작" in explain(d, "ko")


def test_a_pending_job_with_no_ended_run_in_its_log_is_not_called_requeued(catalogue):
    d = read_log(catalogue, PROGRESS_AT_120,
                 Accounting(state="PENDING"))
    assert d.class_id == "none" and (d.detail or {}).get("kind") != "requeued"


# A log at the path of a job that never started is an earlier job's (`%x.out`): its lines
# (a CUDA OOM, progress) are not this job's.
EARLIER_JOBS_LOG = PROGRESS_AT_120 + (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.06 GiB is free.\n")


@pytest.mark.parametrize(("state", "class_id"), [
    ("CANCELLED", "unknown_failure"),  # no class of its own: what it is when it ran
    ("FAILED", "unknown_failure"),
    ("DEADLINE", "time_limit"),  # classes the recipe would resubmit by themselves
    ("BOOT_FAIL", "node_failure"),
])
@pytest.mark.parametrize("text", ["", EARLIER_JOBS_LOG], ids=["no-log", "earlier-jobs-log"])
def test_a_job_that_never_started_is_told_so_from_its_accounting_alone(catalogue, state,
                                                                       class_id, text):
    """sacct says the job ended while it waited in the queue (accounting's never_started):
    it ran nothing, so whatever a log at its path says is not its own. The class is the one
    its State gives, decided by accounting, with a detail saying it never started and what
    sacct says of it; a person decides whether to submit it again: never retried by itself,
    charging no retry, no evidence lines and no hint about a run's last lines."""
    never = NeverStarted(cancelled_by=1000 if state == "CANCELLED" else None,
                         pending_reason="Priority")
    d = read_log(catalogue, text, Accounting(state=state, exit_code=0, signal=0,
                                             never_started=never))
    assert (d.class_id, d.action, d.retryable, d.charges_budget, d.decided_by) == (
        class_id, Action.ASK, False, False, "accounting")
    assert d.detail == {"kind": "never_started", "state": state,
                        "cancelled_by": never.cancelled_by, "pending_reason": "Priority"}
    assert d.evidence == () and d.secondary == () and d.metrics.last_iter is None
    assert d.hint == ""
    assert explain_title(d) == "The job never started"
    assert explain_title(d, "ko") == "작업이 시작되지 않음"
    who = f"{state} by user id 1000" if state == "CANCELLED" else state
    assert explain(d) == (
        f"Slurm ended it ({who}) while it waited in the queue, so nothing ran and no work was "
        "lost. Its pending reason was Priority.")
    who_ko = f"사용자 ID 1000에 의해 {state}" if state == "CANCELLED" else state
    assert explain(d, "ko") == (
        f"대기열에서 기다리는 동안 Slurm이 작업을 끝냈으므로({who_ko}) 아무것도 실행되지 않았고 "
        "잃은 작업도 없습니다. 대기 사유: Priority.")


def test_a_never_started_job_whose_reason_and_canceller_are_unknown_says_only_its_state(
        catalogue):
    d = read_log(catalogue, "", Accounting(state="CANCELLED", never_started=NeverStarted()))
    assert explain(d) == (
        "Slurm ended it (CANCELLED) while it waited in the queue, so nothing ran and no work "
        "was lost.")


@pytest.mark.parametrize("state", ["PENDING", "RUNNING", None])
def test_never_started_is_read_only_of_a_job_that_ended(catalogue, state):
    """A State that says the job waits or runs (a --state flag over a saved sacct's): the
    log is read as it is."""
    d = read_log(catalogue, EARLIER_JOBS_LOG,
                 Accounting(state=state, never_started=NeverStarted()))
    assert (d.detail or {}).get("kind") != "never_started"


TIMED_OUT = Accounting(state="TIMEOUT", exit_code=0, signal=15, elapsed_s=7200.0)
# the scheduler's ends (sacct's State) and their classes
SCHEDULER_ENDS = [(TIMED_OUT, "time_limit"),
                  (Accounting(state="PREEMPTED", exit_code=0, signal=0), "preempted"),
                  (Accounting(state="NODE_FAIL", exit_code=0, signal=0), "node_failure")]
SCHEDULER_IDS = ["TIMEOUT", "PREEMPTED", "NODE_FAIL"]


@pytest.mark.parametrize("text", [
    # the run's own NaN abort on rank 0, its peers waiting in a collective until the limit
    "step 10 loss 1.2\nstep 20 loss 1.1\nFloatingPointError: Loss is nan, stopping training\n",
    # the last progress line printed the NaN, then nothing until the limit
    "step 10 loss 1.2\nstep 20 loss 1.1\nstep 30 loss nan\n",
], ids=["own abort", "last progress"])
@pytest.mark.parametrize(("acct", "scheduled"), SCHEDULER_ENDS, ids=SCHEDULER_IDS)
def test_a_run_that_stopped_on_a_nan_then_the_scheduler_ended_diverged(catalogue, text, acct,
                                                                       scheduled):
    """Slurm's TIMEOUT, PREEMPTED or NODE_FAIL after the run stopped on a non-finite loss:
    nan_loss (stop, not retryable: a resume diverges again) with the NaN line as evidence, the
    scheduler's class a secondary one; before, the scheduler's class (resubmit)."""
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by, d.retryable) == ("nan_loss", "signature", False)
    assert d.secondary == (scheduled,)
    assert [e.line for e in d.evidence] == [3]


@pytest.mark.parametrize(("acct", "scheduled"), SCHEDULER_ENDS, ids=SCHEDULER_IDS)
def test_a_nan_that_training_went_on_after_is_no_cause_of_the_schedulers_end(catalogue, acct,
                                                                            scheduled):
    """Training made progress after the NaN (a spike it survived): the scheduler ended a run
    that was still training, its class to resume from."""
    text = "step 10 loss 1.2\nstep 20 loss nan\nstep 30 loss 1.1\nstep 40 loss 1.0\n"
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.retryable) == (scheduled, True)
    assert "nan_loss" in d.secondary


@pytest.mark.parametrize(("state", "scheduled", "reason"), [
    ("PREEMPTED", "preempted", "PREEMPTION"), ("NODE_FAIL", "node_failure", "NODE FAILURE"),
    ("TIMEOUT", "time_limit", "TIME LIMIT")])
def test_a_nan_after_the_schedulers_own_line_is_no_divergence(catalogue, state, scheduled,
                                                              reason):
    """slurmstepd's line came first (the run torn down prints a NaN as it stops): the scheduler
    ended the run, its class to resume from; the same NaN before that line is the divergence."""
    slurm = (f"slurmstepd: error: *** JOB 4242 ON gpu-a07 CANCELLED AT 2026-12-01T04:00:07 "
             f"DUE TO {reason} ***\n")
    acct = Accounting(state=state, exit_code=0, signal=0)
    d = read_log(catalogue, "step 10 loss 1.2\nstep 20 loss 1.1\n" + slurm + "step 30 loss nan\n",
                 acct)
    assert (d.class_id, d.retryable) == (scheduled, True)
    assert "nan_loss" in d.secondary
    d = read_log(catalogue, "step 10 loss 1.2\nstep 20 loss 1.1\nstep 30 loss nan\n" + slurm,
                 acct)
    assert (d.class_id, d.retryable) == ("nan_loss", False)
    assert scheduled in d.secondary


@pytest.mark.parametrize(("steps", "target_iter", "class_id", "decided_by"), [
    # at its target: the progress that got there decides, with sacct
    ("/30", None, "completed", "progress"),
    ("", 30, "completed", "progress"),
    # no target to compare with: sacct alone ("look closer")
    ("", None, "completed", "accounting"),
    # short of its target: the work did not happen, as the measured progress says
    ("/40", None, "silent_exit", "detector"),
])
def test_a_completed_run_with_no_marker_is_decided_by_its_progress_at_the_target(
        catalogue, steps, target_iter, class_id, decided_by):
    text = "".join(f"[2025-03-02 10:0{i}:00] iter {n}{steps} loss 1.2\n"
                   for i, n in enumerate((10, 20, 30)))
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    analysis.finish()
    d = analysis.diagnose(Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=900),
                          target_iter=target_iter)
    assert (d.class_id, d.decided_by) == (class_id, decided_by)


# A requeued job (sbatch --open-mode=append) whose rerun crashed at import, before any line of
# its own: its traceback alone follows the finished run (no banner, no start line)
RERUN_CRASHED_AT_IMPORT = ('Traceback (most recent call last):\n'
                           '  File "/home/u/run_clm.py", line 31, in <module>\n'
                           '    import evaluate\n'
                           "ModuleNotFoundError: No module named 'evaluate'\n")


@pytest.mark.parametrize("acct", [None, Accounting(state="FAILED", exit_code=1, signal=0,
                                                   elapsed_s=30)])
def test_a_rerun_crashed_before_its_banner_decides_the_class_read_with_the_run_before(
        catalogue, acct):
    """Nothing before a banner tells a new process from the finished one (training_lines,
    TRAINING_START): the log is read as one run, and the rerun's crash, after the run's
    completion marker, is what the job ended in (not `completed`), its traceback the
    evidence."""
    d = read_log(catalogue, HF_TRAINED + RERUN_CRASHED_AT_IMPORT, acct)
    assert d.class_id == "unknown_failure"
    assert "ModuleNotFoundError" in d.evidence[-1].text
