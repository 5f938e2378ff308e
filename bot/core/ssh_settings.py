"""Where, as whom and through which jump host trainbot connects to a cluster's login node,
as plain data: the settings (`SSHSettings`, which the config builds), the endpoint they resolve
to (`Endpoint`), and the grammar of a jump host (`parse_proxy_jump`) and of a port. Reading an
OpenSSH client config file and connecting are the SSH adapter's (bot.cluster.endpoint,
bot.cluster.ssh); the config checks a proxy_jump here, without it.

A bad value raises a ValueError holding one sentence (an `N_()` Text): the config shows its
English, the adapter raises it as a ClusterError, which reaches a person in the channel's
language."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.text import N_, Text
from bot.core.units import quote_value


@dataclass(frozen=True)
class SSHSettings:
    """How to reach one cluster's login node.

    `known_hosts=None` means ~/.ssh/known_hosts. `proxy_jump` is "user@host:port" (user and port
    optional). With `ssh_config`, `host` may be an alias of that file: HostName, User, Port,
    IdentityFile, ProxyJump and UserKnownHostsFile are read from it where the settings leave
    them unset (port: where it is the default 22). `sftp_timeout` bounds each SFTP reply;
    `sftp_channels` is how many SFTP channels may be open at once (sshd's MaxSessions, 10 by
    default, counts them with the command sessions). `max_output_bytes` bounds what one
    command may send back, stdout and stderr together (bot.cluster.errors.OutputTooLarge).
    """

    host: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    use_agent: bool = False
    proxy_jump: str | None = None
    ssh_config: str | None = None
    connect_timeout: float = 15.0
    command_timeout: float = 120.0
    sftp_timeout: float = 15.0
    sftp_channels: int = 4
    max_output_bytes: int = 64 << 20


@dataclass(frozen=True)
class Endpoint:
    """Connection parameters after ssh_config resolution."""

    host: str
    port: int
    user: str
    key_files: tuple[str, ...]
    known_hosts: str
    proxy_jump: str | None


def host_key_name(host: str, port: int) -> str:
    """How known_hosts names this endpoint: `host` on port 22, else `[host]:port`."""
    return host if port == 22 else f"[{host}]:{port}"


class ProxyJumpError(ValueError):
    """A proxy_jump that cannot be used; its one argument is the sentence (a Text) naming the
    spec, what is wrong and the form to use."""


def parse_proxy_jump(spec: str, default_user: str) -> tuple[str, int, str]:
    """Split "user@host:port" (user and port optional) into (host, port, user).

    Raises ProxyJumpError naming the spec, what is wrong and the form to use.
    """
    try:
        return split_jump(spec, default_user)
    except ValueError as exc:
        raise ProxyJumpError(N_("proxy_jump %(spec)s: %(problem)s", spec=quote_value(spec),
                                problem=exc.args[0])) from None


_JUMP_FORM = N_("write it as [user@]host[:port], e.g. ops@bastion.example.org:22")
_PORT = N_("port")  # a proxy_jump's port; an ssh_config file's is its keyword, Port


def split_jump(spec: str, default_user: str) -> tuple[str, int, str]:
    """(host, port, user) of "[user@]host[:port]"; ValueError with what is wrong (a Text),
    for a caller that names where the spec came from (parse_proxy_jump: the settings; the
    adapter: an ssh_config file's ProxyJump)."""
    if "," in spec:
        raise ValueError(N_("it has several hops; only one jump host is supported (%(form)s)",
                            form=_JUMP_FORM))
    user = default_user
    rest = spec.strip()
    if "@" in rest:
        user, rest = rest.rsplit("@", 1)
    port = 22
    if rest.startswith("["):  # [ipv6]:port
        host, _, tail = rest[1:].partition("]")
        if tail:
            if not tail.startswith(":"):
                raise ValueError(N_("unexpected %(text)s after ']' (%(form)s)",
                                    text=quote_value(tail), form=_JUMP_FORM))
            port = port_number(tail[1:], _PORT, _JUMP_FORM)
    elif rest.count(":") == 1:
        host, port_s = rest.split(":")
        port = port_number(port_s, _PORT, _JUMP_FORM)
    else:
        host = rest
    if not host:
        raise ValueError(N_("it names no host (%(form)s)", form=_JUMP_FORM))
    return host, port, user


def port_number(text: str, name: Text | str, fix: Text) -> int:
    """A TCP port; ValueError with a sentence saying `name` (port, Port) and `fix` for
    anything not 1-65535."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(N_("%(name)s %(value)s is not a number (1-65535); %(fix)s",
                            name=name, value=quote_value(text), fix=fix))
    if len(text) > 5:  # before int(): thousands of digits exceed int()'s limit
        raise ValueError(N_("%(name)s %(value)s is out of range 1-65535; %(fix)s",
                            name=name, value=quote_value(text), fix=fix))
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(N_("%(name)s %(value)s is out of range 1-65535; %(fix)s",
                            name=name, value=port, fix=fix))
    return port
