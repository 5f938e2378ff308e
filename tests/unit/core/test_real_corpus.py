"""The real-log corpus as a whole: its splits, their sources, and `trainbot diagnose`'s
accuracy on the tuned split held to the figure bench/score_real_logs.py recorded. The held-out
splits (tests/fixtures/real/heldout*/, one per blind collection) may be absent; their logs are
never listed here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.bench import load_bench

from bot.core.catalogue import Catalogue

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "fixtures" / "real"
HELD_OUT = sorted(d for d in REAL.glob("heldout*") if d.is_dir())
_SOURCE = re.compile(r"^# (?:source|derived from):? (\S+) (https?://\S+?):?(?:\s|$)")


@pytest.fixture(scope="module")
def scorer():
    return load_bench("score_real_logs")


def _source(path: Path) -> str:
    header = path.read_text(encoding="utf-8").partition("\n")[0]
    m = _SOURCE.match(header)
    assert m, f"{path.name}: first line must be '# source: owner/repo URL (...)'"
    return m.group(2)


def test_every_fixture_names_its_source_and_a_known_class() -> None:
    classes = set(Catalogue.load().classes) | {"none"}
    for path in sorted(REAL.glob("*.log")) + _held_out_logs():
        _source(path)
        assert path.name.split("__")[0] in classes, path.name


def _held_out_logs() -> list[Path]:
    return [p for d in HELD_OUT for p in sorted(d.glob("*.log"))]


def test_the_held_out_splits_share_no_source_with_the_tuned_one_or_each_other() -> None:
    tuned = {_source(p) for p in REAL.glob("*.log")}
    held = [_source(p) for p in _held_out_logs()]
    assert len(held) == len(set(held))
    assert not tuned & set(held)


def test_tuned_split_keeps_its_recorded_accuracy(scorer) -> None:
    recorded = json.loads((ROOT / "bench" / "real_logs_accuracy.json").read_text())["tuned"]
    results = scorer.score(scorer.fixture_paths("tuned"))
    correct, total = scorer.accuracy(results)
    misses = [f"{r.name}: {r.diagnosed}" for r in results if not r.correct]
    assert total >= recorded["total"]
    assert correct / total >= recorded["correct"] / recorded["total"], misses


def test_recorded_accuracies_are_the_ones_the_docs_state() -> None:
    recorded = json.loads((ROOT / "bench" / "real_logs_accuracy.json").read_text())
    for doc in (ROOT / "bench" / "README.md", ROOT / "README.md"):
        text = doc.read_text(encoding="utf-8")
        for split in recorded:
            r = recorded[split]
            figure = f"{r['correct']}/{r['total']}" if r["total"] else "held-out split: none yet"
            assert figure in text, (doc.name, split, figure)


def test_recording_keeps_a_held_out_splits_figures_from_its_collection(
        scorer, tmp_path: Path, monkeypatch) -> None:
    """A held-out split's recorded figures are the ones measured when it was collected,
    blind; a later `--record` (after catalogue fixes that read its misses) keeps them and
    writes only the tuned split's."""
    at_collection = {"correct": 1, "total": 77, "grep_correct": 0}
    path = tmp_path / "accuracy.json"
    path.write_text(json.dumps({"heldout": at_collection, "tuned": {"correct": 0, "total": 1}}))
    monkeypatch.setattr(scorer, "RECORDED", path)
    assert scorer.main(["--split", "all", "--record"]) == 0
    recorded = json.loads(path.read_text())
    assert recorded["heldout"] == at_collection
    assert recorded["tuned"]["total"] == len(scorer.fixture_paths("tuned"))


def test_scorer_accepts_an_empty_or_absent_split(scorer, tmp_path: Path, monkeypatch,
                                                  capsys) -> None:
    monkeypatch.setitem(scorer.SPLITS, "heldout", tmp_path / "absent")
    assert scorer.fixture_paths("heldout") == []
    assert scorer.accuracy(scorer.score([])) == (0, 0)
    monkeypatch.setattr(scorer, "RECORDED", tmp_path / "accuracy.json")
    assert scorer.main(["--split", "heldout", "--record"]) == 0
    assert "heldout  no logs" in capsys.readouterr().out
    assert json.loads((tmp_path / "accuracy.json").read_text())["heldout"]["total"] == 0


