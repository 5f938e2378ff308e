"""Latest complete checkpoint from real directories on the dev cluster, over SFTP."""

from __future__ import annotations

import posixpath
import uuid

import pytest

from bot.cluster.checkpoints import (
    find_latest_checkpoint,
    probe_checkpoints,
    probe_recipe_checkpoints,
)
from bot.cluster.ssh import SSHRunner
from bot.config import CheckpointConfig

pytestmark = pytest.mark.integration


@pytest.fixture
def runner(dev_cluster):
    with SSHRunner(dev_cluster.ssh_settings()) as r:
        yield r


@pytest.fixture
def root(runner: SSHRunner, dev_cluster):
    name = f"ckpt-test-{uuid.uuid4().hex}"
    yield posixpath.join(dev_cluster.home, name)
    runner.run(["rm", "-rf", posixpath.join(dev_cluster.home, name)])


def make(runner: SSHRunner, root: str, files: dict[str, int], pointer: str | None = None) -> None:
    """Create `files` (relative path -> size) under root, and the pointer file if given."""
    script = 'root=$1; shift; while [ $# -gt 0 ]; do mkdir -p "$root/$(dirname "$1")"; '
    script += 'truncate -s "$2" "$root/$1"; shift 2; done'
    args = [x for rel, size in files.items() for x in (rel, str(size))]
    runner.run(["sh", "-c", script, "sh", root, *args])
    if pointer is not None:
        runner.run(
            [
                "sh",
                "-c",
                'printf "%s\\n" "$1" > "$2"',
                "sh",
                pointer,
                f"{root}/latest_checkpoint.txt",
            ]
        )


COMPLETE_1000 = {
    "iter_000001000/model/.metadata": 4096,
    "iter_000001000/model/__0_0.distcp": 1 << 20,
    "iter_000001000/model/__1_0.distcp": 1 << 20,
}
PARTIAL_2000 = {"iter_000002000/model/__0_0.distcp": 76 << 20}  # killed mid-save


def test_pointer_present_and_complete(runner: SSHRunner, root: str) -> None:
    make(runner, root, {**COMPLETE_1000, **PARTIAL_2000}, pointer="iter_000001000")
    cp = find_latest_checkpoint(runner.sftp(), root, "dcp")
    assert cp is not None
    assert (cp.path, cp.iteration, cp.source) == (f"{root}/iter_000001000", 1000, "pointer")


def test_pointer_missing_and_newest_dir_partial_falls_back(runner: SSHRunner, root: str) -> None:
    make(runner, root, {**COMPLETE_1000, **PARTIAL_2000})
    decision = probe_checkpoints(runner.sftp(), root, "dcp")
    cp = decision.checkpoint
    assert cp is not None
    assert (cp.path, cp.iteration, cp.source) == (f"{root}/iter_000001000", 1000, "scan")
    assert [str(s) for s in decision.skipped] == ["iter_000002000: no .metadata"]


def test_pointer_to_partial_checkpoint_is_not_trusted(runner: SSHRunner, root: str) -> None:
    make(runner, root, {**COMPLETE_1000, **PARTIAL_2000}, pointer="iter_000002000")
    decision = probe_checkpoints(runner.sftp(), root, "dcp")
    assert decision.checkpoint is not None
    assert decision.checkpoint.path == f"{root}/iter_000001000"
    assert "latest_checkpoint.txt -> iter_000002000: no .metadata" in map(str, decision.skipped)


def test_nothing_yet_is_none(runner: SSHRunner, root: str, dev_cluster) -> None:
    assert find_latest_checkpoint(runner.sftp(), root, "dcp") is None  # root does not exist
    runner.run(["mkdir", "-p", root])
    assert find_latest_checkpoint(runner.sftp(), root, "dcp") is None  # exists, empty
    make(runner, root, PARTIAL_2000)
    assert find_latest_checkpoint(runner.sftp(), root, "dcp") is None  # only a partial one
    # A root relative to the home directory, or with ~/, means the same place.
    rel = posixpath.relpath(root, dev_cluster.home)
    make(runner, root, COMPLETE_1000)
    for spelled in (rel, f"~/{rel}"):
        cp = find_latest_checkpoint(runner.sftp(), spelled, "dcp")
        assert cp is not None and cp.path == f"{root}/iter_000001000"


