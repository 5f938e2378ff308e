"""Where, as whom and through which jump host trainbot connects to a cluster's login node:
the settings (bot.core.ssh_settings.SSHSettings), filled in from an OpenSSH client config file
(`resolve_endpoint`, which reads it with paramiko) and checked before any connection is tried,
so a bad value is one ClusterError naming where it came from and the fix. Connecting itself is
bot.cluster.ssh's.

The errors are sentences (`N_()` Texts): one raised where trainbot first connects reaches a
person (a /train reply, in the channel's language); `str()` is the English, which
`trainbot doctor` shows the operator (the config checks its proxy_jump at start without this
module: bot.core.ssh_settings.parse_proxy_jump)."""

from __future__ import annotations

import getpass
import os
from typing import Any

import paramiko

from bot.cluster.errors import ClusterError, said
from bot.core.ssh_settings import (
    Endpoint,
    ProxyJumpError,
    SSHSettings,
    parse_proxy_jump,
    port_number,
    split_jump,
)
from bot.core.text import N_
from bot.core.units import quote_value


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
                port = port_number(cfg["port"], "Port",
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
                split_jump(proxy_jump, user or "")
            except ValueError as exc:
                raise ClusterError(N_(
                    "ssh_config %(path)s: host %(host)s: ProxyJump %(spec)s: %(problem)s",
                    **where, spec=quote_value(proxy_jump), problem=said(exc))) from None
        if known_hosts is None and cfg.get("userknownhostsfile"):
            known_hosts = cfg["userknownhostsfile"].split()[0]
    if proxy_jump is not None:
        try:  # a bad setting fails here, not mid-connect
            parse_proxy_jump(proxy_jump, user or "")
        except ProxyJumpError as exc:
            raise ClusterError(said(exc)) from None
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
    made). One at most: a chain of jump hosts is refused (parse_proxy_jump). bot.services
    .submit_deadlines counts a cluster's takeovers with it."""
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


__all__ = ["goes_through_jump_host", "resolve_endpoint"]
