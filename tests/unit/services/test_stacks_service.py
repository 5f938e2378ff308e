"""bot.services.stacks: a stall's Python stacks collected beside the tick (never delaying it)
and posted in the run's thread with the full dump attached; every failure one line; the
collection's srun argv and the sampler's trainer PIDs."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import (
    T0,
    FakeClusters,
    FakeRunner,
    FakeSFTP,
    FakeSlurm,
    RecordingMessageSink,
    make_context,
    recorded,
)
from support.watcher import stalled_thread

from bot.cluster.errors import ClusterUnavailable, CommandTimedOut
from bot.core.catalogue import Catalogue
from bot.core.sampler_series import SamplerSeries
from bot.core.slurm.records import JobRecord
from bot.core.stacks import (
    MARKER,
    PERMISSION_DENIED,
    TIMED_OUT,
    ProcessFailure,
    StackReport,
    build_report,
)
from bot.core.train_grammar import parse_command
from bot.services import threads
from bot.services.ports import BotContext, PostRefused
from bot.services.stacks import (
    PLACEMENT_SHARE,
    Forensics,
    StackCollector,
    post_stacks,
    sampler_hint,
)
from bot.services.train import execute
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

LOG = "/scratch/mix/logs/mix-88154.out"
GATHER = [{"name": n, "short_filename": "train.py", "line": 1}
          for n in ("all_gather", "train_step", "main")]
DATA = [{"name": n, "short_filename": "loader.py", "line": 1}
        for n in ("_get_data", "__next__", "train_step", "main")]


def proc(pid: int, rank: int, frames: list[dict]) -> dict:
    return {"pid": pid, "rank": rank, "step": "0", "ok": True, "cmd": "python train.py",
            "threads": [{"os_thread_id": pid, "thread_name": "MainThread", "frames": frames}]}


def node_output(host: str = "gpu-a01") -> str:
    procs = [proc(10 + r, r, DATA if r == 3 else GATHER) for r in range(4)]
    return MARKER + json.dumps({"host": host, "procs": procs}) + "\n"


STUCK_RANK_3 = build_report("88154", 0, node_output(), "", collected_at="now")


class UploadSink(RecordingMessageSink):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.files: list[tuple[str, str, bytes]] = []  # (key, filename, data)
        self.titles: list[str] = []  # the files' titles, in the same order

    def upload_file(self, chain_id: int, key: str, data: bytes, filename: str,
                    title: str) -> str:
        self.files.append((key, filename, data))
        self.titles.append(title)
        return f"F{len(self.files)}"


class GatedCollector:
    """Answers `report` once `gate` is set: the stacks of a slow srun."""

    def __init__(self, report: StackReport | Exception) -> None:
        self.report, self.gate = report, threading.Event()
        self.calls: list[tuple[str, str, Any]] = []  # (cluster, job, trainer_pids)
        self.prepared: list[str] = []  # the clusters py-spy was placed on ahead of need

    def prepare(self, cluster):  # noqa: ANN001, ANN201
        self.prepared.append(cluster)

    def collect(self, cluster, job_id, *, trainer_pids=None):  # noqa: ANN001, ANN201
        self.calls.append((cluster, job_id, trainer_pids))
        assert self.gate.wait(10)
        if isinstance(self.report, Exception):
            raise self.report
        return self.report


def stalled_watch(store: Store, collector: GatedCollector, **recipe: Any):
    """The 88154 story up to its stall, watched with stacks collected by `collector`; the
    watcher, the forensics, and the rest of the log (to end the job with)."""
    slurm, sftp = FakeSlurm(), FakeSFTP()
    ctx = make_context(store, slurm, sftp=sftp, sink=UploadSink(store), clock=lambda: T0 + 1900,
                       **recipe)
    _, _, rest = stalled_thread(ctx, slurm, sftp)
    stacks = Forensics(ctx, collector)  # type: ignore[arg-type]
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx, forensics=stacks), config=ctx.config)
    w.rest = rest  # type: ignore[attr-defined]
    w.fake = (slurm, sftp)  # type: ignore[attr-defined]
    return ctx, w, stacks


def test_a_stall_posts_the_grouped_stacks_after_the_tick_without_delaying_it(store) -> None:
    collector = GatedCollector(STUCK_RANK_3)
    ctx, w, stacks = stalled_watch(store, collector)
    w.tick(T0)
    report = w.tick(T0 + 360)  # the stall is raised; the collection still runs
    [warning] = [e for e in report.events if e.kind == "warning"]
    sink: UploadSink = ctx.sink
    assert [p[2] for p in sink.posts if p[0] == "reply"] == [warning.key]
    assert collector.calls == [("dev", "88154", None)] and sink.files == []
    collector.gate.set()
    assert stacks.wait(10)
    key = f"stacks:{warning.key}"
    reply = [p for p in sink.posts if p[2] == key]
    assert len(reply) == 1
    assert reply[0][3] == ("🔎 Python stacks · job 88154: 3 of 4 ranks in `all_gather` ← "
                           "`train_step`; the odd ones out: *rank 3* (gpu-a01) in `_get_data` "
                           "← `__next__`.\nEvery rank's full stack follows in a file.")
    [(file_key, filename, data)] = sink.files
    assert (file_key, filename) == (f"{key}:dump", "stacks-88154.txt")
    assert b"=== rank 3 (pid 13) on gpu-a01" in data
    w.tick(T0 + 370)  # the same stall: no second collection
    assert len(collector.calls) == 1
    assert collector.prepared == ["dev"]  # py-spy placed ahead, at the first poll with jobs
    stacks.close()


@pytest.mark.parametrize(("outcome", "line"), [
    (StackReport("88154", None, ProcessFailure("", None, None, PERMISSION_DENIED, "EPERM")),
     "No stacks of job 88154: py-spy may not attach to the trainers: run the bot as the "
     "job's user, and set kernel.yama.ptrace_scope to 0 on the nodes or give py-spy the "
     "cap_sys_ptrace capability (`trainbot preflight` checks it)."),
    (ClusterUnavailable("ssh: timed out"),
     "No stacks of job 88154: collecting them failed: ssh: timed out"),
])
def test_a_collection_that_gets_nothing_says_why_in_one_line(store, outcome, line) -> None:
    collector = GatedCollector(outcome)
    collector.gate.set()
    ctx, w, stacks = stalled_watch(store, collector)
    w.tick(T0)
    w.tick(T0 + 360)
    assert stacks.wait(10)
    sink: UploadSink = ctx.sink
    [text] = [p[3] for p in sink.posts if p[2].startswith("stacks:")]
    assert text == f"🔎 Python stacks · job 88154: {line}"
    assert sink.files == []
    stacks.close()


def test_the_summary_and_its_files_title_in_the_recipes_language(store) -> None:
    """A Korean recipe's stacks: the summary and the shared dump's title are in Korean (the
    title was English only: "Python stacks · job 88154")."""
    sink = UploadSink(store)
    ctx = make_context(store, sink=sink, lang="ko")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    assert post_stacks(ctx, chain.id, "stacks:x", STUCK_RANK_3, "mix")
    text = recorded(ctx).posts[-1][3]
    assert text.startswith("🔎 Python 스택 · 작업 88154: rank 4개 중 3개가 `all_gather` ← "
                           "`train_step`에 있습니다. 다른 곳에 있는 rank: *rank 3* (gpu-a01)")
    assert [f[1] for f in sink.files] == ["stacks-88154.txt"]
    assert sink.titles == ["Python 스택 · 작업 88154"]


class TimingOutRunner(FakeRunner):
    """An srun that outlasts whatever deadline it is given; the deadlines are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def run(self, argv, *, timeout=None, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.timeouts.append(timeout)
        raise CommandTimedOut(argv, timeout or 0.0)


def test_a_stalls_stacks_are_due_within_30_s_of_its_warning(store) -> None:
    # The thread's promise (the stacks, or the line saying why there are none, within 30 s
    # of the stall warning) as what the bot schedules: the collection starts on the tick that
    # posts the warning (test_a_stall_posts_the_grouped_stacks_after_the_tick_…), its srun is
    # given the cluster's stacks_timeout, 25 s by default, leaving 5 s for the post, and an
    # srun past it is the timed-out line.
    ctx = make_context(store)
    cluster = ctx.config.clusters["dev"]
    assert cluster.stacks_timeout + 5.0 <= 30.0
    cluster.py_spy = "/opt/site/bin/py-spy"  # placing trainbot's own copy: the next tests
    runner, slurm = TimingOutRunner(), FakeSlurm()
    slurm.add(88154, state="RUNNING")
    report = StackCollector(ctx.config, FakeClusters(slurm, runner=runner),
                            clock=lambda: T0).collect("dev", "88154")
    assert runner.timeouts == [cluster.stacks_timeout]
    assert report.problem is not None and report.problem.cause == TIMED_OUT


class SlowLoginNode(FakeRunner):
    """A login node whose `sha256sum` answers once `gate` is set (placing py-spy for minutes:
    each step has its own 60 s deadline) with trainbot's py-spy in place; srun reads the
    stacks. Its calls are recorded."""

    def __init__(self, gate: threading.Event) -> None:
        from bot.cluster.pyspy import local_pyspy

        sha = local_pyspy().sha256

        def sha256sum(argv):  # noqa: ANN001, ANN202
            assert gate.wait(30)
            return (0, f"{sha}  {argv[1]}\n", "")

        super().__init__({"sha256sum": sha256sum, "srun": (0, node_output(), "")})


@pytest.mark.parametrize(("lang", "want"), [
    ("en", "🔎 Python stacks · job 88154: No stacks of job 88154: py-spy could not be placed "
           "within 1 s: copying trainbot's py-spy to the cluster is still under way; the next "
           "collection uses it once it is there."),
    ("ko", "🔎 Python 스택 · 작업 88154: 작업 88154의 스택 없음: 1초 안에 py-spy를 설치하지 "
           "못했습니다: trainbot의 py-spy를 클러스터로 복사하는 중입니다. 복사가 끝나면 다음 "
           "수집부터 사용합니다."),
])
def test_a_slow_first_placement_of_py_spy_is_said_by_the_stacks_deadline(store, lang,
                                                                        want) -> None:
    # The first collection on a cluster used to place py-spy first, each of its steps with a
    # 60 s deadline, before stacks_timeout applied: minutes. Now the placement begins at the
    # watcher's first poll of the cluster, in the background, once; a stall's collection waits
    # for it at most half its deadline and says so in the thread.
    gate = threading.Event()
    node = SlowLoginNode(gate)
    ctx, w, stacks = stalled_watch(store, GatedCollector(STUCK_RANK_3), lang=lang)
    ctx.config.clusters["dev"].stacks_timeout = 2.0
    slurm, _sftp = w.fake
    stacks.collector = StackCollector(ctx.config, FakeClusters(slurm, runner=node,
                                                               sftp=FakeSFTP()))
    w.tick(T0)  # the first poll with jobs: the placement begins (sha256sum not answering)
    began = time.monotonic()
    w.tick(T0 + 360)  # the stall
    assert stacks.wait(10)
    took = time.monotonic() - began
    sink: UploadSink = ctx.sink
    [text] = [p[3] for p in sink.posts if p[2].startswith("stacks:")]
    assert text == want
    assert 2.0 * PLACEMENT_SHARE <= took < 2.0 + 5.0  # by the deadline, with the post's 5 s
    assert [a[0] for a in node.argvs()] == ["sha256sum"]  # one placement, still under way
    gate.set()  # the login node answers: the placement under way ends, the next one uses it
    report = stacks.collector.collect("dev", "88154")
    assert report.summary is not None
    assert [a[0] for a in node.argvs()] == ["sha256sum", "srun"]  # placed once, never again
    [srun] = [a for a in node.argvs() if a[0] == "srun"]
    assert "/home/slurmci/.cache/trainbot/py-spy-" in " ".join(srun)
    stacks.close()


def test_collections_at_once_place_py_spy_once(store) -> None:
    gate = threading.Event()
    node = SlowLoginNode(gate)
    clusters = FakeClusters(FakeSlurm(), runner=node, sftp=FakeSFTP())
    ctx = make_context(store, clusters=clusters)
    # the watcher's forensics and `/train stacks` (each its own collector), one context's
    first = StackCollector(ctx.config, clusters, placements=ctx.pyspy)
    second = StackCollector(ctx.config, clusters, placements=ctx.pyspy)
    assert first.prepare("dev") is second.prepare("dev")  # the placement under way
    gate.set()
    reports = [c.collect("dev", "88154") for c in (first, second)]
    assert all(r.summary is not None for r in reports)
    assert [a[0] for a in node.argvs()] == ["sha256sum", "srun", "srun"]


def test_a_failed_placement_is_tried_again_by_the_next_collection(store) -> None:
    node = FakeRunner({"sha256sum": ClusterUnavailable("ssh: timed out"),
                       "srun": (0, node_output(), "")})
    ctx = make_context(store)
    collector = StackCollector(ctx.config, FakeClusters(FakeSlurm(), runner=node,
                                                        sftp=FakeSFTP()))
    for _ in range(2):
        with pytest.raises(ClusterUnavailable):
            collector.collect("dev", "88154")
    assert node.commands() == ["sha256sum", "sha256sum"]


def test_the_collection_runs_srun_beside_the_job_with_the_sites_py_spy(store) -> None:
    runner = FakeRunner({"srun": (0, node_output(), "")})
    ctx = make_context(store)
    ctx.config.clusters["dev"].py_spy = "/opt/site/bin/py-spy"
    clusters = FakeClusters(FakeSlurm(), runner=runner)
    report = StackCollector(ctx.config, clusters, clock=lambda: T0).collect(
        "dev", "88154", trainer_pids={"gpu-a01": (11, 12)})
    assert report.summary is not None and report.summary.odd[0].ranks == ["rank 3"]
    [argv] = runner.argvs()
    assert argv[:5] == ["srun", "--jobid=88154", "--overlap", "--ntasks-per-node=1", "--mem=0"]
    assert argv[-6:] == ["88154", "/opt/site/bin/py-spy", "8.3", "0", "gpu-a01=11,12",
                         str(4 << 20)]


def test_the_samplers_trainer_pids_are_a_hint_for_a_one_node_job_only() -> None:
    sampler = SamplerSeries()
    sampler.feed_lines([json.dumps({"t": 1, "rss": {"trainer": 1}, "per_process": [
        {"pid": 7, "role": "trainer"}, {"pid": 8, "role": "worker"},
        {"pid": 9, "role": "trainer"}]})])
    assert sampler_hint(JobRecord(1, node="gpu-a01"), sampler) == {"gpu-a01": (7, 9)}
    assert sampler_hint(JobRecord(1, node="gpu-a[01-02]"), sampler) is None
    assert sampler_hint(JobRecord(1, node="gpu-a01"), SamplerSeries()) is None


def asked_run(store: Store, *, lang: str = "en", threaded: bool = True,
              sink: type[UploadSink] = UploadSink) -> BotContext:
    """A run of recipe mix (in `lang`) whose job 88154 `/train stacks` asks about, its srun
    answering STUCK_RANK_3's node output, its thread's root posted (`threaded`)."""
    runner = FakeRunner({"srun": (0, node_output(), "")})
    ctx = make_context(store, clusters=FakeClusters(FakeSlurm(), runner=runner),
                       sink=sink(store), lang=lang)
    ctx.config.clusters["dev"].py_spy = "/opt/site/bin/py-spy"
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    if threaded:
        recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx


def test_train_stacks_answers_the_asker_and_posts_in_the_runs_thread(store) -> None:
    ctx = asked_run(store)
    reply = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                    now=T0 + 60)
    assert reply.text.startswith("🔎 Python stacks · job 88154: 3 of 4 ranks in `all_gather`")
    assert reply.ephemeral and reply.blocks
    [thread] = [p for p in recorded(ctx).posts if p[2].startswith("stacks:dev:88154:")]
    assert thread[3] == reply.text.replace(
        "follows in a file in the run's thread.", "follows in a file.")
    assert isinstance(ctx.sink, UploadSink)
    assert [f[1] for f in ctx.sink.files] == ["stacks-88154.txt"]
    [entry] = [e for e in store.audit.recent(10) if e.action == "command.stacks"]
    assert (entry.actor, entry.result, entry.job_id) == ("U0ALICE", "ok", "88154")


