"""The labelled real-launcher corpus (tests/fixtures/launchers/corpus/manifest.json) and its
scorer (bench/launcher_corpus.py): every entry names its public source exactly, every label is
one the scorer reads, and the scorer counts alarms, labels and misses as documented."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.bench import load_bench

from bot.core import launcher_lint

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "tests" / "fixtures" / "launchers" / "corpus" / "manifest.json"
CHECKS = {getattr(launcher_lint, name) for name in dir(launcher_lint) if name.startswith("CHECK_")}


@pytest.fixture(scope="module")
def scorer():
    return load_bench("launcher_corpus")


def test_every_entry_names_its_source_exactly():
    doc = json.loads(MANIFEST.read_text())
    ids = [e["id"] for e in doc["launchers"]]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 60
    for e in doc["launchers"]:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repo"]), e["id"]
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), e["id"]
        assert re.fullmatch(r"[0-9a-f]{64}", e["sha256"]), e["id"]
        assert e["source"] == f"https://github.com/{e['repo']}/blob/{e['commit']}/{e['path']}"


def test_every_label_is_one_the_scorer_reads_with_a_reason():
    doc = json.loads(MANIFEST.read_text())
    for e in doc["launchers"]:
        for check, by_line in e["labels"].items():
            assert check in CHECKS, (e["id"], check)
            for key, verdict in by_line.items():
                assert key == "*" or key.isdigit(), (e["id"], key)
                assert verdict in ("true", "false", "unclear"), (e["id"], verdict)
        if e["labels"]:
            assert e["note"].strip(), e["id"]


def test_scorer_counts_true_false_unclear_and_misses(scorer):
    head = "#!/bin/bash\nset -euo pipefail\n"
    fails = head + 'L=$(ls -d ckpt/step_* | tail -1)\nif [ -z "$L" ]; then echo new; fi\n'
    items = [
        ("labelled true", {"empty_match_under_errexit": {"3": "true"}}, fails),
        ("unlabelled", {}, fails),  # an unlabelled alarm counts as false
        ("unclear", {"empty_match_under_errexit": {"*": "unclear"}}, fails),
        ("missed", {"shebang": {"1": "true"}}, head),
    ]
    table, rows = scorer.score(items)
    empty = table["empty_match_under_errexit"]
    assert (empty["fired"], empty["true"], empty["false"], empty["unclear"]) == (3, 1, 1, 1)
    assert empty["precision"] == 0.5
    assert (empty["found"], empty["labelled_true"], empty["recall"]) == (1, 1, 1.0)
    assert table["shebang"]["labelled_true"] == 1 and table["shebang"]["found"] == 0
    assert table["shebang"]["recall"] == 0.0
    assert table["jit_without_cc"]["fired"] == 0  # every check is in the table
    missed = [r for r in rows if r["verdict"] == "missed"]
    assert missed == [{"launcher": "missed", "check": "shebang", "line": 1, "level": "pass",
                       "verdict": "missed", "message": ""}]


def test_scorer_reads_a_mirror_with_a_work_tree(scorer, tmp_path):
    work = tmp_path / "mirrors" / "someone+repo" / "repo"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "run.sbatch").write_text("#!/bin/bash\nsrun true\n")
    subprocess.run(["git", "-C", str(work), "add", "run.sbatch"], check=True)
    subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "x"], check=True)
    commit = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    entry = {"repo": "someone/repo", "commit": commit, "path": "run.sbatch"}
    assert scorer._from_mirror(tmp_path / "mirrors", entry) == b"#!/bin/bash\nsrun true\n"
