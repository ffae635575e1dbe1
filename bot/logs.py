"""Log records without credentials: each record is redacted when it is made.

`install_log_redaction()` wraps the logging module's record factory, so every record any
logger makes (ours, Bolt's, slack_sdk's, aiohttp's) passes through
`bot.credentials.redact_text` before a handler sees it, whichever handlers are attached
now or later (a file, stderr, a test's capture). A record whose message holds something
credential-shaped gets the redacted message with no arguments left to format again; its
traceback and stack are formatted once and redacted too. A record with nothing to redact
is left exactly as it was (handlers that group by the message template still can).

A message that is URL-encoded (a logged request body: `text=db_password%3Dhunter2`)
hides its credential from the patterns; when decoding it reveals one, the record carries
the decoded, redacted text instead.

Installing is idempotent and process-wide (the record factory is global): the CLI and
the Slack surface both install it at start.

`configure_logging` sets what `serve` and `socket` write: LOG_FORMAT `text` (a line
with `key=value` fields) or `json` (one object per line, and then every line on stderr
is one: `announce` writes the start-up and error lines the same way), at LOG_LEVEL. The fields are
what a record carries beyond logging's own (`extra=`): the service's business events
carry `event`, `run_id`, `approval_id`, `tool_call_id`, `execution_key`
(bot.service.telemetry).
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import unquote_plus

import orjson

from bot.credentials import redact_text
from bot.errors import ConfigError

_MARK = "_approvals_redacting"


def install_log_redaction() -> None:
    """Redact every log record made from now on in this process (idempotent)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, _MARK, False):
        return

    def make_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record)
        return record

    setattr(make_record, _MARK, True)
    logging.setLogRecordFactory(make_record)


def redact_record(record: logging.LogRecord) -> None:
    """Replace the credential-shaped parts of `record`'s message, traceback and stack."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: the handler reports it as logging always does
        return
    redacted = redact_message(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = redact_text("".join(traceback.format_exception(*record.exc_info)))
        record.exc_text = record.exc_text.rstrip("\n")
    if record.stack_info:
        record.stack_info = redact_text(record.stack_info)


def redact_message(message: str) -> str:
    """`message` with its credentials replaced, looking through URL encoding too."""
    redacted = redact_text(message)
    if "%" in redacted or "+" in redacted:
        decoded = unquote_plus(redacted)
        if decoded != redacted:
            clean = redact_text(decoded)
            if clean != decoded:
                return clean
    return redacted


# -- the process's log output: LOG_FORMAT and LOG_LEVEL -------------------------------

LOG_FORMAT_ENV = "LOG_FORMAT"
LOG_LEVEL_ENV = "LOG_LEVEL"
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_STANDARD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_MARK_HANDLER = "_approvals_handler"


@dataclass(frozen=True, kw_only=True)
class LogSettings:
    format: str = "text"
    level: str = "INFO"


def log_settings_from_env(environ: Mapping[str, str]) -> LogSettings:
    """LOG_FORMAT (text | json, default text) and LOG_LEVEL (DEBUG | INFO | WARNING |
    ERROR, default INFO); a ConfigError naming the variable for any other value."""
    log_format = environ.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    if log_format not in LOG_FORMATS:
        raise ConfigError(f"{LOG_FORMAT_ENV} must be 'text' or 'json', not {log_format!r}")
    level = environ.get(LOG_LEVEL_ENV, "").strip().upper() or "INFO"
    if level not in LOG_LEVELS:
        raise ConfigError(f"{LOG_LEVEL_ENV} must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    return LogSettings(format=log_format, level=level)


def configure_logging(settings: LogSettings, *, stream: TextIO | None = None) -> None:
    """One handler on the root logger writing `settings.format` lines to `stream`
    (default: stderr as it is at each line, see `StderrHandler`) at `settings.level`;
    configuring again replaces our handler, never another's. In json, everything else
    the process would write on stderr goes through it too: Python's warnings, an
    uncaught exception, and the lines `announce` writes."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _MARK_HANDLER, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream) if stream is not None else StderrHandler()
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    setattr(handler, _MARK_HANDLER, True)
    root.addHandler(handler)
    root.setLevel(settings.level)
    quiet_library_noise(settings.level)
    logging.captureWarnings(settings.format == "json")
    sys.excepthook = _log_uncaught if settings.format == "json" else sys.__excepthook__


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes on `sys.stderr` as it is when a line is written, not as it was when the
    handler was made: a command run in-process (a test's `main(["serve"])`) whose
    stderr was a stream closed since, or replaced, never leaves a handler writing on it
    ("Logging error ... I/O operation on closed file"). logging's own last-resort
    handler does the same."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        """StreamHandler sets a stream (in __init__, setStream): stderr is read instead."""


ANNOUNCER = "approvals-bot"  # the logger name of `announce`'s lines in json


def announce(message: str, *, level: int = logging.INFO) -> None:
    """A line for whoever runs the command (where it listens, an error): on stderr as
    `approvals-bot: <message>`, or, once `configure_logging` chose json, as one JSON
    object, whatever LOG_LEVEL says."""
    handler = _our_handler()
    if handler is None or not isinstance(handler.formatter, JsonFormatter):
        print(f"approvals-bot: {message}", file=sys.stderr, flush=True)
        return
    record = logging.getLogger(ANNOUNCER).makeRecord(
        ANNOUNCER, level, "(announce)", 0, message, (), None
    )
    handler.handle(record)


def _our_handler() -> logging.Handler | None:
    for handler in logging.getLogger().handlers:
        if getattr(handler, _MARK_HANDLER, False):
            return handler
    return None


def _log_uncaught(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
    logging.getLogger(ANNOUNCER).critical("uncaught exception", exc_info=(kind, error, traceback))


# Library lines that say nothing to whoever runs the bot:
# - slack_sdk logs each retry of a Web API call at INFO, unless the client's own logger
#   has a level above DEBUG (its check is `logger.level <= DEBUG`); our WARNING per try
#   of auth.test, and the retry metrics, say what matters;
# - Bolt warns that its `token` goes unused when SLACK_BOT_TOKEN is set and a client is
#   given (it reads the variable itself): the bot gives the client on purpose.
RETRY_LOGGERS = ("slack_sdk.web.async_base_client", "slack_sdk.webhook.async_client")
BOLT_APP_LOGGER = "slack_bolt.AsyncApp"


class _DropMessage(logging.Filter):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != self.message


def quiet_library_noise(level: str) -> None:
    """Silence the library lines above at `level` (slack_sdk's retries show at DEBUG)."""
    from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped

    for name in RETRY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if level == "DEBUG" else logging.INFO)
    bolt = logging.getLogger(BOLT_APP_LOGGER)
    if not any(isinstance(f, _DropMessage) for f in bolt.filters):
        bolt.addFilter(_DropMessage(warning_client_prioritized_and_token_skipped()))


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a record carries (`extra=`): event, run_id, approval_id, ..."""
    return {
        key: redact_text(value) if isinstance(value, str) else value
        for key, value in record.__dict__.items()
        if key not in _STANDARD_ATTRIBUTES and not key.startswith("_")
    }


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, message, the record's
    fields, and `traceback` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **record_fields(record),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["traceback"] = record.exc_text
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """`time level logger: message key=value ...`, then the traceback if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        fields = record_fields(record)
        text = super().formatMessage(record)
        if not fields:
            return text
        return text + " " + " ".join(f"{key}={_text_value(value)}" for key, value in fields.items())


def _text_value(value: Any) -> str:
    text = str(value)
    return orjson.dumps(text).decode() if not text or any(c in text for c in ' "=') else text
