"""bot.core.redact on one long line: the redactor runs on every log line and posted text, so
a pattern that retries a run from each of its characters (the work growing with the square
of the line's length) would stall the watcher on one line.

No time is measured here (bench/redact_long_line.py measures each shape against ordinary
text). Each line is 1 MiB: redacting it is a fraction of a second when the patterns read it
once, and hours when one reads it once from each character (32 KiB of `a.` took 18 s before
the URL pattern was made linear), far past the suite's timeout.
"""

from __future__ import annotations

import pytest

from bot.core.redact import MARKER, TOKEN_PATTERNS, Redactor

N = 1 << 20
SHAPES = {
    "a.a.": lambda: "a." * (N // 2),
    "A+a-1.": lambda: "A+a-1." * (N // 6),
    "xoxb- before dashes": lambda: "xoxb-" + "-" * N,
    "short xoxa- tokens": lambda: "xoxa-1234567!" * (N // 13),
    "hf_ + 19": lambda: ("hf_" + "a" * 19 + " ") * (N // 23),
    "hf_ + long run": lambda: "hf_" + "a" * N,
    "ghp_ + 19": lambda: ("ghp_" + "a" * 19 + ".") * (N // 24),
    "ASIA + 15": lambda: ("ASIA" + "B" * 15 + "_") * (N // 20),
    "token= + spaces": lambda: ("token=" + " " * 100) * (N // 106),
    "token + spaces": lambda: "token" + " " * N,
    "token: + spaces + '": lambda: ("token:" + " " * 1000 + "'") * (N // 1007),
    "tokentoken": lambda: "token" * (N // 5),
    "a_ … token": lambda: "a_" * (N // 2) + "token",
    "URL, no @": lambda: "a://u:" + "b" * N,
    "URLs, no @": lambda: ("a://u:" + "b" * 50 + " ") * (N // 57),
    "URL after URL": lambda: "a://u:" * (N // 6),
    "URL, then @s": lambda: "a://u:" + "@x" * (N // 2),
    "bearer + spaces": lambda: "bearer" + " " * N,
    "glued xoxb- + digits": lambda: "axoxb-" + "1" * N,
    "glued xoxb-1-1-": lambda: "axoxb-1-1-" * (N // 10),
    "DBPASSWORD= + spaces": lambda: ("DBPASSWORD=" + " " * 100) * (N // 111),
    "glued AKIA + capitals": lambda: "aAKIA" * (N // 5),
    "--token + spaces": lambda: ("--token" + " " * 100) * (N // 107),
    "--a-b-c-…": lambda: "--" + "a-" * (N // 2),
    "password: ' unclosed": lambda: "password: '" + "x" * N,
    "wandb login + spaces": lambda: "wandb login" + " " * N,
    "aToken=aToken=…": lambda: "aToken=" * (N // 7),
    "aToken= + a run": lambda: "aToken=" + "a1" * (N // 2),
    "aSecret: + spaces": lambda: "aSecret:" + " " * N,
    "xoxd- + letters": lambda: ("xoxd-" + "a" * 100 + " ") * (N // 106),
}


@pytest.mark.parametrize("name", SHAPES)
def test_a_long_line_of_an_adversarial_shape_is_redacted(name):
    text = SHAPES[name]()
    out = Redactor().redact(text)
    assert out == text or MARKER in out


# A configured secret that a marker and the text after (before) it spell again: masking one
# more character per reading of the line took a reading per character (hours for 1 MiB).
MARKER_SHAPES = {
    "ed]Q + Qs": (["ed]Q"], lambda: "ed]" + "Q" * N),
    "Qs + Q[re": (["Q[re"], lambda: "Q" * N + "[re"),
    "marker, Q, marker …": (["d]Q[r", "ed]Q"], lambda: "[redacted]Q" * (N // 11)),
    "Q + secret + Q …": (["ed]Q", "Q[re", "SECRET"], lambda: "QSECRETQ" * (N // 8)),
}


@pytest.mark.parametrize("name", MARKER_SHAPES)
def test_a_long_line_whose_secret_meets_the_marker_is_redacted_whole(name):
    secrets, shape = MARKER_SHAPES[name]
    out = Redactor(secrets).redact(shape())
    assert out == MARKER


def test_the_url_pattern_reads_a_run_of_scheme_characters_once():
    """A scheme starts only where no scheme character precedes it: in `a.a.a.…` the pattern
    is tried from the run's first letter, not again from each later one."""
    url = next(p for p in TOKEN_PATTERNS if "://" in p.pattern)
    text = "x a.a.a.a.b://u:pw@host/db"
    assert [m.start() for m in url.finditer(text)] == [2]
    assert url.match(text, 4) is None and url.match(text, 2) is not None
    assert Redactor().redact(text) == f"x a.a.a.a.b://u:{MARKER}@host/db"
    # a password never runs over another `://`: each URL of a run is read up to the next one
    assert Redactor().redact("a://u:x b://v:pw@h") == f"a://u:x b://v:{MARKER}@h"


def test_a_long_secret_that_cannot_meet_the_marker_does_not_widen_what_is_read_at_it():
    """Before, the text around each marker was read as far as the longest configured secret,
    though only a secret that can meet the marker can be spelled there: one short secret like
    `ed]Q` beside an 800-character one read 1,600 characters at every marker
    (bench/redact_long_line.py: `ed]Q, a long secret`)."""
    redactor = Redactor(["ed]Q", "Z" * 800, "hunter22"])
    at_marker = redactor._at_marker
    assert at_marker is not None and at_marker.reach == len("ed]Q") - 1
    text = "[redacted]Q pw=hunter22 " + "Z" * 800 + " x"
    assert redactor.redact(text) == f"{MARKER} pw={MARKER} {MARKER} x"
