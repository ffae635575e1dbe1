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
"""

from __future__ import annotations

import logging
import traceback
from typing import Any
from urllib.parse import unquote_plus

from bot.credentials import redact_text

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
