"""The fault campaign (bench/fault_campaign.py) in its CI size: six decisions across two
replica processes on Postgres, a fault at a different step of each (before and after the
vote's commit, at the card's update, mid-call, at the answer), the submission delivered
again 0-3 times. The faults: the deciding replica SIGKILLed; SIGSTOPped past its lease,
then let go on; every database connection dropped and new ones refused for 3 s. The
script exits 0 only when every acknowledged decision is kept, no call ran twice or
unapproved, every run settled, readiness said "not ready" while the database was gone
and "ready" after, and the audit chain verifies; its full size is run by hand
(docs/production.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.postgres_db import require_postgres

pytestmark = pytest.mark.slow
CAMPAIGN = Path(__file__).resolve().parents[2] / "bench" / "fault_campaign.py"


def campaign(fault: str) -> str:
    """Run the quick campaign with `fault`; its report (it must pass)."""
    require_postgres()
    finished = subprocess.run(
        [sys.executable, str(CAMPAIGN), "--quick", "--fault", fault],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert f"6 runs ({fault}) in" in finished.stdout
    assert "PROBLEM" not in finished.stdout
    assert finished.stdout.rstrip().endswith("PASS"), finished.stdout
    return finished.stdout


def test_a_replica_killed_at_any_step_loses_no_decision_and_runs_nothing_twice() -> None:
    report = campaign("kill")
    assert "failed" not in report


def test_a_replica_frozen_past_its_lease_at_any_step_fails_no_run() -> None:
    report = campaign("stop")
    assert "failed" not in report


def test_connections_dropped_at_any_step_lose_nothing_and_readiness_says_so() -> None:
    report = campaign("db")
    assert "readiness: not ready while the database was down: 6" in report
    assert "readiness: ready again after the database came back: 6" in report
