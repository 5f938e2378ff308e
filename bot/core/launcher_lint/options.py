"""What a `set` / `shopt` command does to the options the launcher lint's walk
(bot.core.launcher_lint.engine) follows: its words, read as bash reads them."""

from __future__ import annotations

import re

from bot.core.launcher_lint.model import Opts

#: A word of `set` that turns options on or off (`-e`, `+u`, `-euo`).
_SET_FLAGS_RE = re.compile(r"[-+][A-Za-z]+")


def apply_option_words(opts: Opts, words: list[str], line: int) -> bool:
    """Change `opts` as the `set` / `shopt` command of `words` (on `line`) does: of `set` the
    words before the first that is no option (`set -- -u`, `set -e x -u`: the positional
    parameters), of `shopt -s` / `-u` the options it names that the walk follows. True when
    it turns `set -u` on."""
    nounset_on = False
    if words[0] == "set":
        i = 1
        while i < len(words):
            w = words[i]
            if w in ("-o", "+o") and i + 1 < len(words):
                nounset_on |= set_option(opts, words[i + 1], w == "-o", line)
                i += 2
                continue
            if not _SET_FLAGS_RE.fullmatch(w):
                break  # `--`, `-` or an argument: the rest are positional parameters
            on = w[0] == "-"
            if "e" in w:
                set_errexit(opts, on, line)
            if "u" in w:
                opts.nounset = on
                nounset_on |= on
            if "o" in w and i + 1 < len(words):
                nounset_on |= set_option(opts, words[i + 1], on, line)
                i += 1
            i += 1
    elif words[0] == "shopt" and len(words) >= 3 and words[1] in ("-s", "-u"):
        on = words[1] == "-s"
        for name in words[2:]:
            if name == "nullglob":
                opts.nullglob = on
            elif name == "inherit_errexit":
                opts.inherit_errexit = on
    return nounset_on


def set_option(opts: Opts, name: str, on: bool, line: int) -> bool:
    """`set -o NAME` (`on`) / `set +o NAME` on `line`; True when it turns `set -u` on."""
    if name == "errexit":
        set_errexit(opts, on, line)
    elif name == "pipefail":
        if on and not opts.pipefail_sure:
            opts.pipefail_line = line
        elif not on and opts.pipefail:
            opts.pipefail_off_line = line
        opts.pipefail, opts.pipefail_partial = on, False
    elif name == "nounset":
        opts.nounset = on
        return on
    return False


def set_errexit(opts: Opts, on: bool, line: int) -> None:
    """`set -e` (`on`) / `set +e` on `line`: where it first came on, where it last went off."""
    if not on and opts.errexit:
        opts.errexit_off_line = line
    opts.errexit, opts.errexit_partial = on, False
    if on and opts.errexit_line is None:
        opts.errexit_line = line
