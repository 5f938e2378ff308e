"""Launcher lint: `clear` under `set -e` and shell startup files sourced under `set -u`, each
checked against real bash run as a batch job runs (no terminal, no `TERM`, a fresh HOME)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.core.launcher_lint import CHECK_INTERACTIVE, lint_launcher

#: A startup file as RHEL-family systems ship it (/etc/bashrc tests this variable unquoted of
#: any default), and one as Ubuntu's default ~/.bashrc starts (returns unless interactive).
RHEL_BASHRC = 'if [ -z "$BASHRCSOURCED" ]; then\n  BASHRCSOURCED="Y"\nfi\nalias ll="ls -l"\n'
UBUNTU_BASHRC = "case $- in\n  *i*) ;;\n  *) return;;\nesac\necho $PS1\n"

CASES = [
    # (snippet, bashrc, does bash stop?, the lint's level)
    ("set -e\nclear", RHEL_BASHRC, True, "fail"),
    ("set -euo pipefail\necho start\nclear\n", RHEL_BASHRC, True, "fail"),
    ("clear", RHEL_BASHRC, False, "pass"),  # no errexit: the error is printed, the job goes on
    ("set -e\nclear || true", RHEL_BASHRC, False, "pass"),
    ("set -e\nif clear; then :; fi", RHEL_BASHRC, False, "pass"),
    ("set -euo pipefail\nsource ~/.bashrc", RHEL_BASHRC, True, "warn"),
    ("set -u\n. $HOME/.bashrc", RHEL_BASHRC, True, "warn"),
    # an unbound variable ends a non-interactive shell whatever guards the command
    ("set -u\nsource ~/.bashrc || true", RHEL_BASHRC, True, "warn"),
    ("set -eo pipefail\nsource ~/.bashrc", RHEL_BASHRC, False, "pass"),  # no nounset
    ("set +u\nsource ~/.bashrc\nset -euo pipefail", RHEL_BASHRC, False, "pass"),
    # Ubuntu's default returns at once in a batch shell: bash goes on, the lint still warns,
    # since which of the two a cluster's nodes ship is not in the script
    ("set -euo pipefail\nsource ~/.bashrc", UBUNTU_BASHRC, False, "warn"),
    # sourced in an `if` / `while` condition: errexit is off there, nounset is not
    ("set -u\nif source ~/.bashrc; then :; fi", RHEL_BASHRC, True, "warn"),
    ("set -euo pipefail\nif ! . $HOME/.bashrc; then\n  echo none\nfi", RHEL_BASHRC, True,
     "warn"),
    ("set -u\nwhile source ~/.bashrc; do break; done", RHEL_BASHRC, True, "warn"),
    ("set -u\nif [ -f ~/.bashrc ] && source ~/.bashrc; then :; fi", RHEL_BASHRC, True, "warn"),
    ("if source ~/.bashrc; then :; fi\nset -u", RHEL_BASHRC, False, "pass"),
]


def _worst(script: str) -> str:
    levels = {f.level for f in lint_launcher(script) if f.check == CHECK_INTERACTIVE}
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


@pytest.mark.parametrize(("snippet", "bashrc", "bash_stops", "level"), CASES)
def test_interactive_commands_against_real_bash(tmp_path, snippet, bashrc, bash_stops, level):
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(bashrc)
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\n" + snippet + "\necho REACHED_THE_END\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}  # a batch job: no terminal, no TERM
    proc = subprocess.run([bash, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=20, env=env, stdin=subprocess.DEVNULL)
    stopped = "REACHED_THE_END" not in proc.stdout
    assert stopped == bash_stops, f"bash itself disagrees with the table: {proc.stderr}"
    assert _worst("#!/bin/bash\n" + snippet + "\n") == level


def test_clear_under_a_dumb_terminal_fails_too():
    # trainbot's SSH sessions on the dev cluster get TERM=dumb, which has no clear capability
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, "-c", "set -e; clear; echo REACHED"], capture_output=True,
                          text=True, timeout=20, env={"PATH": "/usr/bin:/bin", "TERM": "dumb"})
    assert "REACHED" not in proc.stdout


def test_messages_say_what_slurm_shows_and_the_fix():
    script = "#!/bin/bash\nset -euo pipefail\nclear\nsource /etc/profile\n"
    found = {f.line: f for f in lint_launcher(script) if f.check == CHECK_INTERACTIVE}
    assert found[3].level == "fail" and "FAILED 1:0" in found[3].message
    assert "set -e` (line 2)" in found[3].message and "clear || true" in found[3].fix
    assert found[4].level == "warn" and "`set -u` (line 2)" in found[4].message
    assert "unbound variable" in found[4].message and "set +u; source /etc/profile" in found[4].fix


def test_a_nested_or_repeated_startup_file_is_reported_once_per_line():
    script = "#!/bin/bash\nset -u\n{ source ~/.bashrc; }\nif true; then . ~/.profile; fi\n"
    lines = [f.line for f in lint_launcher(script)
             if f.check == CHECK_INTERACTIVE and f.level != "pass"]
    assert lines == [3, 4]
