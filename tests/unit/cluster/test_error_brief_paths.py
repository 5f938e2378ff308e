"""Every cluster error that names its command names it briefly, redacted before the cut: the
'never reached sshd' refusal and the Slurm client's own sentences wrote the whole argv (a
DataLoader probe's srun: 13 KB of Python source and the recipe's env_setup), so what
happened fell past Slack's cut."""

from __future__ import annotations

from unittest import mock

import pytest
from test_error_command_brief import _probe_argv

import bot.cluster.ssh as ssh
from bot.cluster.channels import NotSent
from bot.cluster.errors import ClusterUnavailable, CommandTimedOut, OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import CommandResult
from bot.core.redact import Redactor
from bot.core.ssh_settings import SSHSettings

_TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


def test_a_request_that_never_reached_sshd_names_its_command_briefly():
    argv = tuple(_probe_argv())
    runner = ssh.SSHRunner(SSHSettings(host="login1", user="u", key_file="/k",
                                       known_hosts="/kh"))

    def refuse(chan: object, command: str) -> None:
        raise NotSent("channel is closed")

    with mock.patch.object(ssh, "request_exec", refuse), \
            mock.patch.object(runner, "_forget_if_dead", lambda: None), \
            pytest.raises(ClusterUnavailable) as caught:
        runner._start(mock.Mock(), argv, "cmd", 5.0)
    text = str(caught.value)
    assert len(text) < 500, len(text)
    assert text.startswith("could not start `srun --job-name=trainbot-dataloader-probe-")
    assert text.endswith("its request never reached sshd, so it did not run")


class _Runner:
    def __init__(self, outcome: object):
        self.outcome = outcome

    def run(self, argv, **kw):
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def _long_argv() -> list[str]:
    return ["sbatch", "--parsable", f"--export=ALL,NOTE={'n' * 29},{_TOKEN}",
            "--wrap=" + "python train.py --flag value; " * 100]


@pytest.mark.parametrize("outcome", [
    CommandTimedOut(_long_argv(), 30.0),
    CommandResult((), 1, "", "sbatch: error: Socket timed out on send/recv operation"),
    CommandResult((), 1, "", "sbatch: error: Unable to contact slurm controller (connect failure)"),
])
def test_slurm_clients_sentences_name_the_command_briefly_and_redacted(outcome):
    client = SlurmClient(_Runner(outcome))  # type: ignore[arg-type]
    with pytest.raises((ClusterUnavailable, OutcomeUnknown)) as caught:
        client._run(_long_argv(), effects=True)
    text = Redactor().redact(str(caught.value))
    assert len(text) < 700, len(text)
    assert _TOKEN[4:12] not in text
