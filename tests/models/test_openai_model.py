"""OpenAIChatModel against a fake chat-completions server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.demo import build_ops_agent, ops_dependencies
from bot.errors import ConfigError, ModelError
from bot.runtime import Runner
from bot.runtime.model import Item, ToolSpec
from bot.runtime.openai_model import ModelRetry, OpenAIChatModel
from tests.models.fake_llm import FakeLLM, Reply, completion, function_call

API_KEY = "sk-test-0123456789abcdefghijklmnop"
DEPLOY_SPEC = ToolSpec(
    name="deploy_release",
    description="Deploy a release.",
    parameters={
        "type": "object",
        "properties": {"service": {"type": "string"}, "version": {"type": "string"}},
        "required": ["service", "version"],
    },
)


NO_RETRY = ModelRetry(attempts=1)


def model_for(llm: FakeLLM, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=llm.base_url, api_key=API_KEY, model="test-model", **options)


async def ask(model: OpenAIChatModel, history: list[Item] | None = None) -> Any:
    return await model.respond(
        instructions="Be careful.",
        history=history or [{"type": "user", "content": "deploy payments 1.2.3"}],
        tools=[DEPLOY_SPEC],
    )


async def test_history_and_tools_become_chat_messages(llm: FakeLLM) -> None:
    llm.replies.append(Reply.json(completion("All done.")))
    history: list[Item] = [
        {"type": "user", "content": "deploy payments 1.2.3"},
        {
            "type": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "name": "deploy_release",
                    "arguments": {"service": "payments", "version": "1.2.3"},
                }
            ],
        },
        {
            "type": "tool_result",
            "tool_call_id": "call_a",
            "name": "deploy_release",
            "content": "deployed payments 1.2.3",
            "is_error": False,
        },
    ]
    async with model_for(llm) as model:
        answer = await ask(model, history)

    assert answer.text == "All done."
    assert answer.tool_calls == []
    [request] = llm.requests
    assert request["model"] == "test-model"
    assert request["messages"] == [
        {"role": "system", "content": "Be careful."},
        {"role": "user", "content": "deploy payments 1.2.3"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {
                        "name": "deploy_release",
                        "arguments": '{"service": "payments", "version": "1.2.3"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "deployed payments 1.2.3"},
    ]
    assert request["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "deploy_release",
                "description": "Deploy a release.",
                "parameters": DEPLOY_SPEC.parameters,
            },
        }
    ]
    assert llm.headers[0]["Authorization"] == f"Bearer {API_KEY}"


async def test_tool_calls_come_back_with_their_provider_ids_and_parsed_arguments(
    llm: FakeLLM,
) -> None:
    calls = [
        function_call("call_X1", "deploy_release", '{"service": "payments", "version": "1.2.3"}'),
        function_call("call_X2", "get_status", ""),  # some servers send "" for no arguments
    ]
    llm.replies.append(Reply.json(completion(None, calls)))
    async with model_for(llm) as model:
        answer = await ask(model)

    assert answer.text is None
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("call_X1", "deploy_release", {"service": "payments", "version": "1.2.3"}),
        ("call_X2", "get_status", {}),
    ]


async def test_no_tools_means_no_tools_field(llm: FakeLLM) -> None:
    llm.replies.append(Reply.json(completion("hi")))
    async with model_for(llm) as model:
        await model.respond(instructions="", history=[{"type": "user", "content": "hi"}], tools=[])
    [request] = llm.requests
    assert "tools" not in request
    assert request["messages"] == [{"role": "user", "content": "hi"}]


async def test_an_http_error_is_a_model_error_without_the_key(llm: FakeLLM) -> None:
    echoed = json.dumps({"error": {"message": f"upstream exploded; you sent Bearer {API_KEY}"}})
    llm.replies.append(Reply(status=500, body=echoed))
    async with model_for(llm, retry=NO_RETRY) as model:
        with pytest.raises(ModelError, match="HTTP 500") as caught:
            await ask(model)
    assert "upstream exploded" in str(caught.value)
    assert API_KEY not in str(caught.value)


async def test_an_echoed_key_cut_by_the_excerpt_leaves_no_part_of_it(llm: FakeLLM) -> None:
    # the excerpt's cut falls inside the key: the key must go before the cut, or its
    # first half (no longer the whole key, nor credential-shaped) slips through
    lead = "x" * 280 + " "
    llm.replies.append(Reply(status=502, body=f"{lead}{API_KEY} end"))
    async with model_for(llm, retry=NO_RETRY) as model:
        with pytest.raises(ModelError, match="HTTP 502") as caught:
            await ask(model)
    assert API_KEY[:12] not in str(caught.value)


async def test_json_nested_past_the_parser_depth_is_a_model_error(llm: FakeLLM) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    llm.replies.append(Reply(body=deep))
    llm.replies.append(Reply.json(completion(tool_calls=[function_call("c1", "deploy", deep)])))
    async with model_for(llm) as model:
        with pytest.raises(ModelError, match="not JSON"):
            await ask(model)
        with pytest.raises(ModelError, match="not valid JSON"):
            await ask(model)


async def test_a_body_that_is_not_json_is_a_model_error(llm: FakeLLM) -> None:
    llm.replies.append(Reply(body="<html>gateway hiccup</html>"))
    async with model_for(llm) as model:
        with pytest.raises(ModelError, match=r"not JSON.*gateway hiccup"):
            await ask(model)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [('{"service": "payments",', "not valid JSON"), ('["payments"]', "not a JSON object")],
)
async def test_bad_tool_call_arguments_are_a_model_error(
    llm: FakeLLM, arguments: str, problem: str
) -> None:
    llm.replies.append(
        Reply.json(completion(None, [function_call("call_1", "deploy_release", arguments)]))
    )
    async with model_for(llm) as model:
        with pytest.raises(ModelError, match=f"deploy_release.*{problem}"):
            await ask(model)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"choices": []}, "no choices"),
        ({"error": "nope"}, "no choices"),
        (completion(None, None), "neither text nor tool calls"),
        (completion(None, [{"type": "function", "function": {"name": "x"}}]), "has no id"),
        (completion(None, [{"id": "c1", "type": "function"}]), "has no function"),
    ],
)
async def test_unusable_answers_are_model_errors(llm: FakeLLM, payload: Any, problem: str) -> None:
    llm.replies.append(Reply.json(payload))
    async with model_for(llm) as model:
        with pytest.raises(ModelError, match=problem):
            await ask(model)


async def test_a_server_that_never_answers_times_out(llm: FakeLLM) -> None:
    never = asyncio.Event()
    llm.replies.append(Reply(body="{}", hold=never))
    try:
        async with model_for(llm, timeout=0.2) as model:
            with pytest.raises(ModelError, match=r"did not answer within 0\.2s"):
                await ask(model)
    finally:
        never.set()  # lets the held handler finish so the server shuts down cleanly


async def test_a_refused_connection_is_a_model_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        model = OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, model="m")
        async with model:
            with pytest.raises(ModelError, match="cannot reach the model server") as caught:
                await ask(model)
    assert API_KEY not in str(caught.value)


async def test_a_caller_session_stays_open_and_an_owned_one_is_closed(llm: FakeLLM) -> None:
    llm.replies.extend([Reply.json(completion("one")), Reply.json(completion("two"))])
    async with aiohttp.ClientSession() as session:
        borrowed = model_for(llm, session=session)
        assert (await ask(borrowed)).text == "one"
        await borrowed.aclose()
        assert not session.closed

    owned = model_for(llm)
    assert (await ask(owned)).text == "two"
    await owned.aclose()
    await owned.aclose()  # idempotent
    with pytest.raises(ModelError, match="closed"):
        await ask(owned)


def test_configuration_is_checked_and_the_key_is_never_shown() -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:1/v1/", api_key=API_KEY, model="m")
    assert API_KEY not in repr(model)
    with pytest.raises(ConfigError, match="base URL"):
        OpenAIChatModel(base_url="127.0.0.1:1", api_key=API_KEY, model="m")
    with pytest.raises(ConfigError, match="timeout"):
        OpenAIChatModel(base_url="http://127.0.0.1:1", api_key=API_KEY, model="m", timeout=0)


async def test_the_ops_agent_runs_on_the_chat_model(llm: FakeLLM, tmp_path: Path) -> None:
    llm.replies.extend(
        [
            Reply.json(
                completion(None, [function_call("call_s", "get_status", '{"service": "api"}')])
            ),
            Reply.json(completion("api is running.")),
        ]
    )
    dependencies = ops_dependencies(
        {"OPS_API_TOKEN": "t0ken-for-tests", "APPROVALS_DEMO_EFFECTS": str(tmp_path / "fx.jsonl")}
    )
    async with model_for(llm) as model:
        result = await Runner.arun(build_ops_agent(model), "how is api?", dependencies=dependencies)

    assert result.final_output == "api is running."
    second = llm.requests[1]["messages"]
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == "call_s"
    assert second[-1]["content"].startswith("api: running")
    assert {tool["function"]["name"] for tool in llm.requests[0]["tools"]} == {
        "deploy_release",
        "restart_service",
        "set_config",
        "get_status",
    }
