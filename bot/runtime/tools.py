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
from typing import Any, Literal, get_args, overload

from bot.errors import ConfigError, RunStateError
from bot.runtime.model import ToolSpec
from bot.runtime.tool_schema import Signature, signature_of, summary_of

logger = logging.getLogger(__name__)

ReplayPolicy = Literal["manual", "safe", "idempotent"]
REPLAY_POLICIES: frozenset[str] = frozenset(get_args(ReplayPolicy))
ApprovalRule = bool | Callable[[dict[str, Any]], bool]


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
    replay_policy: ReplayPolicy = "manual"
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
    replay_policy: str,
    review_fields: Sequence[str] | None,
) -> Tool:
    tool_name = name or function.__name__
    if not tool_name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"tool name {tool_name!r} must be letters, digits, '_' or '-'")
    if replay_policy not in REPLAY_POLICIES:
        raise ConfigError(
            f"tool {tool_name!r}: replay_policy {replay_policy!r} is not one of "
            f"{sorted(REPLAY_POLICIES)}"
        )
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
        replay_policy=replay_policy,  # type: ignore[arg-type]  # checked just above
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


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalRule = False,
    replay_policy: ReplayPolicy = "manual",
    review_fields: Sequence[str] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalRule = False,
    replay_policy: ReplayPolicy = "manual",
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
