"""tqdm's and Rich's bar patterns, taking runs of digits, blanks and bar characters whole, read
the bars they read: real draws match with their counts, near misses do not, and a table of
lines (and of generated ones) gets the same match as from the former patterns."""
import random
import re

import pytest

from bot.core.progress_bars import RICH_BAR, TQDM_BAR

_FORMER_TQDM_BAR = re.compile(
    r"(\d+)/(\d+)\s*\[(?:\d+:)?\d+:\d+<(?:(?:\d+:)?\d+:\d+|\?)"
    r"(?:,\s*([\d.]+)\s*(s/it|it/s))?")
_FORMER_RICH_BAR = re.compile(
    r"^(.*?)\s*[━╸╺]{3,}\s+(?:\d{1,3}%\s+)?(\d+)/(\d+)(?![\d/])(.*)$")

TQDM_DRAWS = [
    ("Epoch 1:  45%|████▌     | 45/100 [01:02<01:16,  7.20it/s, loss=0.31]",
     ("45", "100", "7.20", "it/s")),
    ("100%|██████████| 10/10 [1:00:05<00:00,  2.1 s/it]", ("10", "10", "2.1", "s/it")),
    ("  0%|          | 0/500 [00:00<?, ?it/s]", ("0", "500", None, None)),
]
TQDM_NEAR_MISSES = ["45/100 [01:02", "45/100 01:02<01:16", "step 45 of 100 [01:02<01:16]",
                    "45 / 100 [01:02<01:16]"]
RICH_DRAWS = [
    ("Epoch 3/9  ━━━━━━━━━━━━━━━━━━━━ 45/100 0:00:10 • 0:00:12 5.20it/s v_num: 0 loss: 0.31",
     ("Epoch 3/9", "45", "100")),
    ("Validation ━━━━━━━━━╸━━━━━━━━━━ 12/25 0:00:02 • 0:00:03 8.10it/s",
     ("Validation", "12", "25")),
    ("━━━━━━━━━━ 50% 1/2 0:00:01", ("", "1", "2")),
]
RICH_NEAR_MISSES = ["Epoch 3 ━━ 45/100", "Epoch 3 ━━━━45/100", "Epoch 3 ━━━━ 45/100/3",
                    "Epoch 3 ---------- 45/100", "Epoch 3 ━━━━ 45 of 100"]


@pytest.mark.parametrize(("line", "groups"), TQDM_DRAWS)
def test_tqdm_bar_reads_a_draws_count_and_rate(line: str, groups: tuple) -> None:
    m = TQDM_BAR.search(line)
    assert m is not None and m.groups() == groups


@pytest.mark.parametrize("line", TQDM_NEAR_MISSES)
def test_tqdm_bar_reads_no_near_miss(line: str) -> None:
    assert TQDM_BAR.search(line) is None


@pytest.mark.parametrize(("line", "groups"), RICH_DRAWS)
def test_rich_bar_reads_a_draws_label_and_count(line: str, groups: tuple) -> None:
    m = RICH_BAR.match(line)
    assert m is not None and m.groups()[:3] == groups


@pytest.mark.parametrize("line", RICH_NEAR_MISSES)
def test_rich_bar_reads_no_near_miss(line: str) -> None:
    assert RICH_BAR.match(line) is None


def _generated(slots: list[list[str]], count: int) -> list[str]:
    """Lines made of one piece per slot, in order: real draws and their near misses."""
    rng = random.Random(6)
    return ["".join(rng.choice(pieces) for pieces in slots) for _ in range(count)]


def _same(new: re.Match[str] | None, old: re.Match[str] | None) -> bool:
    return (new and (new.span(), new.groups())) == (old and (old.span(), old.groups()))


def test_tqdm_bar_matches_as_the_former_pattern() -> None:
    lines = [line for line, _ in TQDM_DRAWS] + TQDM_NEAR_MISSES + _generated(
        [["", "x", "1", "1/"], ["1", "12", "", "x"], ["/", "//", ""], ["1", "500", "", "1/2"],
         ["", " ", "  ", "1"], ["[", "", "[["], ["01:", "", "1:2:"], ["02", "", ":"], [":03", "3"],
         ["<", ""], ["?", "1:2", "1:2:3", "", "4"], ["", ",", ", "], ["", "2.5", "1.", "x"],
         ["", " ", "  "], ["it/s", "s/it", "", "it"], ["", "]", " 1/2 [0:1<0:2"]], 3000)
    assert [line for line in lines
            if not _same(TQDM_BAR.search(line), _FORMER_TQDM_BAR.search(line))] == []
    assert sum(TQDM_BAR.search(line) is not None for line in lines) > 20


def test_rich_bar_matches_as_the_former_pattern() -> None:
    lines = [line for line, _ in RICH_DRAWS] + RICH_NEAR_MISSES + _generated(
        [["", "Epoch 3", "x ", " ", "━━━━ ", "━"], ["", " ", "  ", "\t"],
         ["━━━", "━╸", "━━━━╺━", "", "━━━ x"], ["", " ", "  "],
         ["", "50% ", "5%", "1000% "], ["1", "12", "", "x"],
         ["/", "", "//"], ["2", "20", ""], ["", "/", "1", " 0:01 ━━━ 3/4", " x"]], 3000)
    assert [line for line in lines
            if not _same(RICH_BAR.match(line), _FORMER_RICH_BAR.match(line))] == []
    assert sum(RICH_BAR.match(line) is not None for line in lines) > 20
