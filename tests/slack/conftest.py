"""Fixtures of the Slack tests (the harness lives in slack_harness.py)."""

from tests.slack.slack_harness import bot, fake_slack, keyring

__all__ = ["bot", "fake_slack", "keyring"]
