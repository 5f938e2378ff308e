"""Bad connection settings (proxy_jump, the ssh_config file) are one clear ClusterError naming
where the value came from, what is wrong and the fix: never a ValueError, never a wrong port."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cluster.endpoint import resolve_endpoint
from bot.cluster.errors import ClusterError
from bot.core.ssh_settings import SSHSettings


@pytest.mark.parametrize(("spec", "problem"), [
    ("h:abc", "port 'abc' is not a number"),
    ("ops@h:99999", "port 99999 is out of range"),
    ("h:0", "port 0 is out of range"),
    ("[::1]:abc", "port 'abc' is not a number"),
    ("[::1]:70000", "port 70000 is out of range"),
    ("h:", "port '' is not a number"),
    ("h:" + "9" * 5000, "(5000 characters) is out of range"),
    ("h:-22", "port '-22' is not a number"),
    ("h:²", "port '²' is not a number"),
])
def test_a_bad_proxy_jump_port_is_a_clear_error(spec, problem):
    with pytest.raises(ClusterError) as info:
        resolve_endpoint(SSHSettings(host="gpu", known_hosts="/kh", proxy_jump=spec))
    message = str(info.value)
    assert message.startswith("proxy_jump ") and problem in message
    assert "1-65535" in message and "[user@]host[:port]" in message
    assert len(message) < 300


def write_config(tmp_path: Path, body: str) -> str:
    path = tmp_path / "ssh_config"
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize(("body", "problem"), [
    ("Host gpu\n  Port abc\n", "Port 'abc' is not a number"),
    ("Host gpu\n  Port 99999\n", "Port 99999 is out of range"),
    ("Host gpu\n  ProxyJump j:abc\n", "ProxyJump 'j:abc': port 'abc' is not a number"),
    ("Host gpu\n  Port\n", "Unparsable line Port"),
])
def test_a_bad_ssh_config_value_names_the_file_the_host_and_the_value(tmp_path, body, problem):
    path = write_config(tmp_path, body)
    with pytest.raises(ClusterError) as info:
        resolve_endpoint(SSHSettings(host="gpu", ssh_config=path, known_hosts="/kh"))
    message = str(info.value)
    assert message.startswith(f"ssh_config {path}") and "host gpu" in message
    assert problem in message


def test_a_binary_ssh_config_is_a_clear_error(tmp_path):
    path = tmp_path / "ssh_config"
    path.write_bytes(b"Host gpu\n  Port 22\n\xff\xfe\x00\x81garbage\n")
    with pytest.raises(ClusterError, match=r"ssh_config .* is not a text file"):
        resolve_endpoint(SSHSettings(host="gpu", ssh_config=str(path), known_hosts="/kh"))


def test_a_proxy_command_is_refused_saying_to_use_proxy_jump(tmp_path):
    """trainbot runs no local shell command from ssh_config: ProxyCommand was ignored silently
    (a direct connection was tried instead); now it is refused with the replacement."""
    path = write_config(tmp_path, "Host gpu\n  HostName login.example.org\n"
                                  "  ProxyCommand ssh -W %h:%p ops@bastion\n")
    with pytest.raises(ClusterError) as info:
        resolve_endpoint(SSHSettings(host="gpu", ssh_config=path, known_hosts="/kh"))
    message = str(info.value)
    assert message.startswith(f"ssh_config {path}: host gpu uses ProxyCommand")
    assert "ProxyJump" in message and "proxy_jump" in message


def test_proxy_command_none_and_an_explicit_proxy_jump_are_fine(tmp_path):
    path = write_config(tmp_path, "Host gpu\n  ProxyCommand none\n")
    assert resolve_endpoint(SSHSettings(host="gpu", ssh_config=path, known_hosts="/kh")
                            ).proxy_jump is None
    path = write_config(tmp_path, "Host gpu\n  ProxyCommand ssh -W %h:%p bastion\n")
    ep = resolve_endpoint(SSHSettings(host="gpu", ssh_config=path, known_hosts="/kh",
                                      proxy_jump="ops@bastion:2200"))
    assert ep.proxy_jump == "ops@bastion:2200"  # the cluster's own proxy_jump wins, as ssh -J


def test_a_proxy_jump_setting_with_a_bad_port_fails_before_connecting():
    with pytest.raises(ClusterError, match="port 'abc' is not a number"):
        resolve_endpoint(SSHSettings(host="gpu", known_hosts="/kh", proxy_jump="h:abc"))
