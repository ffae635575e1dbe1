"""What every adapter checks when an agent of its framework is registered, and what
cards and the policy know of the agent's tools (`ToolFacts`).

A typo in `replay_policies` or `review_fields` would silently give a tool the `manual`
policy or show reviewers every argument; both are refused by name at registration.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.errors import ConfigError, InputError, StateUnreadableError
from bot.runtime import AgentRun, ExternalRunState, ReplayPolicy
from bot.runtime.tools import ReplayPolicyName, replay_policy_name

Validator = Callable[[Mapping[str, Any]], Any]
"""Checks a call's arguments the way the framework will (raises on bad ones)."""


@dataclass(frozen=True, kw_only=True)
class ToolFacts:
    """What cards and the policy know of a framework's tool: its name, the arguments
    its card shows (None: all), its replay policy, and, where the framework can run a
    call with other arguments, how it validates them (approve with changes)."""

    name: str
    review_fields: tuple[str, ...] | None = None
    replay_policy: ReplayPolicyName = "manual"
    validator: Validator | None = field(default=None, repr=False, compare=False)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`arguments` if the framework accepts them; InputError naming the problem."""
        if self.validator is None:
            raise InputError(f"tool {self.name!r} takes no changed arguments")
        try:
            self.validator(arguments)
        except Exception as error:
            raise InputError(_first_line(str(error))) from None
        return dict(arguments)


def tool_facts(
    agent: str,
    names: Sequence[str],
    *,
    replay_policies: Mapping[str, ReplayPolicy | str] | None,
    review_fields: Mapping[str, Sequence[str]] | None,
    validators: Mapping[str, Validator | None] | None = None,
) -> dict[str, ToolFacts]:
    """The facts of an agent's tools, by name, from what its registration gave
    (ConfigError naming an unknown tool or replay policy)."""
    shown = dict(review_fields or {})
    check_names(agent, "replay_policies", replay_policies or {}, names)
    check_names(agent, "review_fields", shown, names)
    policies = {
        tool_name: replay_policy_name(policy, f"agent {agent!r}: tool {tool_name!r}")
        for tool_name, policy in (replay_policies or {}).items()
    }
    return {
        name: ToolFacts(
            name=name,
            review_fields=tuple(shown[name]) if name in shown else None,
            replay_policy=policies.get(name, "manual"),
            validator=(validators or {}).get(name),
        )
        for name in names
    }


def check_names(agent: str, option: str, given: Collection[str], names: Sequence[str]) -> None:
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ConfigError(
            f"agent {agent!r}: {option} names {', '.join(unknown)}, not among its tools "
            f"({', '.join(sorted(names)) or 'none'})"
        )


def checked_state(
    state: AgentRun,
    *,
    engine: str,
    framework: str,
    reads: Collection[str],
    agent: str,
    version: str,
    tools: Collection[str],
) -> ExternalRunState:
    """`state`, when the adapter of `engine` can run it for this agent: written by that
    adapter, in a state schema it `reads`, waiting on tools the agent still has
    (StateUnreadableError naming why not: the service marks the run as needing
    migration)."""
    if not isinstance(state, ExternalRunState) or state.engine.name != engine:
        raise StateUnreadableError(
            f"run {state.run_id} was not written by the {framework} adapter; agent "
            f"{agent!r} version {version!r} runs on it"
        )
    schema = state.engine.schema_version
    if schema not in reads:
        raise StateUnreadableError(
            f"run {state.run_id} holds a {framework} state of schema {schema} (written by "
            f"{engine} {state.engine.version}); this build reads {', '.join(sorted(reads))}"
        )
    check_waiting_tools(state, agent=agent, version=version, tools=tools)
    return state


def check_waiting_tools(
    state: ExternalRunState, *, agent: str, version: str, tools: Collection[str]
) -> None:
    """StateUnreadableError when the run waits on a tool the agent no longer has."""
    missing = sorted({c.tool_name for c in state.pending_calls()} - set(tools))
    if missing:
        raise StateUnreadableError(
            f"run {state.run_id} waits on {', '.join(missing)}, which agent {agent!r} "
            f"version {version!r} no longer has (renamed or removed; it has "
            f"{', '.join(tools) or 'none'})"
        )


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[:4]) or "the arguments were refused"
