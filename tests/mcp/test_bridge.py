"""The example, end to end, through the stdio bridge: an MCP client that only starts
servers as commands (as Claude Desktop does) starts `approvals-bot mcp bridge URL`; the
gateway runs examples/mcp.toml in front of examples/mcp_upstream.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.harness import ROOT, decide, gateway, next_card, slack_driver, text_of
from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env

pytestmark = pytest.mark.slow

EXAMPLE_TOKEN = "abmcp_example-token-for-trying-offline"


def _example_file(workdir: Path) -> Path:
    """examples/mcp.toml as it is, but for where things are here (the upstream's path,
    this Python, its effects file in `workdir`)."""
    text = (ROOT / "examples" / "mcp.toml").read_text(encoding="utf-8")
    text = text.replace('command = "python3"', f'command = "{sys.executable}"')
    text = text.replace(
        'args = ["examples/mcp_upstream.py"]',
        f'args = ["{ROOT / "examples" / "mcp_upstream.py"}"]\ncwd = "{workdir}"',
    )
    path = workdir / "mcp.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_a_stdio_client_reaches_the_example_through_the_bridge(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, APPROVALS_MCP=str(_example_file(tmp_path)))
    async with gateway(env) as (served, url), slack_driver(served, fake_slack) as driver:
        bridge = StdioServerParameters(
            command=sys.executable,
            args=["-m", "bot", "mcp", "bridge", url],
            env={"APPROVALS_MCP_TOKEN": EXAMPLE_TOKEN, "PYTHONPATH": os.pathsep.join(sys.path)},
            cwd=ROOT,
        )
        async with Client(bridge, mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"ops__service_status", "ops__deploy_release", "ops__send_email"} <= names
            status = await client.call_tool("ops__service_status", {"service": "api"})
            assert "healthy" in text_of(status)
            deploy = {"service": "api", "version": "1.2.4"}
            call = asyncio.create_task(client.call_tool("ops__deploy_release", deploy))
            card = await next_card(fake_slack)
            await decide(fake_slack, driver, card, "Approve")
            result = await call
    assert "deploy_release: done" in text_of(result)
    lines = (tmp_path / "mcp-effects.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["arguments"] for line in lines] == [deploy]
