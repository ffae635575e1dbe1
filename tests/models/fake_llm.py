"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 (the LLM network edge).

Each request is recorded; each answer is taken from a queue of `Reply`s the test sets up.
A `Reply` with `hold` waits on an event the test releases (for timeouts).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True, kw_only=True)
class Reply:
    status: int = 200
    body: str = ""
    hold: asyncio.Event | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(status=status, body=json.dumps(payload))


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@dataclass
class FakeLLM:
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _held: list[asyncio.Event] = field(default_factory=list)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"

    async def stop(self) -> None:
        for event in self._held:
            event.set()  # let held handlers answer, so the server can shut down
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        reply = self.replies.pop(0)
        if reply.hold is not None:
            self._held.append(reply.hold)
            await reply.hold.wait()
        return web.Response(
            status=reply.status,
            text=reply.body,
            content_type="application/json",
            headers=reply.headers,
        )
