"""Precision and recall of the launcher lint on real Slurm launchers, per check.

    .venv/bin/python bench/launcher_corpus.py [--dir DIR] [--mirrors /work/.mirror] [--show]

The labelled corpus is tests/fixtures/launchers/corpus/manifest.json: each launcher's public
source (repo, commit, path), its sha256, and labels decided by reading the script before any
lint run. The scripts are third-party code and are not committed: they are read from DIR
(default $TMPDIR/trainbot-launcher-corpus), filled from git mirrors of the source repositories
(`--mirrors`, one `<owner>+<name>/repo` git directory each) where a file is missing. A file
whose sha256 differs from the manifest is skipped and reported.

Scoring: every warn/fail finding of a check is true, false or unclear by the label of its line
(or the script's `*` label); an unlabelled line is false. Recall is over the labels marked
true: found when a warn/fail finding of that check names the line (any line for `*`). The
incident launchers in tests/fixtures/launchers (report_108687*.sbatch, the seed's
silent-exit pattern) are scored the same way as a second group.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.launcher_lint import lint_launcher  # noqa: E402

MANIFEST = ROOT / "tests" / "fixtures" / "launchers" / "corpus" / "manifest.json"
INCIDENT = {
    # the seed's silent-exit launcher and its fixed form: (file, labels)
    "report_108687.sbatch": {"empty_match_under_errexit": {"10": "true"}},
    "report_108687_fixed.sbatch": {},
    "flex_no_cc.sbatch": {"jit_without_cc": {"*": "true"}},
    "flex_with_cc.sbatch": {},
    "pointer_unchecked.sbatch": {"pointer_without_check": {"6": "true"}},
    "pointer_checked.sbatch": {},
}


def _from_mirror(mirrors: Path, entry: dict) -> bytes | None:
    git_dir = mirrors / entry["repo"].replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return None
    proc = subprocess.run(
        ["git", "-C", str(git_dir), "show", f"{entry['commit']}:{entry['path']}"],
        capture_output=True, check=False, timeout=60,
    )
    return proc.stdout if proc.returncode == 0 else None


def load_corpus(cache: Path, mirrors: Path | None) -> tuple[list[tuple[dict, str]], list[str]]:
    """(entry, script text) for every launcher whose bytes match the manifest; problems."""
    doc = json.loads(MANIFEST.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    out: list[tuple[dict, str]] = []
    problems: list[str] = []
    for entry in doc["launchers"]:
        path = cache / entry["id"]
        data = path.read_bytes() if path.exists() else None
        if data is None and mirrors is not None:
            data = _from_mirror(mirrors, entry)
            if data is not None:
                path.write_bytes(data)
        if data is None:
            problems.append(f"missing: {entry['id']} ({entry['source']})")
            continue
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            problems.append(f"sha256 differs: {entry['id']}")
            continue
        out.append((entry, data.decode("utf-8", errors="replace")))
    return out, problems


def _label(labels: dict, check: str, line: int | None) -> str:
    by_line = labels.get(check, {})
    if line is not None and str(line) in by_line:
        return by_line[str(line)]
    return by_line.get("*", "false")


def score(items: list[tuple[str, dict, str]], show: bool) -> dict[str, dict[str, int]]:
    """Per check: fired / true / false / unclear counts and recall over true labels."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for name, labels, text in items:
        findings = [f for f in lint_launcher(text) if f.level in ("warn", "fail")]
        for f in findings:
            verdict = _label(labels, f.check, f.line)
            row = table[f.check]
            row["fired"] += 1
            row[f"fired_{f.level}"] += 1
            row[verdict] += 1
            if show:
                print(f"  [{verdict}] {name} L{f.line} {f.check} {f.level}: {f.message[:150]}")
        for check, by_line in labels.items():
            for key, verdict in by_line.items():
                if verdict != "true":
                    continue
                table[check]["labelled_true"] += 1
                if any(f.check == check and (key == "*" or str(f.line) == key)
                       for f in findings):
                    table[check]["found"] += 1
    return table


def _print(title: str, table: dict[str, dict[str, int]]) -> None:
    print(f"\n{title}\n")
    print("| check | fired (warn/fail) | true | false | unclear | precision | recall |")
    print("|---|---|---|---|---|---|---|")
    for check in sorted(table):
        r = table[check]
        judged = r["true"] + r["false"]
        precision = f"{100 * r['true'] / judged:.0f} %" if judged else "n/a (no true/false)"
        recall = (f"{r['found']}/{r['labelled_true']}" if r["labelled_true"] else "n/a")
        print(f"| `{check}` | {r['fired']} ({r['fired_warn']}/{r['fired_fail']}) | {r['true']} | "
              f"{r['false']} | {r['unclear']} | {precision} | {recall} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "trainbot-launcher-corpus")
    parser.add_argument("--mirrors", type=Path, default=None,
                        help="directory of <owner>+<name>/repo git mirrors to fill the cache")
    parser.add_argument("--show", action="store_true", help="print every warn/fail finding")
    args = parser.parse_args()
    mirrors = args.mirrors or (Path(os.environ["TRAINBOT_MIRRORS"])
                               if "TRAINBOT_MIRRORS" in os.environ else None)
    corpus, problems = load_corpus(args.dir, mirrors)
    for p in problems:
        print(p, file=sys.stderr)
    real = [(e["id"], e["labels"], text) for e, text in corpus]
    _print(f"Real launchers: {len(real)} of {len(corpus) + len(problems)} in the manifest",
           score(real, args.show))
    fixtures = ROOT / "tests" / "fixtures" / "launchers"
    incident = [(n, labels, (fixtures / n).read_text()) for n, labels in INCIDENT.items()]
    _print("Incident launchers (tests/fixtures/launchers)", score(incident, args.show))


if __name__ == "__main__":
    main()
