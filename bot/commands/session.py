"""A terminal session: async steps on one event loop, with prompts between them.

The service, the store and the model are async; a person answers prompts. Reading a
prompt inside the event loop (`input()` under `asyncio.run`) makes Ctrl-C wait for the
loop, which is blocked in `input()`: the first Ctrl-C is swallowed. Here each async step
runs with `asyncio.Runner.run` on one loop that lives as long as the session (so open
resources survive between steps), and prompts are read between steps, outside the loop,
where Ctrl-C raises KeyboardInterrupt at once. Whatever was entered into the session is
closed on the way out, in reverse order, on that same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, TypeVar

from bot.errors import InputError

T = TypeVar("T")


class Session:
    def __init__(self) -> None:
        self._runner = asyncio.Runner()
        self._stack = contextlib.AsyncExitStack()

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """Run one async step to its end (Ctrl-C during it cancels it)."""
        return self._runner.run(step)

    def enter(self, resource: AbstractAsyncContextManager[T]) -> T:
        """Open `resource` for the rest of the session."""
        return self.run(self._stack.enter_async_context(resource))

    def close(self) -> None:
        try:
            self.run(self._stack.aclose())
        finally:
            self._runner.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def prompt(question: str, *, missing: str) -> str:
    """One line from standard input, stripped; `missing` (an InputError) when there is
    none to read (stdin closed or not a terminal with nothing on it)."""
    try:
        return input(question).strip()
    except EOFError:
        raise InputError(missing) from None


def confirm(question: str, *, missing: str, refused: str) -> None:
    """Go on only on a yes (y, yes) to `question`, asked with `[y/N]`; anything else is
    an InputError saying `refused` (what was not done)."""
    answer = prompt(f"{question} [y/N] ", missing=missing).lower()
    if answer not in ("y", "yes"):
        raise InputError(f"not confirmed; {refused}")