def test_scorer_reads_the_label_from_the_name_and_drops_the_source_line(scorer,
                                                                         tmp_path: Path) -> None:
    log = tmp_path / "gpu_failure__example-1.log"
    log.write_text("# source: a/b https://example.org/1 (x)\n"
                   "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    (result,) = scorer.score([log])
    assert (result.label, result.diagnosed, result.correct) == ("gpu_failure", "gpu_failure",
                                                                True)
    assert scorer.body_of(log).startswith(b"RuntimeError")


def test_corpus_size_and_what_it_covers() -> None:
    tuned = sorted(REAL.glob("*.log"))
    held = sorted((REAL / "heldout").glob("*.log"))
    assert len(tuned) >= 152
    assert len({_source(p) for p in tuned + held}) >= 145  # one source per log (few variants)
    classes = {p.name.split("__")[0] for p in tuned}
    assert set(Catalogue.load().classes) - classes <= {"hang", "memory_leak", "silent_exit"}
    bodies = {p.name: p.read_text(encoding="utf-8").partition("\n")[2] for p in tuned + held}
    rank_prefix = re.compile(r"^\[rank[0-9]+\]:", re.M)
    mpi_prefix = re.compile(r"^\[[0-9]+,[0-9]+\]<std(?:out|err)>:", re.M)
    assert any(rank_prefix.search(b) for b in bodies.values())
    assert any(mpi_prefix.search(b) for b in bodies.values()) or any(
        "<stderr>" in b for b in bodies.values())
    assert any("\x1b[" in b or "[36m" in b for b in bodies.values())  # colours
    assert any(n.endswith("-wrapped.log") for n in bodies)  # hard-wrapped lines
    # a decisive line far from the end: progress printed after the time limit
    assert "DUE TO TIME LIMIT" in bodies["time_limit__lightning-20542.log"].split("\n")[3]
    # root cause and downstream symptom in one log: the ECC error, then the NCCL watchdog
    assert "NCCL watchdog" in bodies["gpu_failure__sd-scripts-1434.log"]


def _manifest_rows(manifest: Path) -> dict[str, tuple[str, str]]:
    return {} if not manifest.exists() else {
        m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
            r"^\| `([^`]+\.log)` \| `([a-z_]+)` \| (\S+) \| \S", manifest.read_text("utf-8"),
            re.M)}


@pytest.mark.parametrize("split", HELD_OUT, ids=lambda d: d.name)
def test_each_held_out_manifest_lists_every_log_with_its_label_source_and_rating(
        split: Path, scorer) -> None:
    """A held-out split's LABELS.md records why each log has its label, and whether that
    label is `clear` or `doubtful` (the scorer's second figure is over the clear ones)."""
    held = sorted(split.glob("*.log"))
    rows = _manifest_rows(split / "LABELS.md")
    assert set(rows) == {p.name for p in held}
    for path in held:
        assert rows[path.name] == (path.name.split("__")[0], _source(path)), path.name
    clear = scorer.clear_names(split.name)
    assert clear is not None and clear <= set(rows)
    rated = len(re.findall(r"\| (?:clear|doubtful) \|\s*$", (split / "LABELS.md").read_text(
        "utf-8"), re.M))
    assert rated == len(held), "every row ends in | clear | or | doubtful |"


def test_the_scorer_gives_a_held_out_split_s_clear_figure(scorer, tmp_path: Path,
                                                            monkeypatch, capsys) -> None:
    split = tmp_path / "heldout-9"
    split.mkdir()
    for name, body in (("cuda_oom__a-b-1.log", "torch.cuda.OutOfMemoryError: CUDA out of memory."),
                       ("host_oom__a-b-2.log", "Epoch 1 step 5 loss 0.3")):
        (split / name).write_text(f"# source: a/b https://example.org/{name} (x)\n{body}\n")
    (split / "LABELS.md").write_text(
        "| `cuda_oom__a-b-1.log` | `cuda_oom` | https://example.org/1 | why | clear |\n"
        "| `host_oom__a-b-2.log` | `host_oom` | https://example.org/2 | why | doubtful |\n")
    monkeypatch.setitem(scorer.SPLITS, "heldout-9", split)
    monkeypatch.setattr(scorer, "RECORDED", tmp_path / "accuracy.json")
    assert scorer.main(["--split", "heldout-9", "--record"]) == 0
    assert "rated clear: 1/1" in capsys.readouterr().out
    assert json.loads((tmp_path / "accuracy.json").read_text())["heldout-9"] == {
        "correct": 1, "total": 2, "grep_correct": 1, "clear_correct": 1, "clear_total": 1}


