"""Where the terminal demo stands, and what it says when it stops without finishing: the run
left paused and the `approvals-bot approvals decide` command that finishes it.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field

from bot.service import DecisionResult
from store.records import RunRecord


@dataclass(kw_only=True)
class Progress:
    """Where the demo is, for the line Ctrl-C prints."""

    run: RunRecord | None = None
    waiting: list[str] = field(default_factory=list)  # approval ids at the prompt


def interrupted_line(progress: Progress, args: argparse.Namespace) -> str:
    """What Ctrl-C leaves behind, and how to finish it, in one line."""
    run = progress.run
    if run is None:
        return "approvals-bot: interrupted before the run started; nothing was stored"
    finish = finish_line(progress, args)
    if finish is None:
        return f"approvals-bot: interrupted; run {run.run_id} was left {run.status}"
    return f"approvals-bot: interrupted; {finish}"


def finish_line(progress: Progress, args: argparse.Namespace) -> str | None:
    """The paused run and the command that decides what it waits for (None: the demo
    was not waiting on a decision)."""
    run = progress.run
    if run is None or not progress.waiting:
        return None
    first, more = progress.waiting[0], len(progress.waiting) - 1
    db = f" --db {shlex.quote(str(args.db))}" if args.db is not None else ""
    others = f" ({more} more: approvals-bot approvals list --run {run.run_id}{db})" if more else ""
    return (
        f"run {run.run_id} stays paused. Decide it later: "
        f"approvals-bot approvals decide {first} --approve|--reject --as YOU --reason TEXT"
        f"{db}{others}"
    )


def needs_others(result: DecisionResult) -> str:
    return (
        f"{result.approval.tool_name} needs {result.required} approvals from different "
        f"people and has {result.approvals_count} ({', '.join(result.voters)}); the others "
        "decide it as themselves"
    )
