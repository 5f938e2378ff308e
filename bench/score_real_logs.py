"""Accuracy of `trainbot diagnose` on the real-log corpus (tests/fixtures/real), per split.

    .venv/bin/python bench/score_real_logs.py [--split tuned|heldout|heldout-6|...|all]
                                              [--misses] [--record]

Each fixture is an excerpt of a public log; its file name starts with the class decided from
the thread's own conclusion (`gpu_failure__sd-scripts-1434.log`), its first line names the
source. `tests/fixtures/real/*.log` is the tuned split (the catalogue is tuned on it); every
directory `tests/fixtures/real/heldout*/` is a held-out split, one per blind collection
(never tuned on: score it, do not fit patterns to its misses, do not read its logs; none may
exist yet). A held-out split's `LABELS.md` rates each label `clear` or `doubtful` (decided
before the first score), and the score is given over the `clear` rows too. A log is
diagnosed as `trainbot diagnose LOG --json` does with no sacct flags (the log alone). Beside
it, a naive first-match grep: the class of the first line matching any catalogue primary
pattern, `none` when no line does.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.catalogue.scanner import normalize_line  # noqa: E402
from bot.core.diagnose import analyze_file  # noqa: E402

REAL = ROOT / "tests" / "fixtures" / "real"
#: The tuned split, then each held-out split by its directory's name (`heldout`, `heldout-6`).
SPLITS = {"tuned": REAL} | {d.name: d for d in sorted(REAL.glob("heldout*")) if d.is_dir()}
_CONFIDENCE = re.compile(r"^\| `([^`]+\.log)` \|.*\| (clear|doubtful) \|\s*$", re.M)
#: What the last run of this script measured (the tests hold the tuned split to it).
RECORDED = ROOT / "bench" / "real_logs_accuracy.json"


@dataclass(frozen=True)
class Scored:
    name: str
    label: str
    diagnosed: str
    grep: str

    @property
    def correct(self) -> bool:
        return self.diagnosed == self.label


def fixture_paths(split: str) -> list[Path]:
    return sorted(SPLITS[split].glob("*.log"))


def clear_names(split: str) -> set[str] | None:
    """The logs a held-out split's LABELS.md rates `clear`; None when it rates none."""
    manifest = SPLITS[split] / "LABELS.md"
    rated = dict(_CONFIDENCE.findall(manifest.read_text("utf-8"))) if manifest.exists() else {}
    return {name for name, rating in rated.items() if rating == "clear"} if rated else None


def label_of(path: Path) -> str:
    return path.name.split("__", 1)[0]


def body_of(path: Path) -> bytes:
    """The log without its `# source:` line."""
    data = path.read_bytes()
    return data.split(b"\n", 1)[1] if b"\n" in data else b""


def first_match_grep(catalogue: Catalogue, text: str) -> str:
    regexes = [(cid, rx) for cid, fc in catalogue.classes.items() for rx in fc.primary]
    for line in text.split("\n"):
        norm = normalize_line(line)
        for cid, rx in regexes:
            if rx.search(norm):
                return cid
    return "none"


def score(paths: list[Path], catalogue: Catalogue | None = None) -> list[Scored]:
    cat = catalogue or Catalogue.load()
    out = []
    for p in paths:
        body = body_of(p)
        analysis = analyze_file(io.BytesIO(body), cat)
        diagnosis = analysis.diagnose()
        out.append(Scored(p.name, label_of(p), diagnosis.class_id,
                          first_match_grep(cat, body.decode("utf-8", "replace"))))
    return out


def accuracy(results: list[Scored]) -> tuple[int, int]:
    return sum(r.correct for r in results), len(results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    ap.add_argument("--misses", action="store_true", help="list the misclassified logs")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to bench/real_logs_accuracy.json")
    args = ap.parse_args(argv)
    cat = Catalogue.load()
    splits = list(SPLITS) if args.split == "all" else [args.split]
    recorded: dict[str, dict[str, int]] = {}
    for split in splits:
        results = score(fixture_paths(split), cat)
        ok, n = accuracy(results)
        grep_ok = sum(r.grep == r.label for r in results)
        recorded[split] = {"correct": ok, "total": n, "grep_correct": grep_ok}
        if not n:
            print(f"{split:8s} no logs")
            continue
        print(f"{split:8s} trainbot diagnose {ok}/{n} = {100 * ok / n:.1f} %   "
              f"first-match grep {grep_ok}/{n} = {100 * grep_ok / n:.1f} %")
        clear = clear_names(split) if split != "tuned" else None
        if clear is not None:
            c_ok, c_n = accuracy([r for r in results if r.name in clear])
            recorded[split] |= {"clear_correct": c_ok, "clear_total": c_n}
            print(f"{'':8s} rated clear: {c_ok}/{c_n} = {100 * c_ok / max(c_n, 1):.1f} %")
        if args.misses:
            for r in results:
                if not r.correct:
                    print(f"    {r.name}: diagnosed {r.diagnosed}")
    if args.record:  # a single split's run keeps the other split's recorded figures
        before = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
        RECORDED.write_text(json.dumps(before | recorded, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
