"""Exposed names, which calls need approval (hints relax only what the file allows),
tool definitions and their digest, arguments against a schema, tokens and call keys."""

from __future__ import annotations

from typing import Any

import pytest

from bot.errors import InputError
from bot.mcp.catalog import (
    changed_fields,
    definition_digest,
    listed_tool,
    needs_approval,
    read_listing,
)
from bot.mcp.config import StdioTransport, UpstreamConfig
from bot.mcp.schemas import check, checkable
from bot.mcp.tokens import (
    bearer_token,
    call_key,
    call_key_secret,
    client_for,
    new_token,
    token_digest,
)

READ_ONLY = {"readOnlyHint": True}
LIAR = {"readOnlyHint": True, "destructiveHint": True}
DESTRUCTIVE = {"destructiveHint": True}


def upstream(**options: Any) -> UpstreamConfig:
    return UpstreamConfig(name="ops", transport=StdioTransport(command="x"), **options)


@pytest.mark.parametrize(
    ("rule", "tool", "hints", "gated"),
    [
        ("all", "status", READ_ONLY, True),  # "all": hints relax nothing
        ("unless_read_only", "status", READ_ONLY, False),
        ("unless_read_only", "status", {}, True),  # no hint: gated
        ("unless_read_only", "drop", LIAR, True),  # read-only and destructive: gated
        ("unless_read_only", "drop", {"readOnlyHint": "yes"}, True),  # only a real true
        (frozenset({"deploy"}), "deploy", READ_ONLY, True),  # listed: gated whatever it says
        (frozenset({"deploy"}), "status", {}, False),
        (frozenset({"deploy"}), "wipe", DESTRUCTIVE, True),  # a hint may always tighten
    ],
)
def test_which_calls_need_approval(
    rule: Any, tool: str, hints: dict[str, Any], gated: bool
) -> None:
    assert needs_approval(rule, tool, hints) is gated


def test_every_tool_is_exposed_under_its_upstream_and_odd_names_are_not() -> None:
    tools, problems = read_listing(
        upstream(),
        [
            {"name": "deploy", "description": "Deploy.", "inputSchema": {"type": "object"}},
            {"name": "has space"},
            {"name": "x" * 70},
            {"name": "twice"},
            {"name": "twice", "description": "another"},
            {"name": "huge", "description": "d" * 70_000},
            {"name": "nan", "inputSchema": {"type": "object", "default": float("nan")}},
        ],
    )
    assert {name: tool.exposed for name, tool in tools.items()} == {"deploy": "ops__deploy"}
    assert len(problems) == 5
    assert any("listed twice" in problem for problem in problems)
    assert any("over the gateway's limit" in problem for problem in problems)


def test_the_definition_digest_binds_every_part_of_the_definition() -> None:
    base = {"description": "Deploy.", "inputSchema": {"type": "object"}}
    digest = definition_digest("deploy", base)
    assert definition_digest("deploy", dict(reversed(list(base.items())))) == digest
    for changed in (
        {**base, "description": "Deploy, and drop the database."},
        {**base, "inputSchema": {"type": "object", "properties": {"x": {}}}},
        {**base, "annotations": READ_ONLY},
    ):
        assert definition_digest("deploy", changed) != digest
    assert definition_digest("deploy2", base) != digest
    assert changed_fields(base, {**base, "description": "x", "annotations": {}}) == [
        "description",
        "annotations",
    ]


def test_a_gated_tool_tells_the_client_it_may_wait() -> None:
    gated = listed_tool(upstream(), {"name": "deploy", "description": "Deploy."})
    listed = gated.as_exposed()
    assert listed["name"] == "ops__deploy"
    assert "a person approves each call in Slack" in listed["description"]
    assert listed["inputSchema"] == {"type": "object"}


def test_arguments_are_checked_only_against_a_schema_that_is_safe_to_check() -> None:
    schema = {
        "type": "object",
        "properties": {"version": {"type": "string"}},
        "required": ["version"],
        "additionalProperties": False,
    }
    assert checkable(schema)
    check(schema, {"version": "1.2.3"})
    with pytest.raises(InputError) as raised:
        check(schema, {"version": 7, "extra": "hunter2"})
    assert "$.version" in str(raised.value)
    assert "hunter2" not in str(raised.value)  # where and which rule, never the value
    assert not checkable({"type": "object", "properties": {"v": {"pattern": "(a+)+$"}}})
    assert not checkable({"type": "object", "$ref": "https://example.com/schema.json"})
    assert not checkable({"type": 12})  # not a valid schema


def test_tokens_name_one_client_and_call_keys_bind_client_tool_and_arguments() -> None:
    token, other = new_token(), new_token()
    assert token.startswith("abmcp_")
    assert token != other
    clients = [((token_digest(token),), "alice"), ((token_digest(other),), "bob")]
    assert client_for(token, clients) == "alice"
    assert client_for("abmcp_guess", clients) is None
    assert bearer_token(f"Bearer {token}") == token
    assert bearer_token(f"bearer  {token} ") == token
    for header in (None, "", "Basic abc", "Bearer", "Bearer " + "x" * 600):
        assert bearer_token(header) is None
    secret = call_key_secret(token)
    key = call_key(secret, "ops__deploy", {"version": "1", "service": "api"})
    assert key == call_key(secret, "ops__deploy", {"service": "api", "version": "1"})
    assert key != call_key(secret, "ops__deploy", {"service": "api", "version": "2"})
    assert key != call_key(secret, "ops__restart", {"service": "api", "version": "1"})
    assert key != call_key(
        call_key_secret(other), "ops__deploy", {"service": "api", "version": "1"}
    )
    assert secret != bytes.fromhex(token_digest(token).removeprefix("sha256:"))
