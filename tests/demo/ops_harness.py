"""The ops agent under the real Runner, with its effects file in tmp_path (shared by the
demo tests; the fixture lives in conftest.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.demo import build_ops_agent, ops_dependencies
from bot.runtime import Agent, InMemoryJournal, Journal, Runner, RunResult, RunState

OPS_TOKEN = "xoxb-" + "1618033988-7494894848-tokenNeverStored"


@dataclass
class Ops:
    """One ops agent, its dependencies and its effects file."""

    agent: Agent
    dependencies: dict[str, Any]
    effects: Path
    journal: Journal

    async def run(self, task_or_state: str | RunState, **options: Any) -> RunResult:
        options.setdefault("journal", self.journal)
        return await Runner.arun(
            self.agent, task_or_state, dependencies=self.dependencies, **options
        )

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines()]


def open_ops(tmp_path: Path) -> Ops:
    effects = tmp_path / "effects.jsonl"
    dependencies = ops_dependencies(
        {"OPS_API_TOKEN": OPS_TOKEN, "APPROVALS_DEMO_EFFECTS": str(effects)}
    )
    return Ops(
        agent=build_ops_agent(),
        dependencies=dependencies,
        effects=effects,
        journal=InMemoryJournal(),
    )
