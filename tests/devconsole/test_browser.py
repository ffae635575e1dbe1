"""In a real browser (Debian's chromium, driven by Playwright): the demo story against
`approvals-bot dev` (`/agent deploy payments 1.2.3`, the card appears, the outsider
cannot decide, an approver presses Approve and gives a reason, the thread shows the
answer, the tool ran exactly once), and the page's drawing of Block Kit.

Where Chromium or Playwright is missing, this module is skipped with one line, except
under CI (`CI` set), where .ci/run installs both and their absence is a failure."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.devconsole import DevConsole, Secrets
from bot.devconsole.workspace import CHANNEL_ID
from tests.devconsole.browser import WAIT_MS, ConsolePage, browser_missing, chromium_page
from tests.devconsole.dev_process import dev_env, running_dev

MISSING = browser_missing()
if MISSING is not None and not os.environ.get("CI"):
    pytest.skip(MISSING, allow_module_level=True)


@pytest.fixture(autouse=True)
def _browser_present() -> None:
    """Under CI (where .ci/run installs both) a missing browser fails each test here."""
    if MISSING is not None:
        pytest.fail(f"{MISSING} (under CI the browser tests must run: see .ci/run)")


async def test_the_demo_story_in_chromium(tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with running_dev(tmp_path, dev_env(tmp_path)) as dev, chromium_page() as page:
        console = ConsolePage(page)
        await page.goto(dev.url)
        await expect(page.get_by_role("status")).to_have_text("bot connected", timeout=WAIT_MS)

        await console.be("U0RILEY")
        await console.type("/agent deploy payments 1.2.3")
        card = console.card()
        await expect(card).to_contain_text("Approval needed", timeout=WAIT_MS)
        await expect(card).to_contain_text('"version": "1.2.3"')

        # Olive is not in #ops: she may not post, and her click decides nothing. Slack
        # would not deliver the ephemeral note to a non-member, so the bot tells her why
        # in a small notice on her click instead.
        await console.be("U0OLIVE")
        await expect(page.get_by_label("Message", exact=True)).to_be_disabled()
        await console.press("Approve")
        refusal = console.log().locator("li.refused", has_text="chat.postEphemeral")
        await expect(refusal).to_contain_text("user_not_in_channel for Olive", timeout=WAIT_MS)
        notice = console.modal()
        await expect(notice).to_contain_text("not a member of the channel", timeout=WAIT_MS)
        await notice.get_by_role("button", name="OK").click()
        await expect(notice).to_be_hidden(timeout=WAIT_MS)

        await console.be("U0ALICE")
        await console.press("Approve")
        await expect(console.modal()).to_contain_text("Approve tool call", timeout=WAIT_MS)
        await console.decide("release window, diff reviewed")
        await expect(console.modal()).to_be_hidden(timeout=WAIT_MS)

        thread = page.locator(".thread")
        await expect(thread).to_contain_text("deploy payments 1.2.3: deployed payments 1.2.3",
                                             timeout=WAIT_MS)  # fmt: skip
        await expect(thread).to_contain_text("Approved")
        await expect(thread).to_contain_text("release window, diff reviewed")
        await expect(console.card()).to_have_count(0)  # the buttons are gone
    effects = (tmp_path / "effects.jsonl").read_text().splitlines()
    assert len(effects) == 1
    assert json.loads(effects[0])["tool"] == "deploy_release"


HOSTILE = "&lt;img src=x onerror=\"document.title='owned'\"&gt;"


@pytest.fixture
async def client(console: DevConsole, shared: Secrets) -> AsyncIterator[AsyncWebClient]:
    async with aiohttp.ClientSession() as session:
        yield AsyncWebClient(token=shared.bot_token, base_url=console.api_url, session=session)


async def test_blocks_are_drawn_and_none_is_dropped(
    console: DevConsole, client: AsyncWebClient
) -> None:
    from playwright.async_api import expect

    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Deploys"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*bold* by <@U0ALICE> in `ops`"}},
        {"type": "rich_text", "elements": []},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": HOSTILE}]},
    ]
    await client.chat_postMessage(channel=CHANNEL_ID, text="fallback", blocks=blocks)
    async with chromium_page() as page:
        await page.goto(console.url)
        message = page.locator("article.msg")
        await expect(message).to_contain_text("Deploys", timeout=WAIT_MS)
        await expect(message.locator(".section strong")).to_have_text("bold")
        await expect(message.locator(".mention")).to_have_text("@Alice")
        await expect(message.locator(".unrendered")).to_contain_text("not rendered: rich_text")
        # The mrkdwn's escaped markup is shown as the characters it stands for, as text.
        await expect(message.locator(".context")).to_contain_text("<img src=x")
        assert await message.locator("img").count() == 0
        assert await page.title() == "approvals-bot dev console"


DM_POLICY = """
admins = ["U0SAM"]

[defaults]
approvers = ["U0ALICE", "U0BOB"]
required_approvals = 1
allow_self_approval = false
require_reason = true

[tools.deploy_release]
notify = "dm"
"""


async def test_an_approver_decides_in_their_dm_and_the_channel_card_follows(
    tmp_path: Path,
) -> None:
    from playwright.async_api import expect

    policy = tmp_path / "policy.toml"
    policy.write_text(DM_POLICY)
    env = dev_env(tmp_path, APPROVALS_POLICY=str(policy))
    async with running_dev(tmp_path, env) as dev, chromium_page() as page:
        console = ConsolePage(page)
        await page.goto(dev.url)
        await expect(page.get_by_role("status")).to_have_text("bot connected", timeout=WAIT_MS)

        await console.be("U0RILEY")
        await console.type("/agent deploy payments 1.2.3")
        channel_card = console.channel_card()
        await expect(channel_card).to_contain_text("Sent by direct message to 2 people",
                                                    timeout=WAIT_MS)  # fmt: skip
        approve_here = channel_card.get_by_role("button", name="Approve", exact=True)
        await expect(approve_here).to_have_count(0)
        await console.open_direct_messages()
        await expect(console.direct_messages()).to_contain_text("No direct messages")

        await console.be("U0BOB")  # Bob's copy is his alone: Alice sees hers, not his
        await expect(console.dm_card()).to_contain_text("waits for your decision",
                                                        timeout=WAIT_MS)  # fmt: skip
        await console.be("U0ALICE")
        dm_card = console.dm_card()
        await expect(dm_card).to_contain_text("waits for your decision", timeout=WAIT_MS)
        await expect(dm_card).to_have_count(1)
        await expect(dm_card).to_contain_text('"version": "1.2.3"')
        await dm_card.get_by_role("button", name="Approve", exact=True).click()
        await expect(console.modal()).to_contain_text("Approve tool call", timeout=WAIT_MS)
        await console.decide("approved from my DM")
        await expect(console.modal()).to_be_hidden(timeout=WAIT_MS)
        await expect(console.direct_messages()).to_contain_text("Approved", timeout=WAIT_MS)
        await expect(console.dm_card()).to_have_count(0)  # its buttons are gone

        await console.open_channel()
        await expect(console.channel_card()).to_contain_text("Approved", timeout=WAIT_MS)
        await expect(console.channel_card()).to_contain_text("approved from my DM")
        thread = page.locator(".thread")
        await expect(thread).to_contain_text("deployed payments 1.2.3", timeout=WAIT_MS)
    effects = (tmp_path / "effects.jsonl").read_text().splitlines()
    assert len(effects) == 1
    assert json.loads(effects[0])["tool"] == "deploy_release"
