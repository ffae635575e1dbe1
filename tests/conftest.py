"""What every test shares: no test reads a developer's `.env` (bot.env_file) unless it
names one itself (a checkout's .env may hold a real Slack token), and no test leaves
the process's logging configured for the next."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest

os.environ["APPROVALS_ENV_FILE"] = os.devnull


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs a command in-process (`main(["serve"])`) configures logging for
    the process (bot.logs.configure_logging); the next test starts from what was before,
    not with that handler writing its lines into the next test's captured stderr (the
    handler itself follows stderr, bot.logs.StderrHandler, so it never writes on a
    stream closed since)."""
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    try:
        yield
    finally:
        root.handlers[:], root.level = before
