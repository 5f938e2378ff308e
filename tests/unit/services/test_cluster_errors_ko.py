"""A cluster error a person reads is said in the recipe's language: the cluster adapters raise
it with its sentence (bot.core.text.Text), which the renderer translates, while `str()` (the
log, the audit) stays the English, and what came from outside (paramiko's message, Slurm's
stderr) stays as it came, inside the translated sentence."""

from __future__ import annotations

import re
import socket

import pytest
from fakes import FakeRunner, FakeSlurm, make_context

from bot.cluster.errors import (
    ChannelClosed,
    ClusterError,
    ClusterUnavailable,
    CommandTimedOut,
    LeaseAbandoned,
    SFTPTimedOut,
)
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.core import train_grammar as c
from bot.core.ssh_settings import SSHSettings
from bot.services.submit_claim import claim_key
from bot.services.train import execute, say

NOW = 1_732_871_000.0
CHANNEL = "C0TRAIN"
HANGUL = re.compile("[\uac00-\ud7a3]")


def reply(store, slurm, cmd, lang: str, actor: str = "U0ALICE") -> str:
    ctx = make_context(store, slurm if isinstance(slurm, FakeSlurm) else {"dev": slurm},
                       lang=lang)
    return execute(ctx, cmd, actor=actor, channel=CHANNEL, now=NOW).text


def submit_reply(store, error: ClusterError, lang: str) -> str:
    """The reply to `/train submit mix` when submitting raised `error`."""
    return reply(store, FakeSlurm(submit_error=error), c.Submit("mix"), lang)


def refused_runner(tmp_path) -> tuple[SSHRunner, int]:
    """An SSHRunner to a local port nothing listens on, and that port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return SSHRunner(SSHSettings(host="127.0.0.1", port=port, user="u",
                                 known_hosts=str(tmp_path / "known_hosts"),
                                 connect_timeout=5)), port


def test_cannot_connect_is_said_in_korean_with_the_socket_error_as_it_came(store,
                                                                           tmp_path) -> None:
    runner, port = refused_runner(tmp_path)
    with pytest.raises(ClusterUnavailable) as err:
        runner.run(["squeue"])
    english = str(err.value)
    assert english.startswith(f"cannot connect to u@127.0.0.1:{port}: ")
    cause = english.split(": ", 1)[1]
    text = submit_reply(store, err.value, "ko")
    assert f"u@127.0.0.1:{port}에 연결할 수 없습니다: {cause}" in text, text
    assert "cannot connect" not in text
    text = submit_reply(store, err.value, "en")
    assert text == f"The cluster did not answer: {english}"


def settled(store) -> None:
    """The first submit's unknown outcome settled: it may have queued its job, so its claim
    (kept until it lapses) and its row in flight refuse the recipe's next new run until
    then. Forgetting the row, as its settle does, ends the claim it was sent under."""
    assert store.command_claims.holder(claim_key("mix")) is not None
    for flight in store.submits_in_flight.of_recipe("mix"):
        store.submits_in_flight.remove(flight.id)
    assert store.command_claims.holder(claim_key("mix")) is None


def sbatch_lost(argv):
    """sbatch's connection is lost, and so is the lookup by name that follows it."""
    if argv[0] == "sbatch":
        raise ChannelClosed(argv, "login1", connection_lost=True)
    if "squeue" in argv:
        raise ChannelClosed(argv, "login1", connection_lost=True)
    raise AssertionError(argv)


