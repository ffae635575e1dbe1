"""Fixtures of the replica tests: the fake Slack Web API (the Slack tests' own) and a
fresh Postgres database, dropped after the test."""

from collections.abc import Iterator

import pytest

from tests.slack.slack_harness import fake_slack
from tests.store.postgres_db import fresh_postgres_database

__all__ = ["fake_slack"]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url
