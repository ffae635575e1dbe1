"""The OpenAI-compatible model tries a 429 or a 5xx again, within a bound, and says so
when it gives up (fake chat-completions server on 127.0.0.1, port 0)."""

from __future__ import annotations

import pytest

from bot.errors import ModelError
from bot.runtime.openai_model import ModelRetry, OpenAIChatModel
from tests.models.fake_llm import FakeLLM, Reply, completion

FAST = ModelRetry(attempts=4, first_delay=0.001, max_delay=5.0)


def model_for(llm: FakeLLM, retries: list[str], retry: ModelRetry = FAST) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=llm.base_url, api_key="k", model="m", retry=retry, on_retry=retries.append
    )


async def ask(model: OpenAIChatModel) -> str | None:
    answer = await model.respond(
        instructions="", history=[{"type": "user", "content": "hi"}], tools=[]
    )
    return answer.text


async def test_a_429_is_tried_again_after_its_retry_after(llm: FakeLLM) -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    llm.replies += [
        Reply(status=429, body='{"error": "slow down"}', headers={"Retry-After": "2"}),
        Reply.json(completion("hello")),
    ]
    retries: list[str] = []
    retry = ModelRetry(attempts=4, first_delay=0.001, max_delay=5.0, sleep=sleep)
    async with model_for(llm, retries, retry) as model:
        assert await ask(model) == "hello"
    assert (retries, waited, len(llm.requests)) == (["429"], [2.0], 2)


async def test_5xx_until_the_bound_is_one_clear_failure(llm: FakeLLM) -> None:
    llm.replies += [Reply(status=503, body="busy")] * 4
    retries: list[str] = []
    async with model_for(llm, retries) as model:
        with pytest.raises(ModelError, match=r"answered HTTP 503 after 4 tries: busy"):
            await ask(model)
    assert retries == ["503"] * 3
    assert len(llm.requests) == 4


async def test_a_retry_after_past_the_bound_fails_at_once(llm: FakeLLM) -> None:
    llm.replies.append(Reply(status=429, body="later", headers={"Retry-After": "3600"}))
    retries: list[str] = []
    async with model_for(llm, retries) as model:
        asked = r"HTTP 429 \(it asked to wait 3600 s, more than 5 s\)"
        with pytest.raises(ModelError, match=asked):
            await ask(model)
    assert (retries, len(llm.requests)) == ([], 1)


async def test_a_client_error_is_not_tried_again(llm: FakeLLM) -> None:
    llm.replies.append(Reply(status=400, body="bad request"))
    retries: list[str] = []
    async with model_for(llm, retries) as model:
        with pytest.raises(ModelError, match=r"answered HTTP 400: bad request"):
            await ask(model)
    assert (retries, len(llm.requests)) == ([], 1)
