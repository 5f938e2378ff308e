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

A held-out split whose LABELS.md gives each row an `ending` column (how the process ended as
its thread shows or states it, recorded by the collector with the label: `exit 0`, `exit 1`,
`signal KILL`, `running`, `unknown`) is scored a second way, the log plus that ending passed as
the sacct facts the watcher would have (`accounting_of`): `exit N` -> COMPLETED/FAILED N:0,
`signal S` -> FAILED 0:S, `running` -> RUNNING, `unknown` -> none (the log alone). Such a
split is also scored over its `clear` rows whose run had ended when the log was copied (every
ending but `running`): what a log can decide, the figure held-out set 10 was registered for.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.catalogue.scanner import normalize_line  # noqa: E402
from bot.core.diagnose import analyze_file  # noqa: E402
from bot.core.models import Accounting  # noqa: E402

REAL = ROOT / "tests" / "fixtures" / "real"
#: The tuned split, then each held-out split by its directory's name (`heldout`, `heldout-6`).
SPLITS = {"tuned": REAL} | {d.name: d for d in sorted(REAL.glob("heldout*")) if d.is_dir()}
_CONFIDENCE = re.compile(r"^\| `([^`]+\.log)` \|.*\| (clear|doubtful) \|\s*$", re.M)
_ENDING = re.compile(
    r"^\| `([^`]+\.log)` \|.*\| `?(exit -?\d+|signal [A-Z]+|running|unknown)`? \| "
    r"(?:clear|doubtful) \|\s*$", re.M)
#: What the last run of this script measured (the tests hold the tuned split to it).
RECORDED = ROOT / "bench" / "real_logs_accuracy.json"


@dataclass(frozen=True)
class Scored:
    name: str
    label: str
    diagnosed: str
    grep: str
    #: The diagnosis with the thread's ending as accounting (None: the split records none).
    with_ending: str | None = None

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


def endings(split: str) -> dict[str, str]:
    """Each log's `ending` from a held-out split's LABELS.md (empty when it records none)."""
    manifest = SPLITS[split] / "LABELS.md"
    return dict(_ENDING.findall(manifest.read_text("utf-8"))) if manifest.exists() else {}


def accounting_of(ending: str) -> Accounting | None:
    """The sacct facts a thread's stated ending amounts to: `exit 0` -> COMPLETED 0:0,
    `exit N` -> FAILED N:0, `signal KILL` -> FAILED 0:9, `running` -> RUNNING; `unknown`
    -> None (the log alone). An unknown signal name is a ValueError naming it."""
    word, _, rest = ending.partition(" ")
    if word == "exit":
        code = int(rest)
        return Accounting(state="COMPLETED" if code == 0 else "FAILED", exit_code=code, signal=0)
    if word == "signal":
        try:
            number = signal.Signals[f"SIG{rest.removeprefix('SIG')}"].value
        except KeyError:
            raise ValueError(f"ending {ending!r}: {rest} is not a signal name (KILL, ABRT, "
                             "SEGV, TERM, ...)") from None
        return Accounting(state="FAILED", exit_code=0, signal=number)
    if word == "running":
        return Accounting(state="RUNNING")
    if word == "unknown":
        return None
    raise ValueError(f"ending {ending!r} is not exit N, signal NAME, running or unknown")


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


def score(paths: list[Path], catalogue: Catalogue | None = None,
          ending_of: dict[str, str] | None = None) -> list[Scored]:
    """Each log diagnosed alone and, when `ending_of` names its ending, with that ending too."""
    cat = catalogue or Catalogue.load()
    out = []
    for p in paths:
        body = body_of(p)
        analysis = analyze_file(io.BytesIO(body), cat)
        with_ending = None
        if ending_of is not None and p.name in ending_of:
            with_ending = analysis.diagnose(accounting_of(ending_of[p.name])).class_id
        out.append(Scored(p.name, label_of(p), analysis.diagnose().class_id,
                          first_match_grep(cat, body.decode("utf-8", "replace")), with_ending))
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
        ending_of = endings(split) if split != "tuned" else {}
        results = score(fixture_paths(split), cat, ending_of or None)
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
        if ending_of:
            e_ok = sum(r.with_ending == r.label for r in results)
            recorded[split] |= {"ending_correct": e_ok}
            line = f"{'':8s} with the thread's ending: {e_ok}/{n} = {100 * e_ok / n:.1f} %"
            if clear is not None:
                ec_ok = sum(r.with_ending == r.label for r in results if r.name in clear)
                recorded[split] |= {"ending_clear_correct": ec_ok}
                line += f" (clear {ec_ok}/{c_n})"
            print(line)
            if clear is not None:
                # A run still going or stuck when its log was copied cannot show its end:
                # the watcher decides it by the clock. The rest is what a log can decide.
                ended = [r for r in results
                         if r.name in clear and ending_of.get(r.name) != "running"]
                ce_ok, ce_n = accuracy(ended)
                recorded[split] |= {"clear_ended_correct": ce_ok, "clear_ended_total": ce_n}
                print(f"{'':8s} rated clear, the run ended: {ce_ok}/{ce_n} = "
                      f"{100 * ce_ok / max(ce_n, 1):.1f} %")
        if args.misses:
            for r in results:
                if not r.correct or r.with_ending not in (None, r.label):
                    also = f", with its ending {r.with_ending}" if r.with_ending else ""
                    print(f"    {r.name}: diagnosed {r.diagnosed}{also}")
    if args.record:  # a single split's run keeps the other split's recorded figures
        before = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
        # A held-out split's figures are the ones measured when it was collected, blind:
        # once recorded they stay (a re-score after fixes of its misses is no longer blind).
        kept = sorted(s for s in recorded if s != "tuned" and before.get(s, {}).get("total"))
        if kept:
            print(f"kept the figures recorded at collection for {', '.join(kept)}")
        fresh = {s: v for s, v in recorded.items() if s not in kept}
        RECORDED.write_text(json.dumps(before | fresh, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
