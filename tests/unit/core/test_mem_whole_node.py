"""A host OOM of a job with --mem=0 (Slurm: all of each node's memory, which sacct, the
command line or the recipe gives as a limit of 0): more --mem cannot help, so no --mem is
proposed (no size below the node's, no doubling of 0). The decision, the thread's head line
and the incident card say the job already had its node's whole memory, and what is sound:
nodes with more memory, less host memory, and after a steady leak, finding what grows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slack_standin import validate_blocks

from bot.cli import main
from bot.config import PolicyConfig
from bot.core.catalogue import Catalogue
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import ChainHistory, Decision, DecisionKind, PolicyParams, decide
from bot.core.units import GIB
from bot.slack.render import render_template

NOW = 1_747_000_000.0
LEAK = {"slope_gib_per_100_iter": 12.0, "start_iter": 0, "start_gib": 40.0}
WHOLE_NODE = Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9, mem_limit_bytes=0,
                        max_rss_bytes=118 * GIB)


def host_oom(**kw: object) -> Diagnosis:
    cls = Catalogue.load().classes["host_oom"]
    return Diagnosis(class_id="host_oom", action=cls.action, retryable=cls.retryable,
                     charges_budget=cls.charges_budget, hint=cls.hint,
                     metrics=DiagnosisMetrics(last_iter=670, target_iter=1200), **kw)  # type: ignore[arg-type]


def whole_node_decision() -> Decision:
    """The decision on a plain host OOM of a --mem=0 job, under a policy without auto-resubmit."""
    return decide(host_oom(), ChainHistory(attempts=()), PolicyParams(auto_resubmit=False),
                  NOW, checkpoint_iter=500, accounting=WHOLE_NODE)


@pytest.mark.parametrize("policy", [PolicyParams(auto_resubmit=False),
                                    PolicyConfig(max_mem="512G")])
@pytest.mark.parametrize("leak", [None, LEAK])
def test_a_host_oom_with_mem_0_proposes_no_mem(policy, leak) -> None:
    """Before: with a site cap and a leak, --mem=130G (below the node's memory) was proposed
    against "limit 0 B"; without, the limit was said unknown."""
    dec = decide(host_oom(leak_fit=leak), ChainHistory(attempts=()), policy, NOW,
                 checkpoint_iter=500, accounting=WHOLE_NODE)
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None
    assert "resubmit_mem" not in dec.offers
    assert dec.facts["why"] == "mem_whole_node"
    assert "with --mem=0, already all of its node's memory" in dec.reason
    assert "unknown" not in dec.reason and "0 B" not in dec.reason
    assert ("trainbot probe dataloader" in dec.reason) is (leak is not None)


def incident_view(dec: Decision, hint: str = "") -> dict:
    """The `event` template's view of job 9001's incident decided `dec`, the class's `hint`."""
    return {"kind": "incident", "prompt": False, "text_only": False, "job_id": "9001",
            "cluster": "dev", "state": "OUT_OF_MEMORY", "class_id": "host_oom", "hint": hint,
            "detail": None, "translations": {}, "site_hint": False, "facts": {},
            "text": "job 9001", "card": {},
            "reason": {"kind": str(dec.kind), "class_id": "host_oom", **dec.facts}}


HEAD = {
    "en": ("host memory exhausted with --mem=0, already all of its node's memory: no --mem "
           "gives it more; run it on nodes with more memory, or cut host memory."),
    "ko": ("호스트 메모리 부족: --mem=0으로 이미 노드의 메모리 전부를 쓰고 있어 --mem을 더 늘릴 수 "
           "없습니다. 메모리가 더 큰 노드에서 실행하거나 호스트 메모리 사용량을 줄이세요."),
}


@pytest.mark.parametrize("lang", HEAD)
def test_the_head_line_says_the_job_had_its_nodes_whole_memory(lang: str) -> None:
    view = incident_view(whole_node_decision())
    assert HEAD[lang] in render_template("event", lang, view)["text"]


def _log(path: Path, leak: bool) -> Path:
    """Host RSS 40 GiB (+ 12 GiB per 100 iterations when `leak`), a checkpoint at 500,
    OOM-killed at 670."""
    lines = []
    for k, i in enumerate(range(0, 671, 10)):
        t = 45 * k
        rss = 40 + 0.12 * i if leak else 40.0
        lines.append(f"2025-05-14 {10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d} | INFO "
                     f"| iter: {i}/1200 | loss: 0.9 | 4.50 s/iter | rss: {rss:.1f} GiB")
        if i == 500:
            lines.append("2025-05-14 12:43:00 | INFO | Saving checkpoint at iteration 500")
            lines.append("2025-05-14 12:43:30 | INFO | Saved checkpoint at iteration 500")
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=9001.0. Some of the "
                 "step tasks have been OOM Killed.")
    path.write_text("\n".join(lines) + "\n")
    return path


