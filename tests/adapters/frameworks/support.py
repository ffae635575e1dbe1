"""What the LangGraph and Pydantic AI adapters' tests share: the frameworks, by their
built-in ops agents, and how a test says which framework it needs."""

from __future__ import annotations

import importlib.util
import os

import pytest

FRAMEWORKS = {"ops-langgraph": "langgraph", "ops-pydantic": "pydantic_ai"}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def needs(module: str) -> pytest.MarkDecorator:
    """Skip without the framework outside CI; under CI (every extra installed) run and
    fail instead."""
    return pytest.mark.skipif(
        not installed(module) and not os.environ.get("CI"),
        reason=f"{module} is not installed (its extra); CI installs it",
    )


AGENTS = [pytest.param(name, marks=needs(module), id=name) for name, module in FRAMEWORKS.items()]
