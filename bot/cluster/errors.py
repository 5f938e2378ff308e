"""Errors raised by the cluster adapters; each message says what happened and what to do.

An error a person reads is raised with its sentence, a `bot.core.text.Text` (`N_()`: an
English message id and its values), which the renderer translates; `str()` of it is the
English (logs, the audit). External text (Slurm's stderr, paramiko's message) is a value,
shown as it came."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from bot.core.redact import process_redactor
from bot.core.text import N_, Text

# How much of a command an error's sentence shows. A probe's srun carries its whole Python
# source (13 KB), a bounded command its wrapper script: written out, they pushed what
# happened past Slack's 3000-character cut. Each long argument is cut to BRIEF_ARG_CHARS
# (its program, options and short arguments stay whole: `... sh -c 'trap…' scancel 5`), and
# the line to BRIEF_COMMAND_CHARS. The exception keeps the whole `argv`. Each argument is
# redacted whole BEFORE it is cut (the process's redactor: token shapes and the configured
# secrets): a cut secret's start (`--db=postgresql://u:PASSW…`, a token shorter than its
# shape) is no longer one any redactor finds in the message.
BRIEF_ARG_CHARS = 64
BRIEF_COMMAND_CHARS = 300


def brief_command(argv: Sequence[object]) -> str:
    """`argv` as a shell line on one line (whitespace runs with a newline in an argument
    shown as one space), each argument redacted (`process_redactor`), then each longer than
    BRIEF_ARG_CHARS cut with '…', the line cut to BRIEF_COMMAND_CHARS."""
    redactor = process_redactor()
    words = []
    for arg in map(redactor.redact, map(str, argv)):
        if "\n" in arg or "\r" in arg:
            arg = " ".join(arg.split())
        words.append(arg if len(arg) <= BRIEF_ARG_CHARS else arg[:BRIEF_ARG_CHARS - 1] + "…")
    command = shlex.join(words)
    if len(command) <= BRIEF_COMMAND_CHARS:
        return command
    return command[:BRIEF_COMMAND_CHARS - 1].rstrip() + "…"


class ClusterError(Exception):
    """Base class for everything that goes wrong talking to a cluster."""

    @property
    def text(self) -> Text | str:
        """What it says: its sentence (a Text the renderer translates) when it was raised
        with one, else its English text."""
        return said(self)


def said(exc: BaseException) -> Any:
    """`exc`'s sentence: the Text it was raised with, else its English text (an error of
    another kind, paramiko's, Slurm's own words), for a Text's value."""
    return exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Text) else str(exc)


def stuck_connection(what: Text, then: Text, where: str) -> Text:
    """The sentence for a connection to `where` that stopped carrying what trainbot sends (or
    whose sshd answers nothing): `what` did not happen by its deadline, why that happens,
    `then` what became of the connection, and what to check (written here only)."""
    return N_("%(what)s (the login node or its sshd is hung, or the network stopped carrying "
              "its data). %(then)s If this repeats, check from the bot's host that %(where)s is "
              "up and that `ssh %(where)s true` answers.", what=what, then=then, where=where)


CONNECTION_CLOSED = N_("That connection was closed: the next request opens a new one.")
"""A stuck_connection's `then` for a connection closed when its send was cut."""


class ClusterUnavailable(ClusterError):
    """The login node or the Slurm controller did not answer. Never means 'job not found'."""


class HostKeyRejected(ClusterError):
    """The SSH host key is unknown or changed; the connection was refused, not trusted."""


class CommandFailed(ClusterError):
    """A remote command exited non-zero. Carries the command, its exit code and stderr tail."""

    def __init__(self, argv: Sequence[str], exit_code: int, stderr: str, stdout: str = ""):
        self.argv = list(argv)
        self.exit_code = exit_code
        self.stderr = stderr
        self.stdout = stdout
        tail = "\n".join(stderr.strip().splitlines()[-10:])
        command = brief_command(self.argv)
        super().__init__(
            N_("`%(command)s` exited %(code)s: %(stderr)s", command=command, code=exit_code,
               stderr=tail) if tail else
            N_("`%(command)s` exited %(code)s", command=command, code=exit_code))


class CommandTimedOut(ClusterError):
    """A remote command ran longer than its timeout and was abandoned."""

    def __init__(self, argv: Sequence[str], timeout: float):
        self.argv = list(argv)
        self.timeout = timeout
        super().__init__(N_("`%(command)s` did not finish within %(timeout)s s",
                            command=brief_command(self.argv), timeout=f"{timeout:g}"))


