"""`approvals-bot doctor`: is this deployment ready to serve? One line a check.

    ok    environment: ...
    FAIL  slack auth.test: SLACK_BOT_TOKEN rejected by Slack: invalid_auth
    skip  token scopes: ...

The checks, in order: the environment (every variable `serve` reads, and the `.env` it
came from), the database and its migrations (read without migrating or creating
anything: store.inspection), the keys against what the database holds sealed, the
agents and the policy against their tools, Slack's `auth.test` with the bot token, and
the scopes: manifest.yml's and the token's against what the code calls
(bot.slack.scopes). A check another one's failure leaves without input is skipped,
saying why. Exit code 1 when any check fails, else 0. Nothing is written anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.agents import (
    AGENTS_ENV,
    builtin_registry,
    close_model,
    load_agent_registry,
    model_from_env,
    tool_names,
)
from bot.cli import clipped
from bot.commands.manifest import MANIFEST, manifest_scopes
from bot.env_file import DEFAULT_ENV_FILE, ENV_FILE_ENV
from bot.errors import ApprovalsError
from bot.logs import log_settings_from_env
from bot.mcp.config_file import gateway_tools_named
from bot.policy.loading import POLICY_ENV, policy_from_env
from bot.service import (
    approval_ttl_from_env,
    installation_worker_id,
    lease_seconds_from_env,
    sweep_seconds_from_env,
)
from bot.slack.config import Mode, SlackSettings, load_settings
from bot.slack.scopes import required_bot_scopes
from store.config import (
    PostgresLocation,
    database_url_from_env,
    parse_database_url,
    synchronous_from_env,
)
from store.crypto import KeyRing
from store.inspection import DatabaseState, inspect_database
from store.keys import (
    KEYS_ENV,
    key_file_for,
    load_key_file,
    missing_key_file,
    missing_keys_variable,
    parse_keyring,
)
from store.sql.keys import uncovered

Status = Literal["ok", "FAIL", "skip"]


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str
    status: Status
    detail: str

    def line(self) -> str:
        return f"{self.status:<5} {self.name}: {clipped(self.detail, width=300)}"


@dataclass(kw_only=True)
class Findings:
    """What earlier checks learned that later ones need."""

    settings: SlackSettings | None = None
    database: DatabaseState | None = None
    granted: frozenset[str] | None = None  # the token's scopes, as auth.test's header says
    checks: list[Check] = field(default_factory=list)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the environment, database, keys, policy and Slack app; one line each",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
    )
    parser.add_argument(
        "--mode",
        choices=("http", "socket"),
        default=None,
        help="what is checked for: serve (http) or socket (default: socket when "
        "SLACK_APP_TOKEN is set)",
    )
    parser.set_defaults(func=doctor)


def doctor(args: argparse.Namespace) -> int:
    env = os.environ
    mode: Mode = args.mode or ("socket" if env.get("SLACK_APP_TOKEN", "").strip() else "http")
    findings = asyncio.run(examine(env, mode))
    for check in findings.checks:
        print(check.line(), flush=True)
    return 1 if any(check.status == "FAIL" for check in findings.checks) else 0


async def examine(env: Mapping[str, str], mode: Mode) -> Findings:
    findings = Findings()
    steps: list[tuple[str, Callable[[], Check | Awaitable[Check]]]] = [
        ("environment", lambda: _environment(env, mode, findings)),
        ("database", lambda: _database(env, findings)),
        ("keys", lambda: _keys(env, findings)),
        ("agents and policy", lambda: _policy(env)),
        ("slack auth.test", lambda: _auth_test(findings)),
        ("manifest scopes", _manifest_scopes),
        ("token scopes", lambda: _token_scopes(findings)),
    ]
    for name, step in steps:
        try:
            outcome = step()
            check = await outcome if inspect.isawaitable(outcome) else outcome
        except ApprovalsError as error:
            check = Check(name=name, status="FAIL", detail=str(error))
        findings.checks.append(check)
    return findings


def _environment(env: Mapping[str, str], mode: Mode, findings: Findings) -> Check:
    logs = log_settings_from_env(env)
    findings.settings = settings = load_settings(env, mode=mode)
    synchronous_from_env(env)
    approval_ttl_from_env(env)
    lease_seconds_from_env(env)
    sweep_seconds_from_env(env)
    installation_worker_id(database_url_from_env(env), env)
    named = env.get(ENV_FILE_ENV, "").strip()
    dotenv = named or (DEFAULT_ENV_FILE if os.path.exists(DEFAULT_ENV_FILE) else None)
    where = f"settings from the environment and {dotenv}" if dotenv else "no .env file"
    listen = "probes" if mode == "socket" else "Slack and the probes"
    return Check(
        name="environment",
        status="ok",
        detail=f"{where}; {mode} mode, {listen} on {settings.host}:{settings.port}, "
        f"Web API {settings.api_url}; LOG_FORMAT {logs.format}, LOG_LEVEL {logs.level}",
    )


async def _database(env: Mapping[str, str], findings: Findings) -> Check:
    findings.database = state = await inspect_database(database_url_from_env(env))
    if not state.exists:
        return Check(
            name="database",
            status="ok",
            detail=f"{state.location} does not exist yet: serve creates it (mode 0600)",
        )
    if state.newer:
        return Check(
            name="database",
            status="FAIL",
            detail=f"{state.location} is at schema version {state.version}, newer than this "
            f"build's {state.latest}: run the build that migrated it",
        )
    pending = (
        f"{len(state.pending)} migration(s) to apply at the next start "
        f"({', '.join(state.pending)}; or now: approvals-bot db migrate)"
        if state.pending
        else "no migration pending"
    )
    return Check(
        name="database",
        status="ok",
        detail=f"{state.location} at schema version {state.version}; {pending}",
    )


def _keys(env: Mapping[str, str], findings: Findings) -> Check:
    state = findings.database
    if state is None:
        return Check(name="keys", status="skip", detail="the database could not be read")
    sealed = state.sealed or frozenset()
    location = parse_database_url(database_url_from_env(env))
    configured = env.get(KEYS_ENV, "").strip()
    ring: KeyRing
    if configured:
        ring, source = parse_keyring(configured, source=KEYS_ENV), KEYS_ENV
    elif isinstance(location, PostgresLocation):
        return Check(
            name="keys", status="FAIL", detail=missing_keys_variable(location.display, sealed)
        )
    elif (key_file := key_file_for(location.path)).exists():
        ring, source = load_key_file(key_file), f"key file {key_file}"
    elif sealed:
        return Check(
            name="keys", status="FAIL", detail=missing_key_file(location.path, key_file, sealed)
        )
    else:
        return Check(
            name="keys",
            status="ok",
            detail=f"no key file yet: serve makes {key_file} (mode 0600) when it first starts",
        )
    problem = uncovered(set(state.needed or ()), ring, state.location)
    if problem is not None:
        return Check(name="keys", status="FAIL", detail=problem)
    stray = sorted(set(sealed) - set(ring.key_ids))
    if stray:
        return Check(name="keys", status="FAIL", detail=tampered_key_ids(stray, ring))
    opens = (
        "they open everything sealed (key ids " + ", ".join(sorted(sealed)) + ")"
        if sealed
        else "nothing is sealed yet"
        if state.sealed is not None
        else "the sealed data is checked once the database is migrated"
    )
    return Check(
        name="keys",
        status="ok",
        detail=f"{len(ring.key_ids)} key(s) from {source}, newest {ring.newest.key_id}; {opens}",
    )


def tampered_key_ids(stray: list[str], ring: KeyRing) -> str:
    return (
        f"tampering: rows no open run needs name key id(s) {', '.join(stray)}, which the key "
        f"ring lacks (it has {', '.join(ring.key_ids)}): planted, or a key dropped before "
        "rotation reached them; the bot still starts; `approvals-bot audit verify` names "
        "the rows"
    )


async def _policy(env: Mapping[str, str]) -> Check:
    model = model_from_env(env)
    try:
        spec = env.get(AGENTS_ENV, "").strip() or None
        registry = load_agent_registry(spec, default=builtin_registry(model))
        tools = tool_names(registry)
        if policy_file := env.get(POLICY_ENV, "").strip():  # and the MCP gateway's
            tools += gateway_tools_named(policy_file, env)
        policy = policy_from_env(env, known_tools=tools)  # PolicyError: every problem
    finally:
        await close_model(model)
    agents = ", ".join(sorted({agent.name for agent in registry}))
    if policy is None:
        rules = f"{POLICY_ENV} unset: the built-in defaults for every tool"
    else:
        rules = f"policy {policy.source}: rules for {len(policy.tools)} of {len(tools)} tool(s)"
    return Check(name="agents and policy", status="ok", detail=f"agents {agents}; {rules}")


async def _auth_test(findings: Findings) -> Check:
    settings = findings.settings
    if settings is None:
        return Check(
            name="slack auth.test", status="skip", detail="the Slack settings are not valid"
        )
    import aiohttp
    from slack_sdk.errors import SlackApiError

    from bot.slack.gateway import build_web_client

    async with aiohttp.ClientSession() as session:
        client = build_web_client(
            token=settings.bot_token, api_url=settings.api_url, session=session
        )
        try:
            answer = await client.auth_test()
        except SlackApiError as error:
            code = error.response.get("error") if error.response is not None else error
            return Check(
                name="slack auth.test",
                status="FAIL",
                detail=f"SLACK_BOT_TOKEN rejected by Slack: {code}",
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            return Check(
                name="slack auth.test",
                status="FAIL",
                detail=f"Slack unreachable at {settings.api_url}: {error or type(error).__name__}",
            )
    header = answer.headers.get("x-oauth-scopes") or answer.headers.get("X-OAuth-Scopes")
    if isinstance(header, str):
        findings.granted = frozenset(s.strip() for s in header.split(",") if s.strip())
    return Check(
        name="slack auth.test",
        status="ok",
        detail=f"bot {answer.get('user_id')} of team {answer.get('team_id')} "
        f"({answer.get('team') or 'unnamed'}), app {answer.get('app_id') or 'not named'}",
    )


def _manifest_scopes() -> Check:
    needed = required_bot_scopes()
    if not MANIFEST.exists():
        return Check(name="manifest scopes", status="skip", detail=f"no {MANIFEST} here")
    asked = set(manifest_scopes(MANIFEST.read_text(encoding="utf-8")))
    missing, unused = sorted(needed - asked), sorted(asked - needed)
    if missing or unused:
        return Check(
            name="manifest scopes",
            status="FAIL",
            detail=f"{MANIFEST.name} "
            + "; ".join(
                part
                for part in (
                    f"lacks {', '.join(missing)}" if missing else "",
                    f"asks for {', '.join(unused)}, which the code does not use" if unused else "",
                )
                if part
            ),
        )
    return Check(
        name="manifest scopes",
        status="ok",
        detail=f"{MANIFEST.name} asks for the {len(needed)} the code calls for",
    )


def _token_scopes(findings: Findings) -> Check:
    granted = findings.granted
    if granted is None:
        return Check(
            name="token scopes",
            status="skip",
            detail="auth.test did not say which scopes the token has",
        )
    missing = sorted(required_bot_scopes() - granted)
    if missing:
        return Check(
            name="token scopes",
            status="FAIL",
            detail=f"the token lacks {', '.join(missing)}: add them to the app (manifest.yml) "
            "and reinstall it to the workspace",
        )
    return Check(
        name="token scopes",
        status="ok",
        detail=f"the token has all {len(required_bot_scopes())} scopes the code calls for",
    )
