"""The terminal demo's service: the model, the agents, the policy and the task checked before
the database is opened, then the store and the ApprovalService over them, each part closed
by whoever opened it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from functools import partial

from bot.agents import (
    AGENTS_ENV,
    agent_to_run,
    builtin_registry,
    close_model,
    load_agent_registry,
    model_from_env,
    tool_names,
)
from bot.commands.groups import load_groups_file
from bot.commands.terminal import TerminalNotifier
from bot.demo import OfflineOpsModel, ops_dependencies, parse_task
from bot.demo.offline_model import help_text
from bot.errors import InputError
from bot.policy.eligibility import StaticGroups
from bot.policy.loading import policy_from_env
from bot.policy.rules import DEFAULT_POLICY
from bot.runtime import Agent, AgentEngine
from bot.service import ApprovalService, TaskOwner, approval_ttl_from_env, installation_worker_id
from bot.service.limits import checked_task
from store import open_store
from store.config import database_url_from_env


@contextlib.asynccontextmanager
async def open_service(
    args: argparse.Namespace,
) -> AsyncIterator[tuple[ApprovalService, str, StaticGroups]]:
    """The service for the demo, the agent to run and the user groups known here. Every
    configuration problem (the model, the agents module, the policy, an agent name, a
    groups file, a task the offline model cannot do) is refused before the database is
    opened."""
    env = os.environ
    groups = load_groups_file(args.groups_from) if args.groups_from else StaticGroups()
    url = args.db if args.db is not None else database_url_from_env()
    approval_ttl = approval_ttl_from_env(env)
    async with contextlib.AsyncExitStack() as stack:  # each part closed by whoever opened it
        model = model_from_env()
        stack.push_async_callback(close_model, model)
        spec = env.get(AGENTS_ENV, "").strip() or None
        registry = load_agent_registry(spec, default=builtin_registry(model))
        agent = agent_to_run(registry, args.agent)
        policy = policy_from_env(env, known_tools=tool_names(registry))  # every problem
        # The length first: a task past the limit is refused without being read further.
        checked_task((policy or DEFAULT_POLICY).limits, args.task)
        _refuse_unknown_task(agent, args.task)
        store = await open_store(url)
        stack.push_async_callback(store.close)
        service = ApprovalService(
            store=store,
            registry=registry,
            notifier=TerminalNotifier(sys.stdout),
            dependencies=ops_dependencies(),
            tasks=TaskOwner(),
            worker_id=installation_worker_id(url),
            default_agent=agent.name,
            approval_ttl=approval_ttl,
            policy=policy,
            groups=groups,
            surface="terminal",
        )
        # drained already when the run ends; on Ctrl-C, stop at once
        stack.push_async_callback(partial(service.aclose, timeout=0))
        yield service, agent.name, groups


def _refuse_unknown_task(agent: AgentEngine, task: str) -> None:
    """The offline ops model (of `ops`, and of its SDK twin `ops-openai`) answers a task it
    does not understand with help text; here that is a mistake to say at once (exit 2),
    before a run is stored."""
    offline = isinstance(agent, Agent) and isinstance(agent.model, OfflineOpsModel)
    if offline or getattr(agent, "understands_ops_tasks", False):
        parsed = parse_task(task)
        if isinstance(parsed, str):
            raise InputError(help_text(parsed))
