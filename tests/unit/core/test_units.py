import pytest

from bot.core.units import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("400G", 400 * 1024**3),
        ("950GB", 950 * 1024**3),
        ("563200M", 563200 * 1024**2),
        ("1T", 1024**4),
        ("1.5GiB", int(1.5 * 1024**3)),
        ("512", 512 * 1024**2),  # Slurm's default unit is MiB
        ("100b", 100),
        ("244000m", 244000 * 1024**2),
    ],
)
def test_parse_size_reads_slurm_forms(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "12Q", "-5G", "1,5G"])
def test_parse_size_rejects_non_sizes_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match="e.g. 400G"):
        parse_size(text)


def test_format_size_uses_binary_units():
    assert format_size(1536 * 1024**2) == "1.5 GiB"
    assert format_size(12) == "12 B"


@pytest.mark.parametrize("text", ["9" * 400 + "G", "9" * 5000, "1" + "0" * 30 + "T",
                                  "9" * 400 + ".5M"])
def test_parse_size_refuses_absurd_sizes_with_a_value_error(text):
    with pytest.raises(ValueError, match=r"too large.*at most 1024P"):
        parse_size(text)


def test_parse_size_accepts_the_largest_size():
    assert parse_size("1024P") == 1024**6
    with pytest.raises(ValueError, match="too large"):
        parse_size("1025P")


def test_a_long_bad_size_is_quoted_short():
    with pytest.raises(ValueError) as info:
        parse_size("9" * 5000 + "G")
    assert len(str(info.value)) < 120 and "5001 characters" in str(info.value)
