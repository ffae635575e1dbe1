"""How the stand-in's Web API reads a call: its arguments as slack_sdk sends them, the
refusal Slack answers with, and blocks given the ids Slack gives them when it stores
them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web


class Refused(Exception):
    """Slack's `{"ok": false, "error": code}`, with the validation messages if any."""

    def __init__(self, code: str, messages: list[str] | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.messages = messages or []


def identified(blocks: Any) -> list[Any]:
    """`blocks` with a block_id on every block and an action_id on every element, made
    up where the app gave none, as Slack does when it stores them."""
    out: list[Any] = []
    for index, block in enumerate(blocks or []):
        block = dict(block)
        block.setdefault("block_id", f"b{index}")
        for key in ("element", "accessory"):
            if isinstance(block.get(key), dict):
                block[key] = {"action_id": f"{block['block_id']}.{key}", **block[key]}
        if isinstance(block.get("elements"), list) and block.get("type") != "context":
            block["elements"] = [
                {"action_id": f"{block['block_id']}.{n}", **e} if isinstance(e, dict) else e
                for n, e in enumerate(block["elements"])
            ]
        out.append(block)
    return out


async def web_api_arguments(request: web.Request) -> dict[str, Any]:
    """A Web API call's arguments as slack_sdk sends them: the query (a GET's, and a
    POST's for the methods slack_sdk sends as `params`, conversations.open among them)
    with a JSON body, or a form whose `blocks`, `view` and `attachments` are JSON
    texts."""
    query: dict[str, Any] = dict(request.query)
    if request.method == "GET":
        return query
    raw = await request.text()
    try:
        if request.content_type == "application/json":
            data = json.loads(raw) if raw else {}
            if not isinstance(data, dict):
                raise Refused("invalid_json")
            return {**query, **data}
        args: dict[str, Any] = {**query, **dict(parse_qsl(raw, keep_blank_values=True))}
        for key in ("blocks", "view", "attachments"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
    except ValueError:
        raise Refused("invalid_json") from None
    return args
