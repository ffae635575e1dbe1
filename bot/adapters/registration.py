"""What every adapter checks when an agent of its framework is registered, what cards
and the policy know of the agent's tools (`ToolFacts`), and approve with changes for the
adapters whose framework can run a call with other arguments (`EditsByToolFacts`).

A typo in `replay_policies` or `review_fields` would silently give a tool the `manual`
policy or show reviewers every argument; both are refused by name at registration.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.errors import ConfigError, InputError, RunStateError, StateUnreadableError
from bot.runtime import AgentRun, ExternalRunState, PendingCall, ReplayPolicy
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


class EditsByToolFacts:
    """Approve with changes (bot.runtime.ArgumentEditor) for an adapter whose tools'
    facts hold the framework's own validators: a call may be changed when its tool has
    one, the changed arguments are checked by it, and the state's copy keeps the
    arguments the framework asked with (the restored-call re-check compares those).
    The engine provides `tool_named`."""

    def tool_named(self, name: str) -> ToolFacts | None:
        raise NotImplementedError

    def can_amend(self, state: AgentRun, call: PendingCall) -> bool:
        facts = self.tool_named(call.tool_name)
        return facts is not None and facts.validator is not None

    def check_arguments(
        self, state: AgentRun, call: PendingCall, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        facts = self.tool_named(call.tool_name)
        if facts is None:
            raise InputError(f"the agent has no tool {call.tool_name!r}")
        return facts.validate(arguments)

    def amended(self, state: AgentRun, tool_call_id: str, arguments: Mapping[str, Any]) -> AgentRun:
        if not isinstance(state, ExternalRunState):
            raise RunStateError(f"run {state.run_id} was not written by an adapter")
        return state.with_arguments(tool_call_id, arguments)


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
