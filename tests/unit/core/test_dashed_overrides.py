"""`/train submit mix --mem=400G` (sbatch's form) said "'--mem' is not an override key" and
left the user to find `mem=400G`; the reply now says the key=value form to write (en/ko)."""
from __future__ import annotations

import pytest

from bot.core.text import render_text
from bot.core.train_grammar import CommandError, parse_command
from bot.slack.render import translator


@pytest.mark.parametrize(("text", "said"), [
    ("submit mix --mem=400G", "'--mem=400G' is not an override; write it as key=value, "
     "without the dashes: 'mem=400G'"),
    ("preflight mix -time=04:00:00", "'-time=04:00:00' is not an override; write it as "
     "key=value, without the dashes: 'time=04:00:00'"),
    ("submit mix --mem 400G", "'--mem' is not an override; write it as key=value, without the "
     "dashes: 'mem=VALUE'"),
    ("submit mix --mem=", "'--mem=' is not an override; write it as key=value, without the "
     "dashes: 'mem=VALUE'"),
])
def test_a_dashed_option_says_the_key_value_form(text, said):
    with pytest.raises(CommandError) as info:
        parse_command(text)
    assert said in str(info.value)


def test_the_key_value_form_is_said_in_korean():
    with pytest.raises(CommandError) as info:
        parse_command("submit mix --mem=400G")
    korean = render_text(info.value.problem, translator("ko").gettext)
    assert korean == ("'--mem=400G'은(는) override가 아닙니다. 대시 없이 key=value로 쓰세요: "
                      "'mem=400G'")
