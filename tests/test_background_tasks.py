"""Every background task has an owner: only TaskOwner (bot/tasks.py) creates tasks, so a
loop or a piece of deferred work started anywhere else is found here, not in production
as a task nobody cancels or whose failure nobody logs."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "bot" / "tasks.py"
STARTERS = {"create_task", "ensure_future"}


def task_starts(source: str) -> list[int]:
    """The lines of `source` that start a task without an owner."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in STARTERS)
            or (isinstance(node.func, ast.Name) and node.func.id in STARTERS)
        )
    ]


def test_only_the_task_owner_creates_tasks() -> None:
    sources = [*ROOT.joinpath("bot").rglob("*.py"), *ROOT.joinpath("store").rglob("*.py")]
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sources
        if path != OWNER and (lines := task_starts(path.read_text(encoding="utf-8")))
    }
    assert not found, f"tasks started outside TaskOwner (bot/tasks.py): {found}"


def test_the_scan_sees_a_bare_task() -> None:
    assert task_starts("import asyncio\nasyncio.create_task(work())\n") == [2]
    assert task_starts("loop.create_task(work(), name='x')\n") == [1]
    assert task_starts("from asyncio import ensure_future\nensure_future(work())\n") == [2]
    assert task_starts("tasks.spawn(work(), name='x')\n") == []
    assert task_starts(OWNER.read_text(encoding="utf-8"))  # the owner itself does
