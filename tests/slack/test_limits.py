"""The policy's limits through the real server and the demo ops agent: one /agent
command of 2,600 "and"-joined clauses once posted 2,600 review cards."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, serving
from tests.slack.slack_harness import card_calls

pytestmark = pytest.mark.slow


def clauses(count: int) -> str:
    return " and ".join(f"restart s{index}" for index in range(count))


async def test_a_fan_out_posts_no_card_and_one_clear_message(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    async with serving(serve_env(fake_slack, tmp_path)) as served, aiohttp.ClientSession() as s:
        driver = served.driver(s, fake_slack)
        flood = clauses(2600)
        refused = await driver.command("/agent", flood, user="U0REQ", channel="C0OPS")
        assert refused.status == 200
        assert refused.text == (
            f":warning: the task is {len(flood)} characters long; the limit is 4000 "
            "(limits.task_chars)"
        )

        reply = await driver.command("/agent", clauses(25), user="U0REQ", channel="C0OPS")
        assert (reply.status, reply.text) == (200, "")
        (root,) = await fake_slack.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
        assert "restart s24" in root.text  # the refused command started nothing
        (stopped,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: c.args.get("thread_ts") == root.answer["ts"]
        )
        assert stopped.args["text"] == (
            ":x: The run stopped: the model asked for 25 tool calls in one turn; the limit is "
            "20 per turn, so none of them ran (limits.tool_calls_per_turn)"
        )
    assert card_calls(fake_slack) == []
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    assert not (tmp_path / "effects.jsonl").exists()
