"""The Web API client's HTTP session: the JSON it writes, and no cookie jar."""

from __future__ import annotations

import json

import aiohttp

from bot.slack.gateway import _json_text, web_api_session


def test_bodies_are_the_same_json_as_the_json_modules() -> None:
    body = {
        "channel": "C1",
        "ts": "1.2",
        "text": 'Approved: deploy_release «redacted» é 😀 "q" \\ <@U1>',
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "*Tool:* `x`\n```\n{}\n```"}}
        ],
        "n": 1,
        "f": 1.5,
        "none": None,
    }
    assert json.loads(_json_text(body)) == json.loads(json.dumps(body)) == body
    assert _json_text({1: "a non-str key"}) == json.dumps({1: "a non-str key"})  # as before


async def test_the_session_keeps_no_cookies() -> None:
    async with web_api_session() as session:
        assert isinstance(session.cookie_jar, aiohttp.DummyCookieJar)