@pytest.mark.parametrize(("lang", "threaded", "where"), [
    ("en", True, "Every rank's full stack follows in a file in the run's thread."),
    ("en", False, "No file of every rank's full stack: the job has no run thread to attach "
                  "it to."),
    ("ko", True, "모든 rank의 전체 스택은 실행 스레드에 이어서 파일로 올라옵니다."),
    ("ko", False, "모든 rank의 전체 스택 파일은 없습니다: 이 작업에는 파일을 첨부할 실행 "
                  "스레드가 없습니다."),
])
def test_train_stacks_answer_says_where_the_full_dump_is(store, lang, threaded, where) -> None:
    """The asker's private answer never speaks of an attached file it does not have: with a
    run thread it says the file follows the post there (shared once, there); without
    one (no file is uploaded anywhere) that there is no file. Before, both said "Every
    rank's full stack is in the attached file." """
    ctx = asked_run(store, lang=lang, threaded=threaded)
    reply = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                    now=T0 + 60)
    assert reply.text.endswith("\n" + where) and where in str(reply.blocks)
    assert isinstance(ctx.sink, UploadSink)
    assert [f[1] for f in ctx.sink.files] == (["stacks-88154.txt"] if threaded else [])


class RefusingUploadSink(UploadSink):
    """Slack refuses every file's upload."""

    def upload_file(self, chain_id: int, key: str, data: bytes, filename: str,
                    title: str) -> str:
        raise PostRefused("invalid_arguments")


