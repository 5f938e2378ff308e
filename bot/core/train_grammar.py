"""Parse the text of `/train …` into typed commands (pure; no I/O)."""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from bot.core.slurm.job_ref import JobIdError, JobRef, looks_like_job_ref, parse_job_ref
from bot.core.text import N_, Text

MAX_LOG_LINES = 500
DEFAULT_LOG_LINES = 40
MAX_TEXT_CHARS = 2000  # longer than any sane command; refuse rather than tokenize megabytes

# Each command's synopsis, shown in a code span: names and placeholders only, so it reads the
# same in every language (what the placeholders mean is in HELP_LINES, translated).
USAGE: dict[str, str] = {
    "help": "/train help [COMMAND]",
    "status": "/train status [RECIPE|JOBID|JOBID_TASK]",
    "submit": "/train submit RECIPE [key=value ...]",
    "resume": "/train resume RECIPE",
    "cancel": "/train cancel JOBID|JOBID_TASK",
    "hold": "/train hold JOBID|JOBID_TASK",
    "release": "/train release JOBID|JOBID_TASK",
    "logs": "/train logs JOBID|JOBID_TASK [N]",
    "watch": "/train watch JOBID|JOBID_TASK",
    "unwatch": "/train unwatch JOBID|JOBID_TASK",
    "stacks": "/train stacks JOBID|JOBID_TASK",
    "history": "/train history RECIPE",
    "preflight": "/train preflight RECIPE [key=value ...]",
}

# What each command is for (`/train help`), translated by the renderer.
HELP_LINES: dict[str, Text] = {
    "help": N_("this list, or the usage of one command"),
    "status": N_("watched jobs, a recipe's latest run, or one job"),
    "submit": N_("submit a recipe (resuming from its latest complete checkpoint) as a new run"),
    "resume": N_("resubmit a recipe's run from its latest complete checkpoint, in its thread"),
    "cancel": N_("cancel a job (its team or an approver)"),
    "hold": N_("hold a pending job (its team or an approver)"),
    "release": N_("release a held job (its team or an approver)"),
    "logs": N_("the last N lines of a job's log (default %(default)s, at most %(most)s)",
               default=DEFAULT_LOG_LINES, most=MAX_LOG_LINES),
    "watch": N_("watch a job submitted outside trainbot in a thread: one job, an array task "
                "(123_4) or a whole array (123, a row per task)"),
    "unwatch": N_("stop watching a job or array adopted with `/train watch` (who adopted it "
                  "or an approver, like Stop watching on the Home tab); the job itself is "
                  "left alone"),
    "stacks": N_("which rank of a running job is stuck, and where: its Python stacks, grouped"),
    "history": N_("a recipe's runs and attempts"),
    "preflight": N_("check a recipe's launcher, toolchain and memory before it queues"),
}

# A recipe name `/train` can name: the config refuses any other (bot.config.models.root).
RECIPE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
_COUNT_RE = re.compile(r"^[0-9]{1,6}$")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")
# shlex's complaints, as sentences the renderer translates
_SHLEX_ERRORS = {"no closing quotation": N_("no closing quotation"),
                 "no escaped character": N_("no escaped character")}
# Slack escapes these three in slash command text (https://api.slack.com/reference/surfaces/formatting)
_SLACK_ESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


class CommandError(ValueError):
    """The command text is wrong: `problem` says what (a sentence the renderer translates),
    `usage` the right form of `verb` (empty: the verb itself is unknown); `str()` is both, in
    English."""

    def __init__(self, problem: Text, verb: str | None = None):
        self.problem = problem
        self.verb = verb
        self.usage = USAGE.get(verb or "", "")
        said = str(problem)
        sentence = said if said[-1:] in ("?", "!", ".") else f"{said}."  # as train_reply's
        if self.usage:
            message = f"{sentence} Usage: `{self.usage}`"
        else:
            message = f"{sentence} Commands: {', '.join(USAGE)} (try `/train help`)"
        super().__init__(message)


@dataclass(frozen=True)
class Help:
    topic: str | None = None


@dataclass(frozen=True)
class Status:
    target: str | None = None  # a recipe name or a job id (123, 123_4); None = every watched job

    @property
    def is_job(self) -> bool:
        return self.target is not None and looks_like_job_ref(self.target)


