"""The demo story in a real browser (Debian's chromium, driven by Playwright) against
`approvals-bot dev`: `/agent deploy payments 1.2.3`, the card appears, the outsider
cannot decide, an approver presses Approve and gives a reason, the thread shows the
answer, and the tool ran exactly once.

Where Chromium or Playwright is missing the test is skipped with one line, except under
CI (`CI` set), where .ci/run installs both and their absence is a failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.devconsole.browser import WAIT_MS, ConsolePage, browser_missing, chromium_page
from tests.devconsole.dev_process import dev_env, running_dev


@pytest.fixture
def browser_here() -> None:
    reason = browser_missing()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (under CI the browser test must run: see .ci/run)")
    pytest.skip(reason)


@pytest.mark.usefixtures("browser_here")
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

        # Olive is not in #ops: she may not post, and her click decides nothing (the bot
        # refuses it; Slack would not even deliver the ephemeral note to a non-member).
        await console.be("U0OLIVE")
        await expect(page.get_by_label("Message")).to_be_disabled()
        await console.press("Approve")
        refusal = console.log().locator("li.refused", has_text="chat.postEphemeral")
        await expect(refusal).to_contain_text("user_not_in_channel for Olive", timeout=WAIT_MS)
        await expect(console.modal()).to_be_hidden()
        await expect(console.log()).not_to_contain_text("views.open")

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
