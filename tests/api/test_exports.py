"""The names `bot.runtime` exports are promises to its users.

Removing one fails here: keep it, alias it, or deprecate it first (and say so in
docs/api.md). A new name fails here too until it is added below, so that every promise
is made on purpose."""

from __future__ import annotations

import bot.runtime

PROMISED = frozenset(
    {
        "CURRENT_SCHEMA_VERSION",
        "DEFAULT_REJECTION_MESSAGE",
        "SUPPORTED_SCHEMA_VERSIONS",
        "AbortCall",
        "Agent",
        "AgentEngine",
        "AgentNotRegisteredError",
        "AgentRegistry",
        "AgentRun",
        "AgentRuntime",
        "AgentTools",
        "AlreadyDecidedError",
        "ApprovalMetadata",
        "ApprovalsError",
        "ApprovedCall",
        "ArgumentEditor",
        "ConfigError",
        "ContextSerializationError",
        "Decision",
        "DecisionError",
        "DeferredToolRequests",
        "EngineInfo",
        "EngineResult",
        "ExternalRunState",
        "InMemoryJournal",
        "InMemoryRunStates",
        "InputError",
        "Item",
        "Journal",
        "Model",
        "ModelError",
        "ModelResponse",
        "PauseCheck",
        "PauseSignal",
        "PendingCall",
        "PermissionLevel",
        "RejectedCall",
        "ReplayPolicy",
        "Resolution",
        "ResolutionError",
        "RetryCall",
        "RunOutcome",
        "RunResult",
        "RunState",
        "RunStateError",
        "RunStates",
        "Runner",
        "SchemaVersionError",
        "ScriptedModel",
        "StateUnreadableError",
        "Tool",
        "ToolCall",
        "ToolCallContext",
        "ToolResult",
        "ToolSpec",
        "ToolView",
        "UnknownCallError",
        "UnknownExecutionKey",
        "VerifiedResult",
        "call_digest",
        "canonical_arguments",
        "current_tool_call",
        "current_tool_context",
        "legacy_arguments_digest",
        "read_run_state",
        "tool",
    }
)


def test_no_promised_name_is_gone() -> None:
    exported = set(bot.runtime.__all__)
    gone = sorted(PROMISED - exported)
    assert not gone, f"bot.runtime no longer exports {gone}: keep, alias or deprecate them"
    missing = sorted(name for name in PROMISED if not hasattr(bot.runtime, name))
    assert not missing, f"bot.runtime.__all__ names {missing}, which it does not define"


def test_every_exported_name_is_promised_on_purpose() -> None:
    new = sorted(set(bot.runtime.__all__) - PROMISED)
    assert not new, f"add {new} to PROMISED (and to docs/api.md): a new public name"
    assert len(bot.runtime.__all__) == len(set(bot.runtime.__all__))
