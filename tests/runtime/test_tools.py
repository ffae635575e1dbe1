"""The tool decorator: schemas from type hints, validation, approval and replay rules."""

from __future__ import annotations

import enum
import re
import threading
from typing import Annotated, Any, Literal, Optional

import pytest

from bot.errors import ConfigError, InputError, RunStateError
from bot.runtime import Tool, current_tool_call, tool


class Region(enum.Enum):
    EU = "eu-west-1"
    US = "us-east-1"


@tool
def every_type(
    name: str,
    count: int,
    ratio: float,
    enabled: bool,
    tags: list[str],
    limits: dict[str, int],
    note: Optional[str],  # noqa: UP045 - the Optional spelling is part of what we test
    owner: str | None,
    mode: Literal["fast", "safe"],
    region: Region,
    anything: Any,
    retries: int = 3,
) -> str:
    """Exercise every supported type.

    Args:
        name: The service name.
        count: How many
            replicas to run.
    """
    return "ok"


def test_schema_of_every_supported_type() -> None:
    props = every_type.parameters["properties"]
    assert props["name"] == {"type": "string", "description": "The service name."}
    assert props["count"] == {"type": "integer", "description": "How many replicas to run."}
    assert props["ratio"] == {"type": "number"}
    assert props["enabled"] == {"type": "boolean"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["limits"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["owner"] == props["note"]
    assert props["mode"] == {"enum": ["fast", "safe"]}
    assert props["region"] == {"enum": ["eu-west-1", "us-east-1"]}
    assert props["anything"] == {}
    assert props["retries"] == {"type": "integer", "default": 3}
    assert every_type.parameters["required"] == [
        "name",
        "count",
        "ratio",
        "enabled",
        "tags",
        "limits",
        "note",
        "owner",
        "mode",
        "region",
        "anything",
    ]
    assert every_type.parameters["additionalProperties"] is False


def test_description_is_the_docstring_summary_and_spec_carries_it() -> None:
    assert every_type.description == "Exercise every supported type."
    spec = every_type.spec()
    assert (spec.name, spec.description) == ("every_type", "Exercise every supported type.")
    assert spec.parameters == every_type.parameters


def test_bare_and_configured_decorator() -> None:
    @tool
    async def plain(service: str) -> str:
        return service

    @tool(name="renamed", description="Custom.", needs_approval=True, replay_policy="safe")
    def configured(service: str) -> str:
        return service

    assert isinstance(plain, Tool)
    assert plain.needs_approval is False
    assert plain.replay_policy == "manual"
    assert (configured.name, configured.description) == ("renamed", "Custom.")
    assert configured.needs_approval is True
    assert configured.replay_policy == "safe"


def test_annotated_description_and_nested_containers() -> None:
    @tool
    def nested(matrix: list[list[int]], env: Annotated[dict[str, str], "Environment"]) -> str:
        return "ok"

    props = nested.parameters["properties"]
    assert props["matrix"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}},
    }
    assert props["env"]["description"] == "Environment"


VALID = {
    "name": "api",
    "count": 2,
    "ratio": 1,
    "enabled": True,
    "tags": ["a"],
    "limits": {"cpu": 2},
    "note": None,
    "owner": "sre",
    "mode": "fast",
    "region": "eu-west-1",
    "anything": {"x": [1]},
}


def test_validation_converts_numbers_and_enums() -> None:
    converted = every_type.validate({**VALID, "count": 2.0})
    assert converted["count"] == 2
    assert type(converted["count"]) is int
    assert converted["ratio"] == 1.0
    assert type(converted["ratio"]) is float
    assert converted["region"] is Region.EU
    assert "retries" not in converted  # the function's own default applies


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"name": 5}, "'name' must be a string, got int 5"),
        ({"count": True}, "'count' must be an integer, got bool True"),
        ({"count": 2.5}, "'count' must be an integer"),
        ({"ratio": "1"}, "'ratio' must be a number"),
        ({"enabled": "yes"}, "'enabled' must be a boolean"),
        ({"tags": ["a", 3]}, "'tags[1]' must be a string"),
        ({"tags": "a"}, "'tags' must be an array"),
        ({"limits": {"cpu": "2"}}, "'limits.cpu' must be an integer"),
        ({"note": 3}, "'note' must be a string, got int 3"),
        ({"mode": "slow"}, "'mode' must be one of 'fast', 'safe'"),
        ({"region": "mars"}, "'region' must be one of 'eu-west-1', 'us-east-1'"),
        ({"extra": 1}, "unexpected argument 'extra'"),
    ],
)
def test_bad_arguments_name_the_problem(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError, match=re.escape(problem)):
        every_type.validate({**VALID, **change})


