"""ApprovalService: start a run, persist its pause, decide, resume, follow up, reconcile.

The middle layer. It knows neither Slack payloads nor SQL: people are reached through a
`Notifier`, records through the `Store` interface, agents through the `AgentRegistry`.
Every state change is a compare-and-set in the store, so two clicks, two replicas or a
retried request change nothing twice; the store's ledger is the runner's journal, so a
repeated resume never repeats an effect. Work that outlives a call (a resume after the
last decision) runs in tasks the service owns (`TaskOwner`).

Who may decide, how many must and for how long comes from the `Policy` (bot.policy):
checked when a person decides (bot.service.voting, bot.service.authority) and again
right before an approved call runs (ServiceJournal with `execution_check`). What the
operations answer is bot.service.answers, the read models the people layer renders
bot.service.api, the notifier's events bot.service.events.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from bot.clock import Clock, utc_now
from bot.errors import ConfigError
from bot.metrics import Metrics
from bot.policy.eligibility import ChannelDirectory, GroupDirectory, NoGroups
from bot.policy.rules import DEFAULT_POLICY, Policy
from bot.runtime import AgentRegistry, AgentRun
from bot.service import conversation, health
from bot.service.absences import come_back, set_away
from bot.service.answers import FollowUpOutcome
from bot.service.api import Surface
from bot.service.authority import refuse_request
from bot.service.bulk import BulkDecisions
from bot.service.config import DEFAULT_APPROVAL_TTL, DEFAULT_SWEEP_SECONDS
from bot.service.copies import send_unsent
from bot.service.deciding import DecisionOperations
from bot.service.events import Notifier
from bot.service.expiry import ExpirySweeper, escalate_due, expire_overdue, remind_due
from bot.service.leases import DEFAULT_LEASE_SECONDS, HeldLeases
from bot.service.limits import checked_task
from bot.service.read_side import ReadSide
from bot.service.recovery import recover_runs, take_over_abandoned
from bot.service.requests import RequestLog
from bot.service.resume import retry_parked
from bot.service.retry import DEFAULT_RETRY, RetryPolicy
from bot.service.run_control import RunControl
from bot.service.telemetry import Telemetry
from bot.service.windows import end_window, windows_for
from bot.service.workflow import Workflow
from bot.tasks import TaskOwner
from store.api import Store
from store.records import ApprovalRecord, ApprovalWindow, RunRecord, StandIn


def known_tool_names(registry: AgentRegistry, policy: Policy) -> frozenset[str]:
    """The tool names the configuration knows: the policy's tables and every registered
    agent's tools (an MCP gateway's as its upstreams list them now)."""
    return frozenset(policy.tools) | {name for agent in registry for name in agent.tool_names()}


class ApprovalService(ReadSide, RunControl):
    """The approval workflow over one store; see the module doc. The service owns the
    TaskOwner it is given: `aclose` closes it.

    `policy` (default: the built-in defaults with `approval_ttl` as the default lifetime;
    with a policy, `approval_ttl` is not used), `groups` (default: no groups) and
    `channels` (default: none, calls are not scoped to their channel: no Slack) decide
    who may see and act; the quorum and expiry of an approval are fixed when it is
    requested. A policy naming a tool no registered agent has is a ConfigError.
    `resume_retry` says how a resume the database failed is tried again
    (bot.service.retry).

    `surface` says whom the service serves (bot.service.api.Surface): "slack" (the bot,
    the default) and "terminal" (the demo) start runs of that origin and show and decide
    only those; "cli" (operators) starts none and reaches every run. Decisions record it
    as their audit `via`.

    `metrics` (bot.metrics): where the business events are counted (bot.service.telemetry
    logs them either way).

    The deciding operations (`decide`, `approve_with_changes`, `revoke` and their
    `record_*` halves) are bot.service.voting's, bound here as its own; so are the bulk
    decisions (`record_decisions`, `decide_many`) bot.service.bulk's. The read models
    (`approval_view`, `pending_for`, ...) are its part ReadSide (bot.service.read_side),
    the whole-run operations (`cancel_run`, `pause_run`, `reconcile`, ...) its part
    RunControl (bot.service.run_control)."""

    def __init__(
        self,
        *,
        store: Store,
        registry: AgentRegistry,
        notifier: Notifier,
        dependencies: Mapping[str, Any],
        tasks: TaskOwner,
        worker_id: str,
        clock: Clock = utc_now,
        default_agent: str = "ops",
        approval_ttl: timedelta | None = DEFAULT_APPROVAL_TTL,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        policy: Policy | None = None,
        groups: GroupDirectory | None = None,
        channels: ChannelDirectory | None = None,
        resume_retry: RetryPolicy = DEFAULT_RETRY,
        surface: Surface = "slack",
        metrics: Metrics | None = None,
    ) -> None:
        if not worker_id.strip():
            raise ConfigError("the service needs a worker id (see installation_worker_id)")
        if policy is not None:
            policy.check_tools(name for agent in registry for name in agent.tool_names())
        in_force = policy or DEFAULT_POLICY.with_default_expiry(approval_ttl)
        self._flow = Workflow(
            store=store,
            registry=registry,
            notifier=notifier,
            dependencies=dependencies,
            clock=clock,
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            policy=in_force,
            groups=groups or NoGroups(),
            tasks=tasks,
            leases=HeldLeases(store, owner=worker_id, lease_seconds=lease_seconds),
            channels=channels,
            retry=resume_retry,
            surface=surface,
            telemetry=Telemetry(
                metrics, clock=clock, known_tools=partial(known_tool_names, registry, in_force)
            ),
        )
        deciding = DecisionOperations(self._flow)
        self.decide = deciding.decide
        self.record_decision = deciding.record_decision
        self.approve_with_changes = deciding.approve_with_changes
        self.record_changes = deciding.record_changes
        self.revoke = deciding.revoke
        self.record_revocation = deciding.record_revocation
        bulk = BulkDecisions(self._flow)
        self.record_decisions = bulk.record_decisions
        self.decide_many = bulk.decide_many
        self._default_agent = default_agent
        self._requests = RequestLog(store)
        self._sweeper: ExpirySweeper | None = None

    async def approval_windows(self, viewer: str, *, limit: int = 10) -> list[ApprovalWindow]:
        """The open approval windows `viewer` may end (bot.service.windows)."""
        return await windows_for(self._flow, viewer, limit=limit)

    async def end_window(self, window_id: str, *, actor: str, reason: str) -> ApprovalWindow:
        """End an approval window (bot.service.windows.end_window)."""
        return await end_window(self._flow, window_id, actor=actor, reason=reason)

    @property
    def registry(self) -> AgentRegistry:
        return self._flow.registry

    @property
    def store(self) -> Store:
        return self._flow.store

    @property
    def policy(self) -> Policy:
        """The policy in force (the built-in defaults when none was given)."""
        return self._flow.policy

    # -- starting ------------------------------------------------------------------------

    async def start_run(
        self,
        *,
        agent_name: str | None,
        task: str,
        requester: str,
        channel: str | None,
        context: Any = None,
        run_id: str | None = None,
    ) -> RunRecord:
        """Run `task` with the agent (the latest version of `agent_name`, or the default
        agent) until it completes, fails or pauses for decisions; returns the run as it
        stands then. A context holding a secret, or a task longer than the policy's
        `limits.task_chars`, is refused before anything is stored. `run_id` names the
        new run (default: a random id); one already taken is refused by the store."""
        return await conversation.start_run(
            self._flow,
            agent_name=agent_name or self._default_agent,
            task=task,
            requester=requester,
            channel=channel,
            context=context,
            run_id=run_id,
        )

    def check_task(self, task: str) -> str:
        """The task, stripped; InputError when it is empty or longer than the policy's
        `limits.task_chars` (no I/O: a Slack listener asks before it acknowledges)."""
        return checked_task(self._flow.policy.limits, task)

    # -- expiry ----------------------------------------------------------------------------

    async def expire_due(self) -> list[ApprovalRecord]:
        """Expire every pending approval past its expiry, update its card, and resume the
        runs that have nothing left to wait for (an expired call never runs)."""
        return await expire_overdue(self._flow)

    def start_expiry_sweeper(self, *, every_seconds: float = DEFAULT_SWEEP_SECONDS) -> None:
        """Call `sweep` every `every_seconds` until `aclose` (see bot.service.expiry)."""
        if self._sweeper is None:
            self._sweeper = ExpirySweeper(self.sweep, every_seconds=every_seconds)
            self._sweeper.start()

    # -- governance: refusals (the read models: bot.service.read_side) ---------------------

    async def audit_refusal(
        self,
        *,
        actor: str | None,
        why: str,
        detail: Mapping[str, Any],
        approval_id: str | None = None,
    ) -> None:
        """Audit a request refused above the service (`refused`, why e.g. "external")."""
        await refuse_request(
            self._flow, actor=actor, why=why, approval_id=approval_id, detail=detail
        )

    # -- absences: who stands in for an approver away ---------------------------------------

    async def set_away(self, user: str, *, until: datetime, stand_in: str | None) -> StandIn:
        """`user` is away until `until`, `stand_in` deciding in their place (None: nobody);
        see bot.service.absences. InputError, and nothing changed, for a bad time or
        stand-in."""
        return await set_away(self._flow, user, until=until, stand_in=stand_in)

    async def come_back(self, user: str) -> StandIn | None:
        """End `user`'s absence now (None: they were not away)."""
        return await come_back(self._flow, user)

    # -- sweeps, request memory, health ----------------------------------------------------

    async def send_reminders(self) -> list[ApprovalRecord]:
        """Send each pending approval's one reminder once its time has come (the sweeper
        calls this with `expire_due`). Claimed in the store first, so each approval is
        reminded once even across restarts (a crash right after the claim loses it)."""
        return await remind_due(self._flow)

    async def sweep(self) -> list[ApprovalRecord]:
        """One sweeper pass: take over the runs of workers that died (their lease ran
        out: bot.service.recovery), try parked resumes again (bot.service.retry), expire
        what is overdue, send due reminders, fire due escalation steps, send the
        direct-message copies whose sender failed (bot.service.copies), and forget
        requests remembered long enough."""
        await take_over_abandoned(self._flow)
        retry_parked(self._flow)
        expired = await self.expire_due()
        await self.send_reminders()
        await escalate_due(self._flow)
        await send_unsent(self._flow)
        await self._flow.store.forget_expired_requests()
        return expired

    async def remember_request(self, key: str, *, ttl_seconds: float) -> bool:
        """True the first time any worker on this database sees `key` within
        `ttl_seconds` (a signed request, an event id): the people layer answers a replay
        or a redelivery without handling it again. Concurrent calls share one write
        (bot.service.requests)."""
        return await self._requests.remember(key, ttl_seconds=ttl_seconds)

    async def readiness(self) -> str | None:
        """Why the service cannot serve now (None: it can): the database does not
        answer, or records another schema version than this build's."""
        return await health.readiness(self._flow)

    async def observe_pending(self) -> None:
        """Read the oldest pending approval of this surface into the telemetry's gauge
        (a metrics scrape calls this: one indexed row)."""
        await health.observe_pending(self._flow)

    # -- follow-up, recovery (whole runs: bot.service.run_control) -------------------------

    async def follow_up(
        self, *, channel: str, thread_ts: str, user: str, text: str
    ) -> FollowUpOutcome:
        """A message in a run's thread: new input for the agent once the run is idle."""
        return await conversation.follow_up(
            self._flow, channel=channel, thread_ts=thread_ts, user=user, text=text
        )

    async def recover(self) -> int:
        """At start-up: finish what a dead process left (see `bot.service.recovery`)."""
        return await recover_runs(self._flow)

    async def load_state(self, run_id: str) -> AgentRun:
        """The run's stored state, decrypted (for operators and the terminal demo)."""
        return await self._flow.load_state(run_id)

    # -- lifecycle -------------------------------------------------------------------------

    async def drain(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 (a shutdown deadline, passed down)
        """Wait for the service's background work (resumes) to finish."""
        return await self._flow.tasks.drain(timeout)

    async def aclose(self, *, timeout: float | None = 10.0) -> None:  # noqa: ASYNC109 (a shutdown deadline, passed down)
        """Let running resumes finish for `timeout` seconds, then cancel them (a
        cancelled resume stays `resuming`, and `recover` finishes it at the next start).
        The expiry sweeper, if started, stops first."""
        if self._sweeper is not None:
            await self._sweeper.aclose()
        await self._flow.tasks.aclose(timeout=timeout)
        await self._flow.leases.aclose()
        await self._requests.aclose()
