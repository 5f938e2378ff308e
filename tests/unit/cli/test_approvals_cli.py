"""`trainbot approvals`: the prompts waiting for a person, and deciding one from the command
line (how approvals are made with `trainbot run --no-slack`), through the same service as a
click: the approver is checked against the running config and the decision audited."""

from __future__ import annotations

import json
import time

from bot.cli import main
from bot.store import Store

CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, port: 1, user: u, key_file: /k, known_hosts: /kh}
recipes:
  mix: {cluster: dev, sbatch_script: /s.sbatch, approvers: [U0OWNER]}
store: {url: "sqlite:///STORE"}
"""


def setup(tmp_path, expires_in_s: float = 3600) -> tuple[str, str]:
    db = tmp_path / "s.db"
    config = tmp_path / "trainbot.yaml"
    config.write_text(CONFIG.replace("STORE", str(db)))
    now = time.time()
    with Store.open(f"sqlite:///{db}") as store:
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=now)
        store.attempts.record(chain_id=chain.id, job_id="4242", now=now)
        token = store.approvals.create(
            action="resubmit", payload={"recipe": "mix", "choices": ["resubmit", "dismiss"],
                                        "summary": "job 4242 died: host_oom"},
            allowed=["U0OWNER"], expires_at=now + expires_in_s, now=now, target_job="4242",
            chain_id=chain.id)
    return str(config), token


def test_the_list_shows_each_waiting_prompt_with_its_choices(tmp_path, capsys) -> None:
    config, token = setup(tmp_path)
    assert main(["approvals", "--config", config, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["token"] == token and row["job_id"] == "4242"
    assert row["choices"] == ["resubmit", "dismiss"] and row["summary"].endswith("host_oom")
    assert main(["approvals", "--config", config]) == 0
    assert token in capsys.readouterr().out


def test_the_list_never_says_a_prompt_expires_later_than_it_does(tmp_path, capsys) -> None:
    """25 min 50 s left reads "expires in 25 min": a person acting at the time said is not
    too late. Before, it read "expires in 26 min", after the prompt had expired."""
    config, _ = setup(tmp_path, expires_in_s=25 * 60 + 50)
    assert main(["approvals", "--config", config]) == 0
    assert "expires in 25 min:" in capsys.readouterr().out


def test_an_approver_decides_from_the_cli_and_anyone_else_is_refused(tmp_path, capsys) -> None:
    config, token = setup(tmp_path)
    assert main(["approvals", "decide", "dismiss", f"--token={token}", "--as", "U0OTHER",
                 "--config", config]) == 1
    assert capsys.readouterr().out.startswith("unauthorized")
    assert main(["approvals", "decide", "dismiss", f"--token={token}", "--as", "U0OWNER",
                 "--config", config]) == 0
    assert capsys.readouterr().out.startswith("declined")
    assert main(["approvals", "--config", config, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        clicks = [e for e in store.audit.recent(10) if e.action == "approval.click"]
    assert [(e.actor, e.result) for e in clicks] == [("U0OWNER", "dismissed"),
                                                     ("U0OTHER", "unauthorized")]


def test_an_unknown_choice_is_a_usage_error(tmp_path, capsys) -> None:
    config, token = setup(tmp_path)
    assert main(["approvals", "decide", "approve", f"--token={token}", "--as", "U0OWNER",
                 "--config", config]) == 2
    assert "resubmit" in capsys.readouterr().err
