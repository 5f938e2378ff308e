"""`empty_match_under_errexit`: under `set -e` (+ `pipefail`), a command that fails when nothing
matches decides a statement's status. The walk (engine) asks `command_hit` about each simple
command; `check_empty_match` weighs each hit against the whole script."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows, under_errexit
from bot.core.launcher_lint.model import CHECK_EMPTY_MATCH, MAX_DEPTH, Hit, Opts, Scan
from bot.core.launcher_lint.paths import norm, resolve, unquote
from bot.core.shell_lexer import has_glob
from bot.core.text import N_, Text

#: How far after a statement (characters) its empty-result branch is looked for.
BRANCH_WINDOW = 8192
#: At most this many informational (pass) empty-match notes per script.
MAX_NOTES = 5

_GREP_WORDS = {"grep", "egrep", "fgrep", "zgrep", "rg", "pgrep", "ag"}
_FILE_WORDS = {"cat", "stat", "readlink", "realpath", "du", "wc", "head", "tail", "sort", "cp",
               "mv", "ls"}
_STATUS = {"ls": 2, "sort": 2, "find": 1}
_GUARD_GREP_RE = re.compile(r"\bgrep\s+((?:-\S+\s+)*)(\S+)\s+([^\s;|&)]+)")


def guard_greps(lst: str) -> set[tuple[str, str]]:
    """The (pattern, file) of each `grep -q PATTERN FILE` test in a condition: a later grep of
    the same pattern in the same file runs only where the test matched."""
    return {(unquote(m.group(2)), unquote(m.group(3))) for m in _GUARD_GREP_RE.finditer(lst)}


def command_hit(name: str, args: list[str], cmd: str, off: int, is_last: bool, in_pipe: bool,
                opts: Opts, guarded: set[tuple[str, str]]) -> Hit | None:
    """The hit for simple command `cmd` (program `name`, arguments `args`) at offset `off`
    when it fails on an empty match and that failure counts; None otherwise."""
    file_args = _file_args(name, args)
    globbed = [a for a in file_args if has_glob(a)]
    cmd_short = short(cmd)
    if name in _GREP_WORDS:
        pattern, files = _grep_args(args)
        if any((pattern, f) in guarded for f in files):
            return None
        return Hit(off, cmd_short, name, 1, N_("`%(name)s` exits 1 when nothing matches",
                                               name=name),
                   N_("guard it: `%(guarded)s`", guarded=f"{{ {cmd_short} || true; }}"),
                   tuple(files))
    if name == "ls" and globbed and not opts.nullglob:
        return Hit(off, cmd_short, name, 2,
                   N_("`ls` exits 2 when `%(glob)s` matches nothing (e.g. no checkpoint yet)",
                      glob=globbed[0])
                   if re.search(r"(?i)ckpt|checkpoint|step|iter", globbed[0]) else
                   N_("`ls` exits 2 when `%(glob)s` matches nothing", glob=globbed[0]),
                   _guard(cmd_short), tuple(globbed))
    if (name == "ls" and in_pipe and not is_last and opts.pipefail and file_args
            and not globbed):
        return Hit(off, cmd_short, name, 2,
                   N_("`ls` exits 2 when `%(path)s` does not exist yet (a first run)",
                      path=file_args[0]),
                   _guard(cmd_short), tuple(file_args),
                   missing_dir=True)
    if name == "find" and in_pipe and not is_last:
        start = [a for a in args if not a.startswith("-")][:1]
        return Hit(off, cmd_short, name, 1,
                   N_("`find` exits non-zero when its start directory does not exist yet "
                      "(and may die of SIGPIPE when `head` stops reading)"),
                   _guard(cmd_short), tuple(start),
                   missing_dir=True)
    if name in _FILE_WORDS and globbed and not opts.nullglob:
        return Hit(off, cmd_short, name, _STATUS.get(name, 1),
                   N_("`%(name)s` fails when `%(glob)s` matches nothing", name=name,
                      glob=globbed[0]),
                   N_("guard it: `%(guarded)s` or test the files exist first",
                      guarded=f"{{ {cmd_short} 2>/dev/null || true; }}"), tuple(globbed))
    return None


def _guard(cmd_short: str) -> Text:
    return N_("guard it: `%(guarded)s`", guarded=f"{{ {cmd_short} 2>/dev/null || true; }}")


def _file_args(name: str, args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = name in ("head", "tail") and a in ("-n", "-c")
            continue
        if a.startswith((">", "<", "2>", "&>", "1>")):
            continue
        out.append(a)
    return out


def _grep_args(args: list[str]) -> tuple[str, list[str]]:
    """(pattern, files) of a grep command line."""
    pattern: str | None = None
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--regexp") and i + 1 < len(args):
            pattern = unquote(args[i + 1])
            i += 2
            continue
        if a.startswith("-") and pattern is None or a.startswith(("-", ">", "<", "2>", "&>")):
            i += 1
            continue
        if pattern is None:
            pattern = unquote(a)
        else:
            files.append(unquote(a))
        i += 1
    return pattern or "", files


_JOB_NAME_RE = re.compile(
    r"(?i)(ckpt|checkpoint|step_|step-|step\*|iter_|iter-|global_step|latest|epoch|\.log\b|\.out\b|"
    r"\.err\b|(^|/)logs?(/|$)|slurm-|output|results?(/|$)|\.pt\b|\.pth\b|\.safetensors\b)"
)
_SYSTEM_PATH_RE = re.compile(r"^/(usr|lib|lib64|etc|opt|proc|sys|bin|sbin|dev)/")
_WRITE_ARG = r"\s*(\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&)<>]+)"
#: Where a script says it writes a path: redirections, tee, mkdir, touch, `-o`/`-e`, and the
#: output / save / log / checkpoint options of the programs it runs. One literal-led pattern
#: each, so that the regex engine can skip ahead (`\bx` is written `x(?<!\wx)`: a pattern that
#: starts with an assertion is tried at every position, 20-50× slower on a 1 MiB script).
_MKDIR_RE = re.compile(r"mkdir(?<!\wmkdir)\s+(?:-\S+\s+)*" + _WRITE_ARG)
#: The writes that create the file itself (not a directory, not a program's option) where
#: the script runs them: after one of these ran, the file is there.
_FILE_WRITE_RES = [re.compile(p + _WRITE_ARG) for p in (
    r">(?<![<>&\d]>)>?", r"tee(?<!\wtee)\s+(?:-a\s+)?", r"touch(?<!\wtouch)\s+")]
_WRITE_RES = [_MKDIR_RE, *_FILE_WRITE_RES] + [re.compile(p + _WRITE_ARG) for p in (
    r"\s-[oe]\s+",
    r"--(?:output|error|save|log|ckpt|checkpoint)[\w-]*[= ]",
)]
_TRAIN_RE = re.compile(
    r"(?m)^[^\n#]*?(?:\btorchrun\b|\bdeepspeed\s|\baccelerate\s+launch\b|\bpython[\d.]*\s+"
    r"(?:-\S+\s+)*(?:-m\s+\S+|\S+\.py)\b|\bmpirun\b|\bsrun\b[^\n]*\.py\b)"
)


@dataclass
class _Context:
    """What the whole script says about a hit: which paths the job writes, which variables have
    an empty-result branch, where training starts."""

    assigns: dict[str, str]
    written: set[str]
    train_line: int | None
    code: str
    made_dirs: list[tuple[int, str]] = field(default_factory=list)  # (offset, path) of mkdir
    made_files: list[tuple[int, str]] = field(default_factory=list)  # (offset, path): > tee touch


def _context(code: str, sbatch_options: str, scan: Scan, assigns: dict[str, str]) -> _Context:
    written: set[str] = set()
    for rx in _WRITE_RES:
        for text in (code, sbatch_options):
            for m in rx.finditer(text):
                path = resolve(norm(m.group(1)), assigns).rstrip("/")
                if path:
                    written.add(path)
    made_dirs = [(m.start(), resolve(norm(m.group(1)), assigns).rstrip("/"))
                 for m in _MKDIR_RE.finditer(code)]
    made_files = [(m.start(), resolve(norm(m.group(1)), assigns))
                  for rx in _FILE_WRITE_RES for m in rx.finditer(code)]
    train = _TRAIN_RE.search(code)
    train_line = scan.line_of(train.start()) if train else None
    return _Context(assigns, written, train_line, code, made_dirs, made_files)


def _file_made_before(hit: Hit, ctx: _Context) -> tuple[str, int] | None:
    """(path, offset) when the hit reads one plain file that the script itself wrote earlier
    (`> f`, `tee f`, `touch f`): it exists by now, and its content is the script's own."""
    if len(hit.targets) != 1 or has_glob(hit.targets[0]):
        return None
    target = resolve(norm(hit.targets[0]), ctx.assigns)
    made = [pos for pos, path in ctx.made_files if pos < hit.offset and path == target]
    return (target, made[-1]) if made else None


