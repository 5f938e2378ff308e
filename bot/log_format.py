"""The process's log lines: `--log-level`, `--log-format text|json`, and the cluster, chain,
job and event key a line is about (set with `log_fields`, carried as fields of each record)."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO

from bot.log_redaction import REDACTING_FILTER

# The fields of a record (extra= or log_fields), in the order a text line shows them.
FIELDS = ("cluster", "chain", "job", "event_key")
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
_OURS = "_trainbot_handler"  # marks the handler configure_logging installed
# Libraries whose INFO lines repeat on every run ("Running job …", "… executed successfully"):
# their warnings and errors only (the watcher logs its own line per tick).
QUIET_LOGGERS = ("apscheduler",)

_CONTEXT: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "trainbot_log_fields", default=())


@contextmanager
def log_fields(**fields: object) -> Iterator[None]:
    """Within the block, every log record of this thread carries `fields` (names of
    FIELDS; None leaves a field out) on top of those of the enclosing blocks."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown log field(s) {sorted(unknown)}; known: {FIELDS}")
    merged = {**dict(_CONTEXT.get()),
              **{k: str(v) for k, v in fields.items() if v is not None}}
    token = _CONTEXT.set(tuple(merged.items()))
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class ContextFieldsFilter(logging.Filter):
    """Puts the `log_fields` of the logging thread on each record (an `extra=` field of the
    call itself wins); never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _CONTEXT.get():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True


def record_fields(record: logging.LogRecord) -> dict[str, str]:
    return {n: str(v) for n in FIELDS if (v := getattr(record, n, None)) is not None}


class TextFormatter(logging.Formatter):
    """`2026-12-01T03:59:02.123Z INFO bot.x: message [cluster=a job=42]`, then the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in record_fields(record).items())
        line = (f"{_timestamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
                + (f" [{fields}]" if fields else ""))
        return _with_traceback(self, record, line)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ts (UTC, ISO 8601), level, logger, message, the record's
    FIELDS that are set, and `exception` (the traceback's text) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, str] = {"ts": _timestamp(record), "level": record.levelname,
                               "logger": record.name, "message": record.getMessage(),
                               **record_fields(record)}
        exception = _with_traceback(self, record, "").strip()
        if exception:
            doc["exception"] = exception
        return json.dumps(doc, ensure_ascii=False)


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(record.msecs):03d}Z"


def _with_traceback(formatter: logging.Formatter, record: logging.LogRecord, line: str) -> str:
    if record.exc_info and not record.exc_text:
        record.exc_text = formatter.formatException(record.exc_info)
    for extra in (record.exc_text, record.stack_info):
        if extra:
            line = f"{line}\n{extra}"
    return line


def configure_logging(level: str = "info", fmt: str = "text",
                      stream: IO[str] | None = None) -> logging.Handler:
    """Send the process's logs to `stream` (default stderr) at `level` in format `fmt`,
    replacing the handler an earlier call installed; every line redacted
    (bot.log_redaction) and carrying its `log_fields`; QUIET_LOGGERS at WARNING. Returns the
    handler."""
    if level not in LOG_LEVELS:
        raise ValueError(f"log level {level!r}: one of {', '.join(LOG_LEVELS)}")
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format {fmt!r}: one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFieldsFilter())
    handler.addFilter(REDACTING_FILTER)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
    setattr(handler, _OURS, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler
