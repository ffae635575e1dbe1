"""Tools: plain sync or async functions made callable by a model.

    @tool
    async def get_status(service: str) -> str:
        '''Report a service's health.'''

    @tool(needs_approval=True, replay_policy="idempotent")
    def deploy_release(service: str, version: str) -> str:
        key = current_tool_call().execution_key  # pass downstream for idempotency
        ...

    @tool(needs_approval=True, review_fields=["service", "query"])
    def run_sql(service: str, query: str, connection_options: dict[str, str]) -> str: ...

    @agent.tools.register(permission=PermissionLevel.ASK, replay_policy=ReplayPolicy.SAFE)
    async def restart(service: str) -> str: ...   # added to an agent being built

`replay_policy` takes the `ReplayPolicy` enum or its plain string; the tool keeps the
string. `current_tool_context()` is `current_tool_call()`.

The JSON schema comes from the type hints (see `bot.runtime.tool_schema`), the description
from the docstring. Arguments from the model are validated before anything runs.
Sync functions run in a worker thread so they never block the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Literal, get_args, overload

from bot.errors import ConfigError, RunStateError
from bot.runtime.model import ToolSpec
from bot.runtime.tool_schema import Signature, signature_of, summary_of

logger = logging.getLogger(__name__)

ReplayPolicyName = Literal["manual", "safe", "idempotent"]
REPLAY_POLICIES: frozenset[str] = frozenset(get_args(ReplayPolicyName))
ApprovalRule = bool | Callable[[dict[str, Any]], bool]


class ReplayPolicy(StrEnum):
    """What may happen to a call interrupted before its result was recorded: `MANUAL`
    (the default: a person reconciles it), `SAFE` (may run again), `IDEMPOTENT` (may run
    again with the same execution key, which the tool passes downstream). Each member is
    its plain string, which is what a tool keeps."""

    MANUAL = "manual"
    SAFE = "safe"
    IDEMPOTENT = "idempotent"


ReplayPolicyLike = ReplayPolicy | ReplayPolicyName | str


class PermissionLevel(Enum):
    """Whether a tool registered with `agent.tools.register` asks a human: `ASK` (every
    call waits for a decision) or `ALLOW` (runs without one)."""

    ALLOW = "allow"
    ASK = "ask"


def invalid_arguments(tool_name: str, problem: object) -> str:
    """What the model is told when it called a tool with arguments the tool refuses."""
    return f"Invalid arguments for tool {tool_name!r}: {problem}"


@dataclass(frozen=True, kw_only=True)
class ToolCallContext:
    """What a running tool may know about its call. `digest` is the call's keyed digest,
    the one its review card showed (record it downstream, never a hash of the arguments).
    `dependencies` are the runtime dependencies given to `Runner.arun` (clients, tokens):
    never serialized. `context` is the run's live context object."""

    run_id: str
    tool_call_id: str
    execution_key: str
    digest: str
    tool_name: str
    attempt: int
    dependencies: Mapping[str, Any]
    context: Any


_current_call: contextvars.ContextVar[ToolCallContext] = contextvars.ContextVar(
    "approvals_bot_current_tool_call"
)


def current_tool_call() -> ToolCallContext:
    """The call being executed; RunStateError when called outside a tool invocation."""
    try:
        return _current_call.get()
    except LookupError:
        raise RunStateError(
            "current_tool_call() is only available inside a tool invoked by the Runner"
        ) from None


current_tool_context = current_tool_call


@contextmanager
def tool_call_scope(call: ToolCallContext) -> Iterator[None]:
    """Make `call` the current tool call for the code inside (used by the Runner)."""
    token = _current_call.set(call)
    try:
        yield
    finally:
        _current_call.reset(token)


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A function the model may call, with its schema and its approval/replay rules."""

    name: str
    description: str
    function: Callable[..., Any]
    needs_approval: ApprovalRule = False
    replay_policy: ReplayPolicyName = "manual"
    review_fields: tuple[str, ...] | None = None
    """The top-level arguments a review card shows (None: all). The digest still covers
    every argument; the card names the fields it leaves out. The service passes this as
    `review_snapshot(name, arguments, shown_fields=tool.review_fields)`."""
    signature: Signature = field(repr=False, compare=False)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.signature.schema

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated (converted) keyword arguments; InputError names every problem."""
        return self.signature.validate(arguments)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        """Whether this call needs a human decision. A failing rule fails closed."""
        if isinstance(self.needs_approval, bool):
            return self.needs_approval
        try:
            return bool(self.needs_approval(arguments))
        except Exception:
            logger.exception("needs_approval rule of tool %r failed; asking a human", self.name)
            return True

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """Validate, call the function and return its result as text (JSON unless str).

        InputError for bad arguments; whatever the function raises propagates. The
        function gets its own copy, so it cannot change the arguments stored in the run."""
        kwargs = self.validate(copy.deepcopy(dict(arguments)))
        if inspect.iscoroutinefunction(self.function):
            value = await self.function(**kwargs)
        else:
            value = await asyncio.to_thread(self.function, **kwargs)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _make_tool(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    needs_approval: ApprovalRule,
    replay_policy: ReplayPolicyLike,
    review_fields: Sequence[str] | None,
) -> Tool:
    tool_name = name or function.__name__
    if not tool_name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"tool name {tool_name!r} must be letters, digits, '_' or '-'")
    policy = replay_policy_name(replay_policy, f"tool {tool_name!r}")
    if not isinstance(needs_approval, bool) and not callable(needs_approval):
        raise ConfigError(f"tool {tool_name!r}: needs_approval must be a bool or a callable")
    signature = signature_of(function, tool_name=tool_name)
    shown = _checked_review_fields(tool_name, review_fields, signature)
    text = description if description is not None else summary_of(inspect.getdoc(function) or "")
    return Tool(
        name=tool_name,
        description=text,
        function=function,
        needs_approval=needs_approval,
        replay_policy=policy,
        review_fields=shown,
        signature=signature,
    )


