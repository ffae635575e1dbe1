"""`approvals-bot demo` uses the model APPROVALS_MODEL names (offline by default), and
closes it: here a fake OpenAI-compatible server on 127.0.0.1 is the LLM network edge."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

API_KEY = "sk-demo-test-0123456789abcdefghij"
DEADLINE_SECONDS = 60


@dataclass
class ChatServer:
    """Answers chat-completion requests from `answers`, recording every request."""

    answers: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        message = self.answers.pop(0)
        body = {"id": "chatcmpl-1", "choices": [{"index": 0, "message": message}]}
        return web.json_response(body)


@pytest.fixture
async def chat_server() -> AsyncIterator[ChatServer]:
    arguments = json.dumps({"service": "payments"})
    server = ChatServer(
        answers=[
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_status", "arguments": arguments},
                    }
                ],
            },
            {"role": "assistant", "content": "payments looks fine (said the remote model)"},
        ]
    )
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        server.base_url = f"http://{host}:{port}/v1"
        yield server
    finally:
        await runner.cleanup()


def demo_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("APPROVALS_", "OPS_", "OPENAI_"))
    }
    env.update(
        APPROVALS_DATABASE_URL=str(home / "approvals.db"),
        APPROVALS_DEMO_EFFECTS=str(home / "effects.jsonl"),
        OPS_API_TOKEN="xoxb-2718281828-demo-token-never-stored",
        PYTHONWARNINGS="error::ResourceWarning",
        **extra,
    )
    return env


async def run_demo(home: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """The CLI in a subprocess, awaited without blocking the fake server's loop."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "demo",
        *args,
        env=env,
        cwd=home,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), DEADLINE_SECONDS)
    except TimeoutError:
        process.kill()
        await process.communicate()
        raise
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


async def test_approvals_model_openai_runs_the_demo_on_the_remote_model(
    chat_server: ChatServer, tmp_path: Path
) -> None:
    env = demo_env(
        tmp_path,
        APPROVALS_MODEL="openai",
        OPENAI_BASE_URL=chat_server.base_url,
        OPENAI_API_KEY=API_KEY,
        OPENAI_MODEL="demo-model",
    )
    code, stdout, stderr = await run_demo(tmp_path, env, "how is payments doing?")

    assert code == 0, stderr
    assert "payments looks fine (said the remote model)" in stdout.split("answer:", 1)[1]
    assert [request["model"] for request in chat_server.requests] == ["demo-model"] * 2
    # the tool result went back to the remote model
    assert chat_server.requests[1]["messages"][-1]["role"] == "tool"
    # the model's HTTP session was closed: aiohttp warns about an unclosed one
    assert "Unclosed" not in stderr
    assert API_KEY not in stdout + stderr


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"APPROVALS_MODEL": "gpt-please"}, "APPROVALS_MODEL must be 'offline' or 'openai'"),
        ({"APPROVALS_MODEL": "openai"}, "needs OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL"),
    ],
)
async def test_a_bad_model_setting_is_refused_before_anything_is_created(
    tmp_path: Path, extra: dict[str, str], problem: str
) -> None:
    code, _, stderr = await run_demo(tmp_path, demo_env(tmp_path, **extra), "status api")

    assert code == 2
    assert problem in stderr
    assert not (tmp_path / "approvals.db").exists()


async def test_the_offline_model_is_the_default(tmp_path: Path) -> None:
    code, stdout, stderr = await run_demo(tmp_path, demo_env(tmp_path), "status payments")
    assert code == 0, stderr
    assert "payments" in stdout.split("answer:", 1)[1]