def _made_before(hit: Hit, ctx: _Context) -> str | None:
    """The directory a `missing_dir` hit reads, when `mkdir` created it earlier in the script."""
    if not hit.missing_dir:
        return None
    for raw in hit.targets:
        target = resolve(norm(raw), ctx.assigns).rstrip("/")
        if any(pos < hit.offset and path == target for pos, path in ctx.made_dirs):
            return target
    return None


_IF_WORD_RE = re.compile(r"(?:^|[;&|(]|\s)(if|elif|else|fi)(?=[\s;)]|$)", re.M)
_EXIT_RE = re.compile(r"\bexit\s+(?:[1-9]|\$)|\breturn\s+[1-9]|\bexit\s*(?:;|$)", re.M)
#: Tests whose true side is the empty result; for the others (`-n`, `-d $V`, `[ $V ]`) the
#: empty result takes the else side.
_EMPTY_IS_TRUE_RE = re.compile(r"^(?:-z|\"?\$\{?\w+\}?\"?\s*==?\s*(?:\"\"|'')|(?:\"\"|'')\s*==?)")


def _branch_for(var: str | None, ctx: _Context, after: int) -> tuple[str, bool] | None:
    """The first test of `var` for an empty result after `after`: (its text, does the empty
    side go on rather than just exit?); None when there is no such test. A default
    (`${V:-1}`, `${V:+--flag $V}`) goes on: the script means to run with the empty result."""
    if not var:
        return None
    v = re.escape(var)
    rx = re.compile(
        r"(?:-[zn]\s+\"?\$\{?" + v + r"\b|\"?\$\{?" + v + r"\}?\"?\s*!?==?\s*(?:\"\"|'')"
        r"|(?:\"\"|'')\s*!?==?\s*\"?\$\{?" + v + r"\b|\[\[?\s+\"?\$\{?" + v + r"\}?\"?\s+\]"
        r"|\$\{" + v + r":?[-=+]|-[defs]\s+\"?\$\{?" + v + r"\b"
        r"|\$\{?" + v + r"\}?\"?\s+-(?:eq|ne|gt|lt|ge|le)\s)"
    )
    for m in rx.finditer(ctx.code, after, after + BRANCH_WINDOW):
        line_end = ctx.code.find("\n", m.end())
        text = short(ctx.code[m.start(): line_end if line_end >= 0 else len(ctx.code)], 40)
        if m.group(0).startswith("${"):
            return text, True
        side = _empty_side(ctx.code, m.start(), m.end(),
                           bool(_EMPTY_IS_TRUE_RE.match(m.group(0))) and "!=" not in m.group(0))
        # an empty side that is an error exit: stopping earlier loses nothing
        return text, not _EXIT_RE.search(side)
    return None


