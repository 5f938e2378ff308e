import pytest

from bot.core.units import check_slurm_size, format_size, parse_size


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


@pytest.mark.parametrize("text", ["\u0664\u0660\u0660G", "4\u212a", "1\u212aB", "\u0665"])
def test_parse_size_reads_ascii_digits_and_units_only(text):
    """Arabic-Indic digits (٤٠٠G) and the Kelvin sign (U+212A, which IGNORECASE matches as
    K) are not sizes: Slurm reads neither (the Kelvin sign was a KeyError)."""
    with pytest.raises(ValueError, match="not a memory size"):
        parse_size(text)


@pytest.mark.parametrize("text", ["400G", "950GB", "240g", "512", "0", "563200M", "1T",
                                  "64mb", "8K"])
def test_check_slurm_size_takes_what_sbatch_takes(text):
    assert check_slurm_size(text) == text


@pytest.mark.parametrize(("text", "fix"), [("1.5T", "1536G"), ("1.5GiB", "1536M"),
                                           ("2GiB", "2G"), ("1P", "1024T"), ("0.5G", "512M"),
                                           ("400 G", "400G")])
def test_check_slurm_size_says_the_whole_form_of_a_size_sbatch_refuses(text, fix):
    with pytest.raises(ValueError) as info:
        check_slurm_size(text)
    assert str(info.value) == (f"{text!r} is not a size Slurm takes; write it as a whole "
                               f"number with K, M, G or T: {fix}")


@pytest.mark.parametrize("text", ["512B", "100b", "1.7G"])
def test_check_slurm_size_refuses_sizes_without_a_whole_form(text):
    with pytest.raises(ValueError, match=r"not a size Slurm takes; .*\(e\.g\. 400G"):
        check_slurm_size(text)