def test_a_submit_whose_connection_was_lost_says_in_korean_to_look_the_name_up(store) -> None:
    slurm = SlurmClient(FakeRunner(default=sbatch_lost), use_json=False)
    ko = reply(store, slurm, c.Submit("mix"), "ko")
    assert "login1 연결이 끊겼습니다. 실행되었을 수 있습니다" in ko, ko
    assert "제출되었는지 알 수 없습니다: 다시 제출하기 전에 squeue에서 그 이름을 찾아보세요. " \
        "이름으로 찾아보는 것도 실패했습니다(" in ko, ko
    assert "trainbot이 21분 뒤에 다시 찾아보고, 작업이 있으면 기록하고 실행 스레드에 " \
        "알립니다." in ko
    assert "may" not in ko and "squeue before" not in ko and "Looking it up" not in ko
    settled(store)
    en = reply(store, slurm, c.Submit("mix"), "en")
    assert "lost while `sbatch" in en and "was running; it may have run. The job 'mix" in en
    assert "may or may not have been submitted: look for that name in squeue before " \
        "submitting again. Looking it up by name failed too (" in en, en
    assert "trainbot looks for it again in 21 minutes and, if it is there, records it and " \
        "tells the run's thread." in en


@pytest.mark.parametrize("error, ko_words, en_words", [
    (lambda argv: ChannelClosed(argv, "login1", connection_lost=False).as_read(),
     "중간에 끊겼습니다 (종료 상태가 오기 전에 login1의 채널이 닫혔습니다). 읽기만 하는 명령이라 "
     "바뀐 것은 없고, 다시 요청해도 안전합니다",
     "was cut off (its channel on login1 closed before its exit status came): it only "
     "reads, so nothing changed and it is safe to ask again"),
    (lambda argv: ChannelClosed(argv, "login1", connection_lost=True).as_read(),
     "중간에 끊겼습니다 (login1 연결이 끊겼습니다)",
     "was cut off (the connection to login1 was lost): it only reads"),
], ids=["channel", "connection"])
def test_a_read_cut_off_says_in_korean_that_asking_again_is_safe(store, error, ko_words,
                                                                  en_words) -> None:
    def squeue(argv):
        raise error(argv)

    slurm = SlurmClient(FakeRunner(default=squeue), use_json=False)
    ko = reply(store, slurm, c.Watch(88017), "ko", "W0LEAD")
    assert ko.startswith("클러스터가 응답하지 않았습니다: `env SLURM_TIME_FORMAT=%s squeue "), ko
    assert ko_words in ko, ko
    en = reply(store, slurm, c.Watch(88017), "en", "W0LEAD")
    assert en.startswith("The cluster did not answer: `env SLURM_TIME_FORMAT=%s squeue "), en
    assert en_words in en, en


def test_a_command_past_its_timeout_is_said_in_korean(store) -> None:
    exc = CommandTimedOut(["/opt/site/submit", "--team", "a"], 30)
    assert str(exc) == "`/opt/site/submit --team a` did not finish within 30 s"
    ko = reply(store, FakeSlurm(submit_error=exc), c.Submit("mix"), "ko")
    assert "`/opt/site/submit --team a`이(가) 30초 안에 끝나지 않았습니다" in ko, ko


DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


def test_slurm_not_answering_is_said_in_korean_with_its_stderr_as_it_came(store) -> None:
    slurm = SlurmClient(FakeRunner(default=(1, "", DOWN)), use_json=False)
    ko = reply(store, slurm, c.Watch(88017), "ko", "W0LEAD")
    assert "에 응답하지 않았습니다 (종료 코드 1): " + DOWN + ". 클러스터의 slurmctld/slurmdbd를 " \
        "확인하세요. 작업에 대해서는 아무것도 판단하지 않았습니다." in ko, ko
    en = reply(store, slurm, c.Watch(88017), "en", "W0LEAD")
    assert en.startswith("The cluster did not answer: Slurm did not answer `env ") and en.endswith(
        f"` (exit 1): {DOWN}. Check slurmctld/slurmdbd on the cluster; nothing was concluded "
        "about the jobs."), en


def test_status_names_the_cluster_that_did_not_answer_in_korean(store) -> None:
    slurm = SlurmClient(FakeRunner(default=(1, "", DOWN)), use_json=False)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1)
    store.attempts.record(chain_id=chain.id, job_id="88017", now=2, state="RUNNING")
    ko = reply(store, slurm, c.Status("mix"), "ko")
    line = next(x for x in ko.splitlines() if "클러스터 dev" in x)
    assert "(Slurm이 `env " in line and "클러스터의 slurmctld/slurmdbd를 확인하세요" in line, ko
    en = reply(store, slurm, c.Status("mix"), "en")
    assert "cluster dev did not answer (Slurm did not answer `env " in en, en


