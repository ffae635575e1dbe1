"""Make the dev console's screenshots in docs/images/: the review card, the reason
modal and App Home, from a real `approvals-bot dev` in Debian's chromium.

    python docs/screenshots.py        # needs chromium and the browser extra

It plays the demo story as the browser test does (tests/devconsole/browser.py), then a
second request, so that App Home shows a call waiting beside a decision. Install an
emoji font (apt-get install fonts-noto-color-emoji) for the cards' emoji to show.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the page helpers live with the tests

from tests.devconsole.browser import ConsolePage, browser_missing, chromium_page  # noqa: E402
from tests.devconsole.dev_process import dev_env, running_dev  # noqa: E402

IMAGES = ROOT / "docs" / "images"


async def main() -> int:
    missing = browser_missing()
    if missing is not None:
        print(f"screenshots: {missing}", file=sys.stderr)
        return 1
    from playwright.async_api import expect

    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        async with running_dev(workdir, dev_env(workdir)) as dev, chromium_page() as page:
            console = ConsolePage(page)
            await page.goto(dev.url)
            await console.be("U0RILEY")
            await console.type("/agent deploy payments 1.2.3")
            await expect(console.card()).to_contain_text("Approval needed")
            await console.be("U0ALICE")
            await page.screenshot(path=IMAGES / "dev-console-card.png")

            await console.press("Approve")
            await console.modal().get_by_label("Reason").fill("release window, diff reviewed")
            await page.screenshot(path=IMAGES / "dev-console-modal.png")
            await console.modal().locator("button[type=submit]").click()
            await expect(page.locator(".thread")).to_contain_text("deployed payments 1.2.3")

            await console.be("U0RILEY")
            await console.type("/agent restart payments")
            await expect(console.card()).to_contain_text("restart_service")
            await console.be("U0BOB")
            await console.open_home()
            await expect(page.locator("#home-view")).to_contain_text("restart_service")
            await page.screenshot(path=IMAGES / "dev-console-home.png")
    for name in ("card", "modal", "home"):
        print(IMAGES / f"dev-console-{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
