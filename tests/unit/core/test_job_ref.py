"""Job ids from people (`123`, `123_4`) and raw ids from Slurm's listings."""

from __future__ import annotations

import pytest

from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.job_ref import JobIdError, JobRef, parse_job_ref, parse_raw_job_ids


@pytest.mark.parametrize("word,ref", [
    ("123", JobRef(123)), ("123_4", JobRef(123, 4)), (" 88154_0 ", JobRef(88154, 0)),
])
def test_job_and_array_task_ids(word: str, ref: JobRef) -> None:
    assert parse_job_ref(word) == ref
    assert ref.display == word.strip()


@pytest.mark.parametrize("word", ["", "abc", "123_", "_4", "123_4_5", "123_[1-3]", "-1",
                                  "12.3", "1" * 13, "123+1", "$(id)"])
def test_anything_else_is_refused_naming_it_and_the_accepted_forms(word: str) -> None:
    with pytest.raises(JobIdError) as err:
        parse_job_ref(word)
    assert str(err.value) == (f"{word!r} is not a job id: give 123 (a job or a whole array) "
                              "or 123_4 (task 4 of array 123)")


def test_raw_job_id_listing_keeps_every_array_task_apart() -> None:
    assert parse_raw_job_ids("5121\n5122\n\n5120\n") == {5120, 5121, 5122}


def test_a_task_id_in_a_raw_listing_is_an_error_not_its_array() -> None:
    with pytest.raises(SlurmParseError, match="'123_4'"):
        parse_raw_job_ids("120\n123_4\n")
