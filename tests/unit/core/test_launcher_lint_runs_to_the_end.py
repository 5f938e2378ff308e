"""Scripts real bash runs to their end that the launcher lint must not fail: traps on signals
the script sends itself or Slurm sends its batch shell, and functions called through a name
the script builds. Each is a script a read of the lint once failed (a trap on a sent signal
turned off the reading of function calls, the handler judged where its text is rather than at
the `kill`, a later `trap ''` not followed, `kill` read in strings and heredocs, a function
called as `"${MODE:-resume}"` read as never called); each is run with real bash here."""

from __future__ import annotations

import pytest
from support.bash_end import runs_to_the_end

RUN_TO_THE_END = [
    pytest.param("""\
#SBATCH --signal=B:USR1@120
set -e
step=1
cleanup() { step=0; echo cleaned; }
train() { ((step++)); echo "training from step $step"; }
requeue() { echo "got signal, requeueing"; }
trap requeue USR1
train
cleanup
echo done
""", id='requeue-handler-under-batch-signal'),
    pytest.param("""\
#SBATCH --signal=B:USR1@120
set -e
n=5
reset() { n=0; }
((n++))
reset
requeue() { echo "got signal"; }
trap requeue USR1
echo done
""", id='top-level-counter-with-a-signalled-trap'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
n=5
kill -USR1 $$
echo done
""", id='counter-set-before-the-kill'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
set +e
kill -USR1 $$
echo done
""", id='set-plus-e-before-the-kill'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
trap '' USR1
kill -USR1 $$
echo done
""", id='trap-ignored-later'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
g() { echo g; }
trap f USR1
trap g USR1
kill -USR1 $$
echo done
""", id='trap-replaced'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap : USR1
( trap f USR1 )
kill -USR1 $$
echo done
""", id='trap-in-a-subshell'),
    pytest.param("""\
set -e
n=1
reset() { n=0; }
trap reset USR1
trap '' USR1
kill -USR1 $$
((n++))
echo done
""", id='resetting-trap-ignored'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
echo "to checkpoint: (kill -USR1 $$)"
echo done
""", id='kill-in-a-string'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
cat > stop.sh <<'EOF'
kill -USR1 $$
EOF
echo done
""", id='kill-in-a-heredoc'),
    pytest.param("""\
set -e
n=5
reset() { n=0; }
((n++))
reset
trap reset 0
kill -0 $$
echo done
""", id='kill-0-and-an-exit-trap'),
    pytest.param("""\
set -e
step=0
resume() { step=100; echo resumed; }
run() { ((step++)); echo "step $step"; }
"${MODE:-resume}"
run
echo done
""", id='call-through-a-default-name-body-counter'),
    pytest.param("""\
set -e
step=0
resume() { step=100; echo resumed; }
"${MODE:-resume}"
((step++))
echo done
""", id='call-through-a-default-name-top-counter'),
    pytest.param("""\
set -e
n=0
hook_init() { n=5; }
main() { ((n++)); }
for h in $(compgen -A function hook_); do "$h"; done
main
echo done
""", id='hooks-called-through-compgen'),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
send() { kill -USR1 $$; }
echo done
""", id='kill-in-an-uncalled-function'),
    pytest.param("set -e\nn=0\non_int() { ((n++)); }\ntrap on_int INT\n"
                 + "".join(f"helper_{i}() {{ echo {i}; }}\n" for i in range(21))
                 + "echo done\n", id="a-trap-never-signalled-among-21-uncalled-helpers"),
]


@pytest.mark.parametrize("body", RUN_TO_THE_END)
def test_a_script_bash_runs_to_its_end_is_not_failed_by_the_counter_checks(tmp_path, body):
    runs_to_the_end(tmp_path, body)
