"""The remote command string: what a POSIX shell parses back is exactly the argv given."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.cluster.errors import ClusterError
from bot.cluster.ssh import SSHSettings, build_command, parse_proxy_jump, resolve_endpoint

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))


@given(st.lists(text, min_size=1, max_size=6))
def test_shell_parses_back_the_exact_argv(argv: list[str]) -> None:
    assert shlex.split(build_command(argv)) == argv


@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), text))
def test_env_becomes_a_quoted_env_prefix(env: dict[str, str]) -> None:
    parsed = shlex.split(build_command(["prog", "arg"], env))
    if env:
        assert parsed == ["env", *(f"{k}={v}" for k, v in env.items()), "prog", "arg"]
    else:
        assert parsed == ["prog", "arg"]


def test_hostile_argument_is_one_quoted_word() -> None:
    assert build_command(["echo", "a'; touch /tmp/pwned #"]) == (
        "echo 'a'\"'\"'; touch /tmp/pwned #'"
    )


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        ([], None, "empty argv"),
        (["true"], {"A=B": "1"}, "not a valid shell name"),
        (["X=1"], {"A": "1"}, "contains '='"),
    ],
)
def test_bad_commands_are_refused(
    argv: list[str], env: dict[str, str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_command(argv, env)


def test_proxy_jump_forms() -> None:
    assert parse_proxy_jump("bastion", "me") == ("bastion", 22, "me")
    assert parse_proxy_jump("ops@bastion:2200", "me") == ("bastion", 2200, "ops")
    assert parse_proxy_jump("[::1]:2200", "me") == ("::1", 2200, "me")
    with pytest.raises(ClusterError, match="only one jump host"):
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
