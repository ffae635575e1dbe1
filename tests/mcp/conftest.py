"""Fixtures of the MCP gateway's tests (the harness lives in harness.py). They need the
`mcp` extra (CI installs it); without it, the rest of the suite runs without them."""

import importlib.util

from tests.replicas.conftest import postgres_url
from tests.slack.slack_harness import fake_slack

if importlib.util.find_spec("mcp") is None:
    collect_ignore_glob = ["test_*.py"]

__all__ = ["fake_slack", "postgres_url"]