@pytest.mark.parametrize(("fate", "lang", "said"), [
    ("upload refused", "en", "The file of every rank's full stack could not be shared in the "
                             "run's thread: `/train stacks 88154` collects them again."),
    ("upload refused", "ko", "모든 rank의 전체 스택 파일을 실행 스레드에 공유하지 못했습니다: "
                             "`/train stacks 88154`로 다시 수집하세요."),
    ("too large to keep", "en", "Every rank's full stack was too large to keep for the run's "
                                "thread's later post: `/train stacks 88154` collects them again."),
    ("too large to keep", "ko", "모든 rank의 전체 스택은 실행 스레드에 나중에 올리는 게시물에 "
                                "함께 보관하기에는 너무 큽니다: `/train stacks 88154`로 다시 "
                                "수집하세요."),
])
def test_train_stacks_answer_says_when_no_file_follows_in_the_thread(
        store, monkeypatch, fate, lang, said) -> None:
    """Slack refuses the dump's upload in the run's thread (the thread says so too), or does
    not take the thread's post whose dump is too long to keep with it: the asker's answer says
    so, not that a file follows. Before, it said the file was attached to the post in the
    run's thread."""
    if fate == "upload refused":
        ctx = asked_run(store, lang=lang, sink=RefusingUploadSink)
    else:
        monkeypatch.setattr(threads, "MAX_KEPT_FILE_BYTES", 10)
        ctx = asked_run(store, lang=lang)
        recorded(ctx).fail_next = 1
    reply = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                    now=T0 + 60)
    assert said in reply.text and said in str(reply.blocks)
    assert "follows in a file" not in reply.text and "파일로 올라옵니다" not in reply.text


