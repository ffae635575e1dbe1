"""An OpenAI-compatible chat-completions model over aiohttp.

    async with OpenAIChatModel(base_url="http://127.0.0.1:8000/v1", api_key="...",
                               model="gpt-4o-mini") as model:
        agent = Agent(name="ops", instructions="...", tools=[...], model=model)

One `POST {base_url}/chat/completions` per turn, with the tools as `function` tools.
History items map to chat messages (assistant tool calls carry their arguments as a
JSON string; tool results are `tool` messages) and the answer maps back to a
ModelResponse. Every failure (HTTP status, timeout, refused connection, non-JSON body,
tool-call arguments that are not a JSON object) is a ModelError with a clear message
that never contains the API key.

A 429 or a 5xx is tried again (`ModelRetry`: up to 3 more times, after the server's
`Retry-After` when it gives one, else after a doubling backoff); a wait longer than the
bound (`max_delay`) is not waited for: the request fails at once, saying so. Each retry
is reported to `on_retry` with its reason (the status), for the metrics.

The model owns the aiohttp session it creates and closes it in `aclose()` (or on
leaving `async with`); a session passed in belongs to the caller and is left open.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp

from bot.credentials import REDACTED, redact_text
from bot.errors import ConfigError, ModelError
from bot.runtime.model import Item, ModelResponse, ToolCall, ToolSpec

_ERROR_EXCERPT = 300


@dataclass(frozen=True, kw_only=True)
class ModelRetry:
    """`attempts` requests in all for one turn; before try n+1 the server's Retry-After,
    or about `first_delay * 2**(n-1)` seconds (half of it random); never more than
    `max_delay` (a longer Retry-After fails the request at once)."""

    attempts: int = 4
    first_delay: float = 1.0
    max_delay: float = 30.0
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep

    def delay(self, failures: int, retry_after: str | None) -> float | None:
        """Seconds to wait before the next try, or None: do not try again."""
        if failures >= self.attempts:
            return None
        asked = _seconds(retry_after)
        if asked is not None:
            return asked if asked <= self.max_delay else None
        ceiling = min(self.max_delay, self.first_delay * 2.0 ** (failures - 1))
        return ceiling / 2 + random.uniform(0.0, ceiling / 2)


def _seconds(retry_after: str | None) -> float | None:
    """Retry-After in seconds (its delta-seconds form; a date is ignored)."""
    try:
        seconds = float(retry_after) if retry_after is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None


def _worth_retrying(status: int) -> bool:
    return status == 429 or status >= 500


@dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
    """Where the model lives. The key never appears in a repr."""

    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout: float = 30.0


def openai_config_from_env(environ: Mapping[str, str]) -> OpenAIConfig:
    """OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (all required); ConfigError names
    every one that is missing. OPENAI_TIMEOUT_SECONDS is optional (default 30)."""
    names = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")
    missing = [name for name in names if not environ.get(name, "").strip()]
    if missing:
        raise ConfigError(f"APPROVALS_MODEL=openai needs {', '.join(missing)} to be set")
    timeout_text = environ.get("OPENAI_TIMEOUT_SECONDS", "").strip() or "30"
    try:
        timeout = float(timeout_text)
    except ValueError:
        timeout = -1.0
    if not 0 < timeout < float("inf"):
        raise ConfigError(
            f"OPENAI_TIMEOUT_SECONDS must be a positive number of seconds, not {timeout_text!r}"
        )
    return OpenAIConfig(
        base_url=environ["OPENAI_BASE_URL"].strip(),
        api_key=environ["OPENAI_API_KEY"].strip(),
        model=environ["OPENAI_MODEL"].strip(),
        timeout=timeout,
    )


class OpenAIChatModel:
    """The Model protocol against an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        retry: ModelRetry = ModelRetry(),
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"model base URL must start with http:// or https://: {base_url!r}")
        if not model:
            raise ConfigError("model name must not be empty")
        if not timeout > 0:
            raise ConfigError(f"model timeout must be positive, not {timeout!r}")
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._model = model
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._timeout_seconds = timeout
        self._session = session
        self._owns_session = session is None
        self._closed = False
        self._retry = retry
        self._on_retry = on_retry

    @classmethod
    def from_config(
        cls, config: OpenAIConfig, *, on_retry: Callable[[str], None] | None = None
    ) -> OpenAIChatModel:
        return cls(
            base_url=config.base_url,
            api_key=config.api_key,
            model=config.model,
            timeout=config.timeout,
            on_retry=on_retry,
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(url={self._url!r}, model={self._model!r})"

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session this model created (idempotent); a caller's session stays open."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None and self._owns_session:
            await session.close()

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        body = request_body(self._model, instructions, history, tools)
        payload = await self._post(body)
        return parse_response(payload)

    def _session_for_request(self) -> aiohttp.ClientSession:
        if self._closed:
            raise ModelError("the model was closed; create a new one")
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _post(self, body: dict[str, Any]) -> Any:
        failures = 0
        while True:
            status, text, retry_after = await self._send(body)
            if status < 400:
                return self._json(text)
            failures += 1
            delay = self._retry.delay(failures, retry_after) if _worth_retrying(status) else None
            if delay is None:
                tries = f" after {failures} tries" if failures > 1 else ""
                waits = (
                    f" (it asked to wait {retry_after} s, more than {self._retry.max_delay:g} s)"
                    if failures < self._retry.attempts and _worth_retrying(status)
                    else ""
                )
                raise ModelError(
                    f"model server at {self._safe(self._url)} answered HTTP {status}"
                    f"{tries}{waits}: {self._excerpt(text)}"
                )
            if self._on_retry is not None:
                self._on_retry(str(status))
            await self._retry.sleep(delay)

    async def _send(self, body: dict[str, Any]) -> tuple[int, str, str | None]:
        """One request: (status, body text, Retry-After)."""
        session = self._session_for_request()
        headers = {"Authorization": f"Bearer {self._api_key}"}
        try:
            async with session.post(
                self._url, json=body, headers=headers, timeout=self._timeout
            ) as response:
                text = await response.text(errors="replace")
                return response.status, text, response.headers.get("Retry-After")
        except TimeoutError:
            raise ModelError(
                f"model server at {self._safe(self._url)} did not answer within "
                f"{self._timeout_seconds:g}s"
            ) from None
        except aiohttp.ClientError as error:
            raise ModelError(
                f"cannot reach the model server at {self._safe(self._url)}: "
                f"{self._safe(str(error) or type(error).__name__)}"
            ) from None

    def _json(self, text: str) -> Any:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # nested past the parser's depth
            raise ModelError(
                f"model server answered with a body that is not JSON: {self._excerpt(text)}"
            ) from None

    def _safe(self, text: str) -> str:
        """Text that may echo our request, with the key and anything credential-like cut."""
        if self._api_key:
            text = text.replace(self._api_key, REDACTED)
        return redact_text(text)

    def _excerpt(self, text: str) -> str:
        """Redacted, then shortened: a cut first could split the key and hide it."""
        shortened = self._safe(" ".join(text.split()))
        if len(shortened) > _ERROR_EXCERPT:
            shortened = shortened[:_ERROR_EXCERPT] + "…"
        return shortened or "(empty body)"


def request_body(
    model: str, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
) -> dict[str, Any]:
    """The chat-completions request for one turn."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    messages.extend(_message(item) for item in history)
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            }
            for spec in tools
        ]
    return body


def _message(item: Item) -> dict[str, Any]:
    if item["type"] == "user":
        return {"role": "user", "content": item["content"]}
    if item["type"] == "tool_result":
        return {"role": "tool", "tool_call_id": item["tool_call_id"], "content": item["content"]}
    message: dict[str, Any] = {"role": "assistant", "content": item["content"]}
    if item["tool_calls"]:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call["arguments"], ensure_ascii=False),
                },
            }
            for call in item["tool_calls"]
        ]
    return message


def parse_response(payload: Any) -> ModelResponse:
    """A ModelResponse from a chat-completions answer; ModelError when it is unusable."""
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError("model answer has no choices[0].message") from None
    if not isinstance(message, dict):
        raise ModelError("model answer's choices[0].message is not an object")
    text = message.get("content") or message.get("refusal") or None
    if text is not None and not isinstance(text, str):
        raise ModelError("model answer's message content is not text")
    calls = [_tool_call(raw, index) for index, raw in enumerate(message.get("tool_calls") or [])]
    if text is None and not calls:
        raise ModelError("model answered with neither text nor tool calls")
    return ModelResponse(text=text, tool_calls=calls)


def _tool_call(raw: Any, index: int) -> ToolCall:
    where = f"tool call {index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise ModelError(f"model answer's {where} has no function")
    call_id, function = raw.get("id"), raw["function"]
    name = function.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise ModelError(f"model answer's {where} has no id")
    if not isinstance(name, str) or not name:
        raise ModelError(f"model answer's {where} ({call_id}) has no function name")
    arguments_text = function.get("arguments")
    if arguments_text is None or (isinstance(arguments_text, str) and not arguments_text.strip()):
        return ToolCall(id=call_id, name=name, arguments={})
    if not isinstance(arguments_text, str):
        raise ModelError(f"model answer's {where} ({name}) has arguments that are not a string")
    try:
        arguments = json.loads(arguments_text)
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise ModelError(
            f"model asked for {name} with arguments that are not valid JSON ({error.args[0]})"
        ) from None
    if not isinstance(arguments, dict):
        raise ModelError(f"model asked for {name} with arguments that are not a JSON object")
    return ToolCall(id=call_id, name=name, arguments=arguments)
