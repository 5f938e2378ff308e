"""Run every public Slurm sample in ../shared/slurm-samples through trainbot's parsers and
compare with the values its `.src` file (and the sample itself) states. A tool, not a CI test:
a fresh clone has no ../shared.

    .venv/bin/python tests/support/check_slurm_samples.py [SAMPLES_DIR]

Each sample is converted to the output trainbot asks Slurm for when it was captured in another
shape (a `^|^` or `☃` delimiter, other columns, fixed width), parsed, and checked. A sample with
no stated value is still parsed (it must not crash) and listed as "parsed". Exit 0 when every
check holds, 1 otherwise, 2 when the folder is missing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import subprocess  # noqa: E402

from bot.core.slurm.records import JobRecord  # noqa: E402
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable  # noqa: E402
from bot.core.slurm.squeue import parse_squeue_json  # noqa: E402
from bot.core.slurm.sstat import StepMemory, parse_sstat  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KiB, MiB, GiB = 1024, 1024**2, 1024**3

# ---- converters: a sample's text -> what trainbot's parsers read ----------------------------


def _delimited(text: str, sep: str, fields: list[str]) -> str:
    """`sep`-separated rows with these columns as sacct --parsable2 with a header, the job id
    first and JobName (if any) last, as trainbot asks for them."""
    ids = [f for f in ("JobIDRaw", "JobID") if f in fields]
    order = ids + [f for f in fields if f not in {"JobName", *ids}] + (
        ["JobName"] if "JobName" in fields else [])
    lines = ["|".join(order)]
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        values = dict(zip(fields, line.split(sep), strict=False))
        lines.append("|".join(values.get(f, "") for f in order))
    return "\n".join(lines) + "\n"


REPORTSEFF = ["AdminComment", "AllocCPUS", "Elapsed", "JobID", "JobIDRaw", "MaxRSS", "NNodes",
              "NTasks", "ReqMem", "State", "Timelimit", "TotalCPU"]
HBJOBINFO = ["JobID", "JobName", "User", "Partition", "NodeList", "NNodes", "NCPUS", "NTasks",
             "State", "Submit", "Start", "End", "Timelimit", "Elapsed", "TotalCPU", "CPUTime",
             "UserCPU", "SystemCPU", "ReqMem", "MaxRSS", "MaxVMSize", "ReqTRES", "AllocTRES"]


def reportseff(text: str, fields: list[str] = REPORTSEFF) -> dict[int, JobRecord]:
    rows = [line.removeprefix("^|^").removesuffix("^|^") for line in text.splitlines()]
    return parse_sacct_parsable(_delimited("\n".join(rows), "^|^", fields[1:]))


def reportseff_energy(text: str) -> dict[int, JobRecord]:
    # the energy TRES column sits between State and Timelimit in this capture
    fields = [*REPORTSEFF[:10], "Energy", *REPORTSEFF[10:]]
    return reportseff(text, fields)


def reportseff_fixtures(text: str) -> dict[int, JobRecord]:
    fields = [f for f in REPORTSEFF if f != "NTasks"]
    return parse_sacct_parsable(_delimited(text, "|", fields))


def hbjobinfo_sacct(text: str) -> dict[int, JobRecord]:
    return parse_sacct_parsable(_delimited(text, "☃", HBJOBINFO))


def hbjobinfo_sstat(text: str) -> dict[int, StepMemory]:
    out = []
    for line in text.splitlines():
        f = line.split("|")
        if len(f) > 10:  # JobID,NTasks,MaxRSS,…,MaxRSSNode(9),MaxRSSTask(10)
            out.append("|".join([f[0], f[2], "", f[9], f[10], f[1]]))
    return parse_sstat("\n".join(out) + "\n")


def firecrest_parsable(text: str) -> dict[int, JobRecord]:
    doc = json.loads(text)
    fields = ["JobID", "AllocNodes", "Cluster", "ExitCode", "Group", "Account", "JobName",
              "NodeList", "Partition", "Priority", "State", "Reason", "ElapsedRaw", "Submit",
              "Start", "End", "Suspended", "TimelimitRaw", "User", "WorkDir"]
    return parse_sacct_parsable(_delimited(doc["stdout"], "|", fields))


def brief_sacct(text: str) -> dict[int, JobRecord]:
    return parse_sacct_parsable(_delimited(text, "|", ["JobID", "State", "ExitCode"]))


def fixed_width_sacct(text: str) -> dict[int, JobRecord]:
    rows = [line.split() for line in text.splitlines()
            if line[:1].isdigit()]  # skip the prompt, header and ruler
    return parse_sacct_parsable(_delimited(
        "\n".join("|".join(r) for r in rows), "|", ["JobID", "JobName", "State", "ExitCode"]))


def headed_sacct(text: str) -> dict[int, JobRecord]:
    header, *rows = [line for line in text.splitlines() if line.strip()]
    return parse_sacct_parsable(_delimited("\n".join(rows), "|", header.split("|")))


PARSERS: dict[str, Callable[[str], Mapping[int, Any]]] = {
    "firecrest-22.05-dbv0038-slurmdb-job.json": parse_sacct_json,
    "firecrest-sacct-parsable2.json": firecrest_parsable,
    "firecrest-slurm-get-job.json": parse_squeue_json,
    "hbjobinfo-sacct.txt": hbjobinfo_sacct,
    "hbjobinfo-sstat.txt": hbjobinfo_sstat,
    "jz-23.02-v0039-squeue.json": parse_squeue_json,
    "martius-issue87-sacct-P.txt": headed_sacct,
    "reportseff-console-jobs.txt": reportseff,
    "reportseff-energy-array.txt": reportseff_energy,
    "reportseff-fixtures.txt": reportseff_fixtures,
    "reportseff-issue16-multistep.txt": reportseff,
    "reportseff-issue58-timeout.txt": reportseff,
    "rivos-21.08-v0037-squeue.json": parse_squeue_json,
    "submitit-test-read-info.txt": headed_sacct,
    "ucloud-issue70-sacct-bPn.txt": brief_sacct,
    "vcell-23.11-sacct-cancelled-by-user.txt": headed_sacct,
    "vcell-23.11-sacct-json-multistep.json": parse_sacct_json,
    "vcell-23.11-sacct-multistep-running.txt": headed_sacct,
    "vcell-23.11-sacct-terminal-states.txt": headed_sacct,
    "xingyu-issue9-sacct-fixed.txt": fixed_width_sacct,
}
for _name in ("sarc-sacct-21_8_8", "sarc-sacct-22_5_9", "sarc-sacct-23_11_5", "sarc-sacct-23_2_6"):
    PARSERS[f"{_name}.json"] = parse_sacct_json
for _rel in ("23.11-v0040", "24.05-v0041", "24.11-v0042", "25.05-v0043"):
    PARSERS[f"slurmweb-{_rel}-slurm-jobs.json"] = parse_squeue_json
    for _kind in ("completed", "failed", "pending", "running", "timeout"):
        PARSERS[f"slurmweb-{_rel}-slurmdb-job-{_kind}.json"] = parse_sacct_json

# ---- what each sample (and its .src) states: sample -> job id -> field -> value -------------

EXPECTED: dict[str, dict[int, dict[str, Any]]] = {
    # --mem=0 / unset required memory: allocated TRES mem 1000 is MiB
    "firecrest-22.05-dbv0038-slurmdb-job.json": {42: {"state": "COMPLETED",
                                                      "mem_limit_bytes": 1000 * MiB}},
    # .src: 16 allocated CPUs vs 8 tasks, mem 120000M = 15000 MiB x 8 requested CPUs
    "jz-23.02-v0039-squeue.json": {1618871: {"state": "RUNNING",
                                             "mem_limit_bytes": 120000 * MiB}},
    # .src: the job dies from SIGHUP in the srun step; the job row says COMPLETED 0:0
    "martius-issue87-sacct-P.txt": {239023: {"state": "COMPLETED", "exit_code": 0,
                                             "signal": 0}},
    # .src: array 37403870_[1-4], JobIDRaw differs from JobID, ReqMem 32000M
    "reportseff-energy-array.txt": {37403937: {"state": "COMPLETED",
                                               "mem_limit_bytes": 32000 * MiB,
                                               "max_rss_bytes": 6300 * KiB}},
    "reportseff-fixtures.txt": {8189521: {"state": "CANCELLED", "cancelled_by": 129276,
                                          "mem_limit_bytes": 112000 * MiB,
                                          "max_rss_bytes": 29036860 * KiB}},
    "reportseff-issue16-multistep.txt": {65638294: {"state": "COMPLETED",
                                                    "max_rss_bytes": 8074500 * KiB}},
    # .src: exit 127
    "ucloud-issue70-sacct-bPn.txt": {1655360: {"state": "FAILED", "exit_code": 127}},
    # .src: TIMEOUT job row, .batch CANCELLED with MaxRSS 19855760K; ReqMem 40G
    "reportseff-issue58-timeout.txt": {1234: {"state": "TIMEOUT",
                                              "max_rss_bytes": 19855760 * KiB,
                                              "mem_limit_bytes": 40 * GiB}},
    # 2-node job: AllocTRES mem=32G,node=2 is 16G per node (its .batch step has mem=16G)
    "hbjobinfo-sacct.txt": {7818766: {"state": "COMPLETED", "mem_limit_bytes": 16 * GiB},
                            7965768: {"state": "CANCELLED", "cancelled_by": 10314909,
                                      "mem_limit_bytes": 10 * GiB,
                                      "max_rss_bytes": 1294440 * KiB}},
    "hbjobinfo-sstat.txt": {8322515: {"max_rss_bytes": 136160 * KiB, "step": "batch"}},
    # .src: truncated step id 2681683_420+
    "xingyu-issue9-sacct-fixed.txt": {2681683: {"state": "FAILED", "exit_code": 1}},
    "vcell-23.11-sacct-terminal-states.txt": {2699101: {"state": "TIMEOUT"},
                                              2699102: {"state": "OUT_OF_MEMORY"},
                                              2699103: {"state": "NODE_FAIL"},
                                              2699104: {"state": "FAILED"}},
    # 4 nodes, --mem=64G: allocated TRES mem 262144 MiB over node=4
    "sarc-sacct-22_5_9.json": {20247445: {"state": "FAILED", "mem_limit_bytes": 64 * GiB}},
    # squeue --json of 21.08 (v0.0.37)
    "rivos-21.08-v0037-squeue.json": {26515966: {"state": "RUNNING",
                                                 "mem_limit_bytes": int(62.5 * GiB)},
                                      58948420: {"state": "PENDING", "reason": "Dependency",
                                                 "mem_limit_bytes": 128 * GiB}},
    "slurmweb-23.11-v0040-slurm-jobs.json": {
        776: {"state": "TIMEOUT", "signal": 15},
        778: {"state": "FAILED", "exit_code": 1},
        779: {"mem_limit_bytes": 16 * GiB},
        787: {"state": "PENDING", "mem_limit_bytes": 32 * GiB},  # 2 nodes, 64G requested
    },
    "slurmweb-23.11-v0040-slurmdb-job-failed.json": {510: {"state": "FAILED", "exit_code": 1,
                                                           "mem_limit_bytes": 512 * MiB}},
    "slurmweb-24.05-v0041-slurmdb-job-pending.json": {649730: {"state": "PENDING",
                                                               "mem_limit_bytes": 32 * GiB}},
    "slurmweb-24.11-v0042-slurmdb-job-completed.json": {6362: {"state": "COMPLETED",
                                                               "mem_limit_bytes": 16 * GiB}},
    "slurmweb-24.11-v0042-slurmdb-job-failed.json": {6359: {"state": "FAILED",
                                                            "exit_code": 1}},
    "slurmweb-25.05-v0043-slurm-jobs.json": {
        4732: {"state": "FAILED", "exit_code": 1},
        4734: {"state": "RUNNING", "mem_limit_bytes": 64 * GiB // 3},  # 3 nodes
        4743: {"state": "PENDING", "mem_limit_bytes": 32 * GiB},  # 2 nodes requested
        4731: {"stdout_path": "/home/progers/slurm-4731.out"},
    },
}


def check(folder: Path) -> int:
    failures = 0
    for sample in sorted(p for p in folder.iterdir() if p.suffix != ".src"):
        src = sample.with_name(sample.name + ".src")
        version = next((line.split(":", 1)[1].strip() for line in src.read_text().splitlines()
                        if line.startswith("slurm_version:")), "?") if src.exists() else "?"
        parser = PARSERS.get(sample.name)
        if parser is None:
            print(f"skip   {sample.name} (Slurm {version}): no trainbot parser reads this output")
            continue
        try:
            parsed = parser(sample.read_text())
        except Exception as exc:  # noqa: BLE001 - the tool reports any crash as a failure
            failures += 1
            print(f"FAIL   {sample.name} (Slurm {version}): {type(exc).__name__}: {exc}")
            continue
        stated = EXPECTED.get(sample.name, {})
        wrong = []
        for job_id, values in stated.items():
            record = parsed.get(job_id)
            if record is None:
                wrong.append(f"job {job_id} missing")
                continue
            for field, want in values.items():
                got = getattr(record, field)
                if got != want:
                    wrong.append(f"job {job_id} {field}: got {got!r}, stated {want!r}")
        checked = sum(len(v) for v in stated.values())
        if wrong:
            failures += 1
            print(f"FAIL   {sample.name} (Slurm {version}): " + "; ".join(wrong))
        elif checked:
            print(f"ok     {sample.name} (Slurm {version}): {len(parsed)} job(s), "
                  f"{checked} stated value(s) match")
        else:
            print(f"parsed {sample.name} (Slurm {version}): {len(parsed)} job(s), "
                  "no value stated")
    print("all stated values match" if not failures else f"{failures} sample(s) FAILED")
    return 1 if failures else 0


def default_folder() -> Path:
    """../shared/slurm-samples beside the checkout (for a git worktree: beside the main one)."""
    common = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--git-common-dir"],
                            capture_output=True, text=True, check=False).stdout.strip()
    main_checkout = (REPO / common).resolve().parent if common else REPO
    for root in (REPO, main_checkout):
        if (root.parent / "shared" / "slurm-samples").is_dir():
            return root.parent / "shared" / "slurm-samples"
    return REPO.parent / "shared" / "slurm-samples"


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else default_folder()
    if not folder.is_dir():
        print(f"no samples folder at {folder} (it is ../shared/slurm-samples beside the "
              "repository)", file=sys.stderr)
        return 2
    return check(folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
