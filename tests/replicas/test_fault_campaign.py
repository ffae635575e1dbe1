"""The kill -9 fault campaign (bench/fault_campaign.py) in its CI size: six decisions
across two replica processes on Postgres, the deciding replica SIGKILLed at a different
step of each (before and after the vote's commit, at the card's update, mid-call, at the
answer), the submission delivered again 0-3 times. The script exits 0 only when every
acknowledged decision is kept, no call ran twice or unapproved, every run settled and
the audit chain verifies; its full size (216 runs) is run by hand (docs/production.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.postgres_db import require_postgres

pytestmark = pytest.mark.slow
CAMPAIGN = Path(__file__).resolve().parents[2] / "bench" / "fault_campaign.py"


def test_the_quick_fault_campaign_keeps_every_decision_and_runs_nothing_twice() -> None:
    require_postgres()
    finished = subprocess.run(
        [sys.executable, str(CAMPAIGN), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "6 runs in" in finished.stdout
    assert "PROBLEM" not in finished.stdout
    assert finished.stdout.rstrip().endswith("PASS"), finished.stdout
