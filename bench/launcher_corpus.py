r"""Precision and recall of the launcher lint on real Slurm launchers, per check.

    .venv/bin/python bench/launcher_corpus.py [--dir DIR] [--mirrors DIR] [--show] [--json OUT]

The labelled corpus is tests/fixtures/launchers/corpus/manifest.json: each launcher's public
source (repo, commit, path), its sha256, and labels decided by reading the script before any
lint run. The scripts are third-party code and are not committed: they are read from DIR
(default $TMPDIR/trainbot-launcher-corpus), filled from git mirrors of the source repositories
(`--mirrors` or $TRAINBOT_MIRRORS, one `<owner>+<name>/repo` git directory each, bare or with a
work tree) where a file is missing. Without mirrors at hand, make them from GitHub:

    for r in $(.venv/bin/python bench/launcher_corpus.py --repos); do
      git clone --bare https://github.com/$r "$MIRRORS/${r/\//+}/repo"; done

A file whose sha256 differs from the manifest is skipped and reported.

Scoring: every warn/fail finding of a check is true, false or unclear by the label of its line
(or the script's `*` label); an unlabelled line is false. Recall is over the labels marked
true: found when a warn/fail finding of that check names the line (any line for `*`); a
missed one is listed with the level the lint gave it. Entries whose note starts with "held
out" were labelled after the checks were last changed and are also scored on their own. The
incident launchers in
tests/fixtures/launchers (report_108687*.sbatch, the seed's silent-exit pattern) are scored
the same way as a second group, as `trainbot preflight` shows them after a toolchain probe
that found no compiler on the node (the JIT incident, job 108903: from the script alone a JIT
use with no compiler in sight is only a note). `--json` writes both tables and every finding.
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

from bot.core.launcher_lint import after_toolchain_probe, lint_launcher  # noqa: E402

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
    if (git_dir / ".git").is_dir():
        git_dir = git_dir / ".git"  # a clone with a work tree
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


def score(items: list[tuple[str, dict, str]],
          no_compiler_probe: bool = False) -> tuple[dict[str, dict], list[dict]]:
    """Per check: fired (warn/fail) / true / false / unclear, precision and recall over the
    true labels; and every warn/fail finding and every missed true label, one row each.
    `no_compiler_probe` scores the findings as `trainbot preflight` shows them after a worker
    toolchain probe that found no compiler; the default is the lint alone. `notes` counts the
    informational (pass-level) notes a check gave, where a firing the script cannot decide
    goes."""
    table: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    rows: list[dict] = []
    for name, labels, text in items:
        findings = lint_launcher(text)
        if no_compiler_probe:
            findings = after_toolchain_probe(findings, False)
        alarms = [f for f in findings if f.level in ("warn", "fail")]
        for f in findings:
            table[f.check]["notes"] += f.level == "pass" and "note: " in f.message
        for f in alarms:
            verdict = _label(labels, f.check, f.line)
            row = table[f.check]
            row["fired"] += 1
            row[f"fired_{f.level}"] += 1
            row[verdict] += 1
            rows.append({"launcher": name, "check": f.check, "line": f.line, "level": f.level,
                         "verdict": verdict, "message": f.message})
        for check, by_line in labels.items():
            for key, verdict in by_line.items():
                if verdict != "true":
                    continue
                table[check]["labelled_true"] += 1
                if any(f.check == check and (key == "*" or str(f.line) == key) for f in alarms):
                    table[check]["found"] += 1
                    continue
                given = [f.level for f in findings
                         if f.check == check and (key == "*" or str(f.line) == key)]
                rows.append({"launcher": name, "check": check,
                             "line": None if key == "*" else int(key),
                             "level": given[0] if given else "none", "verdict": "missed",
                             "message": ""})
    for r in table.values():
        for key in ("fired", "fired_warn", "fired_fail", "true", "false", "unclear",
                    "labelled_true", "found", "notes"):
            r[key] += 0
        judged = r["true"] + r["false"]
        r["precision"] = round(r["true"] / judged, 3) if judged else None
        r["recall"] = round(r["found"] / r["labelled_true"], 3) if r["labelled_true"] else None
    return {c: dict(r) for c, r in sorted(table.items())}, rows


def _print(title: str, table: dict[str, dict], rows: list[dict], show: bool) -> None:
    if show:
        for r in rows:
            where = f"L{r['line']}" if r["line"] is not None else "*"
            print(f"  [{r['verdict']}] {r['launcher']} {where} {r['check']} {r['level']}: "
                  f"{r['message'][:150]}")
    print(f"\n{title}\n")
    print("| check | fired (warn/fail) | true | false | unclear | precision | recall | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for check, r in table.items():
        precision = (f"{100 * r['precision']:.0f} %" if r["precision"] is not None
                     else "n/a (no true/false)")
        recall = f"{r['found']}/{r['labelled_true']}" if r["labelled_true"] else "n/a"
        print(f"| `{check}` | {r['fired']} ({r['fired_warn']}/{r['fired_fail']}) | {r['true']} | "
              f"{r['false']} | {r['unclear']} | {precision} | {recall} | {r['notes']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "trainbot-launcher-corpus")
    parser.add_argument("--mirrors", type=Path, default=None,
                        help="directory of <owner>+<name>/repo git mirrors to fill the cache")
    parser.add_argument("--show", action="store_true",
                        help="print every warn/fail finding and every missed true label")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--repos", action="store_true",
                        help="list the repositories the corpus comes from, and stop")
    args = parser.parse_args()
    if args.repos:
        doc = json.loads(MANIFEST.read_text())
        print("\n".join(sorted({e["repo"] for e in doc["launchers"]})))
        return
    mirrors = args.mirrors or (Path(os.environ["TRAINBOT_MIRRORS"])
                               if "TRAINBOT_MIRRORS" in os.environ else None)
    corpus, problems = load_corpus(args.dir, mirrors)
    for p in problems:
        print(p, file=sys.stderr)
    real = [(e["id"], e["labels"], text) for e, text in corpus]
    real_table, real_rows = score(real)
    title = f"Real launchers: {len(real)} of {len(corpus) + len(problems)} in the manifest"
    _print(title, real_table, real_rows, args.show)
    held = [(e["id"], e["labels"], text) for e, text in corpus
            if e.get("note", "").startswith("held out")]
    held_table, _ = score(held)
    _print(f"Held out (labelled after the checks were last changed): {len(held)} of them",
           held_table, [], False)
    fixtures = ROOT / "tests" / "fixtures" / "launchers"
    incident = [(n, labels, (fixtures / n).read_text()) for n, labels in INCIDENT.items()]
    incident_table, incident_rows = score(incident, no_compiler_probe=True)
    _print("Incident launchers (tests/fixtures/launchers), as preflight shows them on a node "
           "whose toolchain probe found no compiler (job 108903)", incident_table,
           incident_rows, args.show)
    if args.json:
        args.json.write_text(json.dumps({
            "real": {"launchers": len(real), "missing": problems, "checks": real_table,
                     "findings": real_rows},
            "held_out": {"launchers": len(held), "checks": held_table},
            "incident": {"launchers": len(incident), "toolchain_probe": "no compiler",
                         "checks": incident_table,
                         "findings": incident_rows},
        }, indent=1) + "\n")


if __name__ == "__main__":
    main()
