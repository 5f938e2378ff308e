"""`positional_under_nounset`: `$1` / `${2}` read under `set -u` when the recipe passes fewer
arguments: bash stops with `$2: unbound variable` (a non-interactive shell exits on it wherever
it is read, in an `if` condition too). The recipe's `args` are what sbatch gives the script;
where they are not known (a site `submit_command` wrapper) the reads are only noted. A recipe
override that is not a Slurm field reaches the script as one more argument (`key=value`, after
the `args`): when such overrides could supply the missing one, the fix names them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows
from bot.core.launcher_lint.model import CHECK_POSITIONAL, Positional, Scan
from bot.core.text import N_, Text

#: `$1`…`$9`, `${1}`, `${12}` (not `${1:-x}`, `${1-x}`, `${1:+x}`, `\$1`).
_POSITIONAL_RE = re.compile(r"(?<!\\)\$(?:([1-9])|\{([1-9][0-9]*)\})")
_SQ_RE = re.compile(r"'[^']*'")


@dataclass(frozen=True)
class ArgOverrides:
    """The overrides a run of `recipe` may add to the script's arguments: the recipe's
    `overridable` keys that are not Slurm fields, less those this check's run already has;
    each one given is appended to the arguments as `key=value`, in the order given."""

    recipe: str
    keys: tuple[str, ...]


def may_read_positional(text: str) -> bool:
    """False when `positional_reads` need not run: no `$N` at all, or the script looks at its
    argument count (`$#`), parses options (`getopts`) or sets its own (`set --`): a read then
    follows a check the lint does not follow."""
    return bool(_POSITIONAL_RE.search(text)) and not (
        "$#" in text or "${#}" in text or "getopts" in text
        or re.search(r"\bset\s+--", text)
    )


def positional_reads(lst: str, off: int, shifted: int) -> list[Positional]:
    """The positional parameters one list (run under `set -u`, outside any function) reads;
    `shifted`: how many `shift`s ran before it."""
    masked = _SQ_RE.sub(lambda q: " " * len(q.group()), lst)
    return [Positional(off + m.start(), m.group(), int(m.group(1) or m.group(2)) + shifted)
            for m in _POSITIONAL_RE.finditer(masked)]


def _fix(index: int, given: int, overrides: ArgOverrides | None) -> Text:
    """How argument `index` gets supplied when the run passes `given`: by the overrides that
    append arguments when there are enough of them, else in the recipe's `args`."""
    default = N_("add it to the recipe's `args`, or give it a default: `${%(index)s:-VALUE}`",
                 index=index)
    keys = overrides.keys if overrides is not None else ()
    missing = index - given
    if overrides is None or not keys:
        return default
    if missing > len(keys):
        return N_("the overrides that reach the script as arguments (%(keys)s) add at most "
                  "%(count)s, up to `$%(last)s`, so none supplies `$%(index)s`: %(default)s",
                  keys=", ".join(keys), count=len(keys),
                  last=given + len(keys), index=index, default=default)
    example = " ".join(f"{k}=VALUE" for k in keys[:missing])
    if missing == 1:
        which = (N_("the override `%(key)s`", key=keys[0]) if len(keys) == 1 else
                 N_("one of the overrides %(keys)s", keys=", ".join(keys)))
        return N_("a run given %(which)s (e.g. `submit %(recipe)s %(example)s`) gets the word "
                  "`%(example)s` as `$%(index)s`, and `preflight %(recipe)s %(example)s` checks "
                  "that run; for a run without it, %(default)s", which=which,
                  recipe=overrides.recipe, example=example, index=index, default=default)
    return N_("each override of %(keys)s given to a run is appended to the script's arguments "
              "as `key=VALUE`, in the order given, so a run given %(missing)s of them (e.g. "
              "`submit %(recipe)s %(example)s`) gets the last as `$%(index)s`, and `preflight "
              "%(recipe)s %(example)s` checks that run; for a run given fewer, %(default)s",
              keys=", ".join(keys), missing=missing, recipe=overrides.recipe, example=example,
              index=index, default=default)


def check_positional(scan: Scan, script_args: Sequence[str] | None,
                     overrides: ArgOverrides | None = None) -> list[Finding]:
    """`overrides`: what a run of the recipe may add to `script_args` (None: not known)."""
    findings: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for p in scan.positional:
        line = scan.line_of(p.offset)
        if (line, p.text) in seen:
            continue
        seen.add((line, p.text))
        if script_args is None:
            findings.append(Finding(
                CHECK_POSITIONAL, "pass", line,
                N_("line %(line)s: note: `%(read)s` under `set -u` (line %(nounset)s): the "
                   "arguments the job gets are not known here (a submit wrapper passes them), "
                   "so whether bash stops with `$%(index)s: unbound variable` is not checked",
                   line=line, read=p.text, nounset=scan.nounset_line, index=p.index),
            ))
            continue
        if p.index <= len(script_args):
            continue
        n = len(script_args)
        args = short(" ".join(script_args), 40)
        given = (N_("passes 1 argument (`args`: %(args)s)", args=args) if n == 1 else
                 N_("passes %(n)s arguments (`args`: %(args)s)", n=n, args=args) if n else
                 N_("passes none (`args` is empty)"))
        findings.append(Finding(
            CHECK_POSITIONAL, "warn", line,
            N_("line %(line)s: `%(read)s` under `set -u` (line %(nounset)s) needs argument "
               "%(index)s, and the recipe %(given)s: bash stops here with `$%(index)s: unbound "
               "variable`: %(slurm)s", line=line, read=p.text, nounset=scan.nounset_line,
               index=p.index, given=given, slurm=slurm_shows(1)),
            _fix(p.index, n, overrides),
        ))
    if not findings:
        findings.append(Finding(CHECK_POSITIONAL, "pass", None,
                                N_("no positional parameter past the recipe's args read "
                                   "under `set -u`")))
    return findings
