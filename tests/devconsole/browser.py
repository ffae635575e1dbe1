"""Debian's chromium driven by Playwright, and the dev console's page as a person uses
it: pick who you are, type in the channel, press a card's button, fill a modal.

Shared by the browser test and docs/screenshots.py. The browser is absent on many
machines: `browser_missing()` says why in one line (the test skips on it, or fails under
CI, where .ci/run installs both).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

CHROMIUM = Path(os.environ.get("APPROVALS_TEST_CHROMIUM", "/usr/bin/chromium"))
# Headless, and nothing that phones home (Playwright cannot fetch its own browser here).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 20_000  # what the page may take to show what the bot did, on a busy machine


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev,browser]')"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@contextlib.asynccontextmanager
async def chromium_page(*, width: int = 1280, height: int = 800) -> AsyncIterator[Page]:
    """A page in a fresh headless Chromium; JavaScript errors on it fail the block."""
    from playwright.async_api import async_playwright

    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            page = await browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(WAIT_MS)
            page.on("pageerror", lambda error: errors.append(str(error)))
            yield page
        finally:
            await browser.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


class ConsolePage:
    """The dev console's page, as a person uses it."""

    def __init__(self, page: Page) -> None:
        self.page = page

    async def be(self, user_id: str) -> None:
        await self.page.get_by_label("You are").select_option(user_id)

    async def type(self, text: str) -> None:
        box = self.page.get_by_label("Message", exact=True)
        await box.fill(text)
        await box.press("Enter")

    def card(self) -> Locator:
        """The review card: the message in the thread with an Approve button."""
        approve = self.page.get_by_role("button", name="Approve", exact=True)
        return self.page.locator(".thread article.msg", has=approve)

    def direct_messages(self) -> Locator:
        """The chosen person's DM with the bot (shown by `open_direct_messages`)."""
        return self.page.get_by_role("region", name="Direct messages")

    def dm_card(self) -> Locator:
        """The review card in the person's DM: the message there with an Approve button."""
        approve = self.page.get_by_role("button", name="Approve", exact=True)
        return self.direct_messages().locator("article.msg", has=approve)

    def channel_card(self) -> Locator:
        """The review card in #ops's thread (of a call sent by DM), whatever its state."""
        return self.page.locator(".thread article.msg", has_text="Sent by direct message")

    async def open_direct_messages(self) -> None:
        await self.page.get_by_role("button", name="Direct messages").click()

    async def open_channel(self) -> None:
        await self.page.get_by_role("button", name="# ops").click()

    def modal(self) -> Locator:
        return self.page.get_by_role("dialog")

    def log(self) -> Locator:
        return self.page.get_by_role("complementary", name="Slack Web API log")

    async def press(self, label: str) -> None:
        await self.card().get_by_role("button", name=label, exact=True).click()

    async def decide(self, reason: str) -> None:
        """Fill the open modal's reason and press its submit button."""
        modal = self.modal()
        await modal.get_by_label("Reason").fill(reason)
        await modal.locator("button[type=submit]").click()

    async def open_home(self) -> None:
        await self.page.get_by_role("button", name="Home").click()
