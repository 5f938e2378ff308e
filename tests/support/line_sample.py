"""A log's lines read by the metric parser (bot.core.training_lines `LineParser`) as a log's
reader feeds it, one after the other, for the tests of what a framework's line says."""

from __future__ import annotations

from bot.core.training_lines import LineParser, Sample


def last_sample(*lines: str) -> Sample:
    """The sample the last of `lines` gives, read after the ones before it (a total they
    announce, say); the last line must give one."""
    parser = LineParser()
    samples = [parser.parse(line, n)[0] for n, line in enumerate(lines, 1)]
    assert samples[-1] is not None
    return samples[-1]
