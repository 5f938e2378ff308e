"""A command's timeout or flood names the command briefly: a script passed to `sh -c` (the
batched tail read's 5 KB tail_read.sh) is not printed whole into a thread's note."""

from bot.cluster.errors import BRIEF_ARG_CHARS, CommandTimedOut, OutputTooLarge, brief_command
from bot.cluster.tail import ARGV


def test_short_command_is_quoted_whole():
    assert brief_command(["squeue", "--me"]) == "squeue --me"
    assert str(CommandTimedOut(["squeue", "--me"], 20)) == \
        "`squeue --me` did not finish within 20 s"


def test_tail_read_script_is_named_not_printed():
    for error in (CommandTimedOut(ARGV, 15.1), OutputTooLarge(ARGV, 64 << 20)):
        text = str(error)
        assert len(text) < BRIEF_ARG_CHARS + 120, text
        assert text.startswith("`/bin/sh -c '# trainbot: read many files"), text
        assert "…' trainbot-tail`" in text and "\n" not in text
    assert str(OutputTooLarge(ARGV, 64 << 20)).endswith(
        "sent more than 64 MiB of output; trainbot stopped reading it and closed its channel")
