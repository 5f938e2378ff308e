"""bot.cluster.channels' `request_exec` and `send_signal` take paramiko's own private steps (no
public call splits where an exec request leaves, or sends a "signal" request). pyproject caps
paramiko to the major versions known to have them; this says which one a release removed, by
name."""

from __future__ import annotations

import inspect

import paramiko
import pytest

PRIVATE = [
    (paramiko.Channel, "_event_pending"),
    (paramiko.Channel, "_wait_for_event"),
    (paramiko.Transport, "_send_user_message"),
]


@pytest.mark.parametrize(("owner", "name"), PRIVATE, ids=[n for _, n in PRIVATE])
def test_paramiko_still_has_the_private_calls_ssh_exec_takes(owner: type, name: str) -> None:
    found = getattr(owner, name, None)
    assert callable(found), (
        f"paramiko {paramiko.__version__} has no {owner.__name__}.{name}, which "
        "bot/cluster/channels.py (request_exec, send_signal) calls: port them to this "
        "paramiko, or keep the cap on paramiko in pyproject.toml")
    wanted = {"_send_user_message": ["self", "data"]}.get(name, ["self"])
    params = list(inspect.signature(found).parameters)
    assert params == wanted, (
        f"paramiko {paramiko.__version__}'s {owner.__name__}.{name} takes {params}, not "
        f"{wanted} as bot/cluster/channels.py calls it")
