"""A Slurm answer trainbot cannot read is said in the recipe's language: the command, the
job it was asked about, what was not understood (Slurm's words quoted as they came) and what
to do. Raised by the real Slurm client (bot.cluster.slurm) over a fake runner; seen in the
reply to a submit whose end was not seen, when looking its job up fails."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import FakeRunner, make_context
from support.in_flight import settled

from bot.cluster.errors import ChannelClosed, ClusterUnavailable
from bot.cluster.slurm import SlurmClient
from bot.core import train_grammar as c
from bot.core.slurm.errors import SlurmParseError
from bot.core.text import render_text
from bot.services.train import execute
from bot.slack.render import translator

NOW = 1_732_871_000.0
EN_FIX = ("Run it on the login node and look at its output: text that is not Slurm's (a site "
          "wrapper of the command, a shell startup file that prints) has to go; if it is all "
          "Slurm's, its format is new to trainbot: report it with that output.")
KO_FIX = ("로그인 노드에서 직접 실행해 출력을 확인하세요: Slurm이 낸 것이 아닌 글"
          "(명령을 감싼 사이트 래퍼, 무언가를 출력하는 셸 시작 파일)은 없애야 합니다. "
          "모두 Slurm의 출력이라면 trainbot이 모르는 형식이니 그 출력과 함께 알려 주세요.")


def lost_submit(*, by_name: str = "90500\n", squeue: str = "", sinfo: str = "slurm 24.11.5"):
    """A cluster where sbatch's connection is lost; the lookup by name answers `by_name`,
    squeue asked about the jobs it found `squeue`, `sinfo --version` `sinfo`."""
    def answer(argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == "sbatch":
            raise ChannelClosed(argv, "login1", connection_lost=True)
        if "sinfo" in argv:
            return 0, sinfo, ""
        if "squeue" in argv:
            return 0, by_name if "--name=mix" in argv else squeue, ""
        return 0, "", ""  # sacct: nothing ended
    return answer


def reply(store, slurm: Any, lang: str) -> str:
    ctx = make_context(store, {"dev": slurm}, lang=lang)
    return execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW).text


@pytest.mark.parametrize("cluster, check_json, english, korean", [
    pytest.param(
        {"by_name": "90500_1\n"}, False,
        ["Looking it up by name failed too (`squeue -h --name=mix --user=slurmci -o %A` "
         "printed what trainbot cannot read: expected one raw job id per line, got '90500_1'. "
         f"{EN_FIX}): trainbot looks for it again in 21 minutes"],
        ["이름으로 찾아보는 것도 실패했습니다(`squeue -h --name=mix --user=slurmci -o %A`이(가) "
         "trainbot이 읽을 수 없는 내용을 출력했습니다: 한 줄에 원시 작업 ID 하나를 기대했지만 "
         f"'90500_1'이(가) 왔습니다. {KO_FIX})"],
        id="lookup-by-name-lists-no-raw-id"),
    pytest.param(  # found 90500 by name; squeue asked for its record prints a wrapper's banner
        {"squeue": "squeue wrapper v2\n"}, False,
        ["Looking it up by name failed too (`env SLURM_TIME_FORMAT=%s squeue ",
         "`, asked about job(s) 90500, printed what trainbot cannot read: expected ",
         f"fields, got 1: 'squeue wrapper v2'. {EN_FIX}): "],
        ["이름으로 찾아보는 것도 실패했습니다(작업 90500에 대해 물은 "
         "`env SLURM_TIME_FORMAT=%s squeue ",
         "`이(가) trainbot이 읽을 수 없는 내용을 출력했습니다: '|'(으)로 나뉜 필드 ",
         f"개를 기대했지만 1개입니다: 'squeue wrapper v2'. {KO_FIX})"],
        id="found-jobs-squeue-record"),
    pytest.param(  # a client that reads the release before squeue gets a login banner
        {"sinfo": "Welcome to login1\n"}, True,
        ["Looking it up by name failed too (`sinfo --version` printed what trainbot cannot "
         "read: 'Welcome to login1' does not contain a Slurm version (e.g. 22.05.8). "
         f"{EN_FIX}): "],
        ["(`sinfo --version`이(가) trainbot이 읽을 수 없는 내용을 출력했습니다: "
         f"'Welcome to login1'에 Slurm 버전(예: 22.05.8)이 없습니다. {KO_FIX})"],
        id="sinfo-version-without-a-version"),
])
def test_a_lost_submits_lookup_that_cannot_read_slurm_names_the_command_job_and_fix(
        store, cluster: dict[str, str], check_json: bool, english: list[str],
        korean: list[str]) -> None:
    slurm = SlurmClient(FakeRunner(default=lost_submit(**cluster)), use_json=False,
                        check_json=check_json)
    en = reply(store, slurm, "en")
    assert all(words in en for words in english), en
    settled(store)  # the first submit's job may be queued: its claim and row refuse a second
    ko = reply(store, slurm, "ko")
    assert all(words in ko for words in korean), ko
    assert "printed what" not in ko and "Run it" not in ko and "expected" not in ko


@pytest.mark.parametrize("lang, said", [
    ("en", "`sstat --noheader --parsable2 --allsteps --jobs=88154 --format=JobID,MaxRSS,AveRSS,"
           "MaxRSSNode,MaxRSSTask,NTasks`, asked about job(s) 88154, printed what trainbot "
           "cannot read: sstat row has an unreadable JobID 'batch': 'batch|1K|1K|n1|0|1'. "
           + EN_FIX),
    ("ko", "작업 88154에 대해 물은 `sstat --noheader --parsable2 --allsteps --jobs=88154 "
           "--format=JobID,MaxRSS,AveRSS,MaxRSSNode,MaxRSSTask,NTasks`이(가) trainbot이 읽을 수 "
           "없는 내용을 출력했습니다: sstat 행의 JobID 'batch'을(를) 읽을 수 없습니다: "
           "'batch|1K|1K|n1|0|1'. " + KO_FIX),
])
def test_an_sstat_row_that_cannot_be_read_names_sstat_and_the_job(lang: str, said: str) -> None:
    slurm = SlurmClient(FakeRunner({"sstat": (0, "batch|1K|1K|n1|0|1\n", "")}))
    with pytest.raises(SlurmParseError) as err:
        slurm.memory([88154])
    assert render_text(err.value.args[0], translator(lang).gettext) == said


def test_squeue_json_reporting_errors_only_names_the_command_not_a_parser() -> None:
    """slurmctld down: `squeue --json` exits 0 with its errors and no jobs; the sentence
    names the command, not the Python parser that read it (was `parse_squeue_json`)."""
    answer = ('{"jobs": [], "errors": [{"error": "Unspecified error", '
              '"source": "slurm_load_jobs"}]}')
    slurm = SlurmClient(FakeRunner(default=(0, answer, "")), use_json=True)
    with pytest.raises(ClusterUnavailable) as err:
        slurm.jobs([88154])
    errors = "[{'error': 'Unspecified error', 'source': 'slurm_load_jobs'}]"
    assert str(err.value) == (
        f"Slurm did not answer `squeue --all --states=all --json`: squeue --json reported "
        f"errors: {errors}. Check slurmctld/slurmdbd on the cluster; nothing was concluded "
        "about the jobs.")
    assert render_text(err.value.text, translator("ko").gettext) == (
        f"Slurm이 `squeue --all --states=all --json`에 응답하지 않았습니다: squeue --json이 "
        f"오류를 보고했습니다: {errors}. 클러스터의 slurmctld/slurmdbd를 확인하세요. 작업에 "
        "대해서는 아무것도 판단하지 않았습니다.")
