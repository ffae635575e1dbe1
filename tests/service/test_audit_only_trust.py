"""Audit-only tools in the service: the policy's own approval counts right before the
call runs only while the tool is still audit-only (a policy switched back to "approve"
takes effect at once), and is sealed like any vote (one written into the database
without the keys counts for nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.service.audited import AUDIT_VIA, AUDIT_VOTER
from bot.service.authority import execution_check
from bot.service.workflow import Workflow
from tests.service.governance_helpers import governed, policy
from tests.service.service_harness import start

AUDIT = policy('[tools.restart_service]\nmode = "audit"\n')
APPROVE = policy("[tools.restart_service]\napprovers = []\n")


async def test_the_policys_approval_counts_only_while_the_tool_is_audit_only(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness, policy=APPROVE)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    outcome = await harness.store.vote(
        approval.approval_id, decision="approved", voter=AUDIT_VOTER,
        digest=approval.arguments_digest, reason="as if audit-only", via=AUDIT_VIA,
    )  # fmt: skip
    assert outcome.result == "decided"
    flow: Workflow = harness.service._flow
    refused = await execution_check(flow, outcome.record)
    assert refused is not None
    assert "no longer audit-only" in refused.why
    assert await execution_check(replace(flow, policy=AUDIT), outcome.record) is None
