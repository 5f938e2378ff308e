"""A counter in the function an `EXIT` trap runs (`f() { ((n++)); }; trap f EXIT`), run with
real bash: bash runs the body as the shell exits, with what the script left the counter at
then, so the lint fails it where bash ends with a status other than 0 and nowhere else (it
read the counter where the body is, `n=0; …; trap f EXIT; n=5` failed)."""

from __future__ import annotations

import pytest
from support.bash_end import judged_as_bash

#: (script, whether bash ends it with a status other than 0)
SCRIPTS = [
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nn=5\n", False,
                 id="set-after-the-trap"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap 'f' 0\nn=4\necho done\n", False,
                 id="trap-on-0"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\n((n++)) || true\n", False,
                 id="counted-after-the-trap"),
    pytest.param('set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\n'
                 'if [ -z "${X:-}" ]; then n=3; fi\n', False, id="set-in-a-branch-bash-takes"),
    pytest.param("set -e\nn=0\nf() { ((n++)); echo cleanup; }\ng() { n=2; }\ntrap f EXIT\n"
                 "g\necho done\n", False, id="set-by-a-call-after-the-trap"),
    pytest.param('set -euo pipefail\nstep=0\ncleanup() { ((step++)); echo "at $step"; }\n'
                 "trap cleanup EXIT\nfor i in 1 2 3; do step=$i; done\n", False,
                 id="set-in-a-loop"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\necho hi\n", True,
                 id="still-0-at-the-end"),
    pytest.param("set -e\nn=0\nf() { ((n++)); echo after; }\ntrap f EXIT\necho hi\n", True,
                 id="still-0-body-goes-on"),
    pytest.param("n=0\nf() { ((n++)); echo trap; }\ntrap f EXIT\nset -e\necho hi\n", True,
                 id="set-e-after-the-trap"),
    pytest.param('set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nif [ -z "${X:-}" ]; then exit 0; fi\n'
                 "n=5\n", True, id="exit-in-a-branch-before-the-count-is-set"),
    pytest.param('set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\n[ -z "${X:-}" ] && exit 0\nn=5\n',
                 True, id="exit-in-an-and-list-before-the-count-is-set"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f EXIT\nn=3\n"
                 'if [ -z "${X:-}" ]; then exit 0; fi\nn=5\n', False,
                 id="exit-in-a-branch-after-the-count-is-set"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\nn=2\nexit 0\ntrap f EXIT\n", False,
                 id="exit-before-the-trap"),
]


@pytest.mark.parametrize(("body", "bash_fails"), SCRIPTS)
def test_an_exit_traps_counter_fails_where_bash_fails(tmp_path, body, bash_fails):
    judged_as_bash(tmp_path, body, bash_fails)
