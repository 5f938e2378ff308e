"""`trainbot report`: the offline rendering of what the bot would post about a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slack_standin import validate_blocks
from support.sacct_rows import CANCELLED_PENDING_AND_RUNNING

from bot.cli import main

STORIES = Path(__file__).resolve().parents[2] / "fixtures" / "stories"


def test_report_on_the_88154_story_writes_payload_text_and_charts(tmp_path: Path, capsys):
    out = tmp_path / "out"
    code = main(["report", str(STORIES / "88154.log"), "--state", "FAILED", "--exit-code", "1:0",
                 "--mem-limit", "950GB", "--target-iter", "8000", "--out", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "loss.png", "message.json", "message.txt", "progress.png", "rss.png"]
    payload = json.loads((out / "message.json").read_text())
    assert set(payload) == {"blocks", "text"}
    assert validate_blocks(payload["blocks"]) == []
    text = (out / "message.txt").read_text()
    assert "88154" in text and "nccl_timeout" in text
    assert "[ Resubmit from iteration 3,000 ]" in text
    for png in ("rss.png", "progress.png", "loss.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "nccl_timeout: wrote" in capsys.readouterr().out


@pytest.mark.parametrize(("lang", "proposed", "button", "start"), [
    ("en", "Proposed: resume from the last complete checkpoint, which the bot looks up when it "
           "posts this (`trainbot report` cannot)",
     "[ Resubmit from the checkpoint the bot looks up ]", "from scratch"),
    ("ko", "제안: 마지막 완전한 체크포인트부터 (봇이 이 메시지를 올릴 때 체크포인트를 조회합니다. "
           "`trainbot report`는 조회할 수 없습니다) 재개",
     "[ 봇이 조회한 체크포인트부터 재제출 ]", "처음부터"),
])
def test_report_on_a_log_whose_saves_name_no_checkpoint_says_it_is_unknown(
        tmp_path: Path, lang: str, proposed: str, button: str, start: str):
    """`report` reaches no cluster: a log with no finished save numbers no checkpoint, and the
    watcher, which looks the checkpoint directory up, may find one (a pointer naming `final`,
    an earlier attempt's), so the report claims no start ("from scratch") and no work lost:
    it says the bot looks the checkpoint up when it posts the message, which the report
    cannot, and its button resubmits from that checkpoint (before: "Resubmit (checkpoint
    unknown)", as if the bot would not know it either)."""
    log = tmp_path / "88154.log"
    log.write_bytes(b"".join(line for line in (STORIES / "88154.log").read_bytes()
                             .splitlines(keepends=True)
                             if b"saving checkpoint" not in line
                             and b"checkpoint saved" not in line))
    out = tmp_path / "out"
    assert main(["report", str(log), "--state", "FAILED", "--exit-code", "1:0", "--lang", lang,
                 "--out", str(out)]) == 0
    text = (out / "message.txt").read_text()
    assert proposed in text and button in text
    assert start not in text and "work_lost" not in (out / "message.json").read_text()
    assert "checkpoint unknown" not in text and "체크포인트 미확인" not in text


def test_report_in_korean_without_metrics_writes_no_charts(tmp_path: Path):
    code = main(["report", str(STORIES / "108903.log"), "--state", "FAILED",
                 "--exit-code", "1:0", "--lang", "ko", "--out", str(tmp_path)])
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["message.json", "message.txt"]
    payload = json.loads((tmp_path / "message.json").read_text())
    assert "컴파일러" in payload["blocks"][0]["text"]["text"]


def test_report_uses_a_site_template_folder(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir(parents=True)
    (site / "incident.json.j2").write_text(
        '{"text": {{ ("site: " ~ class_id) | tojson }}, "blocks": []}')
    code = main(["report", str(STORIES / "108687.log"), "--state", "COMPLETED",
                 "--exit-code", "0:0", "--elapsed", "10", "--templates",
                 str(tmp_path / "site"), "--out", str(tmp_path / "out")])
    assert code == 0
    payload = json.loads((tmp_path / "out" / "message.json").read_text())
    assert payload == {"blocks": [], "text": "site: silent_exit"}


def test_report_bad_input_exits_2_with_the_reason(tmp_path: Path, capsys):
    assert main(["report", str(tmp_path / "missing.log"), "--out", str(tmp_path)]) == 2
    assert "cannot read log" in capsys.readouterr().err
    assert main(["report", str(STORIES / "108687.log"), "--exit-code", "zero",
                 "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["report", str(STORIES / "108687.log"), "--lang", "fr", "--out", str(tmp_path)])
    assert exc.value.code == 2


def test_a_failed_report_creates_no_out_folder(tmp_path: Path, capsys):
    out = tmp_path / "deep" / "out"
    assert main(["report", str(tmp_path / "missing.log"), "--out", str(out)]) == 2
    assert "cannot read log" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--out", str(out)]) == 2  # a folder, not a log
    assert "cannot read log" in capsys.readouterr().err
    assert main(["report", str(STORIES / "108687.log"), "--templates", str(tmp_path / "none"),
                 "--out", str(out)]) == 2
    assert not (tmp_path / "deep").exists()


def test_a_write_that_fails_half_way_removes_the_folder_it_created(tmp_path: Path, capsys,
                                                                   monkeypatch):
    real_write = Path.write_bytes

    def write_bytes(self: Path, data: bytes) -> int:
        if self.name == "message.txt":
            raise OSError(28, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    out = tmp_path / "new" / "out"
    assert main(["report", str(STORIES / "108687.log"), "--out", str(out)]) == 2
    assert "cannot write message.txt: No space left on device" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def _leak_log(path: Path, save: bool = True) -> Path:
    """Host RSS 40 GiB + 12 GiB per 100 iterations, a checkpoint at 500 (unless not `save`),
    OOM-killed at 670."""
    lines = []
    for k, i in enumerate(range(0, 671, 10)):
        t = 45 * k
        lines.append(f"2025-05-14 {10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d} | INFO "
                     f"| iter: {i}/6000 | loss: 0.9 | 4.50 s/iter | rss: {40 + 0.12 * i:.1f} GiB")
        if i == 500 and save:
            lines.append("2025-05-14 12:43:00 | INFO | Saving checkpoint at iteration 500")
            lines.append("2025-05-14 12:43:30 | INFO | Saved checkpoint at iteration 500")
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=9001.0. Some of the "
                 "step tasks have been OOM Killed.")
    path.write_text("\n".join(lines) + "\n")
    return path


said_by_hand = {
    "en": ("To find what grows, run `{command}` on the cluster from the job's working "
           "directory, in its Python environment (MODULE:FACTORY: the function that builds "
           "the job's Dataset)."),
    "ko": ("무엇이 늘어나는지 찾으려면 클러스터에서 이 작업의 작업 디렉터리와 Python 환경으로 "
           "`{command}`를 실행하세요(MODULE:FACTORY: 이 작업의 Dataset을 만드는 함수)."),
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_report_on_a_leak_driven_oom_offers_the_probe_not_a_hopeless_mem(tmp_path: Path,
                                                                          lang: str):
    out = tmp_path / "out"
    code = main(["report", str(_leak_log(tmp_path / "9001.log")), "--state", "OUT_OF_MEMORY",
                 "--exit-code", "0:9", "--mem-limit", "120G", "--lang", lang,
                 "--out", str(out)])
    assert code == 0
    payload = json.loads((out / "message.json").read_text())
    assert validate_blocks(payload["blocks"]) == []
    text = (out / "message.txt").read_text()
    assert "Resubmit with --mem" not in text
    buttons = [e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert not any("mem" in e.get("action_id", "") for e in buttons)
    assert "trainbot probe dataloader MODULE:FACTORY --workers 2 --samples 160" in text
    # no config, no recipe: how to run the probe by hand, not a recipe's config to edit
    assert "offline" not in text and "dataloader_probe.factory" not in text
    assert (said_by_hand[lang].format(command="trainbot probe dataloader MODULE:FACTORY "
                                              "--workers 2 --samples 160") in text), text
    # 40 + 0.12 x (6000 - 500) = 700 GiB needed, above 2 x 120; the 180G a plain OOM would
    # get reaches 500 + (180 - 40) / 0.12 = iter 1,666
    assert "700G" in text and "240G" in text and "180G" in text and "1,666" in text


@pytest.mark.parametrize(("lang", "said"), [
    ("en", ("The iteration a resume starts from is unknown, so this counts from iteration 0, "
            "the worst case: reaching iteration 6,000 needs ≈ 760G (from iteration 670, the "
            "last the log reached: ≈ 680G). That is above 240G (the site's cap or twice the "
            "current limit), so from iteration 0 more --mem cannot finish this run: with 180G "
            "it runs ≈ 1,166 iterations past the checkpoint it resumes from.")),
    ("ko", ("재개할 iteration을 알 수 없어 최악의 경우인 iteration 0부터 셉니다: iteration "
            "6,000까지 가려면 ≈ 760G가 필요합니다 (로그가 마지막으로 도달한 iteration 670부터라면 "
            "≈ 680G). 이는 240G(사이트 상한 또는 현재 한도의 두 배)를 넘으므로 iteration 0부터라면 "
            "--mem을 늘려도 이 실행을 끝낼 수 없습니다: 180G로는 재개한 체크포인트에서 ≈ 1,166 "
            "iteration을 더 갑니다.")),
])
def test_report_on_a_leak_whose_log_saved_no_checkpoint_counts_from_iteration_0_and_says_so(
        tmp_path: Path, lang: str, said: str):
    """The log numbers no checkpoint save, so the resume point is unknown (not looked up): the
    memory arithmetic counts from iteration 0, the worst case (40 + 0.12 x 6000 = 760G), says
    so, and gives the best case from the last iteration the log reached (40 + 0.12 x 5330 =
    680G); the 180G a plain OOM would get runs (180 - 40) / 0.12 = 1,166 iterations past
    whichever checkpoint, never "the checkpoint at iteration 0" or "≈ iter 1,166 of 6,000"."""
    out = tmp_path / "out"
    code = main(["report", str(_leak_log(tmp_path / "9004.log", save=False)), "--state",
                 "OUT_OF_MEMORY", "--exit-code", "0:9", "--mem-limit", "120G", "--lang", lang,
                 "--out", str(out)])
    assert code == 0
    text = (out / "message.txt").read_text()
    assert said in text
    assert "checkpoint at iteration 0" not in text and "iter 1,166" not in text
    assert "iteration 0의 체크포인트" not in text


def test_report_on_a_short_leak_whose_log_saved_no_checkpoint_proposes_the_worst_case_mem(
        tmp_path: Path):
    """Where the resume starts is unknown: the --mem proposed finishes the run from any
    checkpoint, the worst case (40 + 0.12 x 1200 = 184 -> 190G), and the text says so."""
    out = tmp_path / "out"
    code = main(["report", str(_leak_log(tmp_path / "9005.log", save=False)), "--state",
                 "OUT_OF_MEMORY", "--exit-code", "0:9", "--mem-limit", "120G", "--target-iter",
                 "1200", "--out", str(out)])
    assert code == 0
    text = (out / "message.txt").read_text()
    assert ("so this counts from iteration 0, the worst case: reaching iteration 1,200 needs "
            "≈ 190G (from iteration 670, the last the log reached: ≈ 110G). --mem=190G "
            "finishes it.") in text
    assert "Resubmit with --mem=190G" in text


def test_report_on_a_short_leak_proposes_the_mem_that_finishes_the_run(tmp_path: Path):
    out = tmp_path / "out"
    log = _leak_log(tmp_path / "9002.log")
    code = main(["report", str(log), "--state", "OUT_OF_MEMORY", "--exit-code", "0:9",
                 "--mem-limit", "120G", "--target-iter", "1200", "--out", str(out)])
    assert code == 0
    text = (out / "message.txt").read_text()
    # 40 + 0.12 x (1200 - 500) = 124 -> 130G (10 GiB steps), below 2 x 120: it finishes
    assert "--mem=130G finishes it." in text and "Resubmit with --mem=130G" in text


@pytest.mark.parametrize(("lang", "cap_text"), [
    ("en", "That is above the site's cap of 122G (policy.max_mem)"),
    ("ko", "사이트 상한 122G(policy.max_mem)"),
])
def test_report_on_a_short_leak_under_a_lower_site_cap_offers_no_mem(tmp_path: Path, lang: str,
                                                                     cap_text: str):
    # the short leak above needs 130G, under 2 x 120G; the config's site cap is 122G
    config = _config(tmp_path, "", policy="policy: {max_mem: 122G}\n")
    out = tmp_path / "out"
    code = main(["report", str(_leak_log(tmp_path / "9002.log")), "--state", "OUT_OF_MEMORY",
                 "--exit-code", "0:9", "--mem-limit", "120G", "--target-iter", "1200",
                 "--recipe", "mix", "--config", str(config), "--lang", lang,
                 "--out", str(out)])
    assert code == 0
    payload = json.loads((out / "message.json").read_text())
    assert validate_blocks(payload["blocks"]) == []
    buttons = [e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons and not any("mem" in e.get("action_id", "") for e in buttons)
    text = (out / "message.txt").read_text()
    assert "--mem=130G" not in text and "130G" in text
    # how far the largest --mem the site admits gets: 500 + (122 - 40) / 0.12 = iter 1,183
    assert cap_text in text and "1,183" in text and "1,200" in text


def test_report_on_a_leak_whose_limit_nobody_gave_proposes_no_mem(tmp_path: Path):
    out = tmp_path / "out"
    code = main(["report", str(_leak_log(tmp_path / "9003.log")), "--state", "OUT_OF_MEMORY",
                 "--exit-code", "0:9", "--out", str(out)])
    assert code == 0
    payload = json.loads((out / "message.json").read_text())
    text = (out / "message.txt").read_text()
    buttons = [e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert not any("mem" in e.get("action_id", "") for e in buttons)
    assert "--mem=" not in text.replace("no --mem is proposed", "")
    assert "memory limit is unknown" in text and "700G" in text
    assert "trainbot probe dataloader" in text


def _plain_oom_log(path: Path) -> Path:
    """A flat 30 GiB host RSS, then an OOM kill: no leak trend, a plain host OOM."""
    lines = [f"2025-05-14 10:{k:02d}:00 | INFO | iter: {k * 10}/6000 | loss: 0.9 | "
             f"4.50 s/iter | rss: 30.0 GiB" for k in range(20)]
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=1.0. Some of the "
                 "step tasks have been OOM Killed.")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_report_on_a_host_oom_without_a_limit_says_so_and_proposes_no_mem(tmp_path: Path):
    out = tmp_path / "out"
    code = main(["report", str(_plain_oom_log(tmp_path / "1.log")), "--state",
                 "OUT_OF_MEMORY", "--out", str(out)])
    assert code == 0
    text = (out / "message.txt").read_text()
    assert "Resubmit with --mem" not in text
    assert "memory limit is unknown" in text


SLURM_VERSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "versions"


@pytest.mark.parametrize(("sacct", "job", "mem"), [
    ("22.05/sacct.json", "44", "96G"),  # --mem=64G on 4 nodes: TRES mem 262144 MiB over node=4
    ("24.11/sacct.json", "6362", "24G"),  # allocated TRES mem 16384 MiB
    ("23.11/sacct.txt", "7818766", "24G"),  # --parsable2: AllocTRES mem=32G,node=2
])
def test_report_takes_the_limit_of_the_failed_job_from_its_sacct_output(
        tmp_path: Path, sacct: str, job: str, mem: str):
    out = tmp_path / "out"
    log = _plain_oom_log(tmp_path / f"{job}.log")  # the file lists several jobs: the log's
    code = main(["report", str(log), "--state", "OUT_OF_MEMORY", "--sacct",
                 str(SLURM_VERSIONS / sacct), "--out", str(out)])
    assert code == 0
    text = (out / "message.txt").read_text()
    assert f"[ Resubmit with --mem={mem} ]" in text  # limit x 1.5
    assert "memory limit is unknown" not in text
    # the log names no checkpoint, and the report looks none up: the bot's message would
    assert "[ Resubmit from the checkpoint the bot looks up ]" in text
    assert "checkpoint unknown" not in text


def test_report_flags_win_over_sacct_and_a_file_of_many_jobs_needs_the_job(tmp_path: Path,
                                                                            capsys):
    out = tmp_path / "out"
    log = _plain_oom_log(tmp_path / "6362.log")
    assert main(["report", str(log), "--state", "OUT_OF_MEMORY", "--mem-limit", "100G",
                 "--sacct", str(SLURM_VERSIONS / "24.11/sacct.json"), "--out", str(out)]) == 0
    assert "[ Resubmit with --mem=150G ]" in (out / "message.txt").read_text()
    unnamed = _plain_oom_log(tmp_path / "oom.log")
    assert main(["report", str(unnamed), "--sacct", str(SLURM_VERSIONS / "24.11/sacct.json"),
                 "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "6362, 6370, 6380" in err and "sacct --json -j JOB" in err
    assert main(["report", str(unnamed), "--sacct", str(log), "--out",
                 str(tmp_path / "o3")]) == 2
    assert "--sacct" in capsys.readouterr().err


def _config(tmp_path: Path, probe: str, policy: str = "") -> Path:
    path = tmp_path / "trainbot.yaml"
    path.write_text(
        policy + "clusters: {dev: {host: h, user: u, key_file: /k}}\n"
        "recipes:\n"
        "  mix:\n"
        "    cluster: dev\n"
        "    sbatch_script: /s.sbatch\n"
        "    partition: debug\n"
        "    workdir: /scratch/wm/mix\n"
        "    env_setup: source ~/venv/bin/activate\n" + probe)
    return path


def test_report_with_the_recipes_config_offers_its_probe_button(tmp_path: Path):
    config = _config(tmp_path, "    dataloader_probe: {factory: 'mydata.datasets:build'}\n")
    out = tmp_path / "out"
    assert main(["report", str(_leak_log(tmp_path / "9001.log")), "--state", "OUT_OF_MEMORY",
                 "--mem-limit", "120G", "--recipe", "mix", "--config", str(config),
                 "--out", str(out)]) == 0
    payload = json.loads((out / "message.json").read_text())
    assert validate_blocks(payload["blocks"]) == []
    text = (out / "message.txt").read_text()
    assert "[ Run DataLoader probe ]" in text and "Resubmit with --mem" not in text
    assert ("cd /scratch/wm/mix && source ~/venv/bin/activate && srun --nodes=1 --ntasks=1 "
            "--partition=debug trainbot probe dataloader mydata.datasets:build") in text


def test_report_of_a_recipe_without_a_factory_names_the_field_that_enables_the_button(
        tmp_path: Path):
    out = tmp_path / "out"
    assert main(["report", str(_leak_log(tmp_path / "9001.log")), "--state", "OUT_OF_MEMORY",
                 "--mem-limit", "120G", "--recipe", "mix", "--config",
                 str(_config(tmp_path, "")), "--out", str(out)]) == 0
    text = (out / "message.txt").read_text()
    assert "Run DataLoader probe ]" not in text
    assert "set `dataloader_probe.factory` in recipe mix's config" in text
    assert "trainbot probe dataloader MODULE:FACTORY --workers 2 --samples 160" in text


@pytest.mark.parametrize(("lang", "said"), [
    ("en", ("The job never started",
            "Decided by Slurm accounting alone: the job never ran, so it wrote no log. Before "
            "submitting it again, check who cancelled it and why, and what it waited for (its "
            "pending reason).",
            "Slurm ended it (CANCELLED by user id 0) while it waited in the queue, so nothing "
            "ran and no work was lost. Its pending reason was BeginTime.")),
    ("ko", ("작업이 시작되지 않음",
            "Slurm accounting만으로 판단했습니다: 작업이 실행되지 않아 로그를 쓰지 않았습니다. "
            "다시 제출하기 전에 누가 왜 작업을 취소했는지, 작업이 무엇을 기다렸는지(대기 사유) "
            "확인하세요.",
            "대기열에서 기다리는 동안 Slurm이 작업을 끝냈으므로(사용자 ID 0에 의해 CANCELLED) "
            "아무것도 실행되지 않았고 잃은 작업도 없습니다. 대기 사유: BeginTime.")),
])
def test_report_on_a_job_that_never_started_says_so(tmp_path: Path, lang: str,
                                                    said: tuple[str, ...]):
    """`report` with the saved sacct of a job cancelled while it waited (Start = End): the
    message says it never started, why, and that a person submits it again, not that its
    last lines are attached; no log of it, so no chart."""
    log, sacct, out = tmp_path / "1839.log", tmp_path / "1839.sacct", tmp_path / "out"
    log.write_text("")
    sacct.write_text(CANCELLED_PENDING_AND_RUNNING)  # 1839 never started
    assert main(["report", str(log), "--sacct", str(sacct), "--lang", lang,
                 "--out", str(out)]) == 0
    text = (out / "message.txt").read_text()
    for sentence in said:
        assert sentence in text
    assert "last lines" not in text and "마지막 줄" not in text
    assert "the log does not say why" not in text and "로그에 이유가 없음" not in text
    assert sorted(p.name for p in out.iterdir()) == ["message.json", "message.txt"]


# the card's work line of the 88154 story: iteration 3,470 reached, checkpoint 3,000 saved
WOULD_BE_LOST = {
    "en": "📉 *Would be lost if the job ended now* (it is still running): 470 iterations, ≈ %s "
          "since the last checkpoint (iter 3,000)",
    "ko": "📉 *작업이 지금 끝나면 잃게 될 작업* (아직 실행 중): 마지막 체크포인트 "
          "(iter 3,000) 이후 470 iteration, 약 %s",
}
LOST = {"en": "Work lost since the last checkpoint", "ko": "이후 잃은 작업"}


def _work_line(out: Path) -> str | None:
    blocks = json.loads((out / "message.json").read_text())["blocks"]
    return next((b["text"]["text"] for b in blocks if b.get("block_id") == "work_lost"), None)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize(("lines", "class_id", "duration"), [
    # the log up to its last iteration line, read 80 min later: a stall, its cancel and resume
    (2476, "hang", {"en": "35 min", "ko": "35분"}),
    # the whole log: the NCCL watchdog's abort, read while Slurm still shows the job running
    (None, "nccl_timeout", {"en": "1 h 05 min", "ko": "1시간 5분"}),
])
def test_the_card_of_a_job_still_running_says_what_would_be_lost_not_what_was(
        tmp_path: Path, lang: str, lines: int | None, class_id: str, duration: dict):
    """A job Slurm shows RUNNING has lost nothing yet: its card says the iterations past the
    last checkpoint would be lost if it ended now (a hang's cancel-and-resume costs them; a
    failure read in a running job puts them at risk), and once Slurm says it ended, that they
    were lost. Before, a running hang's card said "Work lost since the last checkpoint", and
    a failure read while the job ran said nothing of them."""
    log = tmp_path / "88154.log"
    log.write_bytes(b"".join((STORIES / "88154.log").read_bytes()
                             .splitlines(keepends=True)[:lines]))
    out = tmp_path / "out"
    assert main(["report", str(log), "--state", "RUNNING", "--now", "2025-05-14 20:30:00",
                 "--lang", lang, "--out", str(out)]) == 0
    payload = json.loads((out / "message.json").read_text())
    assert validate_blocks(payload["blocks"]) == []
    assert f"`{class_id}`, RUNNING" in (out / "message.txt").read_text()
    assert _work_line(out) == WOULD_BE_LOST[lang] % duration[lang]
    assert LOST[lang] not in (out / "message.txt").read_text()
    ended = tmp_path / "ended"
    assert main(["report", str(log), "--state", "FAILED", "--exit-code", "1:0",
                 "--now", "2025-05-14 20:30:00", "--lang", lang, "--out", str(ended)]) == 0
    assert LOST[lang] in (_work_line(ended) or "")


QUIET_FINISH = STORIES / "quiet-finish.log"  # steps to 300/300, no end-of-run message


def _report_text(tmp_path: Path, log: Path, lang: str, *extra: str) -> str:
    out = tmp_path / f"out-{log.stem}-{lang}"
    assert main(["report", str(log), "--state", "COMPLETED", "--exit-code", "0:0", "--lang", lang,
                 *extra, "--out", str(out)]) == 0
    return (out / "message.txt").read_text()


@pytest.mark.parametrize(("lang", "decided", "look_closer"), [
    ("en", "🔎 Decided by the training progress: it reached its target (iteration 300 of 300).",
     "look closer"),
    ("ko", "🔎 학습 진행으로 판단했습니다: 목표에 도달했습니다(iteration 300 / 300).",
     "직접 확인해 보세요"),
])
def test_report_on_a_completed_run_at_its_target_says_its_progress_decided(
        tmp_path: Path, lang: str, decided: str, look_closer: str):
    """COMPLETED 0:0 and the log's progress at its target, with no end-of-run message: the
    progress that got there decided it with sacct, and the card says so (before: "Decided
    only by Slurm accounting (the log does not say why): look closer")."""
    text = _report_text(tmp_path, QUIET_FINISH, lang)
    assert "(`completed`, COMPLETED 0:0)" in text
    assert decided in text and look_closer not in text
    # ... with no target to compare the progress with (the log prints none, none given),
    # sacct alone decided it: look closer
    no_target = tmp_path / "no-target.log"
    no_target.write_text(QUIET_FINISH.read_text().replace("/300", ""))
    text = _report_text(tmp_path, no_target, lang)
    assert "(`completed`, COMPLETED 0:0)" in text and look_closer in text


def test_report_on_a_completed_run_short_of_its_target_does_not_say_it_reached_it(
        tmp_path: Path):
    """Progress short of the target the recipe gives: the work did not happen (silent_exit,
    its figures to check), never "reached its target"."""
    short = tmp_path / "short.log"
    short.write_text("".join(QUIET_FINISH.read_text().replace("/300", "")
                             .splitlines(keepends=True)[:21]))
    text = _report_text(tmp_path, short, "en", "--target-iter", "300")
    assert "(`silent_exit`, COMPLETED 0:0)" in text
    assert "it stopped at iteration 200 of 300" in text
    assert "reached its target" not in text
