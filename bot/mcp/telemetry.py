"""The gateway's metrics, per upstream, on the bot's registry (bot.metrics).

Registered only when the gateway is configured, so a bot without it exports none. Every
series and what it means for an operator: docs/mcp.md, "Operations".
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from bot.metrics import Metrics

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
UpstreamErrorKind = str  # unreachable, timeout, connection_lost, refused, invalid, too_large


class McpMetrics:
    """Counts of the gateway's calls, decisions and upstream failures (None: counted
    nowhere, for tests and tools that do not serve)."""

    def __init__(self, metrics: Metrics | None) -> None:
        self._on = metrics is not None
        if metrics is None:
            return
        registry = metrics.registry
        self.calls = Counter(
            "mcp_calls",
            "tools/call requests for an upstream's tool, by upstream.",
            ["upstream"],
            registry=registry,
        )
        self.gated = Counter(
            "mcp_gated_calls",
            "Calls that waited for a person (a retry attached to its call is not counted).",
            ["upstream"],
            registry=registry,
        )
        self.decided = Counter(
            "mcp_decisions",
            "Gated calls acted on, by upstream and decision: approved (sent upstream) or "
            "rejected (rejected, expired or revoked: not sent).",
            ["upstream", "decision"],
            registry=registry,
        )
        self.upstream_errors = Counter(
            "mcp_upstream_errors",
            "Calls an upstream did not answer well, by kind: unreachable, timeout, "
            "connection_lost, refused (a protocol error), invalid (a malformed result), "
            "too_large (over max_result_bytes).",
            ["upstream", "kind"],
            registry=registry,
        )
        self.latency = Histogram(
            "mcp_upstream_latency_seconds",
            "Time an upstream took to answer a call.",
            ["upstream"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.up = Gauge(
            "mcp_upstream_up",
            "1 while the gateway is connected to the upstream and has its tool list, else 0.",
            ["upstream"],
            registry=registry,
        )
        self.unauthorized = Counter(
            "mcp_unauthorized_requests",
            "Requests to /mcp refused 401, by reason: missing (no bearer token) or invalid.",
            ["reason"],
            registry=registry,
        )

    def called(self, upstream: str, *, gated: bool) -> None:
        """A tools/call for the upstream's tool; `gated`: it started a call that waits
        for a person (a retry that attached to one is not)."""
        if self._on:
            self.calls.labels(upstream).inc()
            if gated:
                self.gated.labels(upstream).inc()

    def decision(self, upstream: str, decision: str) -> None:
        if self._on:
            self.decided.labels(upstream, decision).inc()

    def upstream_error(self, upstream: str, kind: UpstreamErrorKind) -> None:
        if self._on:
            self.upstream_errors.labels(upstream, kind).inc()

    def answered_in(self, upstream: str, seconds: float) -> None:
        if self._on:
            self.latency.labels(upstream).observe(seconds)

    def health(self, upstream: str, *, up: bool) -> None:
        if self._on:
            self.up.labels(upstream).set(1 if up else 0)

    def refused(self, reason: str) -> None:
        if self._on:
            self.unauthorized.labels(reason).inc()