def test_a_held_out_split_with_recorded_endings_is_scored_with_them_too(
        scorer, tmp_path: Path, monkeypatch, capsys) -> None:
    """A split whose LABELS.md records how each process ended (from its thread) gets a
    second figure: the log plus that ending as the sacct facts a watcher would have. A log
    that ends in progress is `none` alone, and what its ending makes it with the ending."""
    split = tmp_path / "heldout-9"
    split.mkdir()
    rows = (("cuda_oom__a-b-1.log", "torch.cuda.OutOfMemoryError: CUDA out of memory.",
             "unknown", "clear"),
            ("completed__a-b-2.log", "Epoch 3 step 90 loss 0.3", "exit 0", "clear"),
            ("unknown_failure__a-b-3.log", "Epoch 1 step 5 loss 0.3", "exit 2", "doubtful"),
            ("hang__a-b-4.log", "Epoch 2 step 40 loss 0.3", "running", "clear"))
    for name, body, _, _ in rows:
        (split / name).write_text(f"# source: a/b https://example.org/{name} (x)\n{body}\n")
    (split / "LABELS.md").write_text("".join(
        f"| `{name}` | `{name.split('__')[0]}` | https://example.org/{name} | why | {ending} "
        f"| {rating} |\n" for name, _, ending, rating in rows))
    monkeypatch.setitem(scorer.SPLITS, "heldout-9", split)
    monkeypatch.setattr(scorer, "RECORDED", tmp_path / "accuracy.json")
    assert scorer.main(["--split", "heldout-9", "--record", "--misses"]) == 0
    out = capsys.readouterr().out
    assert "with the thread's ending: 3/4 = 75.0 % (clear 2/3)" in out
    assert "completed__a-b-2.log: diagnosed none, with its ending completed" in out
    # The hang still running when copied is scored apart: a log cannot show its end.
    assert "rated clear, the run ended: 1/2 = 50.0 %" in out
    assert json.loads((tmp_path / "accuracy.json").read_text())["heldout-9"] == {
        "correct": 1, "total": 4, "grep_correct": 1, "clear_correct": 1, "clear_total": 3,
        "ending_correct": 3, "ending_clear_correct": 2,
        "clear_ended_correct": 1, "clear_ended_total": 2}


@pytest.mark.parametrize(("ending", "facts"), [
    ("exit 0", ("COMPLETED", 0, 0)), ("exit 1", ("FAILED", 1, 0)),
    ("signal KILL", ("FAILED", 0, 9)), ("signal SIGABRT", ("FAILED", 0, 6)),
    ("running", ("RUNNING", None, None))])
def test_a_thread_s_ending_is_the_sacct_facts_it_amounts_to(scorer, ending, facts) -> None:
    acct = scorer.accounting_of(ending)
    assert (acct.state, acct.exit_code, acct.signal) == facts


def test_an_unknown_or_malformed_ending_is_no_facts_or_an_error_naming_it(scorer) -> None:
    assert scorer.accounting_of("unknown") is None
    with pytest.raises(ValueError, match="FOO is not a signal name"):
        scorer.accounting_of("signal FOO")
    with pytest.raises(ValueError, match="'crashed' is not exit N"):
        scorer.accounting_of("crashed")


def test_the_tuned_manifest_rows_name_tuned_logs_with_their_label_and_source() -> None:
    """tests/fixtures/real/LABELS.md keeps the label reasons of the logs that came from a
    held-out split (and of later ones); every row names a tuned log, its label and source."""
    rows = _manifest_rows(REAL / "LABELS.md")
    assert len(rows) >= 53
    for name, row in rows.items():
        path = REAL / name
        assert path.exists(), name
        assert row == (name.split("__")[0], _source(path)), name
