"""Job ids from people (`123`, `123_4`) and raw ids from Slurm's listings."""

from __future__ import annotations

import pytest

from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.job_ref import (
    JobIdError,
    JobRef,
    array_task_in,
    is_job_id,
    parse_job_ref,
    parse_raw_job_ids,
    split_array_id,
)


@pytest.mark.parametrize("word,ref", [
    ("123", JobRef(123)), ("123_4", JobRef(123, 4)), (" 88154_0 ", JobRef(88154, 0)),
])
def test_job_and_array_task_ids(word: str, ref: JobRef) -> None:
    assert parse_job_ref(word) == ref
    assert ref.display == word.strip()


@pytest.mark.parametrize("word", ["", "abc", "123_", "_4", "123_4_5", "123_[1-3]", "-1",
                                  "12.3", "1" * 13, "123+1", "$(id)", "0", "000", "0_3",
                                  "007", "\u0661\u0662"])
def test_anything_else_is_refused_naming_it_and_the_accepted_forms(word: str) -> None:
    with pytest.raises(JobIdError) as err:
        parse_job_ref(word)
    assert str(err.value) == (f"{word!r} is not a job id: give 123 (a job or a whole array) "
                              "or 123_4 (task 4 of array 123)")


@pytest.mark.parametrize(("word", "is_id"), [
    ("1", True), ("123", True), ("9" * 12, True), ("0", False), ("00", False),
    ("012", False), ("9" * 13, False), ("123_4", False), (" 123", False), ("123\n", False),
    ("\u00b2", False), ("\u0661", False), ("", False),
])
def test_a_job_id_is_a_positive_number_in_ascii_digits(word: str, is_id: bool) -> None:
    """The one rule for a job's own id (a Home tab button's value; `/train`'s words through
    parse_job_ref): what str.isdigit() takes besides (`²`, Arabic-Indic digits, which int()
    reads or chokes on) and 0, which no Slurm job has, are not ids."""
    assert is_job_id(word) is is_id


def test_raw_job_id_listing_keeps_every_array_task_apart() -> None:
    assert parse_raw_job_ids("5121\n5122\n\n5120\n") == {5120, 5121, 5122}


def test_a_task_id_in_a_raw_listing_is_an_error_not_its_array() -> None:
    with pytest.raises(SlurmParseError, match="'123_4'"):
        parse_raw_job_ids("120\n123_4\n")


@pytest.mark.parametrize("job_id,array_id", [
    ("140_4", (140, 4)),  # squeue's JobArrayID, sacct's JobID, a one-task resubmit's id
    ("140_0", (140, 0)),
    (" 5120_12 ", (5120, 12)),
    ("5120_1.batch", (5120, 1)),  # sacct's step rows of a task
    ("5120_1.extern", (5120, 1)),
    ("5120_1.0", (5120, 1)),
    ("123_[5-9]", (123, None)),  # an array's pending remainder: no one task
    ("123_[5-9%2]", (123, None)),
    ("123_[1,3,7-9]", (123, None)),
])
def test_an_array_s_id_names_its_array_and_task(job_id: str, array_id: tuple) -> None:
    assert split_array_id(job_id) == array_id
    assert array_task_in(job_id) == array_id[1]


@pytest.mark.parametrize("job_id", [
    None, "", "140", "140.batch",  # a job, a step of it
    "140+0", "140+1.batch",  # a heterogeneous job's components (never an array)
    "140_", "_4", "140_4_5", "140_4x", "abc_4",
])
def test_an_id_of_no_array_names_no_task(job_id: str | None) -> None:
    assert split_array_id(job_id) is None
    assert array_task_in(job_id) is None
