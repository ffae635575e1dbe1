"""The one error tree of approvals-bot.

Every layer raises from this tree; the boundaries (CLI, Slack listeners) map it to
one clear line or ephemeral message. This module is a leaf: it imports nothing of ours,
so every layer (runtime, review, policy, store, service, slack) may import it.

    ApprovalsError
    ├── ConfigError               bad configuration at start-up (names the variable/file)
    │   └── ConfigFileError           a file's problems, all of them, each naming its key
    ├── InputError                bad input from a person or a caller (names the problem)
    ├── RunStateError             a state that cannot be loaded, saved or resumed
    │   ├── SchemaVersionError        newer/unknown $schemaVersion (names both versions)
    │   ├── AgentNotRegisteredError   agent name/version not in the registry
    │   ├── StateUnreadableError      the installed engine cannot read the state (SDK runs)
    │   └── ContextSerializationError context refused (strict mode, secret at a path)
    ├── DecisionError             a decision that does not fit
    │   ├── UnknownCallError          no pending call with that id / execution key
    │   │   └── UnknownExecutionKey       (what the run core raises: the key the run lacks)
    │   ├── ResolutionError           resolve() choice does not fit the call's state
    │   ├── NotAuthorizedError        this person may not decide this call
    │   │   └── ArgumentsUnreadError      not until they have read its cut arguments whole
    │   └── AlreadyDecidedError       lost a race / terminal state (says who won, when)
    ├── ModelError                the model failed or timed out
    ├── LimitError                a run went past a limit of the policy ([limits]); it stops
    ├── StoreError                persistence failed
    │   ├── ConflictError             compare-and-set lost (expected state/version moved)
    │   ├── TamperError               a blob failed to decrypt/verify (fails closed)
    │   ├── KeyMissingError           the key ring lacks a key id data needed now names
    │   │                             (operational: add the key; never tampering)
    │   ├── MigrationError            schema migration failed / database from a newer build
    │   ├── ExecutionKeyConflict      same execution key, different arguments digest
    │   ├── LeaseHeldError            another live worker holds the execution lease
    │   └── LeaseLostError            our lease was taken over (fenced: write refused)
    ├── SlackError                the Slack Web API answered with an error
    └── UpstreamError             an upstream MCP server did not answer a call (`sent`:
                                  whether the call reached it, so its effect is unknown)
"""

from __future__ import annotations

from datetime import datetime


class ApprovalsError(Exception):
    """Root of every error approvals-bot raises on purpose."""


class ConfigError(ApprovalsError):
    """Configuration is missing or malformed; start-up stops with this message."""


class ConfigFileError(ConfigError):
    """A configuration file with problems: all of them, each naming its key (`problems`).
    One problem reads "<kind> <source>: <key>: <problem>"; several, one per line."""

    def __init__(self, kind: str, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        if len(problems) == 1:
            text = f"{kind} {source}: {problems[0]}"
        else:
            listed = "\n".join(f"  {problem}" for problem in problems)
            text = f"{kind} {source}: {len(problems)} problems:\n{listed}"
        super().__init__(text)


class InputError(ApprovalsError):
    """Input from a person or caller is malformed; nothing was changed."""


class RunStateError(ApprovalsError):
    """A RunState cannot be loaded, saved or resumed."""


class SchemaVersionError(RunStateError):
    """A payload's $schemaVersion is newer than or unknown to this build."""


class AgentNotRegisteredError(RunStateError):
    """The state's agent name/version is not in the registry."""


class StateUnreadableError(RunStateError):
    """The installed agent engine cannot read the run's state (written by a newer engine,
    or for an agent or tool that has been renamed): the run waits for a migration."""


class ContextSerializationError(RunStateError):
    """The run context cannot be serialized safely (strict mode, or a secret found)."""


class DecisionError(ApprovalsError):
    """A decision or resolution that does not fit the call."""


class UnknownCallError(DecisionError):
    """No pending call with that tool call id or execution key."""


class UnknownExecutionKey(UnknownCallError):
    """A call, tool call id or execution key the run does not have (the run core raises
    this; `except UnknownCallError` catches it too)."""


class ResolutionError(DecisionError):
    """The chosen resolution does not fit the call's current state."""


class NotAuthorizedError(DecisionError):
    """This person may not take this decision."""


class ArgumentsUnreadError(NotAuthorizedError):
    """The call's arguments do not fit its card and this person has not been shown them
    whole: their approval counts only once they have (`approval_id` names the call)."""

    def __init__(self, message: str, *, approval_id: str) -> None:
        super().__init__(message)
        self.approval_id = approval_id


class AlreadyDecidedError(DecisionError):
    """The approval is no longer pending; carries who decided it and when."""

    def __init__(
        self,
        message: str,
        *,
        status: str,
        decider: str | None = None,
        decided_at: datetime | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.decider = decider
        self.decided_at = decided_at


class ModelError(ApprovalsError):
    """The model call failed, timed out or answered something unusable."""


class LimitError(ApprovalsError):
    """A run asked for more than a limit allows (tool calls in one model turn, approvals
    at once); nothing of what it asked for ran, and the run stops."""


class StoreError(ApprovalsError):
    """Persistence failed."""


class ConflictError(StoreError):
    """A compare-and-set found the row in another state or version."""


class TamperError(StoreError):
    """A stored blob failed authenticated decryption; nothing may run from it."""


class KeyMissingError(StoreError):
    """The key ring of this process lacks the key id a sealed blob or seal it needs names
    (a key rotated in before every process had it): the work waits for the key, nothing
    is failed or taken for tampering. `key_id`: the id it lacks."""

    def __init__(self, message: str, *, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id


class MigrationError(StoreError):
    """The database schema cannot be migrated (or was written by a newer build)."""


class ExecutionKeyConflict(StoreError):
    """The execution key is already recorded with different arguments."""


class LeaseHeldError(StoreError):
    """Another live worker holds the execution lease for this key."""


class LeaseLostError(StoreError):
    """Our execution lease was taken over; the write was refused (fencing)."""


class SlackError(ApprovalsError):
    """The Slack Web API answered with an error we could not handle."""


class UpstreamError(ApprovalsError):
    """An upstream MCP server (behind the gateway) did not answer a call. `sent`: the
    call reached it before the failure (a timeout, a dropped connection), so whether it
    took effect is unknown; False: it was never sent (the upstream is down)."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent
