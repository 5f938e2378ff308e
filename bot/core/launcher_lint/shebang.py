"""`shebang`: sbatch refuses a script whose line 1 is not `#!…`."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import CHECK_SHEBANG
from bot.core.text import N_


def check_shebang(text: str) -> list[Finding]:
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        return [Finding(CHECK_SHEBANG, "pass", 1,
                        N_("starts with `%(line)s`", line=short(first, 40)))]
    return [Finding(
        CHECK_SHEBANG, "fail", 1,
        N_("line 1 does not start with `#!`: sbatch refuses the script (`%(sbatch)s`), so "
           "nothing is submitted", sbatch="This does not look like a batch script. The first "
           "line must start with #! followed by the path to an interpreter."),
        N_("make line 1 `#!/bin/bash` (no blank line or comment before it)"),
    )]


def shebang_errexit(text: str) -> bool:
    """Does line 1 turn `set -e` on (`#!/bin/bash -e`)?"""
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and bool(re.search(r"\s-\w*e", first))
