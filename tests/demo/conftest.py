from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo.ops_harness import Ops, open_ops


@pytest.fixture
def ops(tmp_path: Path) -> Ops:
    return open_ops(tmp_path)
