"""CLI test fixtures: `home`, a working directory with a clean environment (see
operator_support)."""

from tests.cli.operator_support import home

__all__ = ["home"]
