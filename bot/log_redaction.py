"""Secrets out of the logs: a filter on the process's log handlers that redacts every record
(its message with the arguments filled in, and its traceback) before it is written."""

from __future__ import annotations

import logging

from bot.core.redact import Redactor, set_process_redactor


class RedactingFilter(logging.Filter):
    """Rewrites each record it sees with its text redacted; never drops one."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep both halves, redacted
            message = f"{record.msg} (arguments: {record.args!r})"
        record.msg, record.args = self.redactor.redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor.redact(record.stack_info)
        return True


# The one filter of the process: installing again swaps its redactor.
REDACTING_FILTER = RedactingFilter(Redactor())


def install_log_redaction(redactor: Redactor,
                          logger: logging.Logger | None = None) -> RedactingFilter:
    """Redact with `redactor` on every handler of `logger` (default: the root logger) and on
    logging's last-resort handler (used when none is configured). Installing again replaces
    the redactor everywhere; call it again after adding handlers (`logging.basicConfig`).
    `redactor` becomes the process's too (`set_process_redactor`): what is redacted where it
    is made (an error's brief command) masks the same secrets."""
    logger = logger or logging.getLogger()
    REDACTING_FILTER.redactor = redactor
    set_process_redactor(redactor)
    for handler in [*logger.handlers, *([logging.lastResort] if logging.lastResort else [])]:
        if REDACTING_FILTER not in handler.filters:
            handler.addFilter(REDACTING_FILTER)
    return REDACTING_FILTER