@dataclass(frozen=True)
class Submit:
    recipe: str
    overrides: tuple[tuple[str, str], ...] = ()  # literal (key, value) strings, in order

    def override_strings(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.overrides]


@dataclass(frozen=True)
class Resume:
    recipe: str


@dataclass(frozen=True)
class JobControl:
    verb: Literal["cancel", "hold", "release"]
    job_id: int  # the array's id when `array_task` is set (`/train cancel 123_4`)
    array_task: int | None = None


@dataclass(frozen=True)
class Logs:
    job_id: int  # the array's id when `array_task` is set
    lines: int = DEFAULT_LOG_LINES
    array_task: int | None = None


@dataclass(frozen=True)
class Watch:
    job_id: int  # the array's id when `array_task` is set (`/train watch 123_4`)
    array_task: int | None = None


@dataclass(frozen=True)
class Unwatch:
    job_id: int  # the array's id when `array_task` is set (`/train unwatch 123_4`)
    array_task: int | None = None


@dataclass(frozen=True)
class Stacks:
    job_id: int  # the array's id when `array_task` is set
    array_task: int | None = None


@dataclass(frozen=True)
class History:
    recipe: str


@dataclass(frozen=True)
class Preflight:
    recipe: str
    overrides: tuple[tuple[str, str], ...] = ()  # as for Submit: the run's overrides to check

    def override_strings(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.overrides]


Command = (Help | Status | Submit | Resume | JobControl | Logs | Watch | Unwatch | Stacks
           | History | Preflight)


def verb_of(cmd: Command) -> str:
    """The verb a command was given with (`resume`, `cancel`, …)."""
    if isinstance(cmd, JobControl):
        return cmd.verb
    return type(cmd).__name__.lower()


def unescape_slack(text: str) -> str:
    """Undo Slack's escaping of `<`, `>` and `&` in slash command text."""
    for escaped, plain in _SLACK_ESCAPES:
        text = text.replace(escaped, plain)
    return text


def tokenize(text: str) -> list[str]:
    """Split like a POSIX shell would (quotes group words); never expands anything."""
    if len(text) > MAX_TEXT_CHARS:
        raise CommandError(N_("the command is %(n)s characters long; at most %(most)s are "
                              "accepted", n=len(text), most=MAX_TEXT_CHARS))
    if "\x00" in text:
        raise CommandError(N_("the command contains a NUL character"))
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        reason = str(exc).lower().rstrip(".")
        said = _SHLEX_ERRORS.get(reason, reason)
        raise CommandError(N_("cannot read the command: %(reason)s (close every quote)",
                              reason=said)) from None


def parse_command(text: str) -> Command:
    """Parse `/train` text (as Slack sends it) into a command; raises CommandError."""
    words = tokenize(unescape_slack(text))
    if not words:
        return Help()
    verb, args = words[0].lower(), words[1:]
    if verb in ("-h", "--help"):
        verb = "help"
    parser = _PARSERS.get(verb)
    if parser is None:
        close = difflib.get_close_matches(verb, list(USAGE), n=1, cutoff=0.6)
        if close:
            raise CommandError(N_("unknown command %(word)s — did you mean `%(close)s`?",
                                  word=_show(words[0]), close=close[0]))
        raise CommandError(N_("unknown command %(word)s", word=_show(words[0])))
    return parser(verb, args)