@pytest.mark.parametrize(("lang", "pending"), [
    ("en", "Not in the run's thread yet: Slack did not take the post; trainbot posts it there "
           "later."),
    ("ko", "아직 실행 스레드에 없습니다: Slack이 게시물을 받지 않아 trainbot이 나중에 그곳에 "
           "게시합니다."),
])
def test_train_stacks_says_its_thread_post_is_pending_when_slack_did_not_take_it(
        store, lang, pending) -> None:
    """`/train stacks` while Slack does not take the thread's post: the asker's answer says
    the post is not in the thread yet (it is kept: the `prompts` job posts it), in the run's
    language; once Slack takes its post, a second ask's answer says nothing of the kind."""
    ctx = asked_run(store, lang=lang)
    recorded(ctx).fail_next = 1
    kept = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                   now=T0 + 60)
    assert kept.text.endswith("\n" + pending) and pending in str(kept.blocks)
    assert not [p for p in recorded(ctx).posts if p[2].startswith("stacks:dev:88154:")]
    posted = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                     now=T0 + 120)
    assert pending not in posted.text and pending not in str(posted.blocks)
    assert [p[3].split("\n")[0] for p in recorded(ctx).posts
            if p[2].startswith("stacks:dev:88154:")] == [posted.text.split("\n")[0]]


