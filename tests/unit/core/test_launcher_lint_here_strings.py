"""Scripts with a here-string (`<<<`) or a `<<` that opens no here-document, run with real
bash. The lexer read `<<<` as a here-document's `<<` and blanked the script's rest as its
body (no delimiter line comes), so the lint judged a trap's function or a counter without
the lines past it: it now reads those lines, and fails a counter where bash ends with a status
other than 0 and nowhere else."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

from bot.core.shell_lexer import blank_heredocs

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nread -r a <<< yes\nn=5\n"
                 "echo done\n", False, id="here-string-then-exit-trap-counter-set"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nread -r a <<<\"$n\"\n"
                 "echo done\n", True, id="here-string-then-exit-trap-counter-still-0"),
    pytest.param("set -e\nn=1\nread -r a <<< EOF\nn=0\n((n++))\necho done\n", True,
                 id="here-string-with-a-word-then-a-counter-from-0"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_a_here_string_is_no_here_document(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)


def test_a_here_strings_lines_after_it_are_not_blanked():
    text = "read -r a <<< EOF\nn=5\nEOF\necho $a\n"
    assert blank_heredocs(text) == text
