"""Fixtures for run-core tests (helpers live in runtime_support.py)."""

from __future__ import annotations

import pytest

from tests.runtime.runtime_support import Ops


@pytest.fixture
def ops() -> Ops:
    return Ops()
