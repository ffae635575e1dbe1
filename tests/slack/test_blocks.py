"""Block Kit builders: escaping, clipping, limits, and who is shown how."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import blocks
from bot.slack.decision_modal import decision_modal
from bot.slack.modals import ModalContext
from store.records import ApprovalRecord, RunRecord
from tests.slack.records import NOW, pending_approval

RUN = RunRecord(
    run_id="r1",
    agent_name="ops",
    agent_version="1",
    schema_version="1.0",
    status="paused",
    version=1,
    key_id="k1",
    blob_digest="0" * 64,
    channel="C1",
    thread_ts="1.0",
    requester="U0REQ",
    created_at=NOW,
    updated_at=NOW,
)


def approval(**fields: Any) -> ApprovalRecord:
    return pending_approval(
        "deploy_release",
        {"service": "payments", "version": "1.2.3"},
        digest="d1" * 32,
        **{"expires_at": NOW, **fields},
    )


@pytest.mark.parametrize("limit", range(14, 40))
def test_escape_clips_with_a_marker_and_never_inside_an_entity(limit: int) -> None:
    clipped = blocks.escape("a<b>&c" * 10, limit)
    assert len(clipped) <= limit
    assert clipped.endswith(blocks.TRUNCATED)
    body = clipped.removesuffix(blocks.TRUNCATED)
    assert "<" not in body
    assert body.count("&") == body.count("&lt;") + body.count("&gt;") + body.count("&amp;")


def test_people_are_mentions_and_other_actors_plain_text() -> None:
    assert blocks.person("U0APPROVE") == "<@U0APPROVE>"
    assert blocks.person("service:local-abc") == "`service:local-abc`"
    assert blocks.person("<!channel>") == "`&lt;!channel&gt;`"


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_the_modal_fits_slack_limits(action: str) -> None:
    context = ModalContext(approval_id="a" * 128, action=action, channel_id="C1")  # type: ignore[arg-type]
    view = decision_modal(context=context, call="x" * 3000)
    assert len(view["title"]["text"]) <= 24
    assert len(view["submit"]["text"]) <= 24
    assert len(view["private_metadata"]) <= 3000
    labels = [block["label"]["text"] for block in view["blocks"] if block["type"] == "input"]
    assert labels == (["Reason"] if action == "approve" else ["Reason", "Message to the agent"])
