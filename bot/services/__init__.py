"""Use cases shared by the CLI and the Slack handlers (submit, status, …).

Each service function takes its adapters (Slurm client, SFTP, store) and `now` as arguments,
so the CLI, the Slack handlers and the tests call the very same code.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A use case could not be carried out; the message says what was wrong and what to do."""


class UsageProblem(ServiceError):
    """The request itself is wrong (unknown recipe, bad override); safe to show the user."""
