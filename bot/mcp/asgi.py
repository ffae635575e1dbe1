"""One aiohttp request served by an ASGI 3 application (the MCP SDK's Streamable HTTP
transport), on the bot's own event loop and port.

The SDK's transport is plain ASGI over anyio, which runs on asyncio: it needs a scope,
a `receive` that yields the request body once and then `http.disconnect` when the
exchange is over, and a `send` for the response's start and its body chunks (an SSE
stream is written chunk by chunk as the SDK sends it). aiohttp gives all three: the
body is read whole first (within the application's `client_max_size`), every chunk is
written and drained before `send` returns, and a client that went away makes the next
write fail, which the SDK sees as a failed send (its SSE pings and our progress
notifications write at least every few seconds, so a waiting call notices within
that). So the transport needs no second server and no second port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def serve_asgi(
    app: AsgiApp, request: web.Request, *, extra: Mapping[str, Any] | None = None
) -> web.StreamResponse:
    """Answer `request` with `app`; `extra` goes into the ASGI scope (where the app's
    handlers find it, e.g. who the request was authenticated as)."""
    body = await request.read()
    exchange = _Exchange(request, body)
    try:
        await app(_scope(request, extra or {}), exchange.receive, exchange.send)
    finally:
        exchange.over.set()
    return await exchange.finished()


class _Exchange:
    """One request's ASGI exchange. A response whose whole body comes in one message (a
    JSON answer) becomes a plain `web.Response` that aiohttp sends in one write; one sent
    in chunks (an SSE stream) is streamed as it comes."""

    def __init__(self, request: web.Request, body: bytes) -> None:
        self._request = request
        self._body: bytes | None = body
        self.over = asyncio.Event()
        self._response: web.StreamResponse | None = None
        self._started: Message | None = None
        self._whole: web.Response | None = None

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.over.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._started = message
            return
        if kind != "http.response.body":
            return
        chunk = bytes(message.get("body", b""))
        if self._response is None and not message.get("more_body", False):
            self._whole = web.Response(body=chunk, **self._head())
            self.over.set()
            return
        response = await self._prepared()
        try:
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()
                self.over.set()
        except (ConnectionResetError, RuntimeError) as error:  # the client went away
            self.over.set()
            raise OSError(f"the client closed the connection: {error}") from error

    def _head(self) -> dict[str, Any]:
        started = self._started or {"status": 500, "headers": []}
        headers: CIMultiDict[str] = CIMultiDict()
        for name, value in started.get("headers", []):
            key = bytes(name).decode("latin-1")
            if key.lower() != "content-length":  # aiohttp counts the body itself
                headers.add(key, bytes(value).decode("latin-1"))
        return {"status": int(started["status"]), "headers": headers}

    async def _prepared(self) -> web.StreamResponse:
        if self._response is None:
            self._response = web.StreamResponse(**self._head())
            await self._response.prepare(self._request)
        return self._response

    async def finished(self) -> web.StreamResponse:
        if self._whole is not None:
            return self._whole
        if self._response is not None:
            return self._response
        if self._started is None:  # the app answered nothing
            return web.Response(status=500, text="no response")
        response = await self._prepared()  # a start with no body
        await response.write_eof()
        return response


def _scope(request: web.Request, extra: Mapping[str, Any]) -> Scope:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    sock = transport.get_extra_info("sockname") if transport is not None else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
        "state": {},
        **extra,
    }