@pytest.mark.parametrize(("lang", "kept"), [
    ("en", "Every rank's full stack is kept to be shared in a file after that post in the "
           "run's thread; if Slack refuses the file, the thread says so."),
    ("ko", "모든 rank의 전체 스택은 실행 스레드의 그 게시물 다음에 파일로 공유하도록 보관해 "
           "두었습니다. Slack이 파일을 거부하면 스레드에 알립니다."),
])
def test_train_stacks_does_not_promise_the_file_of_a_thread_post_kept_for_later(
        store, lang, kept) -> None:
    """Slack does not take the thread's post: it is kept with its file, posted later, and that
    file's upload may then be refused (the thread is told). The asker's answer, given before,
    says the file is kept to be shared and that the thread says so if it cannot be, never
    that it follows. Before, it said the file follows, and nothing told the asker otherwise
    when the later upload failed."""
    ctx = asked_run(store, lang=lang, sink=RefusingUploadSink)
    recorded(ctx).fail_next = 1
    reply = execute(ctx, parse_command("stacks 88154"), actor="U0ALICE", channel="C0TRAIN",
                    now=T0 + 60)
    assert kept in reply.text and kept in str(reply.blocks)
    assert "follows in a file" not in reply.text and "파일로 올라옵니다" not in reply.text
    threads.say_pending_notes(ctx)  # the kept post goes up; its file's upload is refused
    unshared = [p[3] for p in recorded(ctx).posts if p[2].endswith(":dump:unshared")]
    assert len(unshared) == 1 and "/train stacks 88154" in unshared[0]


