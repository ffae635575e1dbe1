"""Log records are redacted when they are made, whatever handler reads them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from bot.credentials import REDACTED
from bot.logs import install_log_redaction

TOKEN = "xoxb-" + "2718281828-3141592653-AbCdEfGhIjKlMnOp"
PASSWORD = "Sup3rLeak9"
log = logging.getLogger("tests.logs")


@pytest.fixture(autouse=True)
def redacting() -> Iterator[None]:
    before = logging.getLogRecordFactory()
    install_log_redaction()
    try:
        yield
    finally:
        logging.setLogRecordFactory(before)


def test_a_credential_in_the_message_or_its_arguments_is_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        log.info("posting with %s", TOKEN)
        log.info(f"task: db_password={PASSWORD} please")
    assert TOKEN not in caplog.text
    assert PASSWORD not in caplog.text
    assert [record.getMessage() for record in caplog.records] == [
        f"posting with {REDACTED}",
        f"task: db_password={REDACTED} please",
    ]


def test_a_record_with_nothing_to_redact_keeps_its_template(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        log.info("run %s paused on %d calls", "r1", 2)
    (record,) = caplog.records
    assert (record.msg, record.args) == ("run %s paused on %d calls", ("r1", 2))


def test_a_traceback_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        try:
            raise RuntimeError(f"upstream answered 401 for Bearer {TOKEN}")
        except RuntimeError:
            log.exception("the call failed")
    assert "RuntimeError: upstream answered 401" in caplog.text
    assert TOKEN not in caplog.text


def test_a_url_encoded_credential_is_found(caplog: pytest.LogCaptureFixture) -> None:
    body = urlencode({"command": "/agent", "text": f"set payments db_password={PASSWORD}"})
    assert PASSWORD in body  # the encoded form hides `=`, not the value
    with caplog.at_level(logging.DEBUG):
        log.debug("request body: %s", body)
    assert PASSWORD not in caplog.text
    assert "db_password=" + REDACTED in caplog.text


def test_installing_twice_wraps_once() -> None:
    install_log_redaction()
    factory = logging.getLogRecordFactory()
    install_log_redaction()
    assert logging.getLogRecordFactory() is factory