def test_missing_arguments_are_all_listed() -> None:
    with pytest.raises(InputError) as caught:
        every_type.validate({"name": "api"})
    assert "missing required argument 'count'" in str(caught.value)
    assert "missing required argument 'region'" in str(caught.value)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(InputError, match="must be a JSON object"):
        every_type.validate(["api"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("define", "problem"),
    [
        (lambda: tool(replay_policy="sometimes")(_typed), "replay_policy"),
        (lambda: tool(needs_approval="yes")(_typed), "needs_approval must be a bool"),  # type: ignore[call-overload]
        (lambda: tool(_untyped), "add a type hint"),
        (lambda: tool(_star_args), "only named parameters"),
        (lambda: tool(_set_param), "unsupported type hint"),
        (lambda: tool(_int_keys), "dict keys must be str"),
        (lambda: tool(name="bad name!")(_typed), "must be letters"),
    ],
)
def test_bad_tool_definitions_fail_at_decoration(define: Any, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        define()


def _typed(service: str) -> str:
    return service


def _untyped(service):
    return service


def _star_args(*services: str) -> str:
    return ""


def _set_param(services: set[str]) -> str:
    return ""


def _int_keys(counts: dict[int, str]) -> str:
    return ""


def test_needs_approval_callable_decides_per_call_and_fails_closed() -> None:
    def prod_only(arguments: dict[str, Any]) -> bool:
        return bool(arguments["env"] == "prod")

    @tool(needs_approval=prod_only)
    def scale(env: str) -> str:
        return env

    assert scale.requires_approval({"env": "prod"}) is True
    assert scale.requires_approval({"env": "dev"}) is False
    assert scale.requires_approval({}) is True  # the rule raised KeyError: ask a human


async def test_sync_tools_run_in_a_worker_thread_async_in_the_loop() -> None:
    seen: dict[str, bool] = {}
    loop_thread = threading.get_ident()

    @tool
    def sync_tool(n: int) -> list[int]:
        seen["sync_in_loop_thread"] = threading.get_ident() == loop_thread
        return [n, n]

    @tool
    async def async_tool(n: int) -> str:
        seen["async_in_loop_thread"] = threading.get_ident() == loop_thread
        return "ünïcode"

    assert await sync_tool.invoke({"n": 2}) == "[2, 2]"  # non-str results are JSON
    assert await async_tool.invoke({"n": 2}) == "ünïcode"
    assert seen == {"sync_in_loop_thread": False, "async_in_loop_thread": True}


async def test_invoke_validates_before_calling() -> None:
    calls: list[str] = []

    @tool
    def touch(service: str) -> str:
        calls.append(service)
        return service

    with pytest.raises(InputError):
        await touch.invoke({"service": 1})
    assert calls == []


def test_current_tool_call_outside_a_tool_is_a_clear_error() -> None:
    with pytest.raises(RunStateError, match="only available inside a tool"):
        current_tool_call()


async def test_a_tool_cannot_change_the_arguments_it_was_given() -> None:
    @tool
    def greedy(options: dict[str, Any]) -> str:
        options["extra"] = True
        options["nested"].append(2)
        return "ok"

    arguments: dict[str, Any] = {"options": {"nested": [1]}}
    await greedy.invoke(arguments)
    assert arguments == {"options": {"nested": [1]}}


def test_union_types_try_each_member_and_optional_keeps_the_inner_message() -> None:
    @tool
    def flexible(size: int | str, tags: list[str] | None = None) -> str:
        return "ok"

    assert flexible.parameters["properties"]["size"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    }
    assert flexible.validate({"size": "large", "tags": None}) == {"size": "large", "tags": None}
    with pytest.raises(InputError, match=re.escape("'size' must be an integer or a string")):
        flexible.validate({"size": [1]})
    with pytest.raises(InputError, match=re.escape("'tags[1]' must be a string")):
        flexible.validate({"size": 1, "tags": ["a", 2]})
