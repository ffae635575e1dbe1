"""The bot's Prometheus metrics, on a registry each `Metrics` owns.

One `Metrics` is made by whoever serves (`approvals-bot serve` / `socket`) and handed to
the parts that count: the service's telemetry (bot.service.telemetry: approvals, runs,
executions, resumes, state blobs), the Slack surface (ack latency, Web API errors) and
the OpenAI-compatible model (retries). Nothing registers on prometheus_client's global
registry, so two bots in one process (tests) never share a count. `render()` is the
`GET /metrics` answer in the text exposition format.

Every metric and what it means for an operator: docs/operations.md.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

MINUTE = 60.0
HOUR = 60 * MINUTE
DAY = 24 * HOUR
PENDING_AGE_BUCKETS = (
    10.0, 30.0, MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE,
    HOUR, 4 * HOUR, 12 * HOUR, DAY, 3 * DAY, 7 * DAY,
)  # fmt: skip
STATE_BYTES_BUCKETS = tuple(float(1024 * 4**power) for power in range(8))  # 1 KiB .. 16 MiB
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """Every metric of the bot, registered on this instance's own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.approval_pending_age = Histogram(
            "approval_pending_age_seconds",
            "How long a closed approval waited, from its request to its decision, "
            "expiry or revocation.",
            ["outcome"],
            buckets=PENDING_AGE_BUCKETS,
            registry=registry,
        )
        self.time_to_decision = Histogram(
            "approvals_time_to_decision_seconds",
            "How long a closed approval waited for people, by tool (a name the policy or a "
            "registered agent knows; any other is `other`) and outcome: approved, rejected, "
            "expired, revoked.",
            ["tool", "outcome"],
            buckets=PENDING_AGE_BUCKETS,
            registry=registry,
        )
        self.approval_pending_oldest = Gauge(
            "approval_pending_oldest_age_seconds",
            "Age of the oldest approval still pending (0 when none is), read at scrape.",
            registry=registry,
        )
        self.approval_decisions = Counter(
            "approval_decisions",
            "Approvals closed, by outcome: approved, rejected, expired, revoked.",
            ["outcome"],
            registry=registry,
        )
        self.approval_requested = Counter(
            "approval_requested", "Approvals requested (one per call that waits).",
            registry=registry,
        )  # fmt: skip
        self.approval_expired = Counter(
            "approval_expired", "Approvals nobody decided before they expired.", registry=registry
        )
        self.runs = Counter(
            "runs",
            "Runs by what happened to them: started, paused, completed, failed, cancelled.",
            ["event"],
            registry=registry,
        )
        self.resume_attempts = Counter(
            "resume_attempts",
            "Tries to resume a run (the first, in-process retries, and recovery after a restart).",
            registry=registry,
        )
        self.executions = Counter(
            "tool_executions",
            "Tool calls by what the ledger says: claimed, succeeded, failed.",
            ["outcome"],
            registry=registry,
        )
        self.idempotency_reuse = Counter(
            "idempotency_reuse",
            "Tool calls answered with the result the ledger recorded, instead of running again.",
            registry=registry,
        )
        self.state_deserialize_failure = Counter(
            "state_deserialize_failure",
            "Stored run states that could not be decrypted or decoded.",
            ["reason"],
            registry=registry,
        )
        self.argument_digest_mismatch = Counter(
            "argument_digest_mismatch",
            "Approved calls whose arguments or tool differ from what was approved (not run).",
            registry=registry,
        )
        self.decision_seal_failure = Counter(
            "decision_seal_failure",
            "Approved calls not run because their decision does not stand on votes whose "
            "seals verify (the database was written without the keys).",
            registry=registry,
        )
        self.effect_uncertain = Counter(
            "effect_uncertain",
            "Tool calls whose effect is unknown (interrupted, manual replay): a human "
            "reconciles them.",
            registry=registry,
        )
        self.state_blob_bytes = Histogram(
            "state_blob_bytes",
            "Size of each run state saved (its JSON, before encryption).",
            buckets=STATE_BYTES_BUCKETS,
            registry=registry,
        )
        self.slack_ack_latency = Histogram(
            "slack_ack_latency_seconds",
            "Time from a Slack request's arrival to its acknowledgement, by request kind.",
            ["kind"],
            buckets=ACK_BUCKETS,
            registry=registry,
        )
        self.slack_api_errors = Counter(
            "slack_api_errors",
            "Slack Web API calls that failed, by method and Slack's error code.",
            ["method", "error"],
            registry=registry,
        )
        self.model_retries = Counter(
            "model_retries",
            "Model requests tried again after a 429, a 5xx or a timeout, by reason.",
            ["reason"],
            registry=registry,
        )

    def render(self) -> bytes:
        """The registry in Prometheus' text exposition format (`CONTENT_TYPE`)."""
        return generate_latest(self.registry)