def test_marker_rule_and_checkpoint_step_dirs(runner: SSHRunner, root: str) -> None:
    make(
        runner,
        root,
        {
            "checkpoint_step_200/weights.pt": 100,
            "checkpoint_step_200/DONE": 0,
            "checkpoint_step_400/weights.pt": 100,
        },
    )
    cp = find_latest_checkpoint(runner.sftp(), root, "marker:DONE", pointer_name=None)
    assert cp is not None and cp.iteration == 200
    assert [str(s) for s in cp.skipped] == ["checkpoint_step_400: no DONE"]
    cp = find_latest_checkpoint(runner.sftp(), root, "any")
    assert cp is not None and cp.iteration == 400
    cfg = CheckpointConfig(dir=root, glob="checkpoint_step_*", complete_rule="marker:DONE")
    decision = probe_recipe_checkpoints(runner.sftp(), cfg)
    assert decision.explain() == "checkpoint_step_200 (skipped checkpoint_step_400: no DONE)"


def test_a_lookup_given_up_on_a_hung_pointer_leaves_the_clusters_sftp_free(
        dev_cluster, root: str, tmp_path) -> None:
    """The recipe's pointer file never answers (a FIFO: sshd's sftp-server blocks opening it,
    as on a hung filesystem). The watcher gives the production lookup up at its deadline and
    its own SFTP channel is closed: with one channel for all other SFTP use, the next reads
    answer at once and right, while the sftp-server of the lookup still hangs, and the
    lookup's thread is gone (not waiting out the SFTP timeout)."""
    import dataclasses
    import threading
    import time

    from fakes import make_context

    from bot.services.runs import AutoResubmitter
    from bot.services.watch.recipes import RecipeSettings
    from bot.store import Store

    settings = dataclasses.replace(dev_cluster.ssh_settings(), sftp_channels=1,
                                   sftp_timeout=5.0)
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    with SSHRunner(settings) as runner:
        make(runner, root, COMPLETE_1000)
        fifo = f"{root}/latest_checkpoint.txt"
        runner.run(["mkfifo", fifo])
        try:
            ctx = make_context(store, sftp=runner.sftp(),  # type: ignore[arg-type]  # the real one
                               checkpoint={"dir": root})
            lookups = RecipeSettings("dev", config=ctx.config, policy=None,
                                     checkpoint=AutoResubmitter(ctx, "dev").checkpoint)
            started = time.monotonic()
            found = lookups.checkpoint_within("mix", deadline_s=1.0)
            assert found.failed and found.checkpoint is None  # told as unknown
            for thread in threading.enumerate():  # the lookup ended with its channel
                if thread.name == "checkpoint-lookup-mix":
                    thread.join(timeout=5)
                    assert not thread.is_alive()
            sftp = runner.sftp()
            cp = find_latest_checkpoint(sftp, root, "dcp", pointer_name=None)
            assert cp is not None and cp.iteration == 1000
            assert sftp.stat(f"{root}/iter_000001000/model/.metadata").st_size == 4096
            assert time.monotonic() - started < 4.0  # before the 5 s SFTP timeout
            assert len(sftp.channels) == 1  # none set aside for the hung open
        finally:  # let the blocked sftp-server go: a writer opens the FIFO
            runner.run(["timeout", "5", "sh", "-c", 'exec 3>"$1"', "sh", fifo], check=False)
            store.close()


