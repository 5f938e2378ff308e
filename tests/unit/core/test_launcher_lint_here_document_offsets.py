"""Scripts with a here-document before a trap, a counter or a call, run with real bash. The
walk reads the script with each here-document's body blanked; its offsets were those of a text
with the bodies emptied, so past a here-document they named other characters of the script
(the trap calls and the never-called bodies were then not read at all in a script with one,
and a `trap f EXIT` after `cat <<EOF` read `f`'s counter where its text is). The bodies are now
blanked in place: the lint fails a counter where bash ends with a status other than 0 and
nowhere else, here-document or not."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

from bot.core.launcher_lint import CHECK_ARITH_ZERO, lint_launcher

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\ncat <<EOF >/dev/null\nhi\nEOF\n"
                 "n=5\n", False, id="exit-trap-then-here-document-then-set"),
    pytest.param("set -e\nn=0\nf() { cat <<EOF\nx\nEOF\n((n++)); }\ntrap f EXIT\nn=5\n", False,
                 id="here-document-in-the-exit-traps-function"),
    pytest.param(": <<'EOF'\nnothing\nEOF\nset -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nn=5\n",
                 False, id="here-document-first-then-exit-trap"),
    pytest.param("set -e\nn=0\nh() { n=5; }\ntrap h USR1\ncat <<EOF >/dev/null\nhi\nEOF\n"
                 "kill -USR1 $$\n((n++))\necho done\n", False,
                 id="here-document-before-a-self-kill-whose-handler-sets"),
    pytest.param("set -e\nn=5\nh() { n=0; }\ntrap h USR1\ncat <<EOF >/dev/null\nhi\nEOF\n"
                 "kill -USR1 $$\n((n++))\necho done\n", True,
                 id="here-document-before-a-self-kill-whose-handler-resets"),
    pytest.param(": <<'EOF'\nnothing\nEOF\nset -e\nn=1\nzero() { n=0; }\nouter() { zero; }\n"
                 "((n++))\necho done\n", False, id="here-document-then-never-called-bodies"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap h USR1\ncat <<EOF >/dev/null\n"
                 "kill -USR1 $$\nEOF\n((n++))\necho done\n", False,
                 id="a-kill-in-a-here-document-is-data"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\ncat <<-EOF >/dev/null\n\thi\n"
                 "\tEOF\necho hi\n", True, id="exit-trap-counter-still-0-past-a-here-document"),
    # (a here-document's data is no assignment, no call: the values and the never-called bodies
    # are read in the text the walk read)
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\ncat <<EOF >/dev/null\nn=5\nEOF\n"
                 "echo done\n", True, id="an-assignment-in-a-here-document-is-data"),
    pytest.param("set -e\nn=1\nz() { n=0; }\ncat <<EOF >/dev/null\nz\nEOF\n((n++))\necho done\n",
                 False, id="a-functions-name-in-a-here-document-is-no-call"),
    pytest.param("set -e\nn=1\nz() { n=0; }\nouter() { z; }\ncat <<EOF >/dev/null\nouter\nEOF\n"
                 "((n++))\necho done\n", False, id="a-callers-name-in-a-here-document-is-no-call"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_a_here_document_moves_no_offset(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)


def test_a_counter_after_a_here_document_is_judged_as_without_it():
    """The same script with and without a here-document before it: the same findings, a line
    further down."""
    body = "set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\necho hi\n"
    plain = [(f.level, f.line or 0) for f in lint_launcher("#!/bin/bash\n" + body)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    here = [(f.level, (f.line or 0) - 3) for f in lint_launcher(
        "#!/bin/bash\ncat <<'EOF' >/dev/null\nsome text\nEOF\n" + body)
        if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert here == plain == [("fail", 4)]
