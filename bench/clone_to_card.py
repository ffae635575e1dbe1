"""Time from a fresh clone to an approved card in the browser, as a new user goes: the
README's two commands (install, `approvals-bot dev`), then the demo story in Chromium.

    python bench/clone_to_card.py [--cold]     # from a checkout; needs chromium and the
                                               # browser extra in the running Python

It clones this checkout into a temporary directory, creates the venv and installs the
project there exactly as the README says (`--cold`: without pip's cache, as on a new
machine), starts that venv's `approvals-bot dev`, and plays the story with the browser
test's helpers: be Riley, `/agent deploy payments 1.2.3`, be Alice, Approve, a reason,
until the answer is in the thread. Each phase's seconds are printed; a person's reading
and typing come on top (the page needs five actions).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the page helpers live with the tests

from tests.devconsole.browser import ConsolePage, browser_missing, chromium_page  # noqa: E402
from tests.devconsole.dev_process import start_dev  # noqa: E402

INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[dev]'"


def timed(what: str, started: float) -> float:
    now = time.perf_counter()
    print(f"{what:<34} {now - started:6.1f} s", flush=True)
    return now


async def story(url: str) -> None:
    from playwright.async_api import expect

    async with chromium_page() as page:
        console = ConsolePage(page)
        await page.goto(url)
        await console.be("U0RILEY")
        await console.type("/agent deploy payments 1.2.3")
        await expect(console.card()).to_contain_text("Approval needed")
        await console.be("U0ALICE")
        await console.press("Approve")
        await console.decide("first try")
        await expect(page.locator(".thread")).to_contain_text("deployed payments 1.2.3")


async def main(cold: bool) -> int:
    missing = browser_missing()
    if missing is not None:
        print(f"clone_to_card: {missing}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as directory:
        clone = Path(directory) / "approvals-bot"
        env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
        if cold:
            env["PIP_NO_CACHE_DIR"] = "1"
        start = step = time.perf_counter()
        clone_it = ["git", "clone", "-q", str(ROOT), str(clone)]
        await asyncio.to_thread(subprocess.run, clone_it, check=True)
        step = timed("git clone", step)
        install = ["bash", "-c", INSTALL]
        await asyncio.to_thread(subprocess.run, install, cwd=clone, env=env, check=True)
        step = timed("venv + pip install -e '.[dev]'", step)
        dev_env = {**env, "PATH": f"{clone / '.venv' / 'bin'}:{env['PATH']}"}
        dev = await start_dev(clone, dev_env, python=str(clone / ".venv" / "bin" / "python"))
        try:
            step = timed("approvals-bot dev until its URL", step)
            await story(dev.url)
            step = timed("the story, to the approved card", step)
        finally:
            await dev.stop()
        timed("clone to approved card", start)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="install without pip's cache")
    sys.exit(asyncio.run(main(parser.parse_args().cold)))
