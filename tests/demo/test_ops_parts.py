"""The ops agent's parts: task parsing, dependencies from the environment, the effects
file as a downstream (dedupe, refusal, concurrent appends) and the model choice."""

from __future__ import annotations

import asyncio
import hashlib
import tracemalloc
from pathlib import Path

import pytest

from bot.agents import model_from_env
from bot.demo import EffectsFile, OfflineOpsModel, ops_dependencies, parse_task
from bot.demo import effects as effects_module
from bot.demo.effects import Effect
from bot.demo.offline_model import Command
from bot.errors import ConfigError, InputError
from bot.runtime.openai_model import OpenAIChatModel


def test_commands_are_parsed_case_insensitively_and_joined_by_and() -> None:
    assert parse_task("Deploy payments 1.2.3 and RESTART api and set web motd=hello world") == [
        Command(tool_name="deploy_release", arguments={"service": "payments", "version": "1.2.3"}),
        Command(tool_name="restart_service", arguments={"service": "api"}),
        Command(
            tool_name="set_config",
            arguments={"service": "web", "key": "motd", "value": "hello world"},
        ),
    ]
    assert parse_task("status api") == [
        Command(tool_name="get_status", arguments={"service": "api"})
    ]


@pytest.mark.parametrize(
    ("task", "not_understood"),
    [
        ("", ""),
        ("deploy payments", "deploy payments"),
        ("status api and reboot everything", "reboot everything"),
        ("set api key_without_value", "set api key_without_value"),
    ],
)
def test_the_first_part_not_understood_is_named(task: str, not_understood: str) -> None:
    assert parse_task(task) == not_understood


async def test_a_misunderstood_secret_is_not_echoed_back() -> None:
    answer = await OfflineOpsModel().respond(
        instructions="",
        history=[{"type": "user", "content": "sett payments password=hunter2"}],
        tools=[],
    )
    assert answer.text is not None
    assert "hunter2" not in answer.text
    assert "password=«redacted»" in answer.text


def test_dependencies_come_from_the_environment(tmp_path: Path) -> None:
    deps = ops_dependencies(
        {
            "OPS_API_TOKEN": "tok-123",
            "APPROVALS_DEMO_EFFECTS": str(tmp_path / "fx.jsonl"),
            "OPS_DEMO_LATENCY": "0.5",
        }
    )["ops"]
    assert deps.api_token == "tok-123"
    assert deps.effects.path == tmp_path / "fx.jsonl"
    assert deps.latency_seconds == 0.5
    assert "tok-123" not in repr(deps)


def test_without_a_token_each_process_gets_a_random_one() -> None:
    first = ops_dependencies({})["ops"]
    second = ops_dependencies({})["ops"]
    assert first.api_token.startswith("ops-demo-")
    assert first.api_token != second.api_token
    assert first.effects.path == Path("demo-effects.jsonl")
    assert first.latency_seconds == 0


@pytest.mark.parametrize("latency", ["soon", "-1", "nan", "inf"])
def test_a_bad_latency_is_a_config_error_naming_the_variable(latency: str) -> None:
    with pytest.raises(ConfigError, match="OPS_DEMO_LATENCY"):
        ops_dependencies({"OPS_DEMO_LATENCY": latency})


def effect(key: str, version: str = "1.0", *, idempotent: bool = True) -> Effect:
    # Stands in for the call's keyed digest: one per (key, arguments), as the run's is.
    digest = hashlib.sha256(f"{key}/{version}".encode()).hexdigest()
    return Effect(
        tool="deploy_release",
        arguments={"service": "api", "version": version},
        execution_key=key,
        digest=digest,
        idempotent=idempotent,
        api_token="t",
    )


async def test_the_downstream_answers_a_known_key_with_its_first_result(tmp_path: Path) -> None:
    effects = EffectsFile(tmp_path / "deep" / "fx.jsonl")
    first = await effects.apply(effect("k1"), "deployed api 1.0 at 10:00")
    again = await effects.apply(effect("k1"), "deployed api 1.0 at 10:05")
    other = await effects.apply(effect("k2"), "deployed api 1.0 at 10:06")

    assert (first.result, first.duplicate) == ("deployed api 1.0 at 10:00", False)
    assert (again.result, again.duplicate) == ("deployed api 1.0 at 10:00", True)
    assert not other.duplicate
    assert [line["duplicate"] for line in await effects.lines()] == [False, True, False]


async def test_a_key_reused_with_other_arguments_is_refused(tmp_path: Path) -> None:
    effects = EffectsFile(tmp_path / "fx.jsonl")
    await effects.apply(effect("k1", "1.0"), "ok")
    with pytest.raises(InputError, match="idempotency key k1 was already used"):
        await effects.apply(effect("k1", "2.0"), "ok")
    assert len(await effects.lines()) == 1


async def test_without_an_idempotency_key_every_call_applies_again(tmp_path: Path) -> None:
    effects = EffectsFile(tmp_path / "fx.jsonl")
    await effects.apply(effect("k1", idempotent=False), "restarted")
    second = await effects.apply(effect("k1", idempotent=False), "restarted")
    assert not second.duplicate
    assert len(await effects.lines()) == 2


