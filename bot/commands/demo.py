"""`approvals-bot` sub-commands (placeholder until its owner fills it in)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: "argparse._SubParsersAction[Any]") -> None:
    """Register this module's sub-commands."""