def test_train_stacks_is_refused_to_whom_may_not_touch_the_job(store) -> None:
    # any srun would fail
    ctx = make_context(store, clusters=FakeClusters(FakeSlurm(), runner=FakeRunner()))
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    reply = execute(ctx, parse_command("stacks 88154"), actor="U0MALLORY", channel="C0TRAIN",
                    now=T0)
    assert reply.text.startswith("Refused:")


def fr_dump(*entries: tuple[int, str, str]) -> bytes:
    import pickle

    return pickle.dumps({"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": [
        {"collective_seq_id": seq, "p2p_seq_id": 0, "profiling_name": f"nccl:{op}",
         "state": state, "process_group": ("0", "default_pg"), "is_p2p": False}
        for seq, op, state in entries]})


@pytest.mark.parametrize(("lang", "want"), [
    ("en", "🛩️ NCCL flight recorder · job 88154: 3 of 4 ranks wait in collective #1045 "
           "`all_gather`; never reached it: *rank 3* (last: #1044 all_gather, completed).\n"
           "Rank 4's dump not read: it names os.system: not a flight-recorder dump"),
    ("ko", "🛩️ NCCL flight recorder · 작업 88154: rank 4개 중 3개가 collective #1045 "
           "`all_gather`에서 기다립니다. 여기에 도달하지 못한 rank: *rank 3* (마지막: #1044 "
           "all_gather, completed).\nrank 4의 덤프를 읽지 못했습니다: os.system을(를) "
           "가리킵니다: flight recorder 덤프가 아닙니다"),
])
def test_an_nccl_timeout_brings_the_flight_recorders_ranks_behind(store, lang, want) -> None:
    collector = GatedCollector(STUCK_RANK_3)
    collector.gate.set()
    ctx, w, forensics = stalled_watch(store, collector, nccl_flight_recorder="/shared/fr",
                                      lang=lang)
    slurm, sftp = w.fake
    w.tick(T0)
    w.tick(T0 + 360)
    sftp.clock = T0 + 1800
    for rank in range(3):
        sftp.append(f"/shared/fr/nccl_trace_rank_{rank}",
                    fr_dump((1044, "all_gather", "completed"), (1045, "all_gather", "started")))
    sftp.append("/shared/fr/nccl_trace_rank_3", fr_dump((1044, "all_gather", "completed")))
    sftp.append("/shared/fr/nccl_trace_rank_4", b"cos\nsystem\n(S'touch /tmp/x'\ntR.")
    sftp.clock = T0 - 7200  # a dump of an earlier job: not this one's
    sftp.append("/shared/fr/nccl_trace_rank_5", fr_dump((1, "all_gather", "started")))
    sftp.clock = T0 + 1805
    sftp.append(LOG, w.rest)
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    w.tick(T0 + 1830)
    assert forensics.wait(10)
    [text] = [p[3] for p in ctx.sink.posts if p[2].startswith("flight_recorder:")]
    assert text == want
    forensics.close()


