"""Fixtures of the Slack tests (the harness lives in slack_harness.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from slack_harness import bot, fake_slack, keyring

__all__ = ["bot", "fake_slack", "keyring"]
