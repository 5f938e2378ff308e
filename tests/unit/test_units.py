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