def _empty_side(code: str, start: int, end: int, empty_is_true: bool) -> str:
    """The commands the empty result runs: the then- or else-body of the `if` the test is in,
    or the rest of the line for `[ … ] && …` / `|| …`."""
    line_end = code.find("\n", end)
    line_end = len(code) if line_end < 0 else line_end
    rest = code[end:line_end]
    line_start = code.rfind("\n", 0, start) + 1
    if not re.match(r"\s*(?:if|elif|while|until)\b", code[line_start:start]):
        m = re.search(r"&&|\|\|", rest)
        if m is None:
            return ""
        goes = (m.group(0) == "&&") == empty_is_true
        return rest[m.end():] if goes else ""
    then = re.search(r"\bthen\b", code[end:end + BRANCH_WINDOW])
    if then is None:
        return ""
    body_start = end + then.end()
    then_end = else_start = else_end = None
    depth = 0
    for m in _IF_WORD_RE.finditer(code, body_start, body_start + BRANCH_WINDOW):
        word = m.group(1)
        if word == "if":
            depth += 1
        elif word == "fi" and depth:
            depth -= 1
        elif depth == 0:
            if then_end is None:
                then_end = m.start(1)
            if word == "fi":
                else_end = m.start(1)
                break
            if else_start is None:
                else_start = m.end(1)
    if then_end is None:
        return code[body_start:body_start + BRANCH_WINDOW]
    if empty_is_true:
        return code[body_start:then_end]
    return code[else_start:else_end] if else_start is not None and else_end is not None else ""