class OutputTooLarge(ClusterError):
    """A remote command sent more output (stdout and stderr together) than the runner reads
    of one command (SSHSettings.max_output_bytes): its channel was closed, the remote process
    sent SIGTERM, and what it sent dropped, so a flood cannot grow the bot's memory."""

    def __init__(self, argv: Sequence[str], limit: int):
        self.argv = list(argv)
        self.limit = limit
        super().__init__(N_("`%(command)s` sent more than %(limit)s MiB of output; trainbot "
                            "stopped reading it and closed its channel",
                            command=brief_command(self.argv), limit=f"{limit / (1 << 20):g}"))


class OutcomeUnknown(ClusterUnavailable):
    """A command that changes something on the cluster (a submit, a cancel, a hold, a
    release, a requeue) whose end trainbot did not see: its channel closed first
    (ChannelClosed) or it outlived its timeout. It may or may not have taken effect, and may
    still be running: never its own failure (no CommandFailed), and never done again blindly
    (a submit is looked up by its job name first). A ClusterUnavailable, so what retries a
    lost connection retries it. `what`: what happened; `advice`: what its caller adds, for
    the command it ran (a submit: look the job up by name)."""

    def __init__(self, argv: Sequence[str], what: Text | str, *, advice: Text | str = ""):
        self.argv = list(argv)
        self.what = what
        self.advice = advice
        super().__init__(_outcome_text(what, advice))

    @classmethod
    def timed_out(cls, argv: Sequence[str], exc: CommandTimedOut, *,
                  what: Text | str | None = None, advice: Text | str = "") -> OutcomeUnknown:
        """A command that changes something that outlived its timeout (`exc`): `what` says so
        (default: the timeout's own sentence), then that it may or may not have taken
        effect."""
        return cls(argv, N_("%(what)s; it may or may not have taken effect",
                            what=said(exc) if what is None else what), advice=advice)

    @classmethod
    def flooded(cls, exc: OutputTooLarge, *, advice: Text | str = "") -> OutcomeUnknown:
        """A command that changes something cut for flooding its output (`exc`): trainbot
        stopped it before its end, so it may or may not have taken effect."""
        return cls(exc.argv, N_(
            "`%(command)s` sent more than %(limit)s MiB of output, so trainbot stopped it before "
            "its end; it may or may not have taken effect", command=brief_command(exc.argv),
            limit=f"{exc.limit / (1 << 20):g}"), advice=advice)

    def advised(self, advice: Text | str) -> OutcomeUnknown:
        """The same error (same type, made by its constructor from the same fields) with
        `advice` added to its message (raise it `from` self)."""
        return OutcomeUnknown(self.argv, self.what, advice=self._joined(advice))

    def _joined(self, advice: Text | str) -> Text | str:
        return N_("%(first)s %(then)s", first=self.advice, then=advice) if self.advice \
            else advice


def _outcome_text(what: Text | str, advice: Text | str) -> Text | str:
    return N_("%(what)s. %(advice)s", what=what, advice=advice) if advice else what


def submit_advice(job_name: str) -> Text:
    """What an OutcomeUnknown of a submit adds: where to look before submitting again."""
    return N_("The job %(name)r may or may not have been submitted: look for that name in "
              "squeue before submitting again.", name=job_name)


class ChannelClosed(OutcomeUnknown):
    """A remote command's channel closed before its exit status came: the connection dropped
    or was closed under it (trainbot shutting down or reconnecting, another thread closing
    the channel), or sshd sent none (it reports a command killed by a signal in a message
    paramiko does not read), or it went while the command was being started, after its
    request had left (`starting`). The runner cannot tell a read from a command that changes
    something, so this is an OutcomeUnknown: it may or may not have run. A caller that knows
    its command only reads raises `as_read()` instead: a ReadCutOff, safe to ask again.
    `connection_lost`: the channel's connection is gone, not just the channel."""

    def __init__(self, argv: Sequence[str], where: str, *, connection_lost: bool,
                 advice: Text | str = "", starting: bool = False):
        self.where = where
        self.connection_lost = connection_lost
        self.starting = starting
        command = brief_command(argv)
        if starting and connection_lost:
            what = N_("connection to %(where)s lost while starting `%(command)s`, after its "
                      "request left; it may or may not have run", where=where, command=command)
        elif starting:
            what = N_("`%(command)s` on %(where)s was not confirmed started: its channel closed "
                      "after its request left (closed by trainbot, or sshd refused it); it may "
                      "or may not have run", command=command, where=where)
        elif connection_lost:
            what = N_("connection to %(where)s lost while `%(command)s` was running; it may "
                      "have run", where=where, command=command)
        else:
            what = N_("`%(command)s` on %(where)s ended without an exit status: its channel was "
                      "closed first (trainbot closing it, on shutdown or a reconnect) or sshd "
                      "sent none (a command killed by a signal); it may or may not have run",
                      command=command, where=where)
        super().__init__(argv, what, advice=advice)

    def advised(self, advice: Text | str) -> ChannelClosed:
        return ChannelClosed(self.argv, self.where, connection_lost=self.connection_lost,
                             advice=self._joined(advice), starting=self.starting)

    def as_read(self) -> ReadCutOff:
        """This closed channel as what it is for a command that only reads (raise it `from`
        self): nothing changed, asking again is safe."""
        return ReadCutOff(self.argv, self.where, connection_lost=self.connection_lost)


