"""A trap on a signal the script sends its own shell (`kill -USR1 $$`): bash runs its action
right after the `kill`, with the trap in force there, the values there and `set -e` as it is
there (signals.handled_at_kills). Each script is run with real bash, and the counter checks
fail it exactly where bash stops on a counter."""

from __future__ import annotations

import subprocess

import pytest

from bot.core.launcher_lint import CHECK_ARITH_UNSET, CHECK_ARITH_ZERO, lint_launcher

# (script, the line of the script (its `#!` line 1) bash stops on a counter at: None where it
# runs to its end)
AT_THE_KILL = [
    # the handler's counter under `set -e` at the `kill`: from 0, bash stops
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\nkill -USR1 $$\necho done\n", 4,
                 id="handler-counter-from-zero"),
    pytest.param("set -e\nn=0\ntrap '((n++))' USR1\nkill -s USR1 \"$$\"\necho done\n", 5,
                 id="inline-action-counter-at-the-kill-line"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f TERM\nkill $$\necho done\n", 4,
                 id="kill-without-a-signal-sends-term"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap -- 'f' SIGUSR2\nkill -n 12 $$\n"
                 "echo done\n", 4, id="signal-by-number"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ng() { echo g; }\ntrap f USR1\nkill -USR1 $$\n"
                 "trap g USR1\nkill -USR1 $$\necho done\n", 4, id="the-trap-in-force-then"),
    # what the handler sets holds after the `kill`
    pytest.param("set -e\nn=1\nreset() { n=0; }\ntrap reset USR1\nkill -USR1 $$\n((n++))\n"
                 "echo done\n", 7, id="handler-resets-the-counter"),
    # … and bash runs to the end: the value at the `kill`, `set +e` there, the handler after
    # the counter, the trap replaced or ignored before the `kill`, the handler's `exit`
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\nn=5\nkill -USR1 $$\necho done\n",
                 None, id="counter-set-before-the-kill"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\nset +e\nkill -USR1 $$\n"
                 "echo done\n", None, id="set-plus-e-at-the-kill"),
    pytest.param("set -e\nn=1\nreset() { n=0; }\ntrap reset USR1\n((n++))\nkill -USR1 $$\n"
                 "echo done\n", None, id="reset-after-the-counter"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ng() { echo g; }\ntrap f USR1\ntrap g USR1\n"
                 "kill -USR1 $$\necho done\n", None, id="trap-replaced-before-the-kill"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\ntrap '' USR1\nkill -USR1 $$\n"
                 "echo done\n", None, id="trap-ignored-before-the-kill"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\nkill -0 $$\ntrap f USR1\necho done\n", None,
                 id="kill-0-sends-nothing"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\ncat > stop.sh <<'EOF'\n"
                 "kill -USR1 $$\nEOF\necho done\n", None, id="kill-in-a-heredoc"),
    pytest.param("set -e\nn=0\nf() { ((n++)); }\ntrap f USR1\necho \"\nkill -USR1 $$\n\"\n"
                 "echo done\n", None, id="kill-in-a-string-of-lines"),
    # the handler's `exit` ends the script at the `kill`: the counter after it never runs
    pytest.param("set -e\nn=0\nsave() { echo done; exit 0; }\ntrap save USR1\nkill -USR1 $$\n"
                 "((n++))\necho after\n", None, id="handler-exits-at-the-kill"),
    pytest.param("set -e\nn=0\ntrap 'echo done; exit 0' TERM\nkill -TERM $$\n((n++))\n"
                 "echo after\n", None, id="inline-action-exits-at-the-kill"),
]


@pytest.mark.parametrize(("body", "stops_at"), AT_THE_KILL)
def test_a_signal_trap_is_judged_at_the_kill_as_bash_runs_it(tmp_path, body, stops_at):
    script = "#!/bin/bash\n" + body
    (tmp_path / "launch.sh").write_text(script)
    ran = subprocess.run(["/bin/bash", "launch.sh"], capture_output=True, text=True, timeout=20,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    if stops_at is None:
        assert (ran.returncode, ran.stdout.split()[-1:]) == (0, ["done"]), ran
    else:
        assert ran.returncode == 1 and "done" not in ran.stdout.split(), ran
    failed = [f.line for f in lint_launcher(script)
              if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level == "fail"]
    assert failed == ([] if stops_at is None else [stops_at])