def timed_out(argv):
    raise CommandTimedOut(argv, 20)


def test_a_slurm_command_past_its_timeout_is_said_in_korean(store) -> None:
    slurm = SlurmClient(FakeRunner(default=timed_out), use_json=False)
    ko = reply(store, slurm, c.Watch(88017), "ko", "W0LEAD")
    assert "20초 안에 응답하지 않았습니다: Slurm 컨트롤러가 과부하 상태이거나 멈췄습니다" in ko, ko
    ko = reply(store, slurm, c.Submit("mix"), "ko")
    assert ("20초 안에 응답하지 않았습니다: Slurm 컨트롤러가 과부하 상태이거나 멈췄습니다. "
            "적용되었는지 알 수 없습니다. 작업 ") in ko, ko
    assert "다시 제출하기 전에 squeue에서 그 이름을 찾아보세요" in ko, ko
    settled(store)
    en = reply(store, slurm, c.Submit("mix"), "en")
    assert "` did not answer within 20 s: the Slurm controller is overloaded or down; it may " \
        "or may not have taken effect. The job 'mix" in en, en


@pytest.mark.parametrize("error, ko_words", [
    (SFTPTimedOut("stat", "/scratch/run/log", 15, "login1"),
     "login1에서 /scratch/run/log의 SFTP stat이(가) 15초 안에 응답을 받지 못했습니다 "
     "(파일 시스템이 멈췄나요?). 이 요청은 포기했고, 다른 요청은 계속됩니다"),
    (SFTPTimedOut("read", "/a", 15, "login1", waiting=("stat", 42.4)),
     "그 경로의 앞선 stat이(가) 42초째 응답을 기다리고 있습니다"),
    (SFTPTimedOut("read", "/a", 15, "login1", stuck=[("stat", "/b"), ("read", "/c")]),
     "SFTP 채널 2개가 모두 응답하지 않는 경로를 기다리고 있습니다 (stat /b, read /c."),
    (SFTPTimedOut("read", "/a", 15, "login1", busy=4), "15초 안에 빈 SFTP 채널이 없었습니다 (4개"),
    (LeaseAbandoned("stat", "/a", "login1"), "조회가 기한을 넘겨 포기되어 그 채널을 닫았습니다"),
], ids=["timeout", "waiting", "stuck", "busy", "abandoned"])
def test_sftp_errors_are_said_in_korean(store, error, ko_words) -> None:
    ctx = make_context(store, lang="ko")
    ko = say(ctx, "mix", "unreachable", channel=CHANNEL, error=error.text)
    assert ko.startswith("클러스터가 응답하지 않았습니다: ") and ko_words in ko, ko
    assert "SFTP" in str(error) and not HANGUL.search(str(error))
    en = say(make_context(store), "mix", "unreachable", channel=CHANNEL, error=error.text)
    assert en == f"The cluster did not answer: {error}"


