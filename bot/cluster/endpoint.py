"""Where, as whom and through which jump host trainbot connects to a cluster's login node:
the settings (`SSHSettings`), filled in from an OpenSSH client config file (`resolve_endpoint`)
and checked before any connection is tried, so a bad value is one ClusterError naming where it
came from and the fix. Connecting itself is bot.cluster.ssh's.

The errors are sentences (`N_()` Texts): one raised where trainbot first connects reaches a
person (a /train reply, in the channel's language); `str()` is the English, which the config's
own check of proxy_jump at start and `trainbot doctor` show the operator."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from typing import Any

import paramiko

from bot.cluster.errors import ClusterError, said
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


def parse_proxy_jump(spec: str, default_user: str) -> tuple[str, int, str]:
    """Split "user@host:port" (user and port optional) into (host, port, user).

    Raises ClusterError naming the spec, what is wrong and the form to use.
    """
    try:
        return _split_jump(spec, default_user)
    except ValueError as exc:
        raise ClusterError(N_("proxy_jump %(spec)s: %(problem)s", spec=quote_value(spec),
                              problem=said(exc))) from None


_JUMP_FORM = N_("write it as [user@]host[:port], e.g. ops@bastion.example.org:22")
_PORT = N_("port")  # a proxy_jump's port; an ssh_config file's is its keyword, Port


def _split_jump(spec: str, default_user: str) -> tuple[str, int, str]:
    """(host, port, user) of "[user@]host[:port]"; ValueError with a sentence (a Text)."""
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
            port = _port_number(tail[1:], _PORT, _JUMP_FORM)
    elif rest.count(":") == 1:
        host, port_s = rest.split(":")
        port = _port_number(port_s, _PORT, _JUMP_FORM)
    else:
        host = rest
    if not host:
        raise ValueError(N_("it names no host (%(form)s)", form=_JUMP_FORM))
    return host, port, user


def _port_number(text: str, name: Text | str, fix: Text) -> int:
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


def resolve_endpoint(s: SSHSettings) -> Endpoint:
    """Where and as whom to connect: the settings, filled in from the ssh config file.

    Raises ClusterError for a value that cannot be used (a port that is not 1-65535, a bad
    ProxyJump, a ProxyCommand: trainbot runs no local command to connect), naming the file
    and the host.
    """
    host, port, user = s.host, s.port, s.user
    key_files: list[str] = [s.key_file] if s.key_file else []
    known_hosts = s.known_hosts
    proxy_jump = s.proxy_jump
    if s.ssh_config:
        path = os.path.expanduser(s.ssh_config)
        cfg = _ssh_config_lookup(path, s.host)
        where = {"path": path, "host": s.host}
        host = cfg.get("hostname", host)
        if port == 22 and "port" in cfg:
            try:
                port = _port_number(cfg["port"], "Port",
                                    N_("fix that line in %(path)s", path=path))
            except ValueError as exc:
                raise ClusterError(N_("ssh_config %(path)s: host %(host)s: %(problem)s",
                                      **where, problem=said(exc))) from None
        user = user or cfg.get("user")
        if not key_files and cfg.get("identityfile"):
            key_files = list(cfg["identityfile"])
        if proxy_jump is None and cfg.get("proxycommand"):
            raise ClusterError(N_(
                "ssh_config %(path)s: host %(host)s uses ProxyCommand (%(command)s), which "
                "trainbot does not run; replace it with ProxyJump [user@]host[:port] in that "
                "file (what `ProxyCommand ssh -W %%h:%%p bastion` does), or set the cluster's "
                "proxy_jump", **where, command=quote_value(cfg["proxycommand"])))
        if proxy_jump is None and cfg.get("proxyjump") and cfg["proxyjump"].lower() != "none":
            proxy_jump = cfg["proxyjump"]
            try:
                _split_jump(proxy_jump, user or "")
            except ValueError as exc:
                raise ClusterError(N_(
                    "ssh_config %(path)s: host %(host)s: ProxyJump %(spec)s: %(problem)s",
                    **where, spec=quote_value(proxy_jump), problem=said(exc))) from None
        if known_hosts is None and cfg.get("userknownhostsfile"):
            known_hosts = cfg["userknownhostsfile"].split()[0]
    if proxy_jump is not None:
        parse_proxy_jump(proxy_jump, user or "")  # a bad setting fails here, not mid-connect
    return Endpoint(
        host=host,
        port=port,
        user=user or _local_user(),
        key_files=tuple(os.path.expanduser(k) for k in key_files),
        known_hosts=os.path.expanduser(known_hosts or "~/.ssh/known_hosts"),
        proxy_jump=proxy_jump,
    )


def goes_through_jump_host(s: SSHSettings) -> bool:
    """Whether a connection with these settings goes through a jump host, resolved as
    resolve_endpoint (and so bot.cluster.ssh) resolves it: the settings' proxy_jump, else the
    ssh_config file's Host entry for `host` naming a ProxyJump (not `none`). Settings that
    resolve_endpoint refuses count as one (the Host entry's ProxyCommand, which names a jump
    host's command; a file that cannot be read now may have named one when a connection was
    made). One at most: a chain of jump hosts is refused (parse_proxy_jump)."""
    try:
        return resolve_endpoint(s).proxy_jump is not None
    except ClusterError:
        return s.ssh_config is not None or s.proxy_jump is not None


def _ssh_config_lookup(path: str, alias: str) -> dict[str, Any]:
    """paramiko's settings for `alias` in the ssh config file at `path`; ClusterError naming
    the file when it cannot be read or parsed."""
    try:
        return dict(paramiko.SSHConfig.from_path(path).lookup(alias))
    except UnicodeDecodeError as exc:
        raise ClusterError(N_(
            "ssh_config %(path)s is not a text file (byte %(byte)s is not UTF-8); point "
            "ssh_config at an OpenSSH client config file", path=path, byte=exc.start)) from None
    except paramiko.ConfigParseError as exc:
        raise ClusterError(N_("ssh_config %(path)s: host %(host)s: %(error)s; fix that line",
                              path=path, host=alias, error=str(exc))) from None
    except OSError as exc:
        raise ClusterError(N_("cannot read ssh_config %(path)s: %(error)s", path=path,
                              error=str(exc))) from exc


def _local_user() -> str:
    return getpass.getuser()


__all__ = [
    "Endpoint",
    "SSHSettings",
    "goes_through_jump_host",
    "host_key_name",
    "parse_proxy_jump",
    "resolve_endpoint",
]
