"""A trap on a signal the script sends its own shell (`trap h USR1; kill -USR1 $$`), run with
real bash: bash runs the trap's function right after the `kill`, in the script's shell, so
what it assigns holds past the `kill` and an `exit` in it ends the script there. The lint
fails a counter where bash ends with a status other than 0 and nowhere else (it read the
function as never running: `h() { n=5; }` left `n` at 0 for a later `((n++))`, and a later
counter failed past a handler's `exit 0`). A count in the handler itself is not judged at the
`kill` (a miss, marked)."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\nh() { n=5; }\ntrap h USR1\nkill -USR1 $$\n((n++))\necho done\n",
                 False, id="handler-sets-the-counter"),
    pytest.param("set -e\nn=0\nh() { echo got; exit 0; }\ntrap h TERM\nkill -TERM $$\n"
                 "((n++))\necho done\n", False, id="handler-exits-before-the-counter"),
    pytest.param('set -e\nn=2\nh() { ((n--)); }\ntrap h USR1\nkill -s USR1 "$$"\n'
                 "kill -SIGUSR1 $$\necho done\n", False, id="handler-counts-down-twice"),
    pytest.param("set -e\nn=3\nf() { ((n++)); echo handled; }\ntrap f USR1\nkill -USR1 $$\n"
                 "echo done\n", False, id="handler-counts-from-3"),
    pytest.param("set -e\nn=0\nh() { ((n++)); }\ntrap h USR1\nkill -USR1 $$\necho done\n",
                 True, id="handler-counts-from-0", marks=pytest.mark.xfail(
                     strict=True, reason="a count in the handler is not judged at the kill (a "
                     "miss: `[ -f x ] && ((n++))` there would be failed on runs bash goes on)")),
    pytest.param('set -euo pipefail\nstep=0\non_term() { echo "checkpoint at $step"; step=0; }\n'
                 "trap on_term TERM\nstep=7\nkill -TERM $$\n((step++))\necho done\n", True,
                 id="handler-resets-the-counter"),
    pytest.param("set -e\nn=1\nsave() { n=0; }\ntrap 'echo save requested' USR1\n"
                 "kill -USR1 $$\n((n++))\necho done\n", False, id="action-only-echoes-the-name"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'true || h' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-or-list"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'if false; then h; fi' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-if"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap '(h)' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-subshell"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'h &' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-background"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'h | cat' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-pipeline"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'x=$(h)' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-substitution"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap 'h; n=1' USR1\nkill -USR1 $$\n"
                 "((n++))\necho done\n", False, id="action-then-resets"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap h USR1\ncoproc { sleep 3; kill -USR1 $$; }\n"
                 "((n++))\necho done\n", False, id="kill-in-a-coproc"),
    pytest.param("set -e\nn=1\nh() { n=0; }\ntrap h CHLD\nkill -CHLD $$\n((n++))\necho done\n",
                 False, id="chld-not-run-at-the-kill"),
    pytest.param("set -e\nn=0\nh() { exit 0; }\ntrap h KILL\nkill -KILL $$\n((n++))\n"
                 "echo done\n", True, id="kill-cannot-be-trapped"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_a_self_signalled_traps_function_runs_at_the_kill(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)