def usage_text() -> str:
    """The help message in English (the CLI's; Slack's comes from train_reply's `help`):
    every command's usage and what it does."""
    lines = ["*trainbot* — `/train` commands:"]
    for verb, usage in USAGE.items():
        lines.append(f"• `{usage}` — {HELP_LINES[verb]}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# one parser per verb


def _show(word: str, limit: int = 40) -> str:
    """A user's word quoted for an error message, shortened, control chars made visible."""
    shown = word if len(word) <= limit else word[: limit - 1] + "…"
    return repr(shown)


def _arity(verb: str, args: list[str], *, least: int, most: int) -> None:
    if len(args) < least:
        if least - len(args) == 1:
            raise CommandError(N_("`%(verb)s` needs an argument", verb=verb), verb)
        raise CommandError(N_("`%(verb)s` needs %(n)s arguments", verb=verb, n=least), verb)
    if len(args) > most:
        extra = " ".join(_show(a) for a in args[most:])
        raise CommandError(N_("`%(verb)s` got unexpected extra argument(s): %(extra)s",
                              verb=verb, extra=extra), verb)


def _recipe(verb: str, word: str) -> str:
    if not RECIPE_NAME_RE.match(word):
        raise CommandError(N_("%(word)s is not a recipe name (letters, digits, '_', '.', '-')",
                              word=_show(word)), verb)
    return word


def _job_ref(verb: str, word: str) -> JobRef:
    try:
        return parse_job_ref(word)
    except JobIdError as exc:
        raise CommandError(exc.text, verb) from None


def _p_help(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=0, most=1)
    if not args:
        return Help()
    topic = args[0].lower()
    if topic not in USAGE:
        raise CommandError(N_("no command %(word)s to explain", word=_show(args[0])), "help")
    return Help(topic)


def _p_status(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=0, most=1)
    if not args:
        return Status()
    word = args[0]
    if looks_like_job_ref(word):  # `0`, `0_3`: not a job id, never a recipe's name either
        return Status(_job_ref(verb, word).display)
    return Status(_recipe(verb, word))


def _p_recipe_overrides(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=1 + 32)
    recipe = _recipe(verb, args[0])
    if verb == "preflight":
        return Preflight(recipe, _overrides(verb, args[1:]))
    return Submit(recipe, _overrides(verb, args[1:]))


def _overrides(verb: str, words: list[str]) -> tuple[tuple[str, str], ...]:
    """`key=value` words, checked: (key, value) pairs in order."""
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for word in words:
        key, sep, value = word.partition("=")
        bare = key.lstrip("-")
        if bare != key and _KEY_RE.match(bare):  # `--mem=400G`, `--mem`: an sbatch option's form
            raise CommandError(N_("%(word)s is not an override; write it as key=value, without "
                                  "the dashes: %(fixed)s", word=_show(word),
                                  fixed=_show(f"{bare}={value if sep and value else 'VALUE'}")),
                               verb)
        if not sep:
            raise CommandError(N_("%(word)s is not a key=value override", word=_show(word)), verb)
        if not _KEY_RE.match(key):
            raise CommandError(N_("%(key)s is not an override key (letters, digits, '_', '.', "
                                  "'-', starting with a letter or '_')", key=_show(key)), verb)
        if value == "":
            raise CommandError(N_("override %(key)r has no value; write %(key)s=VALUE",
                                  key=key), verb)
        if key in seen:
            raise CommandError(N_("override %(key)r is given twice; give each key once",
                                  key=key), verb)
        seen.add(key)
        pairs.append((key, value))
    return tuple(pairs)


def _p_recipe_only(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=1)
    recipe = _recipe(verb, args[0])
    if verb == "resume":
        return Resume(recipe)
    return History(recipe)


def _p_job_control(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=1)
    ref = _job_ref(verb, args[0])
    return JobControl(verb, ref.job_id, ref.array_task)  # type: ignore[arg-type]


def _p_logs(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=2)
    ref = _job_ref(verb, args[0])
    if len(args) == 1:
        return Logs(ref.job_id, array_task=ref.array_task)
    if not _COUNT_RE.match(args[1]):
        raise CommandError(N_("%(word)s is not a line count (a whole number)",
                              word=_show(args[1])), verb)
    lines = int(args[1])
    if not 1 <= lines <= MAX_LOG_LINES:
        raise CommandError(N_("line count %(n)s is out of range 1..%(most)s", n=lines,
                              most=MAX_LOG_LINES), verb)
    return Logs(ref.job_id, lines, ref.array_task)


def _p_watch(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=1)
    ref = _job_ref(verb, args[0])
    if verb == "unwatch":
        return Unwatch(ref.job_id, ref.array_task)
    return Watch(ref.job_id, ref.array_task)


def _p_stacks(verb: str, args: list[str]) -> Command:
    _arity(verb, args, least=1, most=1)
    ref = _job_ref(verb, args[0])
    return Stacks(ref.job_id, ref.array_task)


_PARSERS = {
    "help": _p_help,
    "status": _p_status,
    "submit": _p_recipe_overrides,
    "resume": _p_recipe_only,
    "history": _p_recipe_only,
    "preflight": _p_recipe_overrides,
    "cancel": _p_job_control,
    "hold": _p_job_control,
    "release": _p_job_control,
    "logs": _p_logs,
    "watch": _p_watch,
    "unwatch": _p_watch,
    "stacks": _p_stacks,
}