def test_no_flight_recorder_without_the_recipes_opt_in(store) -> None:
    collector = GatedCollector(STUCK_RANK_3)
    collector.gate.set()
    ctx, w, forensics = stalled_watch(store, collector)
    slurm, sftp = w.fake
    w.tick(T0)
    w.tick(T0 + 360)
    sftp.clock = T0 + 1805
    sftp.append(LOG, w.rest)
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    w.tick(T0 + 1830)
    assert forensics.wait(10)
    assert not [p for p in ctx.sink.posts if p[2].startswith("flight_recorder:")]
    forensics.close()


def test_processes_not_read_are_one_line_each_cause_below_the_summary(store) -> None:
    denied = {"pid": 14, "rank": 4, "ok": False, "error": "Permission Denied"}
    gone = {"pid": 15, "rank": 5, "ok": False, "error": "No such process", "gone": True}
    out = node_output().rstrip("\n")[: -len("]}")] + ", " + json.dumps(denied) + ", " + \
        json.dumps(gone) + "]}\n"
    report = build_report("88154", 0, out, "", collected_at="now")
    ctx = make_context(store, sink=UploadSink(store))
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    assert post_stacks(ctx, chain.id, "stacks:y", report, "mix")
    lines = recorded(ctx).posts[-1][3].splitlines()
    assert lines[1:] == [
        "Not read, 1 process(es): py-spy may not attach to the trainers: run the bot as the "
        "job's user, and set kernel.yama.ptrace_scope to 0 on the nodes or give py-spy the "
        "cap_sys_ptrace capability (`trainbot preflight` checks it).",
        "Not read, 1 process(es): the job ended before its stacks could be read.",
        "Every rank's full stack follows in a file."]


@pytest.mark.parametrize(("state", "cause"), [("CANCELLED", "job_ended"),
                                               ("COMPLETING", "job_ended"),
                                               ("RUNNING", "failed")])
def test_a_step_terminated_while_the_job_ended_is_the_job_ending(store, state, cause) -> None:
    runner = FakeRunner({"srun": (143, "", "srun: error: vm: task 0: Terminated\n")})
    slurm = FakeSlurm()
    slurm.add(88154, state=state, name="mix")
    ctx = make_context(store)
    ctx.config.clusters["dev"].py_spy = "/opt/site/bin/py-spy"
    report = StackCollector(ctx.config, FakeClusters(slurm, runner=runner)).collect(
        "dev", "88154")
    assert report.problem is not None and report.problem.cause == cause
    if cause == "job_ended":
        assert report.problem.detail == f"job 88154 is {state}"


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "trainbot과 함께 py-spy 패키지가 설치되어 있지 않습니다: pip install 'trainbot'을 "
           "실행하거나(py-spy는 의존성 중 하나입니다), 클러스터의 `py_spy` 경로를 설정하세요"),
    ("en", "the py-spy package is not installed with trainbot: pip install 'trainbot' (py-spy is "
           "one of its dependencies), or set the cluster's `py_spy` path"),
])
def test_why_py_spy_is_missing_is_said_in_the_threads_language(store, monkeypatch, lang,
                                                               want) -> None:
    import bot.services.stacks
    from bot.cluster.pyspy import local_pyspy

    def not_installed(*_args, **_kw):
        monkeypatch.setattr("bot.cluster.pyspy.metadata.distribution", _no_distribution)
        return local_pyspy()

    monkeypatch.setattr(bot.services.stacks, "place_pyspy", not_installed)
    ctx = make_context(store, lang=lang)
    clusters = FakeClusters(FakeSlurm(), runner=FakeRunner({}), sftp=FakeSFTP())
    report = StackCollector(ctx.config, clusters, clock=lambda: T0).collect("dev", "88154")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    assert post_stacks(ctx, chain.id, "stacks:x", report, "mix")
    text = recorded(ctx).posts[-1][3]
    assert want in text, text