def test_lookups_one_after_another_share_one_sftp_channel(dev_cluster, root: str,
                                                          tmp_path) -> None:
    """The lookups of many finished jobs in a row (an array finishing at once) open one SFTP
    channel on the login node between them, not one each, and each answers right."""
    from fakes import make_context

    from bot.cluster.sftp import DeadlineSFTPClient, SFTPPool
    from bot.services.runs import AutoResubmitter
    from bot.services.watch.recipes import RecipeSettings
    from bot.store import Store

    opened: list[DeadlineSFTPClient] = []
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    with SSHRunner(dev_cluster.ssh_settings()) as runner:

        def open_client(timeout: float) -> DeadlineSFTPClient:
            opened.append(runner._open_sftp_client(timeout))  # noqa: SLF001 - counted here
            return opened[-1]

        make(runner, root, COMPLETE_1000)
        pool = SFTPPool(open_client, where="dev", timeout=5.0)
        try:
            ctx = make_context(store, sftp=pool,  # type: ignore[arg-type]  # the real one
                               checkpoint={"dir": root})
            lookups = RecipeSettings("dev", config=ctx.config, policy=None,
                                     checkpoint=AutoResubmitter(ctx, "dev").checkpoint)
            for _ in range(10):
                found = lookups.checkpoint_within("mix", deadline_s=5.0)
                assert not found.failed and found.checkpoint is not None
                assert found.checkpoint.iteration == 1000
            assert len(opened) == 1 and not opened[0].channel.closed
        finally:
            pool.close()
            store.close()


def test_resume_past_the_lookup_bound_is_refused_in_the_users_language(
        dev_cluster, runner: SSHRunner, root: str, tmp_path) -> None:
    """More newer incomplete checkpoints than the lookup's SFTP request bound allows to list:
    the resume is refused, saying how many were checked and that the older ones (the complete
    one among them) were not, in English and Korean; it neither resumes nor starts afresh."""
    from fakes import make_context

    from bot.core.checkpoints import CHECKPOINT_REQUESTS
    from bot.core.text import render_text
    from bot.services.resume_point import CheckpointLookupStopped, find_resume_checkpoint
    from bot.slack.render import translator
    from bot.store import Store

    partial = {f"iter_{i:09d}/model/__0_0.distcp": 1024
               for i in range(2000, 2000 + CHECKPOINT_REQUESTS + 5)}
    make(runner, root, {**COMPLETE_1000, **partial})
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        ctx = make_context(store, sftp=runner.sftp(),  # type: ignore[arg-type]  # the real one
                               checkpoint={"dir": root})
        with pytest.raises(CheckpointLookupStopped) as refused:
            find_resume_checkpoint(ctx.config.recipe("mix"), runner.sftp())
    finally:
        store.close()
    # OpenSSH's sftp-server answers a readdir with up to 100 entries: the root's listing (86
    # entries) is 4 requests (opendir, a readdir with them, one answering "no more", close),
    # each candidate's listing and its model/ dir's 4 each: 9 checked in 76, the 10th listed
    # at 80, its model/ dir's opendir past the bound
    text = refused.value.args[0]
    en = str(text)
    assert en.startswith(
        f"not resumed: the checkpoint lookup in {root} stopped at its bound of 80 SFTP "
        "requests; the 9 newest checkpoints it checked are incomplete (iter_000002084: no "
        ".metadata; ")
    assert en.endswith(
        "iter_000002076: no .metadata) and the 77 older ones were not checked, so the run "
        "neither resumes from one nor starts from scratch. Remove the incomplete checkpoints "
        "or write a complete one's name in latest_checkpoint.txt, then resume again")
    ko = render_text(text, translator("ko").gettext)
    assert ko.startswith(f"재개하지 않았습니다: `{root}`의 체크포인트 조회가 한도인 SFTP 요청 "
                         "80개에서 멈췄습니다. 확인한 최신 체크포인트 9개는 불완전하고")
    assert "오래된 77개는 확인하지 않았습니다. 그래서 어느 것에서도 재개하지 않고" in ko
    assert "불완전하고(iter_000002084: `.metadata` 없음; iter_000002083: `.metadata` 없음; " in ko