async def test_concurrent_appends_never_interleave_and_apply_a_key_once(tmp_path: Path) -> None:
    effects = EffectsFile(tmp_path / "fx.jsonl")
    distinct = [effects.apply(effect(f"key-{n}"), "x" * 5000) for n in range(40)]
    same = [effects.apply(effect("shared"), f"attempt {n}") for n in range(20)]

    await asyncio.gather(*distinct, *same)

    lines = await effects.lines()  # every line parses: no torn or interleaved writes
    assert len(lines) == 60
    shared = [line for line in lines if line["execution_key"] == "shared"]
    assert sum(not line["duplicate"] for line in shared) == 1
    assert len({line["result"] for line in shared}) == 1


def test_the_offline_model_is_the_default() -> None:
    assert isinstance(model_from_env({}), OfflineOpsModel)
    assert isinstance(model_from_env({"APPROVALS_MODEL": "Offline"}), OfflineOpsModel)


async def test_the_openai_model_needs_its_variables() -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL"):
        model_from_env({"APPROVALS_MODEL": "openai"})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        model_from_env(
            {
                "APPROVALS_MODEL": "openai",
                "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                "OPENAI_MODEL": "m",
            }
        )
    with pytest.raises(ConfigError, match="OPENAI_TIMEOUT_SECONDS"):
        model_from_env(
            {
                "APPROVALS_MODEL": "openai",
                "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                "OPENAI_API_KEY": "k",
                "OPENAI_MODEL": "m",
                "OPENAI_TIMEOUT_SECONDS": "0",
            }
        )
    model = model_from_env(
        {
            "APPROVALS_MODEL": "openai",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "OPENAI_API_KEY": "k",
            "OPENAI_MODEL": "m",
        }
    )
    assert isinstance(model, OpenAIChatModel)
    await model.aclose()


def test_an_unknown_model_choice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="APPROVALS_MODEL must be 'offline' or 'openai'"):
        model_from_env({"APPROVALS_MODEL": "gpt"})


async def test_a_corrupted_effects_file_is_a_clear_error_that_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fx.jsonl"
    path.write_text('{"tool": "deploy_release"}\nnot json\n')
    with pytest.raises(InputError, match=r"fx\.jsonl:2 is not a JSON object"):
        await EffectsFile(path).apply(effect("k1"), "ok")
    assert path.read_text() == '{"tool": "deploy_release"}\nnot json\n'


async def test_a_key_another_process_applied_is_recognised_after_this_one_read_the_file(
    tmp_path: Path,
) -> None:
    """Two replicas share one downstream: each remembers what it has read and reads only
    what was appended since, by itself or by the other."""
    path = tmp_path / "fx.jsonl"
    here, there = EffectsFile(path), EffectsFile(path)
    await here.apply(effect("k1"), "first")
    await there.apply(effect("k2"), "second")  # `there` has read k1's line by now
    again = await there.apply(effect("k1"), "not this")
    back = await here.apply(effect("k2"), "nor this")
    assert (again.result, again.duplicate) == ("first", True)
    assert (back.result, back.duplicate) == ("second", True)
    assert [line["duplicate"] for line in await here.lines()] == [False, False, True, True]


async def test_a_replaced_effects_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "fx.jsonl"
    effects = EffectsFile(path)
    await effects.apply(effect("k1"), "before")
    path.unlink()  # moved away by a person: a new downstream
    fresh = await effects.apply(effect("k1"), "after")
    assert (fresh.result, fresh.duplicate) == ("after", False)


async def test_a_damaged_line_appended_later_is_named_by_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "fx.jsonl"
    effects = EffectsFile(path)
    await effects.apply(effect("k1"), "ok")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    for _ in range(2):  # and again on the next call: the read never moves past it
        with pytest.raises(InputError, match=r"fx\.jsonl:2 is not a JSON object"):
            await effects.apply(effect("k2"), "ok")


async def test_the_downstream_keeps_two_numbers_a_key_not_its_line(tmp_path: Path) -> None:
    """A soak's server grew 2 KiB a run while the index held every parsed line; what it
    keeps per key must not grow with the line (here 2,000 characters of arguments)."""
    effects = EffectsFile(tmp_path / "fx.jsonl")
    await effects.apply(effect("warm", "v" * 2000), "ok")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(300):
            effects._apply(effect(f"key-{n}", "v" * 2000), "deployed")
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept / 300 < 200, f"{kept / 300:.0f} bytes kept per key"
    again = await effects.apply(effect("key-7", "v" * 2000), "not this")
    assert (again.result, again.duplicate) == ("deployed", True)


async def test_keys_that_share_an_index_slot_are_still_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(effects_module, "_slot", lambda tool, key: 7)  # every key in one slot
    effects = EffectsFile(tmp_path / "fx.jsonl")
    await effects.apply(effect("k1"), "first")
    second = await effects.apply(effect("k2"), "second")
    again = await effects.apply(effect("k2"), "not this")
    assert not second.duplicate
    assert (again.result, again.duplicate) == ("second", True)