class ReadCutOff(ClusterUnavailable):
    """A command that only reads (squeue, sacct, the log read) whose channel closed before
    its end: its answer is not known to be whole, so none is used; it changed nothing, so
    asking again is safe. A ClusterUnavailable: nothing is concluded about the jobs."""

    def __init__(self, argv: Sequence[str], where: str, *, connection_lost: bool):
        self.argv = list(argv)
        self.where = where
        self.connection_lost = connection_lost
        command = brief_command(argv)
        cause = (N_("the connection to %(where)s was lost", where=where) if connection_lost else
                 N_("its channel on %(where)s closed before its exit status came", where=where))
        super().__init__(N_("`%(command)s` was cut off (%(cause)s): it only reads, so nothing "
                            "changed and it is safe to ask again", command=command, cause=cause))


class LeaseAbandoned(ClusterUnavailable):
    """An SFTP request on a lookup lease after (or while) its holder abandoned it: the lookup
    was given up (past its deadline) and the lease's channel closed on purpose, so the request
    got no answer, and nobody waits for one. Not the cluster's fault: the next lease opens a
    fresh channel."""

    def __init__(self, op: str, path: str, where: str):
        self.op = op
        self.path = path
        super().__init__(N_("SFTP %(op)s of %(path)s on %(where)s got no answer: its lookup was "
                            "abandoned (given up past its deadline) and the lease's channel "
                            "closed", op=op, path=path, where=where))


class SFTPTimedOut(ClusterUnavailable):
    """An SFTP request got no answer in time (most often a hung NFS/Lustre path on the login
    node), or was not sent because an earlier one on the same path still waits. Other paths'
    requests go on; the path is tried again once the late answer has come."""

    def __init__(
        self,
        op: str,
        path: str,
        timeout: float,
        where: str,
        *,
        waiting: tuple[str, float] | None = None,
        stuck: Sequence[tuple[str, str]] = (),
        busy: int = 0,
        stuck_send: bool = False,
    ):
        self.op = op
        self.path = path
        self.timeout = timeout
        what = {"op": op, "path": path, "where": where}
        message: Text
        if waiting is not None:
            message = N_("SFTP %(op)s of %(path)s on %(where)s not sent: an earlier %(earlier)s "
                         "of that path has waited %(waited)s s for an answer (a hung "
                         "filesystem?)", **what, earlier=waiting[0], waited=f"{waiting[1]:.0f}")
        elif stuck:
            hung = ", ".join(f"{o} {p}" for o, p in stuck)
            message = N_("SFTP %(op)s of %(path)s on %(where)s not sent: all %(n)s SFTP channels "
                         "wait on paths that do not answer (%(hung)s; a hung filesystem?)",
                         **what, n=len(stuck), hung=hung)
        elif stuck_send:
            message = stuck_connection(
                N_("SFTP %(op)s of %(path)s on %(where)s: the connection could not send within "
                   "%(timeout)s s", **what, timeout=f"{timeout:g}"),
                CONNECTION_CLOSED, where)
        elif busy:
            message = N_("SFTP %(op)s of %(path)s on %(where)s: no SFTP channel came free within "
                         "%(timeout)s s (all %(n)s busy)", **what, timeout=f"{timeout:g}", n=busy)
        else:
            message = N_("SFTP %(op)s of %(path)s on %(where)s got no answer within %(timeout)s s "
                         "(a hung filesystem?); gave up on it, other requests go on", **what,
                         timeout=f"{timeout:g}")
        super().__init__(message)
