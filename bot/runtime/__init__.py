"""The agent run core: agents, tools, models, the Runner and the durable RunState.

Pure Python and asyncio: no Slack, no database (docs/architecture.md). Where things are:

- agent.py: `Agent` and the `AgentRegistry` that finds one by name and version;
- tools.py: the `@tool` decorator, `current_tool_call()`, `ReplayPolicy`, an agent's
  `AgentTools`; tool_schema.py: a tool's JSON schema and argument checks, from its type
  hints;
- model.py: the `Model` protocol, history items, `ScriptedModel`; openai_model.py: a
  chat-completions model;
- runner.py: `Runner.arun`, model turns and tool calls until an answer or a pause;
  result.py: its `RunResult`, and `PauseSignal` to pause a run from outside;
  sessions.py: `AgentRuntime`, the Runner with each run's state kept by session id;
  dispatch.py: one tool call through the journal; journal.py: the `Journal` protocol
  (a call runs at most once per execution key) and `InMemoryJournal`;
- engine.py: the seam the service drives any engine through (`AgentEngine`, `AgentRun`);
  external_state.py: `ExternalRunState`, a run another engine (the OpenAI Agents SDK)
  runs, with the bot's record of its pauses (read by external_fields.py);
  stored_state.py: `read_run_state`, either one from its JSON;
- state.py: `RunState`, the paused run; state_decisions.py: the decisions people take
  on it (approve, reject, resolve); pending.py: the calls it waits on and the
  decisions taken on them; state_format.py: its schema versions and the one reader
  that checks a payload (field by field: state_fields.py); decisions.py: pending
  calls, execution keys, the decisions humans take and their audit metadata;
  context.py: the run context on the wire (through a serializer, never with a secret).
"""

from bot.canonical import call_digest, canonical_arguments, legacy_arguments_digest
from bot.errors import (
    AgentNotRegisteredError,
    AlreadyDecidedError,
    ApprovalsError,
    ConfigError,
    ContextSerializationError,
    DecisionError,
    InputError,
    ModelError,
    ResolutionError,
    RunStateError,
    SchemaVersionError,
    StateUnreadableError,
    UnknownCallError,
    UnknownExecutionKey,
)
from bot.runtime.agent import Agent, AgentRegistry
from bot.runtime.decisions import (
    DEFAULT_REJECTION_MESSAGE,
    AbortCall,
    ApprovalMetadata,
    ApprovedCall,
    Decision,
    DeferredToolRequests,
    PendingCall,
    RejectedCall,
    Resolution,
    RetryCall,
    ToolResult,
    VerifiedResult,
)
from bot.runtime.engine import (
    AgentEngine,
    AgentRun,
    ArgumentEditor,
    EngineInfo,
    EngineResult,
    RunOutcome,
    ToolView,
)
from bot.runtime.external_state import ExternalRunState
from bot.runtime.journal import InMemoryJournal, Journal
from bot.runtime.model import Item, Model, ModelResponse, ScriptedModel, ToolCall, ToolSpec
from bot.runtime.result import PauseCheck, PauseSignal, RunResult
from bot.runtime.runner import Runner
from bot.runtime.sessions import AgentRuntime, InMemoryRunStates, RunStates
from bot.runtime.state import RunState
from bot.runtime.state_format import CURRENT_SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS
from bot.runtime.stored_state import read_run_state
from bot.runtime.tools import (
    AgentTools,
    PermissionLevel,
    ReplayPolicy,
    Tool,
    ToolCallContext,
    current_tool_call,
    current_tool_context,
    tool,
)

__all__ = [
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
]
