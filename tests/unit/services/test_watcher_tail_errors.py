"""The watcher's batched log read when one job's file cannot be asked for, or one answer is
wrong: that job's error alone (logged with it, said to a person in English and Korean), every
other job's lines read as usual."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from fakes import T0, FakeSFTP
from support.watcher import CLUSTER, LOG, WatchEnv, add_job, head_line, make_watcher, running

from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.slurm.records import JobRecord
from bot.core.tail import READ, FileReadFailed, ReadBatch, ReadRequest, encode_requests
from bot.core.text import render_text
from bot.services.watch.events import TickReport
from bot.services.watch.tick import Watcher
from bot.services.watch.unreadable import READ_FAILED_NOTE_TICKS
from bot.slack.render import translator

BAD = "/scratch/mix/logs/mix-\0-2.out"  # a NUL byte: no file name holds one


def _encoding(sftp: FakeSFTP) -> None:
    """The fake reader encodes each batch as the real one does (ShellTailReader), so a path
    the read script cannot be given fails the batch there."""
    read = sftp.read

    def encoded(requests: Sequence[ReadRequest]) -> ReadBatch:
        encode_requests(requests)
        return read(requests)

    sftp.read = encoded  # type: ignore[method-assign]


class Answering:
    """A runner whose read command answers `answer` (the Exchanger the reader needs)."""

    def __init__(self, answer: Exchange) -> None:
        self.answer = answer

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        return self.answer


def _lines(n: int) -> bytes:
    return b"".join(b"2026-12-06 10:%02d:00 | INFO | iter: %d/8000 | loss: 0.9\n" % (k, k + 1)
                    for k in range(n))


def _two_ticks_job_1_reads(env: WatchEnv, caplog) -> tuple[Watcher, list[str]]:
    """Two ticks, three lines more in job 1's log between them: job 1's lines of both ticks
    arrive, once each; nothing of job 2's log is read or applied. What the watcher logged of
    job 2, in order, with the watcher."""
    store, slurm, sftp, sink = env
    w = make_watcher(store, slurm, sftp, sink)
    with caplog.at_level(logging.INFO):
        w.tick(T0 + 30)
        sftp.append(LOG, _lines(3))
        w.tick(T0 + 60)
    good = w._jobs[1].log
    assert good is not None and good.line_no == 8
    assert w._jobs[2].log is None
    return w, [r.getMessage() for r in caplog.records if "job 2" in r.getMessage()]


def test_a_log_path_holding_a_nul_byte_is_its_jobs_error_and_the_other_jobs_lines_arrive(
        env: WatchEnv, caplog) -> None:
    store, slurm, sftp, sink = env
    add_job(store, 1)
    add_job(store, 2)
    slurm.records[1] = running(1)
    slurm.records[2] = JobRecord(job_id=2, state="RUNNING", stdout_path=BAD, start_time=T0)
    sftp.append(LOG, _lines(5))
    _encoding(sftp)
    w, said = _two_ticks_job_1_reads(env, caplog)
    assert said == [
        f"{CLUSTER}: job 2: its log cannot be read: {BAD}: the log path of job 2, "
        "'/scratch/mix/logs/mix-\\x00-2.out', is empty or holds a NUL byte, so no file can be "
        "read there: correct the job's --output (Slurm's StdOut) or the recipe's log_path; "
        "the log is not read until then.; read again each tick"]  # once, not each tick


def test_a_finished_job_whose_stored_log_path_is_empty_is_judged_saying_why_in_korean(
        env: WatchEnv) -> None:
    """The job ended; Slurm no longer says its log (22.05's sacct) and the path it was
    followed at, as stored, is empty: after the wait for an unreadable log it is judged from
    accounting, and its incident names the path, the job and the fix, in the thread's
    language; the other job's incident is not held back by it."""
    store, slurm, sftp, sink = env
    add_job(store, 2)
    add_job(store, 3)
    store.tail_offsets.put("2", "", offset=0, size=0, line_no=0, signature="{}")
    slurm.records[2] = JobRecord(job_id=2, state="FAILED", exit_code=1, signal=0,
                                 start_time=T0, end_time=T0 + 100)
    other = "/scratch/mix/logs/mix-3.out"
    sftp.append(other, _lines(4))
    slurm.records[3] = JobRecord(job_id=3, state="FAILED", exit_code=1, signal=0,
                                 stdout_path=other, start_time=T0, end_time=T0 + 100)
    _encoding(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 200)
    assert [e.job_id for e in sink.events] == ["3"]
    w.tick(T0 + 800)
    [incident] = [e for e in sink.events if e.job_id == "2"]
    assert incident.facts["log_path"] == ""
    assert render_text(incident.facts["log_unreadable"], translator("ko").gettext) == (
        "작업 2의 로그 경로 ''이(가) 비어 있거나 NUL 바이트를 담고 있어 그 경로에서는 어떤 "
        "파일도 읽을 수 없습니다: 작업의 --output(Slurm의 StdOut)이나 레시피의 log_path를 "
        "고치세요. 그때까지 로그를 읽지 않습니다.")
    assert "log_path를 고치세요" in head_line(incident, "ko")


OTHER = "/scratch/mix/logs/mix-2.out"  # job 2's log


def _greeting(sftp: FakeSFTP) -> ShellTailReader:
    """The login shell greets before the read script's answer (a ~/.bashrc that echoes):
    every batched read through `sftp` fails as a whole until its own read is put back. The
    greeting reader, to put in again."""
    greeted = ShellTailReader(Answering(Exchange(b"Welcome to login1\n", b"", 0)), where="dev")
    sftp.read = greeted.read  # type: ignore[method-assign]
    return greeted


def _two_running(env: WatchEnv) -> None:
    """Jobs 1 (writing LOG) and 2 (writing OTHER) running, five lines each."""
    store, slurm, sftp, _ = env
    for job, path in ((1, LOG), (2, OTHER)):
        add_job(store, job)
        slurm.records[job] = JobRecord(job_id=job, state="RUNNING", stdout_path=path,
                                       start_time=T0)
        sftp.append(path, _lines(5))


def test_an_answer_not_starting_where_asked_is_its_jobs_error_logged_once_with_it(
        env: WatchEnv, caplog) -> None:
    """The reader answers job 2's log from a byte it was not asked from (a fault of the
    reader: an internal invariant): nothing of that answer is used, job 2's log is logged as
    unreadable once, naming the job and the bytes, and job 1's lines arrive on every tick."""
    store, slurm, sftp, sink = env
    _two_running(env)
    read = sftp.read

    def misplaced(requests: Sequence[ReadRequest]) -> ReadBatch:
        batch = read(requests)
        return replace(batch, results=[
            replace(got, start=got.start + 1) if req.path == OTHER and got.status == READ
            else got for req, got in zip(requests, batch.results, strict=True)])

    sftp.read = misplaced  # type: ignore[method-assign]
    w, said = _two_ticks_job_1_reads(env, caplog)
    assert said == [
        f"{CLUSTER}: job 2: its log cannot be read: {OTHER}: the login node's answer starts at "
        "byte 1 where byte 0 was asked (a fault of trainbot's reader); nothing of it is used, "
        "and it is read again next tick; read again each tick"]
    [(_, outcome)] = w.logs.read([(w._jobs[2], slurm.records[2], False)],
                                 TickReport(ok=True))[2].files
    assert isinstance(outcome.error, FileReadFailed)
    assert render_text(outcome.error.reason, translator("ko").gettext) == (
        "로그인 노드의 응답이 요청한 바이트 0이(가) 아니라 바이트 1에서 시작합니다 (trainbot 읽기 "
        "모듈의 결함). 응답은 전혀 쓰지 않고 다음 틱에 다시 읽습니다")


GREETED = ("reading files on dev: the answer is not the read script's (stray output at byte 0: "
           "'Welcome to login1\\n'; its error output: no message). Something printed into the "
           "command's output, most often a shell startup file (~/.bashrc, /etc/bashrc) on the "
           "login node: make it print nothing when the shell is not interactive.")


def test_a_failing_batch_read_is_logged_once_per_series_and_told_once_in_its_thread(
        env: WatchEnv, caplog) -> None:
    """The login shell greets before the read script's answer (a ~/.bashrc that echoes): every
    tick's batched read fails as a whole. The log says so once when it starts, with the cause
    and how many jobs it keeps unread, and once when the files read again, not each tick nor
    each job; after READ_FAILED_NOTE_TICKS ticks each run's thread is told once, in its
    language, with the reader's sentence and its fix."""
    store, slurm, sftp, sink = env
    _two_running(env)
    read = sftp.read
    _greeting(sftp)
    w = make_watcher(store, slurm, sftp, sink)
    with caplog.at_level(logging.INFO):
        for k in range(READ_FAILED_NOTE_TICKS + 2):
            w.tick(T0 + 60 * (k + 1))
            told = [e for e in sink.events if e.kind == "read_failed"]
            assert len(told) == (0 if k + 1 < READ_FAILED_NOTE_TICKS else 2), k
        sftp.read = read  # type: ignore[method-assign]
        w.tick(T0 + 60 * (READ_FAILED_NOTE_TICKS + 3))
        w.tick(T0 + 60 * (READ_FAILED_NOTE_TICKS + 4))
    said = [(r.levelname, r.getMessage()) for r in caplog.records
            if "batched read" in r.getMessage()]
    assert said == [
        ("WARNING", f"{CLUSTER}: the batched read of the files of 2 jobs failed: {GREETED}; "
         "read again each tick, a running job judged once its files read, a finished one "
         "after 600 s without them"),
        ("INFO", f"{CLUSTER}: the batched read of the jobs' files read again after 720 s of "
                 "failed batched reads")], said
    good = w._jobs[1].log
    assert good is not None and good.line_no == 5  # read once they read
    note = next(e for e in sink.events if e.kind == "read_failed" and e.job_id == "1")
    assert note.key == f"{CLUSTER}:chain:{note.chain_id}:read_failed:{int(T0 + 60)}"
    assert head_line(note).startswith(
        "The files of job 1 have not been read for 10 ticks in a row (9 min): reading files on "
        "dev: the answer is not the read script's"), head_line(note)
    ko = head_line(note, "ko")
    assert ko.startswith("작업 1의 파일을 10틱 연속으로(9분) 읽지 못했습니다: dev에서 파일을 "
                         "읽는 중: 응답이 읽기 스크립트의 것이 아닙니다"), ko
    assert "매 틱 다시 읽습니다" in ko


def test_a_lasting_batch_failure_of_three_jobs_is_one_warning(env: WatchEnv, caplog) -> None:
    """Every batched read fails for five ticks (the login shell greets) while jobs 1 and 2
    run and job 3 has ended: one warning says it, its cause and the three jobs it keeps
    unread, not one per job nor one per tick; the finished job's wait for its log is no
    second warning of the same cause."""
    store, slurm, sftp, sink = env
    _two_running(env)
    add_job(store, 3)
    slurm.records[3] = JobRecord(job_id=3, state="FAILED", exit_code=1, signal=0,
                                 stdout_path="/scratch/mix/logs/mix-3.out", start_time=T0,
                                 end_time=T0 + 50)
    _greeting(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    with caplog.at_level(logging.INFO):
        for k in range(5):
            w.tick(T0 + 60 * (k + 1))
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [
        f"{CLUSTER}: the batched read of the files of 3 jobs failed: {GREETED}; read again "
        "each tick, a running job judged once its files read, a finished one after 600 s "
        "without them"], warned


def test_a_job_that_finished_while_batch_reads_fail_is_judged_once_after_the_wait(
        env: WatchEnv) -> None:
    """Every tick's batched read fails (the login shell greets). Job 2 has finished: its log
    is waited for as an unreadable one, unreadable_file_s, then it is judged from accounting
    alone, once, its incident saying why its log was not read, in the thread's language;
    job 1, still running, is not judged."""
    store, slurm, sftp, sink = env
    _two_running(env)
    slurm.records[2] = JobRecord(job_id=2, state="FAILED", exit_code=1, signal=0,
                                 stdout_path=OTHER, start_time=T0, end_time=T0 + 50)
    _greeting(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    for k in range(10):  # T0+60 .. T0+600: within the wait
        w.tick(T0 + 60 * (k + 1))
    assert [e for e in sink.events if e.kind == "incident"] == []
    for k in range(10, 14):  # T0+660: the wait is over
        w.tick(T0 + 60 * (k + 1))
    [incident] = [e for e in sink.events if e.kind == "incident"]
    assert incident.job_id == "2"
    assert incident.facts["log_path"] == OTHER
    assert head_line(incident).count(
        f"Its log {OTHER} could not be read (reading files on dev: the answer is not the read "
        "script's") == 1, head_line(incident)
    assert "judged from Slurm's accounting alone" in head_line(incident)
    ko = render_text(incident.facts["log_unreadable"], translator("ko").gettext)
    assert ko.startswith("dev에서 파일을 읽는 중: 응답이 읽기 스크립트의 것이 아닙니다"), ko
    assert ko in head_line(incident, "ko")
    assert store.watched_jobs.get(CLUSTER, "1") is not None  # the running job waits


def test_a_thread_whose_jobs_all_fail_to_read_is_told_once_per_series(env: WatchEnv) -> None:
    """An array's tasks share one run thread: while every batched read fails (one cause, the
    cluster's read script), that thread gets one note, not one per task, a task that began
    being read later included; another run's thread gets its own; a new series after the
    files read again is told again."""
    store, slurm, sftp, sink = env
    _two_running(env)
    array, other = store.watched_jobs.get(CLUSTER, "1"), store.watched_jobs.get(CLUSTER, "2")
    assert array is not None and other is not None
    store.watched_jobs.add(CLUSTER, "3", now=T0, chain_id=array.chain_id)
    late = "/scratch/mix/logs/mix-3.out"
    sftp.append(late, _lines(2))
    slurm.records[3] = JobRecord(job_id=3, state="PENDING")
    read = sftp.read
    greeted = _greeting(sftp)
    w = make_watcher(store, slurm, sftp, sink)
    for k in range(READ_FAILED_NOTE_TICKS + 4):
        if k == 2:  # task 3 starts: its own series is two ticks shorter
            slurm.records[3] = JobRecord(job_id=3, state="RUNNING", stdout_path=late,
                                         start_time=T0 + 150)
        w.tick(T0 + 60 * (k + 1))
    told = [e for e in sink.events if e.kind == "read_failed"]
    assert sorted(e.chain_id or 0 for e in told) == sorted(
        [array.chain_id or 0, other.chain_id or 0]), told
    sftp.read = read  # type: ignore[method-assign]
    w.tick(T0 + 60 * (READ_FAILED_NOTE_TICKS + 5))  # the files read: the series ends
    sftp.read = greeted.read  # type: ignore[method-assign]
    for k in range(READ_FAILED_NOTE_TICKS):
        w.tick(T0 + 60 * (READ_FAILED_NOTE_TICKS + 6 + k))
    assert len([e for e in sink.events if e.kind == "read_failed"]) == 4


def _read_failed_writes(store) -> list[str]:
    """The keys of the read_failed events the watcher records in `store` from now on, one
    per write (Outbox.emit's upsert), in order."""
    writes: list[str] = []
    record = store.incidents.record

    def counted(key: str, **kw):
        if kw.get("class_id") == "read_failed":
            writes.append(key)
        return record(key, **kw)

    store.incidents.record = counted
    return writes


def test_a_lasting_batch_failure_records_each_threads_note_once(env: WatchEnv) -> None:
    """Every batched read fails for READ_FAILED_NOTE_TICKS + 5 ticks; jobs 1 and 3 are tasks
    of one array (one thread), job 2 another run's: each thread's note is written to the
    store once and posted once, not written again for every job each tick the series lasts."""
    store, slurm, sftp, sink = env
    _two_running(env)
    array, other = store.watched_jobs.get(CLUSTER, "1"), store.watched_jobs.get(CLUSTER, "2")
    assert array is not None and other is not None
    store.watched_jobs.add(CLUSTER, "3", now=T0, chain_id=array.chain_id)
    slurm.records[3] = JobRecord(job_id=3, state="RUNNING", stdout_path="/scratch/mix/logs/"
                                 "mix-3.out", start_time=T0)
    _greeting(sftp)
    writes = _read_failed_writes(store)
    w = make_watcher(store, slurm, sftp, sink)
    for k in range(READ_FAILED_NOTE_TICKS + 5):
        w.tick(T0 + 60 * (k + 1))
    series = int(T0 + 60)
    assert sorted(writes) == sorted(
        f"{CLUSTER}:chain:{chain}:read_failed:{series}"
        for chain in (array.chain_id, other.chain_id)), writes
    assert len([e for e in sink.events if e.kind == "read_failed"]) == 2


def test_a_read_failed_note_whose_post_failed_is_posted_at_the_next_tick(
        env: WatchEnv) -> None:
    """Slack is down when the lasting batch failure's note is due: it is posted at the next
    tick, once, and neither written nor posted again while the series lasts."""
    store, slurm, sftp, sink = env
    add_job(store, 1)
    slurm.records[1] = running(1)
    _greeting(sftp)
    writes = _read_failed_writes(store)
    w = make_watcher(store, slurm, sftp, sink)
    for k in range(READ_FAILED_NOTE_TICKS + 4):
        if k + 1 == READ_FAILED_NOTE_TICKS:
            sink.fail_next = 1
        w.tick(T0 + 60 * (k + 1))
        told = [e for e in sink.events if e.kind == "read_failed"]
        assert len(told) == (1 if k + 1 > READ_FAILED_NOTE_TICKS else 0), k
    assert len(writes) == 2  # the failed try, and the one that posted


def test_a_requeued_jobs_read_failed_note_counts_only_its_new_series(env: WatchEnv) -> None:
    """Every batched read fails for 6 ticks; job 1 is requeued (pending), job 2's files read
    again (the cluster's series ends); job 1 runs again and the reads fail again: its thread
    is told after READ_FAILED_NOTE_TICKS ticks of this new series, saying 10 ticks and 9
    minutes, not after 4 ticks spanning both series."""
    store, slurm, sftp, sink = env
    _two_running(env)
    read = sftp.read
    greeted = _greeting(sftp)
    w = make_watcher(store, slurm, sftp, sink)
    for k in range(6):
        w.tick(T0 + 60 * (k + 1))
    slurm.records[1] = JobRecord(job_id=1, state="PENDING")
    sftp.read = read  # type: ignore[method-assign]
    w.tick(T0 + 60 * 7)  # job 2's files read: the cluster's series is over
    slurm.records[1] = JobRecord(job_id=1, state="RUNNING", stdout_path=LOG,
                                 start_time=T0 + 60 * 7 + 30)
    sftp.read = greeted.read  # type: ignore[method-assign]
    start = T0 + 60 * 8
    for k in range(READ_FAILED_NOTE_TICKS):
        w.tick(start + 60 * k)
        told = [e for e in sink.events if e.kind == "read_failed" and e.job_id == "1"]
        assert len(told) == (0 if k + 1 < READ_FAILED_NOTE_TICKS else 1), k
    assert head_line(told[0]).startswith(
        "The files of job 1 have not been read for 10 ticks in a row (9 min)"), head_line(told[0])