def report_mem_0(tmp_path: Path, lang: str, leak: bool, config: str = "") -> Path:
    """`trainbot report --mem-limit 0` in `lang` of _log's job (OUT_OF_MEMORY, signal 9), its
    recipe `mix` on cluster `dev` and `config` (YAML) before them: the folder of its output."""
    path = tmp_path / "trainbot.yaml"
    path.write_text(config + "clusters: {dev: {host: h, user: u, key_file: /k}}\nrecipes:\n"
                    "  mix: {cluster: dev, sbatch_script: /s.sbatch}\n")
    out = tmp_path / "out"
    assert main(["report", str(_log(tmp_path / "9001.log", leak)), "--state", "OUT_OF_MEMORY",
                 "--exit-code", "0:9", "--mem-limit", "0", "--target-iter", "1200",
                 "--recipe", "mix", "--config", str(path), "--lang", lang,
                 "--out", str(out)]) == 0
    return out


CARD = {
    ("en", False): ("The job already had all of its node's memory (--mem=0), so no --mem gives "
                    "it more and none is proposed: run it on nodes with more memory, or cut "
                    "host memory."),
    ("ko", False): ("이 작업은 이미 노드의 메모리 전부(--mem=0)를 가졌으므로 --mem을 더 늘릴 수 "
                    "없어 제안하지 않습니다."),
    ("en", True): ("The job already had all of its node's memory (--mem=0), so no --mem gives "
                   "it more: run it on nodes with more than 130G, or find what grows."),
    ("ko", True): ("이 작업은 이미 노드의 메모리 전부(--mem=0)를 가졌으므로 --mem을 더 늘릴 수 "
                   "없습니다. 메모리가 130G보다 큰 노드에서 실행하거나"),
}


@pytest.mark.parametrize(("lang", "leak"), CARD)
def test_the_card_of_a_mem_0_job_offers_no_mem_and_says_why(tmp_path: Path, lang: str,
                                                            leak: bool) -> None:
    """`trainbot report --mem-limit 0` under a site cap of 512G: before, the leak's card
    proposed --mem=130G and the plain OOM's said the limit was unknown."""
    out = report_mem_0(tmp_path, lang, leak, config="policy: {max_mem: 512G}\n")
    payload = json.loads((out / "message.json").read_text())
    assert validate_blocks(payload["blocks"]) == []
    buttons = [e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert not any("mem" in e.get("action_id", "") for e in buttons)
    text = (out / "message.txt").read_text()
    assert CARD[lang, leak] in text, text
    assert "--mem=130G" not in text and "limit is unknown" not in text
    assert "한도를 알 수 없" not in text


WHOLE_NODE_HINT = {
    "en": ("Cut host memory: fewer DataLoader workers, smaller prefetch, save checkpoints "
           "without gathering on CPU."),
    "ko": ("호스트 메모리 사용을 줄이세요: DataLoader 워커 수와 prefetch를 줄이고, 체크포인트는 "
           "CPU로 gather하지 않고 저장하세요."),
}
MORE_MEM_HINT = {"en": "Resubmit with more --mem", "ko": "--mem을 늘려 재제출"}


@pytest.mark.parametrize("lang", HEAD)
def test_the_head_line_of_a_mem_0_job_gives_no_more_mem_hint(lang: str) -> None:
    """The class's hint ("Resubmit with more --mem …") followed the sentence that no --mem
    gives the job more; a whole-node job is told to cut host memory instead."""
    cls = Catalogue.load().classes["host_oom"]
    dec = whole_node_decision()
    assert "more --mem" not in dec.reason and WHOLE_NODE_HINT["en"] in dec.reason
    view = incident_view(dec, cls.hint)
    text = render_template("event", lang, view)["text"]
    assert HEAD[lang] in text and WHOLE_NODE_HINT[lang] in text, text
    assert MORE_MEM_HINT[lang] not in text, text
    # a site's own hint for the class is still said
    site = render_template("event", lang, {**view, "hint": "Ask #hpc-help.", "site_hint": True})
    assert "Ask #hpc-help." in site["text"]


@pytest.mark.parametrize("lang", HEAD)
def test_the_card_of_a_mem_0_job_gives_no_more_mem_hint(tmp_path: Path, lang: str) -> None:
    out = report_mem_0(tmp_path, lang, leak=False)
    text = (out / "message.txt").read_text()
    assert CARD[lang, False] in text, text
    assert MORE_MEM_HINT[lang] not in text, text
