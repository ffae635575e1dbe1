"""Only the console's own page drives it: another web page in the same browser (a
cross-site request, a DNS-rebinding page, a frame) gets nothing and changes nothing."""

from __future__ import annotations

import re

import aiohttp
import pytest

from bot.devconsole import DevConsole
from tests.devconsole.dev_process import TOKEN

SEND = {"as": "U0RILEY", "do": "send", "text": "hello"}


async def page_token(session: aiohttp.ClientSession, console: DevConsole) -> str:
    async with session.get(console.url + "/") as response:
        assert response.status == 200
        match = TOKEN.search(await response.text())
    assert match is not None
    return match.group(1)


async def test_it_listens_on_127_0_0_1_only(console: DevConsole) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", console.url)


@pytest.mark.parametrize("path", ["/", "/console/state", "/api/auth.test"])
async def test_a_rebound_host_name_is_refused(console: DevConsole, path: str) -> None:
    """A page at evil.example whose name now resolves to 127.0.0.1 sends its own Host."""
    port = console.url.rsplit(":", 1)[1]
    async with (
        aiohttp.ClientSession() as session,
        session.get(console.url + path, headers={"Host": f"evil.example:{port}"}) as response,
    ):
        assert response.status == 421
        assert "answers only at 127.0.0.1:" in await response.text()


async def test_localhost_is_the_same_console(console: DevConsole) -> None:
    port = console.url.rsplit(":", 1)[1]
    async with (
        aiohttp.ClientSession() as session,
        session.get(console.url + "/", headers={"Host": f"localhost:{port}"}) as response,
    ):
        assert response.status == 200


async def test_the_api_wants_the_pages_token(console: DevConsole) -> None:
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {"X-Console-Token": "guessed"}):
            async with session.get(console.url + "/console/state", headers=headers) as response:
                assert response.status == 403
            async with session.post(
                console.url + "/console/act", json=SEND, headers={**headers, "Origin": console.url}
            ) as response:
                assert response.status == 403
    assert console.state.messages == []


async def test_a_cross_origin_post_is_refused_even_with_the_token(console: DevConsole) -> None:
    async with aiohttp.ClientSession() as session:
        token = await page_token(session, console)
        for origin in ("http://evil.example", "null", None):
            headers = {"X-Console-Token": token}
            if origin is not None:
                headers["Origin"] = origin
            async with session.post(
                console.url + "/console/act", json=SEND, headers=headers
            ) as response:
                assert response.status == 403, origin
        # A form (what a cross-site <form> could send) is not an action.
        async with session.post(
            console.url + "/console/act",
            data={"payload": "x"},
            headers={"X-Console-Token": token, "Origin": console.url},
        ) as response:
            assert response.status == 415
    assert console.state.messages == []


async def test_the_page_cannot_be_framed_or_sniffed(console: DevConsole) -> None:
    async with aiohttp.ClientSession() as session, session.get(console.url + "/") as response:
        policy = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in policy
        assert "script-src 'self'" in policy
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_the_page_answers_an_unknown_person_or_action_in_one_line(
    console: DevConsole,
) -> None:
    async with aiohttp.ClientSession() as session:
        token = await page_token(session, console)
        headers = {"X-Console-Token": token, "Origin": console.url}
        async with session.post(
            console.url + "/console/act", json={**SEND, "as": "U0MALLORY"}, headers=headers
        ) as response:
            assert response.status == 400
            assert "no such person: 'U0MALLORY'" in await response.text()
        async with session.post(
            console.url + "/console/act", json={**SEND, "do": "approve"}, headers=headers
        ) as response:
            assert (response.status, await response.json()) == (
                400, {"ok": False, "error": "unknown action 'approve'"},
            )  # fmt: skip


async def test_the_page_loads_nothing_from_elsewhere(console: DevConsole) -> None:
    """No CDN, no build step: the page and its script and style come from the console."""
    async with aiohttp.ClientSession() as session:
        async with session.get(console.url + "/") as response:
            html = await response.text()
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert sources == ["/static/console.css", "data:,", "/static/console.js"]
        for asset in ("/static/console.js", "/static/blockkit.js", "/static/console.css"):
            async with session.get(console.url + asset) as response:
                assert response.status == 200
                assert "http" not in (await response.text()).replace("https?:", "")
        async with session.get(console.url + "/static/..%2Fpage.py") as response:
            assert response.status == 404
