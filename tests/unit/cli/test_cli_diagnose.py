"""`trainbot diagnose`: JSON shape, human summary, exit codes, bad flags."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from support.sacct_rows import CANCELLED_PENDING_AND_RUNNING

from bot.cli import UsageError, main
from bot.cli.diagnose import format_log_time
from bot.cli.log_input import elapsed_flag, exit_code_flag, now_flag, read_log, state_flag
from bot.core.catalogue import Catalogue
from bot.core.models import Accounting

STORIES = Path(__file__).resolve().parents[2] / "fixtures" / "stories"
METRIC_KEYS = {"last_iter", "target_iter", "sec_per_iter", "last_loss", "rss_gib_per_100_iter",
               "projected_oom_iter", "stall_seconds"}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["diagnose", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def story_args(job: str) -> list[str]:
    sacct = json.loads((STORIES / f"{job}.sacct.json").read_text())
    return [str(STORIES / f"{job}.log"), "--state", sacct["state"], "--exit-code",
            sacct["exit_code"], "--elapsed", str(sacct["elapsed_s"]), "--mem-limit",
            sacct["mem_limit"], "--target-iter", str(sacct["target_iter"])]


def test_json_shape_for_the_nccl_story(capsys):
    code, out, _ = cli(capsys, *story_args("88154"), "--json")
    assert code == 1
    result = json.loads(out)
    assert {"class", "retryable", "action", "evidence", "hint", "secondary", "metrics"} <= set(
        result)
    assert result["class"] == "nccl_timeout"
    assert result["retryable"] is True
    assert result["action"] == "resubmit"
    assert result["secondary"] == ["hang"]
    assert set(result["metrics"]) == METRIC_KEYS
    assert result["metrics"]["last_iter"] == 3470
    assert result["metrics"]["stall_seconds"] == pytest.approx(1800, abs=1)
    assert all(set(e) == {"line", "text"} and e["line"] >= 1 for e in result["evidence"])
    assert result["upstream"]["class_id"] == "hang"


PTXAS = ("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of "
         "ptxas. The following locations were considered: /usr/local/cuda/bin/ptxas")


def test_json_title_is_the_headline_the_thread_shows(capsys, tmp_path):
    from bot.core.incident import build_incident
    from bot.slack.render import render_blocks

    code, out, _ = cli(capsys, *story_args("88154"), "--json")
    assert json.loads(out)["title"] == "NCCL collective timed out (watchdog)"
    log = tmp_path / "xla.log"
    log.write_text("step 10 loss 1.2\n" + PTXAS + "\n", encoding="utf-8")
    code, out, _ = cli(capsys, str(log), "--json")
    result = json.loads(out)
    # the narrower cause's title, not compiler_missing's "No C/C++ compiler ..."
    assert (result["class"], result["title"]) == (
        "compiler_missing", "The CUDA toolkit's ptxas is missing on the worker node")
    assert list(result)[:2] == ["class", "title"]
    d = read_log(str(log), Accounting(), catalogue=Catalogue.load()).analysis.diagnose()
    blocks, _ = render_blocks("incident", "en", build_incident(
        d, recipe="mix", job_id="1", last_checkpoint_iter=None, now=0.0))
    assert blocks[0]["text"]["text"] == f"🔴 {result['title']} · job 1"
    # a site catalogue's own title for the class is the thread's headline, so the JSON's too
    site = tmp_path / "site.yaml"
    site.write_text('classes:\n  compiler_missing:\n    title: "Build tool missing: ask '
                    '#hpc-help"\n', encoding="utf-8")
    code, out, _ = cli(capsys, str(log), "--catalogue", str(site), "--json")
    assert json.loads(out)["title"] == "Build tool missing: ask #hpc-help"
    # a running job with nothing to report has no headline
    code, out, _ = cli(capsys, *story_args("108915"), "--json")
    assert (json.loads(out)["class"], json.loads(out)["title"]) == ("none", None)


def test_lang_words_the_title_and_explanation_in_korean(capsys):
    """--lang ko: the title and the explanation as a Korean thread words them (templates/locale),
    in the JSON and in the summary; the facts stay as they are."""
    code, out, _ = cli(capsys, *story_args("88154"), "--json", "--lang", "ko")
    result = json.loads(out)
    assert (code, result["class"]) == (1, "nccl_timeout")
    assert result["title"] == "NCCL 집합 통신 시간 초과 (watchdog)"
    assert "NCCL 집합 통신 시간 초과 (watchdog)" in out  # readable, not \u escapes
    assert any("\uac00" <= c <= "\ud7a3" for c in result["hint"])  # Hangul
    code, out, _ = cli(capsys, *story_args("88154"), "--lang", "ko")
    assert "nccl_timeout - NCCL 집합 통신 시간 초과 (watchdog)" in out
    english = cli(capsys, *story_args("88154"))[1]
    hint = next(line for line in out.splitlines() if line.startswith("hint: "))
    assert hint not in english and "NCCL collective timed out (watchdog)" in english


def test_lang_takes_only_a_message_language(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(STORIES / "88154.log"), "--lang", "fr"])
    assert exc.value.code == 2 and "--lang" in capsys.readouterr().err


def test_json_nulls_where_unknown(capsys):
    code, out, _ = cli(capsys, *story_args("108903"), "--json")
    metrics = json.loads(out)["metrics"]
    assert code == 1
    assert metrics["last_iter"] is None and metrics["projected_oom_iter"] is None
    assert metrics["target_iter"] == 5000


def test_healthy_running_job_exits_zero(capsys):
    code, out, _ = cli(capsys, *story_args("108915"), "--json")
    assert code == 0
    assert json.loads(out)["class"] == "none"


def test_human_summary_names_class_upstream_and_evidence_lines(capsys):
    code, out, _ = cli(capsys, *story_args("88154"))
    assert code == 1
    assert "nccl_timeout" in out
    assert "2025-05-14 19:08:57" in out  # when the hang began
    assert "2476:" in out  # the last progress line
    assert "hint:" in out


def test_now_flag_judges_a_running_log_later(capsys):
    args = [str(STORIES / "108915.log"), "--state", "RUNNING", "--json"]
    code, out, _ = cli(capsys, *args, "--now", "2025-06-03T01:30:00")
    assert code == 1
    assert json.loads(out)["class"] == "hang"
    code, out, _ = cli(capsys, *args)  # default: the log's own last timestamp
    assert code == 0 and json.loads(out)["class"] == "none"


@pytest.mark.parametrize("now", [
    "2025-06-02T20:30:00-05:00", "2025-06-02T20:30:00-0500", "2025-06-02 20:30:00 -0500",
    "2025-06-03T10:30:00+09:00", "2025-06-03T01:30:00Z", "2025-06-03T01:30:00",
    "1748914200",
])
def test_now_flag_is_the_instant_its_offset_names(now):
    assert now_flag(now) == 1748914200  # 2025-06-03 01:30:00 UTC


def test_now_flag_with_an_offset_judges_a_running_log_at_that_instant(capsys):
    args = [str(STORIES / "108915.log"), "--state", "RUNNING", "--json"]
    code, out, _ = cli(capsys, *args, "--now", "2025-06-02T20:30:00-05:00")
    assert code == 1
    assert json.loads(out)["class"] == "hang"


def test_stdin_dash(capsys, monkeypatch):
    data = (STORIES / "108903.log").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = cli(capsys, "-", "--state", "FAILED", "--exit-code", "1:0", "--json")
    assert code == 1 and json.loads(out)["class"] == "compiler_missing"


def test_completed_log_exits_zero(capsys, tmp_path):
    log = tmp_path / "done.log"
    log.write_text("".join(f"iter={i}/100 loss=0.5\n" for i in range(1, 101)))
    code, out, _ = cli(capsys, str(log), "--state", "COMPLETED", "--exit-code", "0:0",
                       "--elapsed", "01:00:00", "--json")
    assert code == 0 and json.loads(out)["class"] == "completed"


def test_a_logs_last_line_without_newline_is_read(capsys, tmp_path):
    """The process died writing its error: the file's last line has no newline; it is read
    as the others and decides the class."""
    log = tmp_path / "killed.log"
    log.write_bytes(b"".join(b"iter=%d/100 loss=0.5\n" % i for i in range(1, 21))
                    + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    code, out, _ = cli(capsys, str(log), "--state", "FAILED", "--exit-code", "1:0", "--json")
    result = json.loads(out)
    assert code == 1 and result["class"] == "cuda_oom"
    assert {"line": 21, "text": "torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 GiB."} in result["evidence"]


PROMPT_RUN = ("user@host:~/proj$ python train.py\nLoading config base.yaml\n"
              + "".join(f"iter={i}/1000 loss=0.5\n" for i in range(1, 21)) + "user@host:~/proj$ \n")
START_UP_RUN = ("user@host:~/proj$ python train.py\nLoading config base.yaml\n"
                "Building model resnet50\nuser@host:~/proj$ \n")


def _hint(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("hint: "))


@pytest.mark.parametrize(("text", "said"), [
    (PROMPT_RUN, "hint: The log shows the program returned without finishing training: the "
                 "shell's prompt came back at line 23 after iteration 20, with no error and no "
                 "end of training. Read the launcher"),
    (START_UP_RUN, "hint: The log shows the program returned without training: the shell's "
                   "prompt came back at line 4 after its start-up output, before any training "
                   "progress and with no error. Read the launcher"),
])
def test_a_silent_exit_read_from_the_log_alone_says_the_prompt_decided_it(capsys, tmp_path,
                                                                         text, said):
    """No sacct facts: Slurm reported nothing, so the explanation names what the log shows."""
    log = tmp_path / "pasted.log"
    log.write_text(text)
    code, out, _ = cli(capsys, str(log))
    assert code == 1 and out.startswith(f"{log}: silent_exit - ")
    assert "\nDecided only by how the log ends (no decisive line): look closer.\n" in out
    assert _hint(out).startswith(said) and "COMPLETED" not in _hint(out)


def test_a_missing_ptxas_is_told_the_cuda_toolkits_fix_not_a_c_compilers(capsys, tmp_path):
    log = tmp_path / "jax.log"
    log.write_text("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable "
                   "version of ptxas. The following locations were considered: "
                   "/usr/local/cuda/bin/ptxas\n")
    code, out, _ = cli(capsys, str(log))
    assert code == 1 and out.startswith(f"{log}: compiler_missing - ")
    assert _hint(out).startswith("hint: XLA compiles its GPU kernels with the CUDA toolkit's "
                                 "ptxas, which it did not find on the worker")
    assert "XLA_FLAGS=--xla_gpu_cuda_data_dir=<CUDA root>" in _hint(out)
    assert "CC=" not in _hint(out) and "gcc" not in _hint(out)


@pytest.mark.parametrize(("line", "title"), [
    ("RuntimeError: unable to open shared memory object </torch_12345_678_9> in read-write "
     "mode: Too many open files (24)",
     "dataloader_worker_killed - Open-file limit reached (too many open files, errno 24)"),
    ("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of "
     "ptxas. The following locations were considered: /usr/local/cuda/bin/ptxas",
     "compiler_missing - The CUDA toolkit's ptxas is missing on the worker node"),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install "
     "root.", "compiler_missing - No CUDA compiler (nvcc) on the worker node"),
    ("RuntimeError: Ninja is required to load C++ extensions",
     "unknown_failure - No ninja build tool for a C++ extension on the worker node"),
    # a cause the catalogue's title fits keeps it
    ("/bin/sh: 1: gcc: not found", "compiler_missing - No C/C++ compiler on the worker node"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.",
     "dataloader_worker_killed - A DataLoader worker process died"),
])
def test_the_summarys_title_follows_the_cause_the_log_names(capsys, tmp_path, line, title):
    log = tmp_path / "job.log"
    log.write_text("iter 10/100 loss 1.0\n" + line + "\n")
    code, out, _ = cli(capsys, str(log))
    assert code == 1 and out.splitlines()[0] == f"{log}: {title}"


def test_a_silent_exit_slurm_reported_keeps_slurms_words(capsys, tmp_path):
    log = tmp_path / "job.log"
    log.write_text(PROMPT_RUN)
    code, out, _ = cli(capsys, str(log), "--state", "COMPLETED", "--exit-code", "0:0",
                       "--elapsed", "20")
    assert code == 1 and "silent_exit" in out
    assert _hint(out).startswith("hint: COMPLETED 0:0, but it ran for only 20 s; it stopped at "
                                 "iteration 20 of 1000.")
    assert "shell's prompt" not in _hint(out)


def test_unreadable_file_is_exit_2_with_a_clear_message(capsys, tmp_path):
    code, out, err = cli(capsys, str(tmp_path / "missing.log"))
    assert code == 2 and out == ""
    assert "cannot read log" in err and "missing.log" in err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--exit-code", "1", "CODE:SIGNAL"),
        ("--exit-code", "x:y", "CODE:SIGNAL"),
        ("--state", "EXPLODED", "not a sacct state"),
        ("--mem-limit", "lots", "--mem-limit"),
        ("--mem-limit", "9" * 400 + "G", "--mem-limit: '999999999999'… (401 characters) is too "
         "large for a memory size; at most 1024P"),
        ("--elapsed", "ten", "--elapsed"),
        ("--now", "yesterday", "--now"),
        ("--now", "yesterday", "must be an ISO time, in UTC unless it gives its offset "
         "(2025-05-14T19:14:00, 2025-05-14T14:14:00-05:00), or epoch seconds"),
        ("--now", "2025-06-03T01:30:00+15:00", "--now '2025-06-03T01:30:00+15:00' must be"),
        ("--now", "2025-06-03T01:30:00+05:17", "--now '2025-06-03T01:30:00+05:17' must be"),
        ("--now", "2025-02-30T01:30:00", "--now '2025-02-30T01:30:00' must be"),
        ("--now", "2025-06-03T01:30:00 -1", "--now '2025-06-03T01:30:00 -1' must be"),
        ("--now", "nan", "--now 'nan' must be"),
    ],
)
def test_bad_flag_values_are_exit_2(capsys, flag, value, message):
    code, _, err = cli(capsys, str(STORIES / "108903.log"), flag, value)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_target_iter_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(STORIES / "108903.log"), "--target-iter", "0"])
    assert exc.value.code == 2
    assert "positive" in capsys.readouterr().err


def test_state_as_sacct_prints_it(capsys):
    code, out, _ = cli(capsys, str(STORIES / "108903.log"), "--state", "CANCELLED by 0",
                       "--json")
    assert json.loads(out)["class"] == "compiler_missing"


def test_elapsed_and_time_formats():
    assert elapsed_flag("10") == 10
    assert elapsed_flag("1-02:03:04") == 93784
    assert elapsed_flag("03:04") == 184
    assert format_log_time(3600 * 19 + 8 * 60 + 57) == "19:08:57"
    assert format_log_time(None) == "?"


def test_recipe_metric_regex(capsys, tmp_path):
    log = tmp_path / "custom.log"
    log.write_text("".join(f"E1 B{i} L=0.5 M=40GB\n" for i in range(1, 51)))
    regex = r"B(?P<iteration>\d+) L=(?P<loss>[\d.]+) M=(?P<rss>\d+GB)"
    code, out, _ = cli(capsys, str(log), "--metric-regex", regex, "--json")
    assert json.loads(out)["metrics"]["last_iter"] == 50
    code, _, err = cli(capsys, str(log), "--metric-regex", "(?P<bogus>x)")
    assert code == 2 and "unknown group" in err
    code, _, err = cli(capsys, str(log), "--metric-regex", "(unclosed")
    assert code == 2 and "--metric-regex" in err


_EXIT_FORM = "must be CODE:SIGNAL as sacct prints it, e.g. 1:0"
_ELAPSED_FORM = "must be seconds (e.g. 10) or [D-]HH:MM:SS"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--exit-code", "1", f"--exit-code '1' {_EXIT_FORM}"),
        ("--exit-code", "", f"--exit-code '' {_EXIT_FORM}"),
        ("--exit-code", "1:x", f"--exit-code '1:x' {_EXIT_FORM}"),
        ("--elapsed", "ten", f"--elapsed 'ten' {_ELAPSED_FORM}"),
        ("--elapsed", "-5", f"--elapsed '-5' {_ELAPSED_FORM}"),
        ("--elapsed", "UNLIMITED", f"--elapsed 'UNLIMITED' {_ELAPSED_FORM}"),
        ("--elapsed", "inf", f"--elapsed 'inf' {_ELAPSED_FORM}"),
        ("--elapsed", "1:2:3:4", f"--elapsed '1:2:3:4' {_ELAPSED_FORM}"),
        ("--state", "EXPLODED", "--state 'EXPLODED' is not a sacct state; use one of BOOT_FAIL, "
                                "CANCELLED, COMPLETED,"),
        ("--state", "", "--state '' is not a sacct state; use one of"),
    ],
)
def test_bad_sacct_fact_names_the_flag_and_the_form_it_takes(capsys, flag, value, message):
    code, out, err = cli(capsys, str(STORIES / "108903.log"), flag, value)
    assert (code, out) == (2, "")
    assert message in err


def test_sacct_facts_are_read_as_sacct_prints_them():
    assert state_flag("CANCELLED by 0") == "CANCELLED"
    assert state_flag("OUT_OF_ME+") == "OUT_OF_MEMORY"  # a cut column, as the sacct parser reads
    assert state_flag(None) is None
    assert exit_code_flag(" 0:125 ") == (0, 125)
    assert exit_code_flag(None) == (None, None)
    assert elapsed_flag("2-03") == 2 * 86400 + 3 * 3600  # sacct's D-HH
    assert elapsed_flag("00:01.5") == 1.5
    assert elapsed_flag(None) is None


def test_read_log_takes_plain_values(tmp_path):
    log = tmp_path / "done.log"
    log.write_text("".join(f"iter={i}/100 loss=0.5\n" for i in range(1, 101)))
    inp = read_log(str(log), Accounting(state="COMPLETED", exit_code=0, signal=0),
                   catalogue=Catalogue.load(), target_iter=100)
    diagnosis = inp.analysis.diagnose(inp.accounting, now=inp.now, target_iter=inp.target_iter)
    assert diagnosis.class_id == "completed" and inp.target_iter == 100
    with pytest.raises(UsageError, match="cannot read log"):
        read_log(str(tmp_path / "missing.log"), Accounting(), catalogue=Catalogue.load())


def test_a_job_lightning_requeued_is_not_resubmitted_from_its_log_alone(capsys, tmp_path):
    """Lightning's auto-requeue (lightning/pytorch/trainer/connectors/signal_connector.py,
    _slurm_sigusr_handler_fn: `Handling auto-requeue signal: 10`, `requeing job 4242...`, then
    `Requeued SLURM job: 4242` once `scontrol requeue` returned 0): Slurm starts the job again by
    itself, so diagnose proposes no resubmit that would run it twice."""
    log = tmp_path / "lightning.log"
    log.write_text("Epoch 3:  45%|████▌     | 670/1490 [14:58<18:20,  1.34s/it, loss=0.541]\n"
                   "Handling auto-requeue signal: 10\nrequeing job 4242...\n"
                   "Requeued SLURM job: 4242\nBypassing SIGTERM: 15\n")
    code, out, _ = cli(capsys, str(log), "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == ("none", "none", False)
    assert result["secondary"] == ["time_limit"]
    assert "Lightning requeued the job itself (line 4)" in result["hint"]
    code, out, _ = cli(capsys, str(log))
    assert out.startswith(f"{log}: none - ") and "nothing needs resubmitting" in out


def test_a_job_submitit_requeued_is_not_resubmitted_from_its_log_alone(capsys, tmp_path):
    """submitit's handler on a preemption (submitit/core/job_environment.py,
    checkpoint_and_try_requeue; submitit/slurm/slurm.py, SlurmJobEnvironment._requeue once
    `scontrol requeue` returned 0): the job starts again by itself, so diagnose keeps the
    preemption as the cause and proposes no resubmit that would run it twice."""
    log = tmp_path / "submitit.log"
    log.write_text(
        "submitit INFO (2022-07-12 04:17:53,762) - Starting with JobEnvironment(job_id=6060)\n"
        "epoch 3 step 1200 loss 0.53\n"
        "submitit WARNING (2022-07-12 04:18:45,706) - Bypassing signal SIGTERM\n"
        "submitit INFO (2022-07-12 04:18:45,881) - Job has not timed out. Ran 1 minutes out of"
        " requested 20 minutes.\n"
        "submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGUSR2 on node07: this job"
        " is preempted.\n"
        "submitit INFO (2022-07-12 04:18:45,912) - Requeued job 6060 (3 remaining timeouts)\n"
        "submitit INFO (2022-07-12 04:18:45,913) - Exiting gracefully after preemption/timeout.\n")
    code, out, _ = cli(capsys, str(log), "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == ("preempted", "none",
                                                                      False)
    assert "submitit requeued the job itself (line 6, 3 requeues left" in result["hint"]
    code, out, _ = cli(capsys, str(log))
    assert out.startswith(f"{log}: preempted - ") and "nothing needs resubmitting" in out
    # submitit gave up (no requeue left): a time-out to resubmit, as before
    log.write_text(
        "submitit INFO (2022-07-12 04:17:53,762) - Starting with JobEnvironment(job_id=6060)\n"
        "epoch 3 step 1200 loss 0.53\n"
        "submitit INFO (2022-07-12 04:18:45,881) - Job has timed out. Ran 598 minutes out of"
        " requested 600 minutes.\n"
        "submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGUSR2 on node07: this job"
        " is timed-out.\n"
        "submitit INFO (2022-07-12 04:18:45,912) - Job not requeued because: timed-out too many"
        " times.\n")
    code, out, _ = cli(capsys, str(log), "--json")
    result = json.loads(out)
    assert (result["class"], result["action"]) == ("time_limit", "resubmit")


# `sacct -D -P` of job 6060 running again after submitit's requeue (trainbot's fields, as in
# tests/support/sacct_rows.py): Slurm resets Submit and Start when it requeues a job.
_RUNNING_AGAIN = """\
JobIDRaw|JobID|State|ExitCode|Reason|User|Account|Partition|QOS|ElapsedRaw|NodeList|NNodes|\
MaxRSS|ReqTRES|AllocTRES|AllocCPUS|Submit|Start|End|TimelimitRaw|WorkDir|JobName
6060|6060|RUNNING|0:0|None|root|root|debug|normal|35|vm|1||billing=1,cpu=1,mem=256M,node=1|\
billing=1,cpu=1,mem=256M,node=1|1|2022-07-12T04:18:50|2022-07-12T04:19:10|Unknown|600|/tmp|wrap
"""


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "submitit requeued the job itself (line 5, 2 requeues left for time-outs)"),
    ("ko", "submitit이 작업을 스스로 다시 대기열에 넣었습니다(5번째 줄"),
])
def test_a_job_submitit_requeued_that_sacct_shows_running_again_is_not_resubmitted(
        capsys, tmp_path, lang, said):
    """submitit's time-out verdict, then its own requeue (submitit/slurm/slurm.py,
    SlurmJobEnvironment._requeue, once `scontrol requeue` returned 0), with sacct showing the
    job RUNNING and nothing of its next run in the log yet: Slurm already started it again, so
    diagnose proposes nothing (the time-out a secondary class), where it proposed a resubmit
    that would run a second copy of the job."""
    log = tmp_path / "6060.log"
    log.write_text(
        "submitit INFO (2022-07-12 04:17:53,762) - Starting with JobEnvironment(job_id=6060)\n"
        "epoch 3 step 1200 loss 0.53\n"
        "submitit INFO (2022-07-12 04:18:45,881) - Job has timed out. Ran 598 minutes out of"
        " requested 600 minutes.\n"
        "submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGUSR2 on node07: this job"
        " is timed-out.\n"
        "submitit INFO (2022-07-12 04:18:45,912) - Requeued job 6060 (2 remaining timeouts)\n"
        "submitit INFO (2022-07-12 04:18:45,913) - Exiting gracefully after preemption/timeout.\n")
    sacct = tmp_path / "6060.sacct"
    sacct.write_text(_RUNNING_AGAIN)
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang, "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == ("none", "none", False)
    assert result["secondary"] == ["time_limit"]
    assert (result["detail"]["kind"], result["detail"]["state"], result["detail"]["framework"],
            result["detail"]["remaining"]) == ("requeued", "RUNNING", "submitit", 2)
    assert said in result["hint"]
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang)
    assert out.startswith(f"{log}: none - ") and said in out
    assert "\naction: none" in out and "action: resubmit" not in out


# `sacct -D -P` of job 6060 still running when submitit's verdict came (trainbot's fields).
_STILL_RUNNING = _RUNNING_AGAIN.replace("|35|", "|35940|").replace(
    "2022-07-12T04:18:50|2022-07-12T04:19:10", "2022-07-11T18:18:50|2022-07-11T18:19:10")


@pytest.mark.parametrize(("lang", "said", "none_left"), [
    ("en", "submitit caught the scheduler's signal and called the job timed out (line 3), and "
     "Slurm still shows it running", "Nothing to resubmit while it runs"),
    ("ko", "submitit이 스케줄러의 신호를 받고 작업 시간이 초과되었다고 판단했으며(3번째 줄)",
     "실행 중에는 다시 제출할 것이 없습니다"),
])
def test_a_running_job_after_submitits_verdict_is_not_resubmitted(capsys, tmp_path, lang, said,
                                                                  none_left):
    """submitit's time-out verdict (submitit/core/job_environment.py, facebookincubator/submitit
    1.5.4, SignalHandler.checkpoint_and_try_requeue l. 203: `Caught signal SIGUSR2 on <host>:
    this job is timed-out.`) then its checkpoint method (`Calling checkpoint method.`, l. 262),
    no `Requeued job` line yet, and the job's saved sacct RUNNING: submitit requeues it or it
    ends by itself, so diagnose proposes nothing (the time-out a secondary class), where it
    said `action: resubmit` for a job still running."""
    log = tmp_path / "6060.log"
    log.write_text(
        "submitit INFO (2022-07-12 04:17:53,762) - Starting with JobEnvironment(job_id=6060)\n"
        "epoch 3 step 1200 loss 0.53\n"
        "submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGUSR2 on node07: this job"
        " is timed-out.\n"
        "submitit INFO (2022-07-12 04:18:45,882) - Calling checkpoint method.\n")
    sacct = tmp_path / "6060.sacct"
    sacct.write_text(_STILL_RUNNING)
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang, "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == ("none", "none", False)
    assert result["secondary"] == ["time_limit"] and result["detail"]["kind"] == "signalled"
    assert said in result["hint"] and none_left in result["hint"]
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang)
    assert code == 0 and out.startswith(f"{log}: none - ") and said in out
    assert "\naction: none" in out and "action: resubmit" not in out


@pytest.mark.parametrize(("lang", "said", "if_it_ends"), [
    ("en", "Slurm still shows the job alive (RUNNING): the log shows this failure, but the job "
     "has not ended", "If it ends with this failure: Resume from the last complete checkpoint"),
    ("ko", "Slurm에서는 작업이 아직 살아 있는 것으로 보입니다(RUNNING)",
     "작업이 이 실패로 끝나면: 마지막 완전한 체크포인트에서 재개하세요."),
])
def test_an_nccl_timeout_in_a_job_sacct_shows_running_is_not_resubmitted(capsys, tmp_path, lang,
                                                                          said, if_it_ends):
    """A rank's NCCL watchdog in the log of a job whose saved sacct says RUNNING: the class stays
    nccl_timeout (the job is likely hung or about to end), with action none and the explanation
    that it is still alive, where diagnose said `action: resubmit` (a second copy beside it).
    The class's hint follows as what to do if the job ends with this failure (not bare, as
    advice to resume now)."""
    log = tmp_path / "6060.log"
    log.write_text(
        "[2022-07-12 04:10:00] iter 100/8000 loss 2.10\n"
        "[2022-07-12 04:11:00] iter 200/8000 loss 2.05\n"
        "[rank3]:[E712 04:19:00.000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 "
        "milliseconds before timing out.\n")
    sacct = tmp_path / "6060.sacct"
    sacct.write_text(_STILL_RUNNING)
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang, "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == (
        "nccl_timeout", "none", False)
    assert result["detail"]["kind"] == "alive" and said in result["hint"]
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang)
    assert out.startswith(f"{log}: nccl_timeout - ") and said in out
    assert "\naction: none" in out and "action: resubmit" not in out
    hint_line = next(line for line in out.splitlines() if line.startswith("hint: "))
    assert if_it_ends in hint_line and hint_line.index(said) < hint_line.index(if_it_ends)


@pytest.mark.parametrize(("lang", "title", "decided", "hint"), [
    ("en", "The job never started",
     "Decided by Slurm accounting alone: the job never ran, so it wrote no log. Before "
     "submitting it again, check who cancelled it and why, and what it waited for (its pending "
     "reason).",
     "Slurm ended it (CANCELLED by user id 0) while it waited in the queue, so nothing ran and "
     "no work was lost. Its pending reason was BeginTime."),
    ("ko", "작업이 시작되지 않음",
     "Slurm accounting만으로 판단했습니다: 작업이 실행되지 않아 로그를 쓰지 않았습니다. 다시 "
     "제출하기 전에 누가 왜 작업을 취소했는지, 작업이 무엇을 기다렸는지(대기 사유) 확인하세요.",
     "대기열에서 기다리는 동안 Slurm이 작업을 끝냈으므로(사용자 ID 0에 의해 CANCELLED) 아무것도 "
     "실행되지 않았고 잃은 작업도 없습니다. 대기 사유: BeginTime."),
])
def test_a_job_its_saved_sacct_shows_never_started_is_told_so(capsys, tmp_path, lang, title,
                                                              decided, hint):
    """`--sacct` of a job cancelled while it waited (Start = End, nothing elapsed, no node):
    the summary and the JSON say it never started, with who cancelled it and why it waited,
    not a failure to read the last lines of; the log at its path (an earlier job's CUDA OOM)
    is not read as its own; nothing is retried by itself."""
    log = tmp_path / "1839.log"
    log.write_text("iter 5/100 loss 0.5\ntorch.OutOfMemoryError: CUDA out of memory. Tried to "
                   "allocate 2.00 GiB.\n")
    sacct = tmp_path / "1839.sacct"
    sacct.write_text(CANCELLED_PENDING_AND_RUNNING)  # 1839 never started
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang)
    assert code == 1
    assert out.splitlines() == [
        f"{log}: unknown_failure - {title}",
        "action: ask (not retried automatically; does not count against the retry budget)",
        decided,  # the incident's confidence line: no log, so what to check
        f"hint: {hint}",
    ]
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--lang", lang, "--json")
    result = json.loads(out)
    assert (result["class"], result["title"], result["hint"]) == ("unknown_failure", title, hint)
    assert result["detail"] == {"kind": "never_started", "state": "CANCELLED",
                                "cancelled_by": 0, "pending_reason": "BeginTime"}
    assert (result["action"], result["retryable"], result["evidence"]) == ("ask", False, [])


# The dev cluster's real FAILED job 1234 in `sacct -P` (tests/fixtures/slurm), ExitCode 9:0:
# how sacct prints a batch shell's 137 (128 + SIGKILL), 128 off.
_SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
_PRINTED_137 = "\n".join(
    [(_SLURM / "sacct.txt").read_text().splitlines()[0]]
    + [line.replace("|FAILED|3:0|", "|FAILED|9:0|")
       for line in (_SLURM / "sacct.txt").read_text().splitlines()
       if line.split("|")[0] in ("1234", "1234.batch")]) + "\n"


def test_sacct_parsable_9_0_reads_as_the_137_it_may_print(capsys, tmp_path):
    """`--sacct` of a `sacct -P` whose 9:0 may be 137, with srun's notice of a killed task:
    the host OOM (it read as an unknown failure), and the same with an `--exit-code 9:0` flag,
    which is ExitCode as sacct prints it (it read as an exact 9: an unknown failure); a
    genuine `--exit-code 1:0` names no kill."""
    log = tmp_path / "1234.log"
    log.write_text("epoch 1 step 10 loss 2.31\nsrun: error: vm: task 1: Killed\n"
                   "epoch 1 step 11 loss 2.30\nepoch 1 step 12 loss 2.29\n")
    sacct = tmp_path / "1234.sacct"
    sacct.write_text(_PRINTED_137)
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--json")
    assert json.loads(out)["class"] == "host_oom"
    code, out, _ = cli(capsys, str(log), "--sacct", str(sacct), "--exit-code", "9:0", "--json")
    assert json.loads(out)["class"] == "host_oom"
    code, out, _ = cli(capsys, str(log), "--state", "FAILED", "--exit-code", "9:0", "--json")
    assert json.loads(out)["class"] == "host_oom"
    code, out, _ = cli(capsys, str(log), "--state", "FAILED", "--exit-code", "1:0", "--json")
    assert json.loads(out)["class"] == "unknown_failure"


@pytest.mark.parametrize(("state", "scheduled"), [("PREEMPTED", "preempted"),
                                                  ("NODE_FAIL", "node_failure")])
def test_a_run_that_stopped_on_a_nan_before_the_scheduler_ended_it_is_not_resubmitted(
        capsys, tmp_path, state, scheduled):
    """sacct's PREEMPTED or NODE_FAIL after the run stopped on a NaN loss: a resubmit resumes
    before the NaN and diverges again, so the divergence is the class (stop) and the scheduler's
    a secondary one; a NaN the run trained past leaves the scheduler's class (resubmit)."""
    log = tmp_path / "train.log"
    log.write_text("step 10 loss 1.2\nstep 20 loss 1.1\n"
                   "FloatingPointError: Loss is nan, stopping training\n")
    code, out, _ = cli(capsys, str(log), "--state", state, "--exit-code", "0:0", "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == ("nan_loss", "stop", False)
    assert result["secondary"] == [scheduled]
    assert [e["line"] for e in result["evidence"]] == [3]
    log.write_text("step 10 loss 1.2\nstep 20 loss nan\nstep 30 loss 1.1\nstep 40 loss 1.0\n")
    code, out, _ = cli(capsys, str(log), "--state", state, "--exit-code", "0:0", "--json")
    result = json.loads(out)
    assert (result["class"], result["action"], result["retryable"]) == (
        scheduled, "resubmit", True)
    assert "nan_loss" in result["secondary"]


def test_an_exit_code_alone_reads_as_the_watchers_state_for_it(capsys, tmp_path):
    """`--exit-code` without `--state` is a job that ended: 0:0 reads as sacct's COMPLETED 0:0
    (the log ends in progress: completed), any other status as FAILED, as the watcher reads
    the same log with the State sacct gives; it read `none` (still running)."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {n} loss {2 - n / 100:.2f}\n" for n in range(10, 60, 10)))
    for code, state, class_id in (("0:0", "COMPLETED", "completed"),
                                  ("1:0", "FAILED", "unknown_failure")):
        _, alone, _ = cli(capsys, str(log), "--exit-code", code, "--json")
        _, with_state, _ = cli(capsys, str(log), "--state", state, "--exit-code", code, "--json")
        assert json.loads(alone)["class"] == json.loads(with_state)["class"] == class_id
