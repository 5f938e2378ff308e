"""A submit that exited 0 but printed no job id trainbot can read (a site's sbatch wrapper, a
site submit_command printing its own words) most likely queued its job: it is an end not seen
(OutcomeUnknown), looked up by the job's name, never a failure that invites a second submit.
Its sentence names the command, what it printed and the fix, in English and Korean."""

from __future__ import annotations

import pytest
from fakes import T0, FakeRunner, FakeSlurm, make_context

from bot.cluster.errors import OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.core import train_grammar as c
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.text import render_text
from bot.services.send_job import send_job
from bot.services.train import execute
from bot.slack.render import translator

WRAPPER = ["/opt/site/submit", "--team", "a"]
PRINTED = "queued, see the portal\n"


def both(err: OutcomeUnknown) -> tuple[str, str]:
    return str(err), render_text(err.text, translator("ko").gettext)


def test_sbatch_that_prints_no_job_id_is_an_end_not_seen_naming_the_command() -> None:
    runner = FakeRunner({"sbatch": (0, "Submitted batch job 90500 on cluster dev\n", "")})
    with pytest.raises(OutcomeUnknown) as err:
        SlurmClient(runner).submit(SubmitSpec(job_name="mix", script_path="/home/u/t.sbatch"))
    en, ko = both(err.value)
    assert en == ("`sbatch --parsable --job-name=mix /home/u/t.sbatch` exited 0 but trainbot "
                  "cannot read a job id in what it printed (sbatch --parsable printed no job "
                  "id: 'Submitted batch job 90500 on cluster dev'). The job 'mix' may or may "
                  "not have been submitted: look for that name in squeue before submitting "
                  "again.")
    assert ko.startswith("`sbatch --parsable --job-name=mix /home/u/t.sbatch`이(가) 종료 코드 "
                         "0으로 끝났지만 출력에서 trainbot이 작업 ID를 읽을 수 없습니다 (sbatch "
                         "--parsable이 작업 ID를 출력하지 않았습니다: 'Submitted batch job 90500 "
                         "on cluster dev'). "), ko
    assert "may" not in ko


def test_a_site_command_that_prints_no_job_id_is_an_end_not_seen_saying_the_fix(store) -> None:
    ctx = make_context(store, sbatch_script=None, submit_command=WRAPPER)
    slurm = FakeSlurm(runner=FakeRunner(default=(0, PRINTED, "")))
    with pytest.raises(OutcomeUnknown) as err:
        send_job(slurm, ctx.config.recipe("mix"), "mix", {})
    en, ko = both(err.value)
    assert en == ("the site's submit command '/opt/site/submit' exited 0 but printed no job id "
                  "(expected 'Submitted batch job N' or a bare number): 'queued, see the "
                  "portal'; make it print the job id. The job 'mix' may or may not have been "
                  "submitted: look for that name in squeue before submitting again.")
    assert ko.startswith("사이트 제출 명령 '/opt/site/submit'이(가) 종료 코드 0으로 끝났지만 작업 "
                         "ID를 출력하지 않았습니다('Submitted batch job N' 또는 숫자만 있어야 함): "
                         "'queued, see the portal'. 명령이 작업 ID를 출력하게 하세요. "), ko


def test_a_person_s_submit_whose_wrapper_printed_no_id_records_the_job_found_by_name(
        store) -> None:
    """/train submit: the wrapper queued job 90500 and printed no id; the lookup by name finds
    it and the run starts with it, one submit, none again."""
    slurm = FakeSlurm()

    def cluster(argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == WRAPPER[0]:
            slurm.add(90500, name="mix", submit_time=T0)
            return 0, PRINTED, ""
        if argv[0] == "squeue" and "--name=mix" in argv:
            return 0, "90500\n", ""
        return 0, "", ""  # sacct: nothing ended

    slurm.runner = FakeRunner(default=cluster)
    ctx = make_context(store, slurm, sbatch_script=None, submit_command=WRAPPER)
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=T0).text
    assert reply.startswith("mix: submitted job 90500 (attempt 1)"), reply
    assert [a[0] for a in slurm.runner.argvs()].count(WRAPPER[0]) == 1
    assert [w.job_id for w in store.watched_jobs.list("dev")] == ["90500"]


def test_a_site_command_that_floods_its_output_may_have_submitted(store, tmp_path) -> None:
    """A site submit_command whose output floods (a wrapper gone wild) is cut at the runner's
    output bound before its end: it may have queued the job, so it is an end not seen saying
    to look the name up, never a failure that invites a second submit."""
    from support.sftp_peer import serve_peer

    ctx = make_context(store, sbatch_script=None, submit_command=WRAPPER)
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        peer.exec_floods = True
        runner = peer.runner(max_output_bytes=1 << 20)
        try:
            with pytest.raises(OutcomeUnknown) as err:
                send_job(FakeSlurm(runner=runner), ctx.config.recipe("mix"), "mix", {})  # type: ignore[arg-type]
        finally:
            runner.close()
    assert str(err.value) == (
        "`/opt/site/submit --team a` sent more than 1 MiB of output, so trainbot stopped it "
        "before its end; it may or may not have taken effect. The job 'mix' may or may not "
        "have been submitted: look for that name in squeue before submitting again.")
