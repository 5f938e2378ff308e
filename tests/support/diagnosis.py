"""A log's text read the way `trainbot diagnose` reads a file, for the diagnosis tests: the
whole text through the streaming scan, then one decision with the given accounting (None: a
log read with no sacct record)."""

from __future__ import annotations

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Accounting, Diagnosis


def read_log(catalogue: Catalogue, text: str, acct: Accounting | None = None) -> Diagnosis:
    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    analysis.finish()
    return analysis.diagnose(acct)
