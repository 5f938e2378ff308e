"""A function the script defines and never calls (`setup() { n=0; }`, no `setup` anywhere
else): bash never runs its body, so what it assigns holds nowhere and a trap it sets is never
set. Each script is run with real bash, which runs it to its end with status 0; the lint warns
about nothing in it (it read the body's `n=0` as set on some runs, and its `trap … EXIT` as
set). A name the script builds (`"$STAGE"`, `se"tup"`) may still call it: read as before."""

from __future__ import annotations

import pytest
from support.bash_end import COUNTER_CHECKS, NOT_PASS, runs_to_the_end

from bot.core.launcher_lint import CHECK_ARITH_ZERO, CHECK_EXIT_TRAP, lint_launcher

NEVER_CALLED = [
    pytest.param('set -e\nn=1\nsetup() { n=0; }\n'
                 'main() { if [ -n "${X:-}" ]; then n=3; fi; ((n++)); }\nmain\necho done\n',
                 id="uncalled-setup-zeroes-a-counter"),
    pytest.param('set -e\nn=1\nsetup() { n=0; }\nif [ -n "${X:-}" ]; then n=3; fi\n'
                 '((n++))\necho done\n', id="uncalled-setup-top-level-counter"),
    pytest.param("set -e\ncleanup() { trap 'echo bye; exit 0' EXIT; }\n"
                 "python3 -c 'print(1)'\necho done\n", id="uncalled-function-sets-exit-trap"),
]


@pytest.mark.parametrize("body", NEVER_CALLED)
def test_what_a_function_nothing_calls_does_is_not_warned_about(tmp_path, body):
    runs_to_the_end(tmp_path, body, checks=(*COUNTER_CHECKS, CHECK_EXIT_TRAP), levels=NOT_PASS)

def test_a_body_a_built_name_may_call_is_still_read():
    """`"${STAGE:-set}up"` may run `setup`: its `n=0` may hold at the counter (a warning)."""
    script = ('#!/bin/bash\nset -e\nn=1\nsetup() { n=0; }\nSTAGE="${STAGE:-set}up"\n'
              'if [ -n "${X:-}" ]; then "$STAGE"; fi\n((n++))\necho done\n')
    assert [f.level for f in lint_launcher(script)
            if f.check == CHECK_ARITH_ZERO and f.level != "pass"] != []
