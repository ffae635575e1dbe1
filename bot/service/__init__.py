"""The approval service: runs, decisions, resumes and recovery, behind a notifier.

service = ApprovalService(store=..., registry=..., notifier=..., dependencies=...,
                          tasks=TaskOwner(), worker_id=installation_worker_id(url))
await service.recover()                       # at start-up
run = await service.start_run(agent_name=None, task="deploy api 1.2.3",
                              requester="U1", channel="C1")
await service.decide(approval_id, approve=True, decider="U2", reason="CR-42")
"""

from bot.service.answers import (
    Busy,
    Closed,
    Continued,
    DecisionResult,
    FollowUpOutcome,
    NotARunThread,
    Recorded,
    Retrying,
    WaitingForApproval,
)
from bot.service.api import ApprovalView, Page, UncertainCall
from bot.service.config import (
    approval_ttl_from_env,
    installation_worker_id,
    lease_seconds_from_env,
    sweep_seconds_from_env,
)
from bot.service.events import Event, Location, Notifier
from bot.service.service import ApprovalService
from bot.tasks import TaskOwner

__all__ = [
    "ApprovalService",
    "ApprovalView",
    "Busy",
    "Closed",
    "Continued",
    "DecisionResult",
    "Event",
    "FollowUpOutcome",
    "Location",
    "NotARunThread",
    "Notifier",
    "Page",
    "Recorded",
    "Retrying",
    "TaskOwner",
    "UncertainCall",
    "WaitingForApproval",
    "approval_ttl_from_env",
    "installation_worker_id",
    "lease_seconds_from_env",
    "sweep_seconds_from_env",
]