@pytest.mark.parametrize("lines, ko_words, en_words", [
    ("  ProxyCommand nc bastion 22\n",
     "호스트 gpu이(가) ProxyCommand ('nc bastion 22')를 쓰는데, trainbot은 이를 "
     "실행하지 않습니다. 그 파일에서 ProxyJump [user@]host[:port]로 바꾸거나(`ProxyCommand ssh "
     "-W %h:%p bastion`이 하는 일), 클러스터의 proxy_jump를 설정하세요",
     "host gpu uses ProxyCommand ('nc bastion 22'), which trainbot does not run; "
     "replace it with ProxyJump [user@]host[:port] in that file (what `ProxyCommand ssh -W "
     "%h:%p bastion` does), or set the cluster's proxy_jump"),
    ("  ProxyJump ops@bastion:99999\n",
     "호스트 gpu: ProxyJump 'ops@bastion:99999': 포트 99999은(는) 1-65535 범위를 벗어납니다. "
     "[user@]host[:port] 형식으로 쓰세요 (예: ops@bastion.example.org:22)",
     "host gpu: ProxyJump 'ops@bastion:99999': port 99999 is out of range 1-65535; write it "
     "as [user@]host[:port], e.g. ops@bastion.example.org:22"),
    ("  Port 0\n",
     "호스트 gpu: Port 0은(는) 1-65535 범위를 벗어납니다. {path}의 그 줄을 고치세요",
     "host gpu: Port 0 is out of range 1-65535; fix that line in {path}"),
], ids=["proxy_command", "proxy_jump_port", "port"])
def test_an_ssh_config_trainbot_cannot_use_is_said_in_korean(store, tmp_path, lines, ko_words,
                                                             en_words) -> None:
    path = tmp_path / "ssh_config"
    path.write_text("Host gpu\n  HostName login.example.org\n" + lines)
    runner = SSHRunner(SSHSettings(host="gpu", ssh_config=str(path)))
    with pytest.raises(ClusterError) as err:  # found before any connection is tried
        runner.run(["squeue"])
    assert str(err.value) == f"ssh_config {path}: {en_words.format(path=path)}"
    ko = submit_reply(store, err.value, "ko")
    assert f"ssh_config {path}: {ko_words.format(path=path)}" in ko, ko
    en = submit_reply(store, err.value, "en")
    assert f"ssh_config {path}: {en_words.format(path=path)}" in en, en


def test_a_proxy_jump_setting_trainbot_cannot_use_is_said_in_korean(store) -> None:
    runner = SSHRunner(SSHSettings(host="login", proxy_jump="a@b,c@d"))
    with pytest.raises(ClusterError) as err:
        runner.run(["squeue"])
    ko = submit_reply(store, err.value, "ko")
    assert "proxy_jump 'a@b,c@d': 홉이 여러 개입니다. 점프 호스트는 하나만 지원합니다 " \
        "([user@]host[:port] 형식으로 쓰세요 (예: ops@bastion.example.org:22))" in ko, ko
    assert str(err.value) == ("proxy_jump 'a@b,c@d': it has several hops; only one jump host is "
                              "supported (write it as [user@]host[:port], e.g. "
                              "ops@bastion.example.org:22)")


def test_a_connection_through_a_jump_host_names_it_in_korean(store, tmp_path) -> None:
    """The cluster reached through a jump host: the error's `where` says through which, in
    the reader's language (the tunnel itself needs a bastion: tests/integration/test_ssh.py)."""
    runner, port = refused_runner(tmp_path)
    with pytest.raises(ClusterUnavailable) as err:
        runner._connect_client("127.0.0.1", port, "u", runner.endpoint(), sock=None,
                               via="ops@bastion:22")
    english = str(err.value)
    assert english.startswith(f"cannot connect to u@127.0.0.1:{port} via ops@bastion:22: ")
    cause = english.split(": ", 1)[1]
    ko = submit_reply(store, err.value, "ko")
    assert f"u@127.0.0.1:{port} (ops@bastion:22 경유)에 연결할 수 없습니다: {cause}" in ko, ko
    assert " via " not in ko
    en = submit_reply(store, err.value, "en")
    assert en == f"The cluster did not answer: {english}"


def test_a_long_port_is_cut_short_saying_its_length_in_korean(store) -> None:
    runner = SSHRunner(SSHSettings(host="login", proxy_jump="ops@bastion:" + "9" * 5000))
    with pytest.raises(ClusterError) as err:
        runner.run(["squeue"])
    ko = submit_reply(store, err.value, "ko")
    assert "proxy_jump 'ops@bastion:'… (5012자): 포트 '999999999999'… (5000자)은(는) " \
        "1-65535 범위를 벗어납니다" in ko, ko
    assert "characters" not in ko
    en = submit_reply(store, err.value, "en")
    assert "proxy_jump 'ops@bastion:'… (5012 characters): port '999999999999'… " \
        "(5000 characters) is out of range 1-65535" in en, en
