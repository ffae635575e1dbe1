"""Log records are redacted when they are made, whatever handler reads them."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from bot.cli import main
from bot.credentials import REDACTED
from bot.logs import (
    JsonFormatter,
    LogSettings,
    TextFormatter,
    install_log_redaction,
    log_settings_from_env,
    redact_record,
)

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


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, not 'LOUD'"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT must be 'text' or 'json', not 'xml'"),
    ],
)
def test_a_bad_log_setting_stops_serve_in_one_line(
    env: dict[str, str],
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"approvals-bot: error: {line}"]


def test_settings_default_to_text_at_info_and_accept_any_case() -> None:
    assert log_settings_from_env({}) == LogSettings(format="text", level="INFO")
    assert log_settings_from_env({"LOG_FORMAT": "JSON", "LOG_LEVEL": "debug"}) == LogSettings(
        format="json", level="DEBUG"
    )


def test_the_text_format_appends_the_fields_and_the_json_format_carries_them() -> None:
    record = log.makeRecord(
        "approvals.events", logging.INFO, __file__, 1, "approval decided", (), None,
        extra={"event": "approval_decided", "run_id": "r1", "note": "two words"},
    )  # fmt: skip
    text = TextFormatter().format(record)
    assert text.endswith('approval decided event=approval_decided run_id=r1 note="two words"')
    line = json.loads(JsonFormatter().format(record))
    assert {key: line[key] for key in ("level", "logger", "message", "event", "run_id")} == {
        "level": "INFO",
        "logger": "approvals.events",
        "message": "approval decided",
        "event": "approval_decided",
        "run_id": "r1",
    }


def test_a_json_line_carries_its_traceback_redacted() -> None:
    try:
        raise RuntimeError(f"upstream said Bearer {TOKEN}")
    except RuntimeError:
        record = log.makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    redact_record(record)
    line = json.loads(JsonFormatter().format(record))
    assert "RuntimeError: upstream said Bearer" in line["traceback"]
    assert TOKEN not in json.dumps(line)


def test_the_log_writes_on_stderr_as_it_is_when_it_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command run in-process configures logging while stderr is one stream (a test's
    capture, say) that is closed later: the handler follows stderr, never writing on the
    closed stream ("Logging error ... I/O operation on closed file")."""
    import io

    from bot.logs import configure_logging

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    first, later = io.StringIO(), io.StringIO()
    try:
        monkeypatch.setattr(sys, "stderr", first)
        configure_logging(LogSettings(format="text", level="INFO"))
        first.close()
        monkeypatch.setattr(sys, "stderr", later)
        logging.getLogger("tests.logs.stderr").info("still heard")
    finally:
        root.handlers[:], root.level = before
        sys.excepthook = sys.__excepthook__
    assert "Logging error" not in later.getvalue()
    assert "still heard" in later.getvalue()
