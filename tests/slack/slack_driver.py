"""Signed requests into the bot's real HTTP endpoint, shaped like Slack's own.

The driver plays Slack's side of the Events/Interactivity/Slash-command protocol: it
signs every body with the signing secret (v0 HMAC-SHA256) unless a test asks for a bad
signature, and builds clicks and submissions from what the bot really sent to the fake
Web API (the card's buttons, the modal's private_metadata).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.slack.signature import compute_signature
from tests.slack.fake_slack import APP_ID, TEAM_ID, Call


@dataclass(frozen=True, kw_only=True)
class Reply:
    status: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


class SlackDriver:
    def __init__(
        self,
        *,
        session: aiohttp.ClientSession,
        url: str,
        signing_secret: str,
        response_url: str = "https://hooks.slack.com/commands/T0000001/1/x",
    ) -> None:
        self._session = session
        self.url = url
        self._secret = signing_secret
        self._response_url = response_url
        self._ids = itertools.count(1)

    async def post(
        self,
        body: str,
        *,
        content_type: str,
        timestamp: str | None = None,
        signature: str | None = None,
        sign: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        all_headers = {"Content-Type": content_type, **(headers or {})}
        if sign:
            ts = timestamp if timestamp is not None else str(int(time.time()))
            all_headers["X-Slack-Request-Timestamp"] = ts
            all_headers["X-Slack-Signature"] = signature or compute_signature(
                signing_secret=self._secret, timestamp=ts, body=body.encode()
            )
        async with self._session.post(self.url, data=body.encode(), headers=all_headers) as resp:
            return Reply(status=resp.status, text=await resp.text())

    async def command(
        self,
        command: str,
        text: str,
        *,
        user: str,
        channel: str,
        fields: Mapping[str, str] | None = None,
    ) -> Reply:
        """A slash command; `fields` adds or replaces payload fields (another team_id)."""
        body = urlencode(
            {
                "token": "deprecated",
                "team_id": TEAM_ID,
                "api_app_id": APP_ID,
                "channel_id": channel,
                "user_id": user,
                "command": command,
                "text": text,
                "trigger_id": f"trigger.{next(self._ids)}",
                "response_url": self._response_url,
                **(fields or {}),
            }
        )
        return await self.post(body, content_type="application/x-www-form-urlencoded")

    async def interactive(self, payload: Mapping[str, Any], **kwargs: Any) -> Reply:
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, content_type="application/x-www-form-urlencoded", **kwargs)

    def click_payload(self, card: Call, action: str, *, user: str, ts: str) -> dict[str, Any]:
        """A block_actions payload for pressing `action` ("Approve"/"Reject") on `card`,
        a recorded chat.postMessage call whose answer had message ts `ts`."""
        blocks = card.args["blocks"]
        button = next(
            element
            for block in blocks
            if block["type"] == "actions"
            for element in block["elements"]
            if element["text"]["text"] == action
        )
        return {
            "type": "block_actions",
            "team": {"id": TEAM_ID},
            "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "trigger_id": f"trigger.{next(self._ids)}",
            "channel": {"id": card.args["channel"]},
            "container": {"type": "message", "message_ts": ts, "channel_id": card.args["channel"]},
            "message": {"type": "message", "ts": ts, "blocks": blocks, "text": card.args["text"]},
            "response_url": self._response_url.replace("/commands/", "/actions/"),
            "actions": [
                {
                    "type": "button",
                    "action_id": button["action_id"],
                    "block_id": "decision",
                    "value": button["value"],
                    "action_ts": str(time.time()),
                }
            ],
        }

    async def click(self, card: Call, action: str, *, user: str, ts: str) -> Reply:
        return await self.interactive(self.click_payload(card, action, user=user, ts=ts))

    def view_click_payload(
        self, view: Mapping[str, Any], action: str, *, user: str
    ) -> dict[str, Any]:
        """A block_actions payload for pressing the button labelled `action` inside an
        open modal: `view` as the fake answered views.open/update (with id and hash)."""
        button = next(
            element
            for block in view["blocks"]
            if block["type"] == "actions"
            for element in block["elements"]
            if element["text"]["text"] == action
        )
        return {
            "type": "block_actions",
            "team": {"id": TEAM_ID},
            "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "trigger_id": f"trigger.{next(self._ids)}",
            "container": {"type": "view", "view_id": view["id"]},
            "view": dict(view),
            "actions": [
                {
                    "type": "button",
                    "action_id": button["action_id"],
                    "block_id": "reading",
                    "value": button["value"],
                    "action_ts": str(time.time()),
                }
            ],
        }

    async def view_click(self, view: Mapping[str, Any], action: str, *, user: str) -> Reply:
        return await self.interactive(self.view_click_payload(view, action, user=user))

    def submission_payload(
        self,
        view: Mapping[str, Any],
        *,
        user: str,
        reason: str | None,
        message: str | None = None,
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for block in view["blocks"]:
            if block["type"] != "input":
                continue
            action_id = block["element"]["action_id"]
            label = block["label"]["text"]
            value = reason if label == "Reason" else message
            values[block["block_id"]] = {action_id: {"type": "plain_text_input", "value": value}}
        return {
            "type": "view_submission",
            "team": {"id": TEAM_ID},
            "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "trigger_id": f"trigger.{next(self._ids)}",
            "view": {
                "id": f"V{next(self._ids)}",
                "type": "modal",
                "callback_id": view["callback_id"],
                "private_metadata": view["private_metadata"],
                "blocks": view["blocks"],
                "state": {"values": values},
            },
        }

    async def submit(
        self,
        view: Mapping[str, Any],
        *,
        user: str,
        reason: str | None,
        message: str | None = None,
    ) -> Reply:
        payload = self.submission_payload(view, user=user, reason=reason, message=message)
        return await self.interactive(payload)

    async def event(
        self,
        event: Mapping[str, Any],
        *,
        event_id: str | None = None,
        retry_num: int | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> Reply:
        """An Events API delivery of `event`; `fields` adds or replaces outer fields."""
        body = json.dumps(
            {
                "token": "deprecated",
                "team_id": TEAM_ID,
                "api_app_id": APP_ID,
                "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._ids):08d}",
                "event_time": int(time.time()),
                "event": dict(event),
                "authorizations": [{"team_id": TEAM_ID, "user_id": "UBOT0001", "is_bot": True}],
                **(fields or {}),
            }
        )
        headers = {}
        if retry_num is not None:
            headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
        return await self.post(body, content_type="application/json", headers=headers)
