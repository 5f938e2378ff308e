"""A trap whose call the lint does not place, run with real bash: an `EXIT` trap set on some
runs only (in an `if`), in a function's body (`main`), reset (`trap - EXIT`, `trap '' EXIT`)
or set again for another function, and a signal trap whose action holds quotes of the other
kind (`trap '[ -n "$X" ] && h' USR1`). Bash runs the first as the shell exits, with the values
left there, and the second only at a signal; the lint judged the function's body where its
text is (`f() { ((n++)); }` after `n=0` failed) or read the second as a call where the trap
is. It now judges neither body there: no fail where bash runs the script to its end (a miss
where the trap's call may stop it, the lesser error)."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\necho hi\ntrap - EXIT\n", False,
                 id="exit-trap-reset"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\necho hi\ntrap '' EXIT\n", False,
                 id="exit-trap-emptied"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\nif true; then trap f EXIT; fi\nn=5\n", False,
                 id="exit-trap-set-in-an-if"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\nmain() { trap f EXIT; n=4; }\nmain\n", False,
                 id="exit-trap-set-in-main"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ng() { echo g; }\ntrap g EXIT\ntrap f EXIT\n"
                 "n=2\n", False, id="exit-trap-set-again"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap '[ -n \"${SAVE:-}\" ] && h' USR1\n"
                 "kill -USR1 $$\n((n++))\necho done\n", False,
                 id="signal-trap-action-with-double-quotes"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap \"[ -n '${SAVE:-}' ] && h\" USR1\n"
                 "kill -USR1 $$\n((n++))\necho done\n", False,
                 id="signal-trap-action-with-single-quotes"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\necho hi\n", True,
                 id="exit-trap-placed-still-judged"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_an_unplaced_traps_function_is_not_judged_where_its_text_is(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)