def _job_produced(hit: Hit, ctx: _Context) -> Text | None:
    """Why the target is something the job itself produces (None if it is not / unknown)."""
    targets = list(hit.targets)
    if not targets and hit.upstream:
        m = re.search(r"\b(?:cat|tail|head|ls|find)\s+(?:-\S+\s+)*(\S+)", hit.upstream)
        if not m:
            return None  # a grep on another command's output (`scontrol … | grep`)
        targets = [unquote(m.group(1))]
    for raw in targets:
        target = resolve(norm(raw), ctx.assigns)
        if _SYSTEM_PATH_RE.match(target):
            continue
        base = target.split("*", 1)[0].rstrip("/")
        for path in (target, *_ancestors(base)):
            if path in ctx.written:
                return N_("`%(path)s` is written by this script", path=path)
        name_m = _JOB_NAME_RE.search(target)
        if name_m:
            return N_("`%(path)s` names a checkpoint or log the job writes", path=raw)
    return None


def _reads_a_file(hit: Hit) -> bool:
    """The hit reads files (its own arguments, or a `cat`/`head`/… of one upstream), not the
    output of another program (`scontrol … | grep`)."""
    if hit.targets:
        return True
    return bool(hit.upstream and re.search(r"\b(?:cat|tail|head|ls|find)\s", hit.upstream))


def _ancestors(path: str) -> list[str]:
    """`a/b/c` -> [`a/b/c`, `a/b`, `a`] (the path itself and the directories above it)."""
    out = []
    while path:
        out.append(path)
        cut = path.rfind("/")
        if cut <= 0:
            break
        path = path[:cut]
    return out


def _when(line: int, ctx: _Context) -> Text:
    if ctx.train_line is None:
        return N_("before anything after it runs")
    if line < ctx.train_line:
        return N_("before training starts (training runs on line %(train)s)",
                  train=ctx.train_line)
    if line > ctx.train_line:
        return N_("after the training command (line %(train)s) has returned, so the job's "
                  "state, not its work, is what is lost", train=ctx.train_line)
    return N_("on the training line itself")


def _where(hit: Hit) -> Text | str:
    """Where the hit's command runs, as the start of a sentence ("" at top level)."""
    if hit.in_substitution and hit.function:
        return N_("in a command substitution assigned to a variable, in function "
                  "`%(function)s`, ", function=hit.function)
    if hit.in_substitution:
        return N_("in a command substitution assigned to a variable, ")
    if hit.function:
        return N_("in function `%(function)s`, ", function=hit.function)
    return ""


def _why_not(made: str | None, own: tuple[str, int] | None, scan: Scan,
             branch_test: tuple[str, bool] | None) -> Text:
    """Why an empty-match hit is only a note: what makes its stop not happen."""
    if made:
        return N_("but `%(path)s` is created earlier in the script, so it exists", path=made)
    if own:
        return N_("but it reads `%(path)s`, which this script wrote on line %(written)s and "
                  "reads with no empty-result branch", path=own[0], written=scan.line_of(own[1]))
    if branch_test and not branch_test[1]:
        return N_("the script exits on an empty result anyway (`%(test)s`)", test=branch_test[0])
    return N_("its input does not look like something the job produces")


def _sbatch_options(text: str) -> str:
    return "\n".join(m.group(1) for m in re.finditer(r"(?m)^#SBATCH\s+(.*)$", text))


