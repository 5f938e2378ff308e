"""The command transport under every login shell, through the dev cluster's real sshd.

sshd runs each command as `$SHELL -c STRING`. slurmci's login shell is bash, slurmtcsh's is
tcsh (deploy/dev-cluster/up.sh); for csh, zsh, dash and sh the fixture switches slurmtcsh's
login shell for the test and puts tcsh back afterwards (up.sh would too). Every argv word,
environment value and stdin byte must reach the program unchanged under each of them.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from cluster_jobs import CommandLineWatch
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cluster.command_line import build_command, env_stdin
from bot.cluster.ssh import SSHRunner

pytestmark = pytest.mark.integration

LOGIN_SHELLS = {"bash": "/bin/bash", "tcsh": "/usr/bin/tcsh", "csh": "/usr/bin/csh",
                "zsh": "/usr/bin/zsh", "dash": "/bin/dash", "sh": "/bin/sh"}
# Prints, as hex: each argument and NUL, `|`, each named variable's value and NUL, `|`, stdin.
ECHO = r"""names=$1; shift
{ for a in "$@"; do printf '%s\000' "$a"; done; printf '|'
IFS=,; for k in $names; do eval "v=\${$k-}"; printf '%s\000' "$v"; done; printf '|'
cat; } | od -An -v -tx1"""
HOSTILE = [
    "!#", "!$", "!!", "!-1", "^a^b", "$x", "${x}", "$0", "`id`", "$(id)", "=cmd", "=ls", "=",
    "a'b", 'a"b', "'", '"', "x\ny\n", "\n", "", " ", "\t", "~", "~root", "*", "?", "[a]",
    "ünïcödé 学習 🚀", "\\", "\\!", "%s", "A=b", "-n", "{a,b}", ";", "&&", "|", "#", "a b",
    os.fsdecode(bytes(range(1, 256))),  # every byte but NUL, invalid UTF-8 included
    "w" * 20_000,  # longer than csh's longest word
]
SECRET_ENV = {"TRAINBOT_TOKEN": "xoxb-sekret !# !$ $x `id` '\"\n\n", "TRAINBOT_EMPTY": ""}


@pytest.fixture(scope="module")
def tcsh_user(dev_cluster):  # -> conftest.DevUser
    if dev_cluster.tcsh_user is None:
        pytest.fail("connection.json names no tcsh_user: run deploy/dev-cluster/up.sh",
                    pytrace=False)
    return dev_cluster.tcsh_user


@pytest.fixture(params=list(LOGIN_SHELLS))
def shell_runner(request: pytest.FixtureRequest, dev_cluster,
                 tcsh_user) -> Iterator[tuple[str, SSHRunner]]:
    """(login shell, a runner logging in as a user with that login shell)."""
    shell = LOGIN_SHELLS[request.param]
    if request.param == "bash":
        with SSHRunner(dev_cluster.ssh_settings()) as runner:
            yield shell, runner
        return
    _set_login_shell(tcsh_user.user, shell)
    try:
        with SSHRunner(dev_cluster.ssh_settings(tcsh_user)) as runner:
            yield shell, runner
    finally:
        _set_login_shell(tcsh_user.user, tcsh_user.shell)


def _set_login_shell(user: str, shell: str) -> None:
    subprocess.run(["usermod", "-s", shell, user], check=True, capture_output=True)


def _echo_argv(argv: list[str], env: dict[str, str]) -> list[str]:
    return ["/bin/sh", "-c", ECHO, "echo", ",".join(env), *argv]


def _expected(argv: list[str], env: dict[str, str], stdin: bytes) -> bytes:
    words = b"".join(os.fsencode(a) + b"\0" for a in argv)
    return words + b"|" + b"".join(os.fsencode(v) + b"\0" for v in env.values()) + b"|" + stdin


def _unhex(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def test_hostile_argv_env_and_stdin_arrive_byte_exact(shell_runner) -> None:
    shell, runner = shell_runner
    stdin = b"stdin !# $x\n" + bytes(range(256))
    result = runner.run(_echo_argv(HOSTILE, SECRET_ENV), env=SECRET_ENV, stdin=stdin)
    assert _unhex(result.stdout) == _expected(HOSTILE, SECRET_ENV, stdin)
    # sshd sets SHELL to the login shell it ran the command with: it really was that one.
    assert runner.run(["printenv", "SHELL"]).stdout == f"{shell}\n"


def test_each_hostile_word_alone_as_printf_argument(shell_runner) -> None:
    _shell, runner = shell_runner
    canary = f"/tmp/trainbot-pwned-{uuid.uuid4().hex}"
    for word in [*HOSTILE[:-2], f"$(touch {canary})", f"`touch {canary}`", f"'; touch {canary}"]:
        assert _unhex(runner.run(["sh", "-c", 'printf %s "$0" | od -An -v -tx1', word],
                                 ).stdout) == os.fsencode(word)
    assert not os.path.exists(canary)  # the cluster is this machine


def test_plain_shell_quoting_is_not_enough_under_tcsh(dev_cluster, tcsh_user) -> None:
    """Why build_command encodes: shlex.join's output, fine for sh, breaks under tcsh."""
    with SSHRunner(dev_cluster.ssh_settings(tcsh_user)) as runner:
        for word in ("!#", "!$"):
            chan = runner.transport.open_session(timeout=10)
            chan.exec_command(shlex.join(["printf", "%s", word]))
            out = chan.makefile("rb").read()
            err = chan.makefile_stderr("rb").read()
            chan.close()
            assert out != word.encode(), (word, out, err)
            assert runner.run(["printf", "%s", word]).stdout == word


@settings(max_examples=40, deadline=None)
@given(argv=st.lists(st.binary(max_size=30).map(lambda b: os.fsdecode(b.replace(b"\0", b""))),
                     max_size=4),
       env=st.dictionaries(st.from_regex(r"T_[A-Za-z0-9_]{0,6}", fullmatch=True),
                           st.text(st.characters(blacklist_characters="\0",
                                                 blacklist_categories=["Cs"]), max_size=20),
                           max_size=2))
def test_any_argv_survives_each_login_shell_locally(tcsh_user, argv, env) -> None:
    """The same strings through the shells' binaries (installed by up.sh), without sshd."""
    command = build_command(_echo_argv(argv, env), env)
    for shell in LOGIN_SHELLS.values():
        done = subprocess.run([shell, "-c", command], input=env_stdin(env) + b"in",
                              capture_output=True, timeout=30, env={"PATH": os.defpath},
                              cwd="/tmp")
        assert done.returncode == 0, (shell, done.stderr)
        assert _unhex(done.stdout.decode()) == _expected(argv, env, b"in"), shell


def test_env_values_never_appear_in_a_process_list(shell_runner) -> None:
    """While the remote command runs, no process's command line holds a value (ps shows
    /proc/PID/cmdline; the login node is this machine), though the program has them."""
    _shell, runner = shell_runner
    marker = f"trainbot-ps-{uuid.uuid4().hex[:8]}"
    env = {"TRAINBOT_TOKEN": f"xoxb-{uuid.uuid4().hex}"}
    with CommandLineWatch() as ps:
        out = runner.run(["sh", "-c", 'sleep 1; printf %s "$TRAINBOT_TOKEN"', marker], env=env)
    assert out.stdout == env["TRAINBOT_TOKEN"]
    assert ps.containing(marker), "the scan never saw the command"
    assert ps.containing(env["TRAINBOT_TOKEN"]) == []
