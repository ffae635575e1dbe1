"""The production architecture reference's context samples, verbatim, shared by the
tests that run them (the run core's, the SDK adapter's): a dataclass context whose
token must never be stored, the serializer that keeps its tenant only, and the
deserializer that re-injects the token from the reader's secret manager."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEMO_SECRET = "sk-demo-0123456789abcdef0123456789abcdef"


@dataclass
class AppContext:
    tenant_id: str
    api_token: str


def context_serializer(context: AppContext) -> Mapping[str, Any]:
    return {"tenant_id": context.tenant_id}


def context_deserializer(payload: Mapping[str, Any]) -> AppContext:
    return AppContext(
        tenant_id=str(payload["tenant_id"]),
        api_token=secret_manager.get("agent-runtime-token"),
    )


class SecretManager:
    """The reader's secret manager: where the token lives instead of the stored state."""

    def get(self, name: str) -> str:
        return {"agent-runtime-token": DEMO_SECRET}[name]


secret_manager = SecretManager()