def check_empty_match(text: str, code: str, scan: Scan, assigns: dict[str, str]) -> list[Finding]:
    hits = scan.hits
    ctx = _context(code, _sbatch_options(text), scan, assigns) if hits else None
    findings: list[Finding] = []
    notes: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for hit in hits:
        line = scan.line_of(hit.offset)
        if (line, hit.command) in seen:
            continue
        seen.add((line, hit.command))
        mode = " + ".join(f"`{o}`" for o in hit.strict_mode())  # as on its line
        where = _where(hit)
        assert ctx is not None
        produced = _job_produced(hit, ctx)
        branch_test = _branch_for(hit.variable, ctx, hit.offset)
        branch = branch_test[0] if branch_test and branch_test[1] else None
        if branch_test and not branch_test[1]:
            produced = None  # the script stops on an empty result anyway
        made = _made_before(hit, ctx)
        if made:
            produced = None  # the directory exists: nothing to miss
        own = _file_made_before(hit, ctx) if produced and not branch else None
        if own:
            produced = None  # the script's own output, read as it expects it to be
        under = under_errexit(mode, hit.errexit_partial)
        if hit.hidden_by is not None:
            call_line = scan.line_of(hit.hidden_by)
            stop = N_("%(under)s the function stops right here, %(when)s, but its call on "
                      "line %(call)s pipes it into another command, whose status the pipeline "
                      "returns: the launcher goes on past the skipped work and, unless "
                      "something later fails, Slurm shows COMPLETED 0:0 (the silent exit of "
                      "job 108687)", under=under, when=_when(line, ctx), call=call_line)
        else:
            stop = N_("%(under)s the launcher stops right here %(when)s: %(slurm)s",
                      under=under, when=_when(line, ctx), slurm=slurm_shows(hit.status))
        said = {"line": line, "where": where, "reason": hit.reason, "command": hit.command,
                "stop": stop}
        if produced and branch:
            findings.append(Finding(
                # with `set -e` on some paths only, the stop is on the runs that take them
                CHECK_EMPTY_MATCH, "warn" if hit.errexit_partial else "fail", line,
                N_("line %(line)s: %(where)s%(reason)s; %(produced)s, and the script expects an "
                   "empty result (`%(branch)s`) but never gets there: %(stop)s: `%(command)s`",
                   produced=produced, branch=branch, **said),
                hit.fix,
            ))
        elif produced:
            findings.append(Finding(
                CHECK_EMPTY_MATCH, "warn", line,
                N_("line %(line)s: %(where)s%(reason)s; %(produced)s, so on a run where it is "
                   "missing or empty %(stop)s: `%(command)s`", produced=produced, **said),
                hit.fix,
            ))
        elif branch and not made and _reads_a_file(hit):
            findings.append(Finding(
                CHECK_EMPTY_MATCH, "warn", line,
                N_("line %(line)s: %(where)s%(reason)s; the script expects an empty result "
                   "(`%(branch)s`) but never gets there: when the input lacks it, %(stop)s: "
                   "`%(command)s`", branch=branch, **said),
                hit.fix,
            ))
        else:
            but = _why_not(made, own, scan, branch_test)
            notes.append(Finding(
                CHECK_EMPTY_MATCH, "pass", line,
                N_("line %(line)s: note: %(where)s%(reason)s and, %(under)s it would stop the "
                   "launcher; %(but)s: `%(command)s`", under=under, but=but,
                   **{k: v for k, v in said.items() if k != "stop"})
                if hit.errexit_partial else
                N_("line %(line)s: note: %(where)s%(reason)s and %(mode)s would stop the "
                   "launcher; %(but)s: `%(command)s`", mode=mode, but=but,
                   **{k: v for k, v in said.items() if k != "stop"}),
                hit.fix,
            ))
    if len(notes) > MAX_NOTES:
        more = len(notes) - MAX_NOTES
        notes = notes[:MAX_NOTES]
        notes.append(Finding(CHECK_EMPTY_MATCH, "pass", None,
                             N_("%(more)s more such notes left out", more=more)))
    findings.extend(notes)
    if scan.too_deep_at is not None:
        line = scan.line_of(scan.too_deep_at)
        findings.append(Finding(
            CHECK_EMPTY_MATCH, "pass", line,
            N_("line %(line)s: nesting deeper than %(depth)s levels; what is inside was not "
               "checked", line=line, depth=MAX_DEPTH),
        ))
    if not findings:
        findings.append(Finding(CHECK_EMPTY_MATCH, "pass", None, _none_found(scan.opts)))
    return findings


def _none_found(opts: Opts) -> Text:
    """The note of a script where no empty match decides a statement's status, with where
    `set -e` is on (`opts`: as the script ends), as the strict_mode note says it: a `set +e`
    turns it off from its line."""
    said = {"on": opts.errexit_line, "off": opts.errexit_off_line}
    if not opts.errexit_line:
        return N_("no unguarded empty-match command decides a statement's status (errexit off)")
    if opts.errexit_partial:
        return N_("no unguarded empty-match command decides a statement's status (errexit on "
                  "only in some branches or loop passes)")
    if opts.errexit_off_line is None:
        return N_("no unguarded empty-match command decides a statement's status (errexit on)")
    if opts.errexit:
        return N_("no unguarded empty-match command decides a statement's status (errexit on "
                  "from line %(on)s; off from `set +e` on line %(off)s until a later `set -e`)",
                  **said)
    return N_("no unguarded empty-match command decides a statement's status (errexit on from "
              "line %(on)s, off after `set +e` on line %(off)s)", **said)
