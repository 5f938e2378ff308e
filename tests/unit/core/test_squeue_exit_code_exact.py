"""squeue prints a job's exit status exactly, where `sacct --parsable2` prints one of 128 or
more less 128; where the bot reads both, squeue's settles which status sacct's code stands for.

The fixtures (tests/fixtures/slurm/exit137) are each dev cluster's real answers for a batch
shell that exited 137: squeue `-O exit_code` (22.05: the raw wait status `35072`; 24.11:
`137:0`), `squeue --json` (35072; return_code 137) and sacct -P (`9:0` on both).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import parse_sacct_parsable
from bot.core.slurm.squeue import parse_squeue_json, parse_squeue_parsable

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "exit137"
JOBS = {"22.05": 1710, "24.11": 1007}
RELEASES = sorted(JOBS)


def _read(release: str, name: str) -> str:
    return (FIXTURES / f"{release}-{name}").read_text()


def _squeue(release: str, json: bool) -> JobRecord:
    text = _read(release, "squeue.json" if json else "squeue.txt")
    records = parse_squeue_json(text) if json else parse_squeue_parsable(text)
    return records[JOBS[release]]


def _sacct(release: str) -> JobRecord:
    return parse_sacct_parsable(_read(release, "sacct.txt"))[JOBS[release]]


@pytest.mark.parametrize("json", [True, False], ids=["json", "parsable"])
@pytest.mark.parametrize("release", RELEASES)
def test_squeue_reads_a_shells_137_as_137_unmarked(release, json):
    record = _squeue(release, json)
    assert (record.state, record.exit_code, record.signal) == ("FAILED", 137, 0)
    assert not record.exit_code_mod_128
    assert record.accounting().exit_code_candidates == (137,)
    assert record.accounting().exit_code_reading(137) == "exit code 137"


@pytest.mark.parametrize("release", RELEASES)
def test_sacct_parsable_prints_that_137_as_9(release):
    record = _sacct(release)
    assert (record.state, record.exit_code, record.exit_code_mod_128) == ("FAILED", 9, True)


@pytest.mark.parametrize("json", [True, False], ids=["json", "parsable"])
@pytest.mark.parametrize("release", RELEASES)
def test_the_merged_record_keeps_squeues_exact_137(release, json):
    """What SlurmClient.jobs gives the watcher while squeue still lists the ended job (its
    MinJobAge): 137, unmarked, where it gave sacct's 9 marked as maybe 137 (the diagnosis then
    read `exit code 9 (sacct prints 137 as 9)`)."""
    job = JOBS[release]
    merged = merge_records({job: _squeue(release, json)}, {job: _sacct(release)})[job]
    assert (merged.source, merged.state, merged.exit_code, merged.signal) == (
        "squeue+sacct", "FAILED", 137, 0)
    acct = merged.accounting()
    assert (acct.exit_code, acct.exit_code_mod_128, acct.exit_code_candidates) == (
        137, False, (137,))
    assert acct.exit_code_reading(137) == "exit code 137"


@pytest.mark.parametrize("release", RELEASES)
def test_squeue_settles_a_code_under_128_too_and_leaves_any_other_to_sacct(release):
    """squeue's 9 says sacct's 9 is 9; a squeue code that is neither reading of sacct's (sacct
    took its code from a step: the job row hid the cause), or another signal, leaves sacct's
    code and its mark; so does a squeue record with no exit code."""
    job = JOBS[release]
    acct = _sacct(release)
    live = _squeue(release, json=False)

    def merged(**changes: object) -> tuple[int | None, bool]:
        rec = merge_records({job: JobRecord(**{**live.__dict__, **changes})}, {job: acct})[job]
        return rec.exit_code, rec.exit_code_mod_128

    assert merged(exit_code=9) == (9, False)
    assert merged(exit_code=0) == (9, True)
    assert merged(exit_code=3) == (9, True)
    assert merged(signal=15) == (9, True)
    assert merged(exit_code=None, signal=None) == (9, True)
