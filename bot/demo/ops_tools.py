"""The demo ops tools and the runtime dependencies they need.

| tool              | approval | replay policy | downstream                                 |
|-------------------|----------|---------------|--------------------------------------------|
| `deploy_release`  | yes      | idempotent    | dedupes on the execution key               |
| `restart_service` | yes      | manual        | restarts again if asked again              |
| `set_config`      | yes      | safe          | setting the same value twice is harmless   |
| `get_status`      | no       | manual        | a read: no effect line                     |

The API token and the effects file are runtime dependencies (`ops_dependencies()`),
injected by the Runner and never serialized. Each tool that changes something appends
one line to the effects file (the simulated downstream, see `bot.demo.effects`), then
waits `OPS_DEMO_LATENCY` seconds before answering: the window in which a crash leaves
the effect applied but its result unrecorded. `get_status` only reads that file (it
also waits the latency), so "one approved call, one effect line" holds for any task.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.demo.effects import Effect, EffectsFile
from bot.errors import ConfigError, InputError
from bot.runtime import current_tool_call, tool

DEPENDENCY_KEY = "ops"
DEFAULT_EFFECTS_PATH = "demo-effects.jsonl"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}\Z")


@dataclass(frozen=True, kw_only=True)
class OpsDependencies:
    """What the ops tools need at run time; the token never appears in a repr."""

    api_token: str = field(repr=False)
    effects: EffectsFile
    latency_seconds: float = 0.0

    async def answer_after_latency(self) -> None:
        """The simulated downstream's response time (none by default)."""
        if self.latency_seconds:
            await asyncio.sleep(self.latency_seconds)


def ops_dependencies(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Runtime dependencies for `Runner.arun(..., dependencies=...)`, from the environment.

    OPS_API_TOKEN (unset: a random token for this process, enough for the simulated
    downstream), APPROVALS_DEMO_EFFECTS (default ./demo-effects.jsonl), OPS_DEMO_LATENCY
    (seconds, default 0).
    """
    env = os.environ if environ is None else environ
    token = env.get("OPS_API_TOKEN") or f"ops-demo-{secrets.token_hex(16)}"
    path = Path(env.get("APPROVALS_DEMO_EFFECTS") or DEFAULT_EFFECTS_PATH)
    latency = _latency(env.get("OPS_DEMO_LATENCY"))
    return {
        DEPENDENCY_KEY: OpsDependencies(
            api_token=token, effects=EffectsFile(path), latency_seconds=latency
        )
    }


def _latency(text: str | None) -> float:
    if text is None or not text.strip():
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"OPS_DEMO_LATENCY must be a number of seconds >= 0, not {text!r}")
    return seconds


def _dependencies() -> OpsDependencies:
    found = current_tool_call().dependencies.get(DEPENDENCY_KEY)
    if not isinstance(found, OpsDependencies):
        raise ConfigError(
            "the ops tools need the runtime dependency 'ops': "
            "pass dependencies=ops_dependencies() to the Runner"
        )
    return found


def _check_name(kind: str, value: str) -> None:
    if not _NAME_RE.match(value):
        raise InputError(
            f"{kind} {value!r} must be 1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


async def _call_downstream(
    arguments: Mapping[str, Any], result: str, *, idempotent: bool = False
) -> str:
    call = current_tool_call()
    ops = _dependencies()
    applied = await ops.effects.apply(
        Effect(
            tool=call.tool_name,
            arguments=arguments,
            execution_key=call.execution_key,
            digest=call.digest,
            idempotent=idempotent,
            api_token=ops.api_token,
        ),
        result,
    )
    await ops.answer_after_latency()
    return applied.result


@tool(needs_approval=True, replay_policy="idempotent")
async def deploy_release(service: str, version: str) -> str:
    """Deploy a release of a service (idempotent: the execution key is the idempotency key)."""
    _check_name("service", service)
    _check_name("version", version)
    arguments = {"service": service, "version": version}
    return await _call_downstream(arguments, f"deployed {service} {version}", idempotent=True)


@tool(needs_approval=True, replay_policy="manual")
async def restart_service(service: str) -> str:
    """Restart a service (not idempotent: an interrupted restart needs a human to check)."""
    _check_name("service", service)
    return await _call_downstream({"service": service}, f"restarted {service}")


@tool(needs_approval=True, replay_policy="safe")
async def set_config(service: str, key: str, value: str) -> str:
    """Set one configuration value of a service (the value may be a secret)."""
    _check_name("service", service)
    _check_name("key", key)
    arguments = {"service": service, "key": key, "value": value}
    return await _call_downstream(arguments, f"set {key} on {service}")


@tool
async def get_status(service: str) -> str:
    """Report a service's deployed version and the configuration keys set on it."""
    _check_name("service", service)
    ops = _dependencies()
    history = [
        line
        for line in await ops.effects.lines()
        if line.get("arguments", {}).get("service") == service and not line.get("duplicate")
    ]
    versions = [
        line["arguments"]["version"] for line in history if line["tool"] == "deploy_release"
    ]
    keys = sorted({line["arguments"]["key"] for line in history if line["tool"] == "set_config"})
    status = f"{service}: running {versions[-1]}" if versions else f"{service}: running"
    if not versions:
        status += " (no deploys recorded)"
    if keys:
        status += f"; config keys set: {', '.join(keys)}"
    await ops.answer_after_latency()
    return status


OPS_TOOLS = (deploy_release, restart_service, set_config, get_status)
