"""A deterministic offline model for the ops agent: no network, no randomness.

It understands, case-insensitively, several commands joined by "and":

    deploy <service> <version>     restart <service>
    set <service> <key>=<value>    status <service>

A task it understands becomes one model turn with one tool call per command. Once the
results are in, it answers with one line per call: the tool's result, or for a call
that did not run, what the runner told it (a rejection message, an error). Anything else
gets a final answer listing what it understands. A value containing " and " cannot be
expressed (the task is split on "and").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.credentials import redact_text
from bot.runtime.model import Item, ModelResponse, ToolCall, ToolResultItem, ToolSpec

UNDERSTOOD = (
    "deploy <service> <version>",
    "restart <service>",
    "set <service> <key>=<value>",
    "status <service>",
)
_AND_RE = re.compile(r"\s+and\s+", re.IGNORECASE)
_COMMANDS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("deploy_release", re.compile(r"deploy\s+(\S+)\s+(\S+)", re.I), ("service", "version")),
    ("restart_service", re.compile(r"restart\s+(\S+)", re.I), ("service",)),
    (
        "set_config",
        re.compile(r"set\s+(\S+)\s+([^\s=]+)\s*=\s*(.+)", re.I | re.S),
        ("service", "key", "value"),
    ),
    ("get_status", re.compile(r"status\s+(\S+)", re.I), ("service",)),
)


@dataclass(frozen=True, kw_only=True)
class Command:
    tool_name: str
    arguments: dict[str, Any]


def parse_task(task: str) -> list[Command] | str:
    """The commands in `task`, or the first part that is not understood."""
    commands = []
    for clause in _AND_RE.split(task.strip()):
        command = _parse_clause(clause.strip())
        if command is None:
            return clause.strip()
        commands.append(command)
    return commands


def _parse_clause(clause: str) -> Command | None:
    for tool_name, pattern, names in _COMMANDS:
        match = pattern.fullmatch(clause)
        if match is not None:
            values = [value.strip() for value in match.groups()]
            return Command(tool_name=tool_name, arguments=dict(zip(names, values, strict=True)))
    return None


SHOWN_CHARS = 80  # of a part not understood: enough to recognise it, never a wall of text


def help_text(not_understood: str) -> str:
    shown = redact_text(not_understood) or "(an empty task)"
    if len(shown) > SHOWN_CHARS:
        shown = f"{shown[: SHOWN_CHARS - 1]}… ({len(shown)} characters)"
    return (
        f'I did not understand "{shown}". I understand: '
        + "; ".join(UNDERSTOOD)
        + ' (several joined by "and", e.g. "deploy payments 1.2.3 and status payments").'
    )


class OfflineOpsModel:
    """The ops agent's offline model (see the module notes)."""

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        since_task = _items_since_last_task(history)
        if since_task is None:
            return ModelResponse(text=help_text(""))
        task, later = since_task
        if any(item["type"] == "assistant" for item in later):
            return ModelResponse(text=_report(later))
        parsed = parse_task(task)
        if isinstance(parsed, str):
            return ModelResponse(text=help_text(parsed))
        offered = {spec.name for spec in tools}
        missing = sorted({command.tool_name for command in parsed} - offered)
        if missing:
            return ModelResponse(text=f"I cannot do that here: no tool {', '.join(missing)}.")
        turn = sum(1 for item in history if item["type"] == "assistant")
        return ModelResponse(
            tool_calls=[
                ToolCall(id=f"call_{turn}_{index}", name=c.tool_name, arguments=c.arguments)
                for index, c in enumerate(parsed)
            ]
        )

    async def aclose(self) -> None:
        """Nothing to release; present so every model can be closed the same way."""


def _items_since_last_task(history: Sequence[Item]) -> tuple[str, list[Item]] | None:
    for index in range(len(history) - 1, -1, -1):
        item = history[index]
        if item["type"] == "user":
            return item["content"], list(history[index + 1 :])
    return None


def _report(items: Sequence[Item]) -> str:
    results: dict[str, ToolResultItem] = {}
    for item in items:
        if item["type"] == "tool_result":
            results[item["tool_call_id"]] = item
    lines = []
    for item in items:
        if item["type"] != "assistant":
            continue
        for call in item["tool_calls"]:
            result = results.get(call["id"])
            if result is None:
                outcome = "no result"
            elif result["is_error"]:
                outcome = f"not done: {result['content']}"
            else:
                outcome = result["content"]
            lines.append(f"- {_describe(call['name'], call['arguments'])}: {outcome}")
    if not lines:
        return "Nothing to do."
    return "Here is what happened:\n" + "\n".join(lines)


def _describe(tool_name: str, arguments: dict[str, Any]) -> str:
    """A short label for a call; a set_config value is never repeated."""
    service = arguments.get("service", "?")
    if tool_name == "deploy_release":
        return f"deploy {service} {arguments.get('version', '?')}"
    if tool_name == "restart_service":
        return f"restart {service}"
    if tool_name == "set_config":
        return f"set {service} {arguments.get('key', '?')}"
    if tool_name == "get_status":
        return f"status {service}"
    return tool_name
