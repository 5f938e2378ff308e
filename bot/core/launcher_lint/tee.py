"""`tee_hides_status`: `python train.py … | tee log` without `set -o pipefail`. A pipeline's
status is its last command's, `tee`'s, which is 0 whenever it could write the log; so a trainer
that crashes neither stops the launcher under `set -e` nor, as the script's last command, fails
the job: Slurm shows COMPLETED 0:0 and trainbot takes the crash for a finished run."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, under_errexit
from bot.core.launcher_lint.model import CHECK_TEE_HIDES_STATUS, Scan, Tee
from bot.core.shell_lexer import Memo, shell_words, split_top_level
from bot.core.text import N_, Text

#: Commands that run training (or a rank launcher around it), as a pipeline's first command.
_TRAINER = re.compile(
    r"(?:python[\d.]*|torchrun|srun|deepspeed|accelerate|mpirun|mpiexec|horovodrun|composer"
    r"|apptainer|singularity|[\w./-]+\.(?:py|sh))$"
)
#: The same inside a `{ …; }` / `( … )` group piped to tee.
_TRAINER_IN_GROUP = re.compile(
    r"(?<![\w./-])(?:python[\d.]*|torchrun|srun|deepspeed|accelerate|mpirun|mpiexec"
    r"|horovodrun|[\w./-]+\.py)(?![\w-])"
)
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_PREFIX = {"time", "command", "exec", "nohup", "nice", "env", "stdbuf", "unbuffer"}
#: What may follow the pipeline at the end of a script and leave its status the job's status
#: (or tee's 0 in place of it): messages, waits, `exit` / `exit $?`.
TRAILING_RE = re.compile(
    r"^(?:echo|printf|date|true|:|wait|sleep|sync|fi|done|esac|\}|"
    r"exit(?:\s+\"?\$\?\"?|\s+0)?\s*$)(?:\s|$)"
)


def may_tee(text: str) -> bool:
    return "tee" in text


def _trainer(cmd: str, off: int, memo: Memo) -> bool:
    """Does the pipeline element `cmd` (at offset `off` of the text `memo` is kept for) run
    training?"""
    lead = len(cmd) - len(cmd.lstrip())
    cmd = cmd.strip()
    if cmd[:1] in "{(":
        return bool(_TRAINER_IN_GROUP.search(cmd))
    words = shell_words(cmd, off + lead, memo)
    k = 0
    while k < len(words) and (_ASSIGN.match(words[k]) or words[k] in _PREFIX
                              or (k and words[k - 1] in _PREFIX and words[k].startswith("-"))):
        k += 1
    return k < len(words) and bool(_TRAINER.match(words[k].strip("\"'").rsplit("/", 1)[-1]))


def tee_pipelines(lst: str, off: int, memo: Memo) -> list[tuple[int, str]]:
    """The `TRAINER … | tee …` pipelines of one and-or list: (offset, pipeline)."""
    found: list[tuple[int, str]] = []
    for pipeline, p_off, _op in split_top_level(lst, off, ("&&", "||"), memo):
        cmds = split_top_level(pipeline, p_off, ("|",), memo)
        if len(cmds) < 2:
            continue
        last = cmds[-1][0].strip()
        if not re.match(r"tee(?:\s|$)", last):
            continue
        if any(_trainer(c, o, memo) for c, o, _p in cmds[:-1]):
            lead = len(pipeline) - len(pipeline.lstrip())
            found.append((p_off + lead, pipeline.strip()))
    return found


def _what_it_hides(t: Tee, scan: Scan, said: dict[str, object]) -> Text:
    if t.why == "errexit":
        return N_("line %(line)s: `%(command)s` without `set -o pipefail`: the pipeline's status "
                  "is `tee`'s (0), not the trainer's, so %(under)s the launcher does not stop "
                  "when training crashes, runs on, and ends COMPLETED 0:0 after a crash; "
                  "trainbot then takes the crash for a finished run and does not diagnose or "
                  "resubmit it",
                  under=under_errexit("`set -e`", t.errexit_partial, scan.opts.errexit_line),
                  **said)
    if t.why == "last":
        return N_("line %(line)s: `%(command)s` without `set -o pipefail`: the pipeline's status "
                  "is `tee`'s (0), not the trainer's, so as the script's last command, it is "
                  "the job's status: the job ends COMPLETED 0:0 after a crash; trainbot then "
                  "takes the crash for a finished run and does not diagnose or resubmit it",
                  **said)
    return N_("line %(line)s: `%(keyword)s %(command)s` without `set -o pipefail`: the "
              "condition tests `tee`'s status (0 whenever it could write the log), not the "
              "trainer's, so a crashed run passes for a successful one: the branch or retry "
              "meant for a failure never runs, and the job can end COMPLETED 0:0",
              keyword=t.keyword, **said)


def check_tee(scan: Scan) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[int] = set()
    for t in scan.tees:
        line = scan.line_of(t.offset)
        if line in seen:
            continue
        seen.add(line)
        said = {"line": line, "command": short(t.command)}
        findings.append(Finding(
            CHECK_TEE_HIDES_STATUS, "warn", line, _what_it_hides(t, scan, said),
            N_('put `set -o pipefail` before it (`set -euo pipefail` at the top), or test the '
               'trainer\'s own status: `… | tee log; rc=${PIPESTATUS[0]}`, then '
               '`if [ "$rc" -eq 0 ]`') if t.why == "condition" else
            N_('put `set -o pipefail` before it (`set -euo pipefail` at the top), or follow it '
               'with `exit "${PIPESTATUS[0]}"`'),
        ))
    if not findings:
        findings.append(Finding(CHECK_TEE_HIDES_STATUS, "pass", None,
                                N_("no training command piped to `tee` without `pipefail`")))
    return findings


