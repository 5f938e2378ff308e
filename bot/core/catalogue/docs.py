"""docs/failures.md, the failure classes as a person reads them, made from the catalogue
(`docs/gen_failures.py` writes it; a test checks that the file is up to date)."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.catalogue import Catalogue, FailureClass

_HEADER = """\
# Failure classes

<!-- Generated from bot/core/catalogue/catalogue.yaml by `python docs/gen_failures.py`.
     Do not edit by hand: change the catalogue and run the script (a test checks this file). -->

trainbot names the cause of every job it diagnoses with one of these class ids. The ids are an
interface: `trainbot diagnose --json` prints them, and tests and site catalogue files key on
them. The incidents they come from are told in [incidents.md](incidents.md).

A class is decided by a log line matching one of its *deciding* patterns or by Slurm's
accounting State; *supporting* patterns, exit codes and signals are evidence only and never
decide. When several classes are found, the highest priority is the cause. Patterns match the
normalized line (ANSI colours, `[rank3]:`-style launcher prefixes and all but the last tqdm
`\\r` segment removed), case-sensitively, in the regex dialect that Python `re` and `grep -E`
share. A site extends the catalogue with its own YAML files (`catalogue.extra` in the config),
in the shape documented at the top of `catalogue.yaml`; STOP classes stay STOP classes, and
the classes a person must fix first (`disk_full`, `checkpoint_corrupt`) are never made
automatic.
A class named only by how a log ends, with no deciding line and no accounting (a
*hint*: the error's own words, a native abort), is offered with a button, never
resubmitted automatically.
A job that ended while it waited in the queue (cancelled while pending, its deadline passed:
sacct shows no node, no step and its end as its start) ran nothing: it takes the class its
State gives (`unknown_failure` for CANCELLED, `time_limit` for DEADLINE), whatever a log at its
path says, with a detail saying it never started (the State, who cancelled it, why it was
pending) in place of the class's hint; a person is offered to submit it again, never
resubmitted automatically, and it charges no retry.
"""


def failures_markdown(catalogue: Catalogue) -> str:
    """The text of docs/failures.md for `catalogue`: a summary table, then one section per
    class in the catalogue's order."""
    classes = list(catalogue.classes.values())
    out = [_HEADER]
    out += ["| id | title | default action | may auto-resubmit | charges the retry budget "
            "| priority |", "|---|---|---|---|---|---|"]
    for fc in classes:
        out.append(f"| [`{fc.id}`](#{fc.id}) | {_cell(fc.title)} | {fc.action.value} "
                   f"| {_yes(fc.retryable)} | {_yes(fc.charges_budget)} | {fc.priority} |")
    for fc in classes:
        out += ["", *_section(fc)]
    return "\n".join(out) + "\n"


def _section(fc: FailureClass) -> list[str]:
    lines = [f"## {fc.id}", "", f"**{fc.title}.** {fc.explanation}", "",
             f"What to do: {fc.hint}", "",
             f"Default action `{fc.action.value}`; "
             + ("may be resubmitted automatically" if fc.retryable
                else "never resubmitted automatically")
             + ("; a resubmit charges the retry budget" if fc.charges_budget
                else "; a resubmit does not charge the retry budget")
             + f"; priority {fc.priority}."]
    if not fc.primary and not fc.states:
        lines += ["", "No log line or Slurm state decides it: trainbot's detectors do, from the "
                  "metrics the log and the cluster give (bot/core/detectors.py)."]
    lines += _patterns("Deciding log patterns:", (p.pattern for p in fc.primary))
    lines += _patterns("Supporting log patterns:", (p.pattern for p in fc.hints))
    accounting = []
    if fc.states:
        accounting.append("decided by State " + ", ".join(f"`{s}`" for s in fc.states))
    hints = [f"exit code {c}" for c in fc.exit_codes] + [f"signal {s}" for s in fc.signals]
    if hints:
        accounting.append("supported by " + ", ".join(hints))
    if accounting:
        lines += ["", "Slurm accounting: " + "; ".join(accounting) + "."]
    return lines


def _patterns(title: str, patterns: Iterable[str]) -> list[str]:
    items = [f"- `{p}`" for p in patterns]
    return ["", title, "", *items] if items else []


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
