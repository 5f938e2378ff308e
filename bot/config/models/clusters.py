"""The `clusters:` section: how trainbot reaches each cluster's login node."""

from __future__ import annotations

import os

from pydantic import Field, field_validator, model_validator

from bot.config.models._base import _Model
from bot.core.slurm.sbatch import check_read_path
from bot.core.ssh_settings import SSHSettings, parse_proxy_jump
from bot.core.units import check_slurm_size

# What one remote command's output may be bounded at (clusters.<name>.max_output_mib): at least
# what trainbot's largest read asks for (a job's stacks: bot.probes.stacks.MAX_OUTPUT_BYTES,
# 4 MiB, and its stderr); past 4 GiB the bound no longer protects the bot's memory.
MIN_OUTPUT_MIB = 8
MAX_OUTPUT_MIB = 4096


class ClusterConfig(_Model):
    """How trainbot reaches one cluster's login node over SSH."""

    host: str = Field(description="Login node host name or IP, or a Host alias of ssh_config.")
    port: int = Field(22, ge=1, le=65535, description="SSH port of the login node.")
    user: str | None = Field(
        None, description="Remote user name; may be omitted when ssh_config names the User."
    )
    key_file: str | None = Field(
        None, description="Private key file for public-key auth (~ is expanded)."
    )
    use_agent: bool = Field(False, description="Authenticate with keys from the ssh-agent.")
    known_hosts: str | None = Field(
        None,
        description="known_hosts file holding the login node's host key; unknown or changed "
        "keys are refused. Default: ~/.ssh/known_hosts.",
    )
    proxy_jump: str | None = Field(
        None, description="Bastion to jump through, as in ssh -J: [user@]host[:port]."
    )
    ssh_config: str | None = Field(
        None,
        description="OpenSSH client config file (e.g. ~/.ssh/config) in which `host` is a "
        "Host alias; its HostName/User/Port/IdentityFile/ProxyJump are used. A ProxyCommand "
        "is refused (trainbot runs no local command to connect): use ProxyJump.",
    )
    connect_timeout: float = Field(
        10.0, gt=0, description="Seconds one SSH connection may take in all (its host "
        "name's DNS lookup, TCP connect, banner, key exchange, every key's authentication), "
        "each host of a proxy_jump; also the wait for a channel to open.")
    command_timeout: float = Field(
        60.0, gt=0, description="Default seconds one remote command may run before abandoned."
    )
    sftp_timeout: float = Field(
        15.0, gt=0, description="Seconds one SFTP request (stat, read of a log) may wait for "
        "its answer; a path that does not answer (a hung filesystem) is given up on while the "
        "other reads go on. It also bounds each send (a request, an upload's writes, a "
        "reply's window adjust), each reply's read and each channel's close: one stuck past "
        "it (the login node reads nothing more) retires its connection, and the next request "
        "opens a new one.",
    )
    max_output_mib: int = Field(
        64, description="MiB of output (stdout and stderr together) trainbot reads of one "
        "remote command; a command that sends more (a site wrapper gone wild, a huge squeue) "
        "is stopped (SIGTERM) and fails saying so, so a flood cannot grow the bot's memory. "
        f"Whole MiB, {MIN_OUTPUT_MIB}-{MAX_OUTPUT_MIB}.",
    )
    use_json: bool = Field(
        False,
        description="Read squeue and sacct as --json instead of their columns. Refused, with "
        "the reason in the log and in `trainbot doctor`, on Slurm releases whose JSON is known "
        "wrong (before 23.02: sacct --json reports failed exit codes as 0).",
    )
    per_gpu_mem_cap: str | None = Field(
        None,
        description="The site's admission cap on --mem per GPU (e.g. 244000M); preflight's "
        "checkpoint memory budget says when a save cannot fit under it.",
    )
    mem_floor: str | None = Field(
        None,
        description="The site's memory accounting floor for a job (e.g. 563200M), if any.",
    )
    py_spy: str | None = Field(
        None,
        description="Absolute path of py-spy on the cluster's nodes, when the site installs "
        "it (the nodes run it as written, without a shell: no `~`); by default trainbot "
        "copies the py-spy of its own wheel (hash-checked) into .cache/trainbot/ in the bot "
        "user's home, which the nodes must share.",
    )
    stacks_timeout: float = Field(
        25.0, gt=0, le=600,
        description="Seconds a collection of a job's Python stacks (srun + py-spy on every "
        "node) may take before it is given up with a `timed out` line; waiting for trainbot's "
        "py-spy to be placed on the cluster first takes at most half of it.",
    )
    stacks_native: bool = Field(
        False, description="Dump native (C/C++) frames too (py-spy --native): slower, shows "
        "where NCCL or a C extension waits.",
    )

    @field_validator("max_output_mib")
    @classmethod
    def _output_bound(cls, value: int) -> int:
        if not MIN_OUTPUT_MIB <= value <= MAX_OUTPUT_MIB:
            raise ValueError(
                f"max_output_mib {value} is out of range: give whole MiB from {MIN_OUTPUT_MIB} "
                f"to {MAX_OUTPUT_MIB} (the default is 64), enough for the largest squeue or "
                "sacct answer on this cluster and a job's stacks")
        return value

    @field_validator("per_gpu_mem_cap", "mem_floor")
    @classmethod
    def _sizes(cls, value: str | None) -> str | None:
        if value is not None:
            check_slurm_size(value)  # compared with --mem sizes: the forms Slurm takes
        return value

    @field_validator("py_spy")
    @classmethod
    def _py_spy(cls, value: str | None) -> str | None:
        # the stacks script on each node (under srun) runs it as written
        return None if value is None else check_read_path(
            "py_spy", value, "the nodes' stacks script (run by srun, without a shell)")

    @field_validator("proxy_jump")
    @classmethod
    def _proxy_jump(cls, value: str | None) -> str | None:
        if value is not None:
            parse_proxy_jump(value, "")  # a ProxyJumpError (a ValueError) says what is wrong
        return value

    @model_validator(mode="after")
    def _needs_a_credential(self) -> ClusterConfig:
        if not (self.key_file or self.use_agent or self.ssh_config):
            raise ValueError(
                "no SSH credential: set key_file (a private key path), use_agent: true, "
                "or ssh_config (a file whose Host entry names an IdentityFile)"
            )
        return self

    def ssh_settings(self) -> SSHSettings:
        """The SSH runner's settings for this cluster (paths with ~ expanded)."""
        return SSHSettings(
            host=self.host,
            port=self.port,
            user=self.user,
            key_file=_expand(self.key_file),
            known_hosts=_expand(self.known_hosts),
            use_agent=self.use_agent,
            proxy_jump=self.proxy_jump,
            ssh_config=_expand(self.ssh_config),
            connect_timeout=self.connect_timeout,
            command_timeout=self.command_timeout,
            sftp_timeout=self.sftp_timeout,
            max_output_bytes=self.max_output_mib << 20,
        )


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None
