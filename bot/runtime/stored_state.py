"""Reading a stored run state, whichever engine wrote it: an engine other than the run
core names itself inside (`ExternalRunState`); anything else is the run core's
`RunState`. Above both, so the engine seam (bot.runtime.engine) they build on imports
neither.
"""

from __future__ import annotations

import orjson

from bot.errors import RunStateError
from bot.runtime.engine import ENGINE_KEY, AgentRun
from bot.runtime.external_state import ExternalRunState
from bot.runtime.state import RunState


def read_run_state(text: str | bytes) -> AgentRun:
    """Any stored state: an engine's (it names its engine) or the run core's."""
    try:
        payload = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise RunStateError(f"a run state must be JSON text: {error}") from error
    if isinstance(payload, dict) and ENGINE_KEY in payload:
        return ExternalRunState.from_payload(payload)
    return RunState.from_payload(payload)