def _no_distribution(name: str):
    from importlib import metadata

    raise metadata.PackageNotFoundError(name)


def _watched_running_job(ctx, slurm: FakeSlurm) -> None:  # noqa: ANN001
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    ctx.store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
    slurm.add(88154, state="RUNNING", name="mix", start_time=T0)


def test_a_watcher_over_fakes_without_ssh_begins_no_placement_and_logs_none(
        store, caplog) -> None:
    """The production watcher (its forensics begin placing py-spy at a cluster's first poll
    with jobs) on a test's context with no SSH: trainbot's py-spy counts as placed already
    (the context's placements), so no placement is begun over the SSH the test has none of
    and no "placing py-spy failed" is logged. Before, every such test logged one."""
    import logging

    from bot.app import build_watcher

    slurm = FakeSlurm()
    ctx = make_context(store, slurm, sftp=FakeSFTP(), clock=lambda: T0 + 100)
    _watched_running_job(ctx, slurm)
    caplog.set_level(logging.WARNING, logger="bot.services.stacks")
    caplog.set_level(logging.WARNING, logger="bot.services.pyspy_placements")
    build_watcher(ctx, "dev").tick(T0 + 60)
    assert (ctx.pyspy.placed("dev") or "").startswith("/home/slurmci/.cache/trainbot/py-spy-")
    assert not [t for t in threading.enumerate() if t.name == "py-spy placement dev"]
    assert [r.getMessage() for r in caplog.records] == []


def test_a_placement_failing_over_the_tests_runner_is_still_logged(store, caplog) -> None:
    """Over an SSH runner the test gave, the watcher's forensics place py-spy as in
    production, and a placement that fails says so in the log."""
    import logging

    from bot.app import build_watcher

    slurm = FakeSlurm()
    node = FakeRunner({"sha256sum": ClusterUnavailable("ssh: timed out")})
    ctx = make_context(store, clusters=FakeClusters(slurm, sftp=FakeSFTP(), runner=node),
                       clock=lambda: T0 + 100)
    _watched_running_job(ctx, slurm)
    caplog.set_level(logging.WARNING, logger="bot.services.pyspy_placements")
    build_watcher(ctx, "dev").tick(T0 + 60)
    deadline = time.monotonic() + 10
    while not caplog.records and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r.getMessage() for r in caplog.records] == [
        "dev: placing py-spy failed: ssh: timed out"]
    assert node.commands() == ["sha256sum"] and ctx.pyspy.placed("dev") is None


def test_the_watchers_fenced_context_and_train_stacks_share_one_placement(store) -> None:
    """The watcher runs on a fenced copy of the bot's context (its cluster sessions wrapped),
    `/train stacks` on the context itself: both find py-spy through the context's one
    placement, so it is placed once. Before, each sessions object had its own (the fenced
    wrapper a new one), and the first `/train stacks` after the watcher's placement placed
    it again."""
    from bot.services.fencing import fenced_context

    gate = threading.Event()
    node = SlowLoginNode(gate)
    ctx = make_context(store, clusters=FakeClusters(FakeSlurm(), runner=node, sftp=FakeSFTP()))

    class HeldLease:  # the watcher's lease, held throughout
        def heartbeat(self) -> None:
            pass

        @contextlib.contextmanager
        def acting(self, what: str, *, read: bool = False) -> Iterator[None]:
            yield

    fenced = fenced_context(ctx, HeldLease())  # type: ignore[arg-type]
    assert fenced.pyspy is ctx.pyspy
    watcher_side = Forensics(fenced).collector
    command_side = StackCollector(ctx.config, ctx.clusters, placements=ctx.pyspy)
    assert watcher_side.prepare("dev") is command_side.prepare("dev")
    gate.set()
    assert command_side.collect("dev", "88154").summary is not None
    assert [a[0] for a in node.argvs()] == ["sha256sum", "srun"]
