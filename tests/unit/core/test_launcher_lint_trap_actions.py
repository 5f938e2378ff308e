"""A trap's action read once (launcher_lint.trap_actions) for the calls at a self-sent `kill`
and at the exit, run with real bash: a function called with arguments (`trap 'h "$1"' TERM`)
or after another command (`trap "echo 'got'; h" USR1`) is called each time the trap runs, as
the bare name is; a call after `&&` / `||` or in an action that sets a variable itself is not
read as made. The lint read such an action's words as an action's (the function's name there
no call) but placed no call of it, so the function counted as never called: it now fails a
counter where bash ends with a status other than 0 and nowhere else."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

#: (script, whether bash ends it with a status other than 0, the line of `script` the lint
#: fails where it does)
SIGNAL_TRAPS = [
    pytest.param("set -e\nn=0\nh() { n=5; }\ntrap 'h \"$1\"' TERM\nkill -TERM $$\n((n++))\n"
                 "echo done\n", False, None, id="handler-with-an-argument-sets"),
    pytest.param("set -e\nn=5\nh() { n=0; }\ntrap 'h \"$1\"' TERM\nkill -TERM $$\n((n++))\n"
                 "echo done\n", True, 6, id="handler-with-an-argument-resets"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'echo \"got\"; h' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", True, 6, id="handler-after-an-echo-resets"),
    pytest.param("set -e\nn=0\nh() { n=5; }\ntrap \"echo 'got'; h\" USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, None, id="handler-after-an-echo-sets"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'true || h' USR1\nkill -USR1 $$\n((n++))\n"
                 "echo done\n", False, None, id="handler-after-or-not-called"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'h; n=3' USR1\nkill -USR1 $$\n((n++))\n"
                 "echo done\n", False, None, id="action-setting-a-variable-itself"),
]


@pytest.mark.parametrize(("body", "bash_fails", "line"), SIGNAL_TRAPS)
def test_a_signal_traps_action_calls_its_function_at_the_kill(tmp_path, body, bash_fails, line):
    judged_as_bash(tmp_path, body, bash_fails, line=line)


#: (script, whether bash ends it with a status other than 0, the line of `script` the lint
#: fails where it does)
EXIT_TRAPS = [
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap 'f \"$@\"' EXIT\nn=5\necho done\n", False,
                 None, id="exit-function-with-arguments-counter-set-before-the-exit"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap 'f \"$@\"' EXIT\necho done\n", True,
                 3, id="exit-function-with-arguments-counter-still-0"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap 'f; echo bye' EXIT\nn=5\necho done\n",
                 False, None, id="exit-function-then-echo-counter-set-before-the-exit"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap 'f; echo bye' EXIT\necho done\n", True,
                 3, id="exit-function-then-echo-counter-still-0"),
    pytest.param("set -e\ntmp=$(mktemp)\nn=0\ncleanup() { rm -f \"$1\"; ((n++)); }\n"
                 "trap 'cleanup \"$tmp\"' EXIT\nn=3\necho done\n", False,
                 None, id="cleanup-of-a-temporary-file"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap '[ -n \"${X:-}\" ] && f' EXIT\nn=5\n"
                 "echo done\n", False, None, id="exit-function-called-on-some-runs"),
]


@pytest.mark.parametrize(("body", "bash_fails", "line"), EXIT_TRAPS)
def test_an_exit_traps_action_calls_its_function_at_the_exit(tmp_path, body, bash_fails, line):
    judged_as_bash(tmp_path, body, bash_fails, line=line)