def _checked_review_fields(
    tool_name: str, review_fields: Sequence[str] | None, signature: Signature
) -> tuple[str, ...] | None:
    """The fields as a tuple, each a parameter of the tool, once: a typo would otherwise
    hide an argument from every reviewer without anyone noticing."""
    if review_fields is None:
        return None
    if isinstance(review_fields, str | bytes) or not isinstance(review_fields, Sequence):
        raise ConfigError(
            f"tool {tool_name!r}: review_fields must be a list of parameter names, "
            f"not {type(review_fields).__name__}"
        )
    fields = tuple(review_fields)
    names = [parameter.name for parameter in signature.parameters]
    unknown = [repr(item) for item in fields if item not in names]
    if unknown:
        raise ConfigError(
            f"tool {tool_name!r}: review_fields {', '.join(unknown)} not among its "
            f"parameters ({', '.join(names) or 'none'})"
        )
    repeated = sorted({item for item in fields if fields.count(item) > 1})
    if repeated:
        raise ConfigError(f"tool {tool_name!r}: review_fields repeats {', '.join(repeated)}")
    return fields


def replay_policy_name(policy: ReplayPolicyLike, owner: str) -> ReplayPolicyName:
    """The plain string of a replay policy given as the enum or its string; ConfigError
    naming `owner` for anything else."""
    value = policy.value if isinstance(policy, ReplayPolicy) else policy
    if value not in REPLAY_POLICIES:
        raise ConfigError(
            f"{owner}: replay_policy {policy!r} is not one of {sorted(REPLAY_POLICIES)}"
        )
    return value  # type: ignore[return-value]  # one of the names, checked just above


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalRule = False,
    replay_policy: ReplayPolicyLike = "manual",
    review_fields: Sequence[str] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalRule = False,
    replay_policy: ReplayPolicyLike = "manual",
    review_fields: Sequence[str] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a Tool; usable bare (`@tool`) or with options (`@tool(...)`).

    `review_fields` narrows what a review card shows to those parameters (ConfigError at
    decoration for a name that is not a parameter, or a repeated one)."""

    def decorate(target: Callable[..., Any]) -> Tool:
        return _make_tool(
            target,
            name=name,
            description=description,
            needs_approval=needs_approval,
            replay_policy=replay_policy,
            review_fields=review_fields,
        )

    if function is not None:
        return decorate(function)
    return decorate


class AgentTools(Sequence[Tool]):
    """An agent's tools, in order, by unique name (`agent.tools`). `register(...)` is a
    decorator that adds a tool while the agent is being built (before it runs or is
    registered: a paused run must find the tools its agent version had)."""

    __slots__ = ("_by_name", "_owner")

    def __init__(self, tools: Sequence[Tool], *, owner: str) -> None:
        self._owner = owner
        self._by_name: dict[str, Tool] = {}
        for item in tools:
            self._add(item)

    def _add(self, item: Tool) -> None:
        if not isinstance(item, Tool):
            raise ConfigError(
                f"agent {self._owner!r}: {item!r} is not a Tool (decorate it with @tool)"
            )
        if item.name in self._by_name:
            raise ConfigError(f"agent {self._owner!r}: two tools are named {item.name!r}")
        self._by_name[item.name] = item

    def register(
        self,
        *,
        permission: PermissionLevel | None = None,
        name: str | None = None,
        description: str | None = None,
        needs_approval: ApprovalRule | None = None,
        replay_policy: ReplayPolicyLike = "manual",
        review_fields: Sequence[str] | None = None,
    ) -> Callable[[Callable[..., Any]], Tool]:
        """Add the decorated function as a tool (`@tool`'s options; `permission` is
        another way to say `needs_approval`: ASK is True, ALLOW False)."""
        rule = _approval_rule(self._owner, permission, needs_approval)

        def decorate(function: Callable[..., Any]) -> Tool:
            made = tool(
                name=name,
                description=description,
                needs_approval=rule,
                replay_policy=replay_policy,
                review_fields=review_fields,
            )(function)
            self._add(made)
            return made

        return decorate

    def named(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return list(self._by_name)

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...

    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return tuple(self._by_name.values())[index]

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._by_name.values()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AgentTools):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"AgentTools({', '.join(self._by_name)})"


def _approval_rule(
    owner: str, permission: PermissionLevel | None, needs_approval: ApprovalRule | None
) -> ApprovalRule:
    if permission is None:
        return False if needs_approval is None else needs_approval
    if not isinstance(permission, PermissionLevel):
        raise ConfigError(
            f"agent {owner!r}: permission must be PermissionLevel.ASK or .ALLOW, got {permission!r}"
        )
    if needs_approval is not None:
        raise ConfigError(f"agent {owner!r}: give permission= or needs_approval=, not both")
    return permission is PermissionLevel.ASK
