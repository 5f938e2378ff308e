"""`JobRecord`, what trainbot knows about one job, and how squeue's and sacct's records merge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.core.models import Accounting, NeverStarted
from bot.core.slurm.states import (
    FINISHED_STATES,
    HELD_REASONS,
    HELD_STATES,
    PENDING_STATES,
    QUEUED_END_STATES,
    RUNNING_STATES,
)


@dataclass(frozen=True)
class JobRecord:
    """Everything trainbot knows about one Slurm job after one squeue + one sacct call.

    `state` is the first word (`CANCELLED by 0` -> `CANCELLED`, uid in `cancelled_by`);
    `exit_code`/`signal` come from sacct's `code:signal`, corrected from the steps where the
    job row hides the cause (see `parse_sacct_parsable`). Times are epoch seconds. `source`
    says which command(s) knew the job: `squeue`, `sacct` or `squeue+sacct`.

    `job_id` is Slurm's raw id, unique per array task (task 4 of array 123 may be 127);
    `array_job_id`/`array_task_id` say which array task it is (None outside arrays, and
    `array_task_id` None for an array's still-pending remainder `123_[5-9]`).
    """

    job_id: int
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    state: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    elapsed_s: float | None = None
    node: str | None = None
    max_rss_bytes: int | None = None
    mem_limit_bytes: int | None = None
    # trainbot submitted the job with --mem=0, all of each node's memory (the watcher sets it
    # from its attempt's `submit_mem`: Watcher._submitted_mem); its mem_limit_bytes is then
    # the node's memory as Slurm allocated it (Accounting.whole_node_mem). Never read from
    # Slurm: a requested memory of 0 there also stands for --mem-per-gpu (or the site's
    # DefMemPerGPU) and for no request on a cluster without a default
    whole_node_mem: bool = False
    stdout_path: str | None = None
    stderr_path: str | None = None  # sacct from 23.02 on; None when it goes to stdout_path
    submit_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    restart_count: int = 0
    time_limit_s: float | None = None
    priority: int | None = None
    workdir: str | None = None
    cancelled_by: int | None = None
    step_states: tuple[tuple[str, str], ...] = ()  # (step, state), e.g. ("batch", "CANCELLED")
    array_job_id: int | None = None
    array_task_id: int | None = None
    source: str = ""
    # `exit_code` is as `sacct --parsable2` prints it: modulo 128 (137 reads 9; Accounting)
    exit_code_mod_128: bool = False

    @property
    def display_id(self) -> str:
        """The id people and Slurm's listings use: `123_4` for an array task, else `job_id`."""
        if self.array_job_id is not None and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.job_id)

    @property
    def is_pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def is_running(self) -> bool:
        return self.state in RUNNING_STATES

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def never_started(self) -> bool:
        """It ended while it waited in the queue (cancelled while pending, its deadline
        passed), so it ran nothing and wrote no log: an end state a queued job may reach, and
        no sign of a run: no node, no step, no time elapsed, no exit code or signal, no earlier
        run (a requeue), no start before its end. Slurm gives a job cancelled while pending a
        start time all the same, its end (22.05: sacct Start = End, Elapsed 0, NodeList `None
        assigned`), so a start time does not say it ran; nor does its absence say it did not
        (a job that ran whose accounting lacks its start has a node and steps)."""
        return (self.state in QUEUED_END_STATES and self.node is None and not self.step_states
                and not self.elapsed_s and not self.exit_code and not self.signal
                and self.restart_count == 0
                and (self.start_time is None
                     or self.end_time is not None and self.start_time >= self.end_time))

    @property
    def is_held(self) -> bool:
        """Held by a user or an admin: it will not start until someone releases it."""
        return self.state in HELD_STATES or (self.is_pending and self.reason in HELD_REASONS)

    def accounting(self) -> Accounting:
        """The subset diagnosis needs (bot.core.models.Accounting)."""
        return Accounting(
            state=self.state,
            exit_code=self.exit_code,
            exit_code_mod_128=self.exit_code_mod_128,
            signal=self.signal,
            elapsed_s=self.elapsed_s,
            mem_limit_bytes=self.mem_limit_bytes,
            whole_node_mem=self.whole_node_mem,
            max_rss_bytes=self.max_rss_bytes,
            never_started=NeverStarted(
                cancelled_by=self.cancelled_by,
                # Slurm's `None` is no reason
                pending_reason=self.reason if self.reason != "None" else None,
            ) if self.never_started else None,
        )


