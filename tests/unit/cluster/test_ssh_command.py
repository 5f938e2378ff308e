"""The remote command string: any login shell hands /bin/sh the exact argv, values stay off it.

Run through the shells every machine has (sh, bash); tests/integration/test_shells.py runs the
same strings through the dev cluster's sshd under bash, tcsh, csh, zsh and dash.
"""

from __future__ import annotations

import os
import re
import subprocess

import paramiko
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cluster.channels import describe_error
from bot.cluster.command_line import build_command, env_stdin
from bot.cluster.endpoint import resolve_endpoint
from bot.core.ssh_settings import ProxyJumpError, SSHSettings, parse_proxy_jump

# Any bytes but NUL, as Python hands them to exec (os.fsdecode: surrogate escapes).
word = st.binary(max_size=40).map(lambda b: os.fsdecode(b.replace(b"\0", b"")))
names = st.from_regex(r"T_[A-Za-z0-9_]{0,8}", fullmatch=True)  # never PATH, IFS, ...
# What every login shell passes on untouched: no `!`, `$`, backquote, newline or `=` word start
# outside the one single-quoted decoder; base64 words in single quotes.
SAFE_COMMAND = re.compile(
    r"exec /bin/sh -c 'eval \"\$\(printf %s \"\$@\" \| base64 -d\)\"' trainbot"
    r"( '[A-Za-z0-9+/=]{1,4000}')+\Z"
)
# Prints each argument and NUL, `|`, each named variable's value and NUL, `|`, its stdin.
ECHO = r"""names=$1; shift
for a in "$@"; do printf '%s\000' "$a"; done; printf '|'
IFS=,; for k in $names; do eval "v=\${$k-}"; printf '%s\000' "$v"; done; printf '|'
exec cat"""


def arrival(shell: str, argv: list[str], env: dict[str, str], stdin: bytes = b"") -> bytes:
    command = build_command(["/bin/sh", "-c", ECHO, "echo", ",".join(env), *argv], env)
    done = subprocess.run([shell, "-c", command], input=env_stdin(env) + stdin,
                          capture_output=True, timeout=30, check=True)
    return done.stdout


def expected(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> bytes:
    words = b"".join(os.fsencode(a) + b"\0" for a in argv)
    return words + b"|" + b"".join(os.fsencode(v) + b"\0" for v in env.values()) + b"|" + stdin


@settings(max_examples=60, deadline=None)
@given(argv=st.lists(word, max_size=5), env=st.dictionaries(names, word, max_size=3))
def test_sh_and_bash_receive_the_exact_argv_env_and_stdin(argv, env) -> None:
    for shell in ("/bin/sh", "/bin/bash"):
        assert arrival(shell, argv, env, b"rest of stdin") == expected(argv, env, b"rest of stdin")


@given(argv=st.lists(word, min_size=1, max_size=6), env=st.dictionaries(names, word, max_size=3))
def test_the_command_is_plain_ascii_without_a_value(argv, env) -> None:
    command = build_command(argv, env)
    assert SAFE_COMMAND.match(command), command
    # Values play no part in it: only the names do.
    assert command == build_command(argv, dict.fromkeys(env, "other"))
    assert env_stdin(env).count(b"\n") == len(env)


HOSTILE = ["!#", "!$", "!!", "$x", "`id`", "$(id)", "=ls", "=", "a'b", 'a"b', "x\ny\n", "",
           " ", "~", "*", "ünï 学習 🚀", "\\", "%s", "A=b", "-n", "{a,b}", "^a^b", "\t"]


def test_hostile_words_and_secret_values_arrive_unchanged() -> None:
    env = {"TOKEN": "xoxb-secret !# $x\n\n", "EMPTY": "", "trainbot_v": "x"}
    assert arrival("/bin/sh", HOSTILE, env) == expected(HOSTILE, env)
    command = build_command(HOSTILE, env)
    assert "TOKEN" not in command  # names are inside the encoded script too, not readable
    assert "xoxb" not in command


def test_a_long_argv_is_cut_into_words_csh_accepts() -> None:
    argv = ["x" * 50_000]
    command = build_command(argv)
    assert SAFE_COMMAND.match(command)
    assert arrival("/bin/sh", argv, {}) == expected(argv, {})


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        ([], None, "empty argv"),
        (["true"], {"A=B": "1"}, "not a valid shell name"),
        (["true"], {"$(id)": "1"}, "not a valid shell name"),
        (["a\0b"], None, "NUL"),
    ],
)
def test_bad_commands_are_refused(
    argv: list[str], env: dict[str, str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_command(argv, env)


def test_a_nul_in_a_value_is_refused_naming_the_variable_not_the_value() -> None:
    with pytest.raises(ValueError, match="'TOKEN' holds a NUL byte") as info:
        env_stdin({"TOKEN": "secret\0value"})
    assert "secret" not in str(info.value)


def test_proxy_jump_forms() -> None:
    assert parse_proxy_jump("bastion", "me") == ("bastion", 22, "me")
    assert parse_proxy_jump("ops@bastion:2200", "me") == ("bastion", 2200, "ops")
    assert parse_proxy_jump("[::1]:2200", "me") == ("::1", 2200, "me")
    with pytest.raises(ProxyJumpError, match="only one jump host"):
        parse_proxy_jump("a,b", "me")


def test_ssh_config_alias_fills_unset_fields(tmp_path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(
        "Host gpu-login\n  HostName login.example.org\n  Port 2200\n  User alice\n"
        "  IdentityFile /keys/id_a\n  ProxyJump ops@bastion:22\n"
    )
    ep = resolve_endpoint(SSHSettings(host="gpu-login", ssh_config=str(cfg), known_hosts="/kh"))
    assert (ep.host, ep.port, ep.user) == ("login.example.org", 2200, "alice")
    assert (ep.key_files, ep.proxy_jump, ep.known_hosts) == (
        ("/keys/id_a",),
        "ops@bastion:22",
        "/kh",
    )
    # Explicit settings win over the file.
    ep = resolve_endpoint(
        SSHSettings(host="gpu-login", ssh_config=str(cfg), user="bob", port=2222, key_file="/k")
    )
    assert (ep.user, ep.port, ep.key_files) == ("bob", 2222, ("/k",))


def test_an_error_without_text_is_named_by_its_type() -> None:
    """paramiko raises a bare EOFError on a lost connection: messages built from it name it
    ("cannot connect to host: EOFError"), not an empty "cannot connect to host: "."""
    assert describe_error(EOFError()) == "EOFError"
    assert describe_error(OSError(111, "Connection refused")) == "[Errno 111] Connection refused"


def test_a_refused_channel_is_said_by_its_reason_not_by_paramikos_repr() -> None:
    """paramiko's ChannelException prints as its repr ("ChannelException(4, 'Resource
    shortage')"): messages built from it say the RFC 4254 reason and code instead."""
    assert str(describe_error(paramiko.ChannelException(4, "Resource shortage"))) == (
        "the server refused the channel: resource shortage (open-failure code 4)")
    assert str(describe_error(paramiko.ChannelException(9, "(unknown code)"))) == (
        "the server refused the channel (open-failure code 9)")
