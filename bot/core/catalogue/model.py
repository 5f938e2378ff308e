"""The catalogue's data: failure classes and the matches the scanners report."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.core.models import Action


class CatalogueError(ValueError):
    """A catalogue file is invalid; the message names the file and the key at fault."""


@dataclass(frozen=True)
class FailureClass:
    """One failure class (docs/failures.md) with its signatures and default handling."""

    id: str
    title: str
    explanation: str
    action: Action
    retryable: bool
    charges_budget: bool
    priority: int
    hint: str
    primary: tuple[re.Pattern[str], ...]
    hints: tuple[re.Pattern[str], ...]
    states: tuple[str, ...]
    exit_codes: tuple[int, ...] = ()
    signals: tuple[int, ...] = ()
    # lang -> {"title"/"explanation"/"hint": text}: the site files' own translations
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # a site file replaced the packaged English title: a cause's own title never replaces it
    site_title: bool = False
    # a site file replaced the packaged English hint: stated even where a cause's own fix
    # replaces the packaged one
    site_hint: bool = False


@dataclass(frozen=True)
class Match:
    """A log line that carries a signature; `line_no` is 1-based. For a hard-wrapped
    signature, `line_no` is its first line and `text` the two lines joined."""

    class_id: str
    line_no: int
    text: str
    primary: bool


@dataclass(frozen=True)
class AccountingMatch:
    """A class implied by Slurm accounting: `primary` for a deciding State, else a hint."""

    class_id: str
    primary: bool
    reason: str
