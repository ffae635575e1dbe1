"""`review_fields`: a tool narrows what its review card shows, checked at decoration."""

from __future__ import annotations

from typing import Any

import pytest

from bot.errors import ConfigError
from bot.review.snapshot import review_snapshot
from bot.runtime import Agent, ScriptedModel, Tool, tool


@tool(needs_approval=True, review_fields=["service", "query"])
def run_sql(service: str, query: str, options: dict[str, str] | None = None) -> str:
    """Run a query against a service's database."""
    return "ok"


def test_the_fields_are_kept_in_order_as_a_tuple() -> None:
    assert run_sql.review_fields == ("service", "query")


def test_a_tool_without_review_fields_shows_everything() -> None:
    @tool
    def get_status(service: str) -> str:
        """Report health."""
        return "healthy"

    assert get_status.review_fields is None


def test_the_agent_hands_the_service_the_tool_and_the_card_shows_only_those_fields() -> None:
    agent = Agent(name="db", instructions="careful", tools=[run_sql], model=ScriptedModel(["done"]))
    found = agent.tool_named("run_sql")
    assert isinstance(found, Tool)
    arguments = {"service": "billing", "query": "DELETE FROM t", "options": {"timeout": "5"}}

    snapshot = review_snapshot(
        "run_sql", arguments, digest="0" * 64, shown_fields=found.review_fields
    )

    assert snapshot.arguments == {"service": "billing", "query": "DELETE FROM t"}
    assert snapshot.omitted_fields == ["options"]
    assert snapshot.digest == "0" * 64  # the call's digest, which covers every field
    assert agent.tool_named("no_such_tool") is None


@pytest.mark.parametrize(
    ("review_fields", "problem"),
    [
        (
            ["service", "qurey"],
            r"'qurey' not among its parameters \(service, query\)",
        ),
        (["service", "service"], "review_fields repeats service"),
        ("service", "must be a list of parameter names, not str"),
        ({"service": True}, "must be a list of parameter names, not dict"),
    ],
)
def test_bad_review_fields_are_refused_at_decoration(review_fields: Any, problem: str) -> None:
    def run_query(service: str, query: str) -> str:
        """Run a query."""
        return "ok"

    with pytest.raises(ConfigError, match=problem):
        tool(needs_approval=True, review_fields=review_fields)(run_query)


def test_an_empty_list_shows_no_argument_but_names_them_all() -> None:
    @tool(needs_approval=True, review_fields=[])
    def rotate_secret(name: str, value: str) -> str:
        """Rotate a secret."""
        return "rotated"

    snapshot = review_snapshot(
        "rotate_secret",
        {"name": "db", "value": "x"},
        digest="0" * 64,
        shown_fields=rotate_secret.review_fields,
    )
    assert snapshot.arguments == {}
    assert snapshot.omitted_fields == ["name", "value"]
