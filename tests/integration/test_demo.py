"""`trainbot demo --yes` on the dev cluster, as a newcomer runs it: the story asserted step by
step from what the terminal showed and what the store recorded.

The demo job (deploy/demo/fake_train.py, leak + stall-then-nccl, four rank processes) leaks
24 MiB per iteration under a 4 GiB limit, saves a checkpoint every 50 iterations and stalls
after iteration 130 (rank 3 stuck in its data loader, the bot names it from the ranks' stacks)
until the demo has shown the bot's stall warning and the stacks, then dies with the NCCL
watchdog abort; the resumed attempt must start from iteration 100 (the last COMPLETE
checkpoint) and reach the target, 240.

How long the demo takes is not asserted (speed is measured in bench/): the deadline below is a
guard against a story that never ends, generous for a loaded machine.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cluster.ssh import SSHRunner
from bot.store import Store

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TARGET = 240
STALL_AT = 130
LAST_COMPLETE_CHECKPOINT = 100
DEMO_TIME_LIMIT_S = 900  # the demo's own --time-limit: it ends and says so by then
DEADLINE_S = DEMO_TIME_LIMIT_S + 120  # the demo process is killed past this


def _pos(text: str, needle: str) -> int:
    at = text.find(needle)
    assert at >= 0, f"{needle!r} not in the demo's output"
    return at


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


@pytest.mark.timeout(DEADLINE_S + 60)
def test_demo_tells_the_whole_story(dev_cluster, tmp_path):
    out_dir = tmp_path / "demo"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bot", "demo", "--yes", "--out", str(out_dir),
             "--time-limit", str(DEMO_TIME_LIMIT_S)],
            cwd=REPO, capture_output=True, text=True, timeout=DEADLINE_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the demo did not end within {DEADLINE_S} s (its --time-limit is "
                    f"{DEMO_TIME_LIMIT_S} s); its output so far:\n{_text(exc.stdout)[-6000:]}\n"
                    f"{_text(exc.stderr)[-3000:]}")
    finally:
        _clean_up(dev_cluster, out_dir)
    out = done.stdout
    assert done.returncode == 0, f"exit {done.returncode}\n{out[-6000:]}\n{done.stderr[-3000:]}"

    # 1. leak warning with a projection: the limit is reached before the target iteration
    leak = re.search(r"host memory is growing by [\d.]+ GiB per 100 iterations; at this rate "
                     r"the job reaches its memory limit near iteration (\d+)", out)
    assert leak, out[-6000:]
    assert STALL_AT < int(leak[1]) < TARGET
    # 2. the stall is raised, with its offer shown but not taken (the job runs on to the abort)
    assert f"no training progress since iteration {STALL_AT}" in out
    # 2b. then the ranks' Python stacks, grouped: rank 3 is named, stuck in its data loader
    stacks = _pos(out, "3 of 4 ranks in `all_gather` ← `train_step`; the odd ones out: rank 3 (")
    assert "in `DataLoader._get_data` ← `DataLoader.__next__`." in out[stacks:stacks + 300]
    # 2c. the demo ends the stall only once it has shown both
    released = _pos(out, "▶ the bot raised the stall and showed the ranks' stacks: the job's "
                         "stall ends now (")
    # 3. one incident: nccl_timeout with the hang as its upstream cause
    assert "Upstream cause: hang" in out
    assert _pos(out, "no training progress") < stacks < released \
        < _pos(out, "Upstream cause: hang")
    # 4. approved at the prompt (--yes), resumed from the last complete checkpoint
    assert f"Resubmit from iteration {LAST_COMPLETE_CHECKPOINT}? [y/N] y (--yes)" in out
    resumed = re.search(
        rf"Resumed as (\d+) \(was (\d+)\) from iteration {LAST_COMPLETE_CHECKPOINT}", out)
    assert resumed, out[-6000:]
    # the story in order
    assert _pos(out, "host memory is growing") < _pos(out, "no training progress") \
        < _pos(out, "Upstream cause: hang") < _pos(out, "Resumed as")
    # 5. the attempts table: failed nccl_timeout, then completed
    header = re.search(r"job\s*\| progress", out)  # the job column is as wide as its ids
    assert header, out[-6000:]
    table = out[header.start():]
    rows = [line for line in table.splitlines()[1:3]]
    assert re.match(rf"{resumed[2]}\s*\| 0 → {STALL_AT}\s*\| FAILED\s*\| nccl_timeout", rows[0])
    assert re.match(rf"{resumed[1]}\s*\| {LAST_COMPLETE_CHECKPOINT} → {TARGET}\s*\| COMPLETED"
                    r"\s*\| completed", rows[1]), rows
    assert "✘" not in out[_pos(out, "what the bot did:"):]
    # the recap says where the resubmit started as the thread does
    assert (f"resubmitted as {resumed[1]} from iteration {LAST_COMPLETE_CHECKPOINT} ("
            in out[_pos(out, "what the bot did:"):])

    # the store agrees
    with Store.open(f"sqlite:///{out_dir / 'demo.db'}") as store:
        [chain] = store.chains.for_recipe("mix")
        assert chain.status == "completed"
        first, second = store.attempts.for_chain(chain.id)
        assert (first.result, first.cause, first.last_iter) == ("FAILED", "nccl_timeout",
                                                                STALL_AT)
        assert second.start_iter == LAST_COMPLETE_CHECKPOINT
        assert second.checkpoint_path is not None
        assert second.checkpoint_path.endswith(f"iter_{LAST_COMPLETE_CHECKPOINT:09d}")
        assert (second.result, second.cause, second.last_iter) == ("COMPLETED", "completed",
                                                                   TARGET)
        incidents = store.incidents.for_chain(chain.id)
        finals = [i for i in incidents if i.key.endswith(":final")]
        assert [i.class_id for i in finals] == ["nccl_timeout", "completed"]
        upstream = finals[0].diagnosis["diagnosis"]["upstream"]
        assert upstream["class_id"] == "hang" and upstream["last_iter"] == STALL_AT
        leaks = [i for i in incidents if i.class_id == "memory_leak"]
        assert len(leaks) == 1 and leaks[0].diagnosis["projected_oom_iter"] == int(leak[1])
        assert [i.class_id for i in incidents].count("hang") == 1

    # 6. charts written to the folder: the leak's RSS chart, then each attempt's final charts
    charts = sorted(p.name for p in (out_dir / "charts").rglob("*.png"))
    assert f"chart-{first.job_id}-leak-rss.png" in charts
    for job in (first.job_id, second.job_id):
        assert {f"chart-{job}-final-rss.png", f"chart-{job}-final-progress.png"} <= set(charts)
    for path in (out_dir / "charts").rglob("*.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(path) in out  # the terminal said where it is


def _clean_up(dev_cluster, out_dir: Path) -> None:  # noqa: ANN001
    """Cancel the demo's jobs if it was killed, and remove its run folder on the cluster
    (named in its config: ~/trainbot-demo/runs/<tag>)."""
    config = out_dir / "trainbot-demo.yaml"
    if not config.is_file():
        return
    import yaml

    recipe = yaml.safe_load(config.read_text())["recipes"]["mix"]
    run_dir = recipe["workdir"]
    with SSHRunner(dev_cluster.ssh_settings()) as ssh:
        ssh.run(["scancel", "--name", recipe["job_name"]], check=False)
        if run_dir.startswith(f"{dev_cluster.home}/trainbot-demo/runs/"):
            ssh.run(["rm", "-rf", "--", run_dir], check=False)
