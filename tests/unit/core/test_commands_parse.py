"""`/train` text → typed commands, and the exact complaints for bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.train_grammar import (
    MAX_LOG_LINES,
    USAGE,
    CommandError,
    Help,
    History,
    JobControl,
    Logs,
    Preflight,
    Resume,
    Stacks,
    Status,
    Submit,
    Unwatch,
    Watch,
    parse_command,
    usage_text,
)

GOOD = [
    ("", Help()),
    ("   ", Help()),
    ("help", Help()),
    ("HELP logs", Help("logs")),
    ("status", Status()),
    ("status mix", Status("mix")),
    ("status 88154", Status("88154")),
    ("submit mix", Submit("mix")),
    ("submit mix mem=950G lr=3e-4", Submit("mix", (("mem", "950G"), ("lr", "3e-4")))),
    # quotes group words; the value stays a literal string, shell characters and all
    ("submit mix 'note=a b; rm -rf ~'", Submit("mix", (("note", "a b; rm -rf ~"),))),
    ('submit mix note="$(touch /tmp/x)"', Submit("mix", (("note", "$(touch /tmp/x)"),))),
    ("submit mix note=`id`", Submit("mix", (("note", "`id`"),))),
    ("submit mix x=a=b", Submit("mix", (("x", "a=b"),))),
    # Slack escapes < > & in command text
    ("submit mix note=a&amp;b&lt;c&gt;", Submit("mix", (("note", "a&b<c>"),))),
    ("resume mix", Resume("mix")),
    ("Resume wm-mix.v2", Resume("wm-mix.v2")),
    ("cancel 88017", JobControl("cancel", 88017)),
    ("hold 88017", JobControl("hold", 88017)),
    ("release 88017", JobControl("release", 88017)),
    ("logs 88154", Logs(88154, 40)),
    ("logs 88154 200", Logs(88154, 200)),
    (f"logs 1 {MAX_LOG_LINES}", Logs(1, MAX_LOG_LINES)),
    ("watch 108687", Watch(108687)),
    ("stacks 88154", Stacks(88154)),
    ("watch 108687_4", Watch(108687, 4)),
    ("unwatch 108687", Unwatch(108687)),
    ("UNWATCH 6100_2", Unwatch(6100, 2)),
    ("cancel 6100_2", JobControl("cancel", 6100, 2)),
    ("hold 6100_2", JobControl("hold", 6100, 2)),
    ("logs 6100_2 10", Logs(6100, 10, 2)),
    ("stacks 6100_2", Stacks(6100, 2)),
    ("status 6100_2", Status("6100_2")),
    ("history mix", History("mix")),
    ("preflight mix", Preflight("mix")),
    ("preflight mix steps=500 mem=950G", Preflight("mix", (("steps", "500"), ("mem", "950G")))),
]


@pytest.mark.parametrize("text,expected", GOOD)
def test_good_commands(text: str, expected: object) -> None:
    assert parse_command(text) == expected


BAD = [
    # (text, parts the message must contain)
    ("resum mix", ["unknown command 'resum'", "did you mean `resume`"]),
    ("rm -rf /", ["unknown command 'rm'", "Commands: help, status"]),
    ("resume", ["`resume` needs an argument", "Usage: `/train resume RECIPE`"]),
    ("resume mix now", ["unexpected extra argument(s): 'now'", "/train resume RECIPE"]),
    ("cancel", ["`cancel` needs an argument", "/train cancel JOBID"]),
    ("cancel 88017x", ["'88017x' is not a job id: give 123 (a job or a whole array) or "
                       "123_4 (task 4 of array 123)", "/train cancel JOBID|JOBID_TASK"]),
    ("cancel -1", ["'-1' is not a job id", "/train cancel JOBID"]),
    # Slurm numbers jobs from 1: 0 is no job's id (its argv builders refuse it), in any verb
    ("cancel 0", ["'0' is not a job id: give 123", "/train cancel JOBID|JOBID_TASK"]),
    ("watch 0", ["'0' is not a job id", "/train watch JOBID|JOBID_TASK"]),
    ("logs 000", ["'000' is not a job id", "/train logs JOBID|JOBID_TASK [N]"]),
    ("hold 0_3", ["'0_3' is not a job id", "/train hold JOBID"]),
    ("stacks 007", ["'007' is not a job id", "/train stacks JOBID"]),
    ("status 0", ["'0' is not a job id", "/train status [RECIPE|JOBID|JOBID_TASK]"]),
    ("hold 1 2", ["extra argument(s): '2'", "/train hold JOBID"]),
    ("release $(id)", ["'$(id)' is not a job id", "/train release JOBID"]),
    ("logs 1 0", ["line count 0 is out of range 1..500", "/train logs JOBID|JOBID_TASK [N]"]),
    ("logs 1 501", ["line count 501 is out of range 1..500"]),
    ("logs 1 ten", ["'ten' is not a line count"]),
    ("logs 1 2 3", ["extra argument(s): '3'"]),
    ("watch abc", ["'abc' is not a job id"]),
    ("watch 123_", ["'123_' is not a job id", "123_4 (task 4 of array 123)",
                    "/train watch JOBID|JOBID_TASK"]),
    ("watch 123_[1-3]", ["'123_[1-3]' is not a job id"]),
    ("unwatch", ["`unwatch` needs an argument", "/train unwatch JOBID|JOBID_TASK"]),
    ("unwatch 1 2", ["extra argument(s): '2'", "/train unwatch JOBID|JOBID_TASK"]),
    ("unwatch mix", ["'mix' is not a job id"]),
    ("unwach 1", ["did you mean `unwatch`?"]),
    ("logs 123_4_5", ["'123_4_5' is not a job id: give 123"]),
    ("stacks 12.3", ["'12.3' is not a job id: give 123"]),
    ("status mix;id", ["'mix;id' is not a recipe name", "/train status [RECIPE|JOBID|JOBID_TASK]"]),
    ("status a b", ["extra argument(s): 'b'"]),
    ("submit", ["`submit` needs an argument", "/train submit RECIPE [key=value ...]"]),
    ("submit ../etc", ["'../etc' is not a recipe name"]),
    ("submit mix mem", ["'mem' is not a key=value override", "/train submit RECIPE"]),
    ("submit mix =5", ["'' is not an override key"]),
    ("submit mix 9x=5", ["'9x' is not an override key"]),
    ("submit mix mem=", ["override 'mem' has no value; write mem=VALUE"]),
    ("submit mix mem=1G mem=2G", ["override 'mem' is given twice"]),
    ("submit mix 'note=oops", ["cannot read the command: no closing quotation",
                               "close every quote"]),
    ("submit mix note=a\\", ["cannot read the command: no escaped character"]),
    ("history", ["`history` needs an argument", "/train history RECIPE"]),
    ("preflight mix x", ["'x' is not a key=value override",
                         "/train preflight RECIPE [key=value ...]"]),
    ("preflight mix mem=1G mem=2G", ["override 'mem' is given twice"]),
    ("help nothing", ["no command 'nothing' to explain", "/train help [COMMAND]"]),
    ("x" * 3000, ["3000 characters long"]),
    ("status a\x00b", ["NUL character"]),
]


@pytest.mark.parametrize("text,parts", BAD)
def test_bad_commands_say_what_and_how(text: str, parts: list[str]) -> None:
    with pytest.raises(CommandError) as err:
        parse_command(text)
    for part in parts:
        assert part in str(err.value)


def test_usage_lists_every_command() -> None:
    text = usage_text()
    for usage in USAGE.values():
        assert usage in text


def test_long_words_are_shortened_in_errors() -> None:
    with pytest.raises(CommandError) as err:
        parse_command("cancel " + "9" * 30 + "x" * 100)
    assert len(str(err.value)) < 200


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    """Never an exception other than CommandError; job ids are ints; values literal."""
    try:
        cmd = parse_command(text)
    except CommandError as exc:
        assert str(exc)
        return
    if isinstance(cmd, Submit):
        for key, value in cmd.overrides:
            assert value and "=" not in key
    for attr in ("job_id",):
        if hasattr(cmd, attr):
            assert isinstance(getattr(cmd, attr), int)
