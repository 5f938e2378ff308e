"""Here-documents opened as bash opens them, run with real bash: `<<\\EOF` (a backslash quotes
the delimiter), `<<END-OF` and `<<E"OF"` (bash's whole word, its quotes removed), a shift in an
arithmetic expression (`((m = 1 << idx))`, `$((1<<b))`: no here-document) and `<<EOF` in a
double-quoted string (text). The lexer read the first as no here-document (its data read as
commands), the next two with another delimiter and the last two as here-documents never closed
(the script's rest blanked): the lint fails a counter where bash ends with a status other than
0 and nowhere else."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

from bot.core.shell_lexer import blank_heredocs

_EXIT_TRAP = "set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\n"

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\ncat <<\\EOF >/dev/null\n((n++))\nEOF\necho done\n", False,
                 id="backslash-quoted-delimiter-its-data-counts-nothing"),
    pytest.param(_EXIT_TRAP + "cat <<END-OF >/dev/null\nhi\nEND-OF\nn=5\necho done\n", False,
                 id="delimiter-with-a-dash"),
    pytest.param(_EXIT_TRAP + "cat <<E\"OF\" >/dev/null\nhi\nEOF\nn=5\necho done\n", False,
                 id="delimiter-partly-quoted"),
    pytest.param(_EXIT_TRAP + "idx=3\n((mask = 1 << idx))\nn=5\necho done\n", False,
                 id="shift-in-an-arithmetic-command"),
    pytest.param(_EXIT_TRAP + "b=2\necho $((1<<b)) >/dev/null\nn=5\necho done\n", False,
                 id="shift-in-an-arithmetic-expansion"),
    pytest.param(_EXIT_TRAP + "echo \"usage: cat <<EOF\" >/dev/null\nn=5\necho done\n", False,
                 id="here-document-opener-in-a-double-quoted-string"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_a_here_document_is_opened_where_bash_opens_one(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)


@pytest.mark.parametrize(("text", "blanked"), [
    ("cat <<\\EOF\nx\nEOF\ny\n", "cat <<\\EOF\n \nEOF\ny\n"),
    ("cat <<E\"OF\"\nx\nEOF\ny\n", "cat <<E\"OF\"\n \nEOF\ny\n"),
    ("cat <<END-OF\nx\nEND\ny\nEND-OF\nz\n", "cat <<END-OF\n \n   \n \nEND-OF\nz\n"),
    ("cat <<EOF\r\nx\r\nEOF\r\ny\r\n", "cat <<EOF\r\n  \nEOF\r\ny\r\n"),
    ("((m = 1 << idx))\nidx\n", "((m = 1 << idx))\nidx\n"),
    ("echo \"cat <<EOF\"\nx\nEOF\n", "echo \"cat <<EOF\"\nx\nEOF\n"),
])
def test_here_document_bodies_bash_reads(text, blanked):
    assert blank_heredocs(text) == blanked