def merge_records(
    squeue_records: Mapping[int, JobRecord], sacct_records: Mapping[int, JobRecord]
) -> dict[int, JobRecord]:
    """One record per job known to either side.

    squeue (the controller) is authoritative for what it knows live: name, user, account,
    partition, QOS, state and reason, node, stdout path (sacct lags: for a moment a finished
    job reads `JobName=allocation`, `QOS=Unknown`). Once both sides say the job is finished,
    sacct is authoritative for the outcome, because it has the steps: state, exit code,
    signal, elapsed, start/end; but where sacct's exit code is as `sacct -P` prints it (137
    as 9, `exit_code_mod_128`) and squeue's, exact, is that code or 128 more, with the same
    signal, squeue's is kept, unmarked (`_squeue_says_exactly`). MaxRSS and step states only
    sacct has. A job only one side knows is reported as that side has it.
    """
    merged: dict[int, JobRecord] = {}
    for job_id in sorted(set(squeue_records) | set(sacct_records)):
        live = squeue_records.get(job_id)
        acct = sacct_records.get(job_id)
        if live is None or acct is None:
            merged[job_id] = live or acct  # type: ignore[assignment]
            continue
        values = {}
        for name in JobRecord.__dataclass_fields__:
            mine = getattr(live, name)
            values[name] = mine if mine not in (None, "", ()) else getattr(acct, name)
        if live.is_finished and acct.is_finished:
            for name in ("state", "exit_code", "signal", "elapsed_s", "start_time", "end_time"):
                theirs = getattr(acct, name)
                values[name] = theirs if theirs is not None else getattr(live, name)
            values["exit_code_mod_128"] = (acct.exit_code_mod_128 if acct.exit_code is not None
                                           else live.exit_code_mod_128)
            if _squeue_says_exactly(live, acct):
                values["exit_code"], values["exit_code_mod_128"] = live.exit_code, False
        elif not live.is_finished:
            # Alive (or back to pending after a requeue): an earlier attempt's outcome is void.
            values["exit_code"] = live.exit_code
            values["exit_code_mod_128"] = live.exit_code_mod_128
            values["signal"] = live.signal
            values["end_time"] = live.end_time
            values["elapsed_s"] = acct.elapsed_s if live.is_running else live.elapsed_s
        values["max_rss_bytes"] = acct.max_rss_bytes
        values["restart_count"] = max(live.restart_count, acct.restart_count)
        values["cancelled_by"] = acct.cancelled_by
        values["step_states"] = acct.step_states
        values["source"] = "squeue+sacct"
        merged[job_id] = JobRecord(**values)
    return merged


def _squeue_says_exactly(live: JobRecord, acct: JobRecord) -> bool:
    """Whether squeue's exit code settles sacct's modulo-128 one: squeue prints the job's
    status exactly (22.05 `-O exit_code` and `--json` a raw wait status, 35072 for 137;
    24.11 `137:0`; measured on both dev clusters), so a 137 there with sacct -P's `9:0` is
    137, and a 9 there is 9. squeue's code is the job's; one sacct took from a step (the job
    row hid the cause, 0:0) is kept unless squeue's is one of its two readings."""
    return (acct.exit_code_mod_128 and not live.exit_code_mod_128
            and acct.exit_code is not None and live.exit_code is not None
            and live.exit_code in (acct.exit_code, acct.exit_code + 128)
            and (live.signal or 0) == (acct.signal or 0))
