"""What every test shares: no test reads a developer's `.env` (bot.env_file) unless it
names one itself; a checkout's .env may hold a real Slack token."""

from __future__ import annotations

import os

os.environ["APPROVALS_ENV_FILE"] = os.devnull
