"""`serve` and `socket` as real processes at start-up: what they say when they cannot
start (one line, exit code 2, no traceback, no leaked session), how they wait for an
unreachable Slack, what the start-up line names, and the probes once they serve."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

import aiohttp
import pytest

from bot.adapters.lazy import builtin_agents
from tests.polling import until
from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, serving

pytestmark = pytest.mark.slow
SECONDS = 30.0


async def finished(command: str, env: Mapping[str, str]) -> tuple[int, list[str]]:
    """Run `approvals-bot <command>` to its end: (exit code, stderr lines)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", command, env=dict(env), stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(SECONDS):
        _, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode().splitlines()


async def stopped_after(
    command: str,
    env: Mapping[str, str],
    enough: Callable[[list[str]], bool],
    meanwhile: Callable[[list[str]], Awaitable[None]] | None = None,
) -> tuple[int, list[str]]:
    """Start `approvals-bot <command>`, read its stderr until `enough(lines)`, do
    `meanwhile`, then stop it with SIGTERM: (exit code, every stderr line)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", command, env=dict(env), stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    lines: list[str] = []
    async with asyncio.timeout(SECONDS):
        while not enough(lines):
            line = (await process.stderr.readline()).decode()
            assert line, lines
            lines.append(line.rstrip("\n"))
        if meanwhile is not None:
            await meanwhile(lines)
        process.send_signal(signal.SIGTERM)
        rest, _ = await asyncio.gather(process.stderr.read(), process.wait())
    assert process.returncode is not None
    return process.returncode, lines + rest.decode().splitlines()


def _url_after(words: str, lines: list[str]) -> str | None:
    """The URL a start-up line gives after `words` (None: no such line yet)."""
    for line in lines:
        if match := re.search(rf"{words} (http://[^\s\"]+)", line):
            return match.group(1)
    return None


def assert_one_error_line(code: int, lines: list[str], expected: str) -> None:
    assert code == 2, lines
    assert lines[-1].startswith("approvals-bot: error: "), lines
    assert re.search(expected, lines[-1]), lines
    assert not any("Traceback" in line or "Unclosed" in line for line in lines), lines


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
async def listening_socket() -> AsyncIterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


async def test_a_token_slack_refuses_stops_start_up(fake_slack: FakeSlack, tmp_path: Path) -> None:
    fake_slack.fail("auth.test", error="invalid_auth")
    code, lines = await finished("serve", serve_env(fake_slack, tmp_path))
    assert_one_error_line(
        code, lines, r"^approvals-bot: error: SLACK_BOT_TOKEN rejected by Slack: invalid_auth$"
    )
    listening, _ = lines  # the probes listened while Slack was asked
    assert re.fullmatch(r"approvals-bot: listening at http://127\.0\.0\.1:\d+ .*", listening)


async def test_a_port_in_use_is_one_line(
    fake_slack: FakeSlack, tmp_path: Path, listening_socket: int
) -> None:
    env = serve_env(fake_slack, tmp_path, PORT=str(listening_socket))
    code, lines = await finished("serve", env)
    assert_one_error_line(
        code, lines, rf"cannot listen on 127\.0\.0\.1:{listening_socket} \(HOST, PORT\): .*in use"
    )


async def test_a_host_not_of_this_machine_is_one_line(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, HOST="192.0.2.1")  # TEST-NET-1: nobody's address
    code, lines = await finished("serve", env)
    assert_one_error_line(code, lines, r"cannot listen on 192\.0\.2\.1:0 \(HOST, PORT\): ")


async def test_a_directory_the_bot_may_not_write_is_one_line(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):  # root writes anywhere; sysfs refuses even root
        locked = Path("/sys")
    env = serve_env(fake_slack, tmp_path, APPROVALS_DATABASE_URL=str(locked / "approvals.db"))
    code, lines = await finished("serve", env)
    assert_one_error_line(code, lines, rf"cannot create the database {locked}/approvals\.db: ")


async def test_an_unreachable_slack_is_tried_again_one_line_a_try(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, SLACK_API_URL=f"http://127.0.0.1:{closed_port()}/api/")
    code, lines = await stopped_after(
        "serve", env, lambda lines: sum("Slack unreachable" in line for line in lines) >= 2
    )
    assert code == 0, lines
    tries = [line for line in lines if "Slack unreachable" in line]
    assert "trying again in 1 s (try 2)" in tries[0]
    assert "trying again in 2 s (try 3)" in tries[1]
    assert all(" WARNING bot.slack.surface: " in line for line in tries)
    # one line a try: slack_sdk's own retry line (INFO) is not there
    assert [line for line in lines if "auth.test" in line] == tries
    assert not any("A retry handler found" in line for line in lines), lines
    assert not any("Traceback" in line or "Unclosed" in line for line in lines), lines


async def test_the_probes_answer_at_once_and_say_what_the_bot_waits_for(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, SLACK_API_URL=f"http://127.0.0.1:{closed_port()}/api/")
    answers: list[dict[str, object]] = []

    async def probe(lines: list[str]) -> None:
        base = _url_after("listening at", lines)
        async with aiohttp.ClientSession() as session:

            async def waiting_for_slack() -> dict[str, object] | None:
                async with session.get(f"{base}/readyz") as ready:
                    assert ready.status == 503
                    answer: dict[str, object] = await ready.json()
                return answer if "auth.test failed" in str(answer["reason"]) else None

            answers.append(await until(waiting_for_slack, "/readyz never said why it waits"))
            async with session.get(f"{base}/healthz") as health:
                assert health.status == 200
            async with session.post(f"{base}/slack/events", data=b"{}") as events:
                assert (events.status, await events.json()) == (503, {"error": "starting"})

    code, lines = await stopped_after(
        "serve", env, lambda lines: _url_after("listening at", lines) is not None, probe
    )
    assert code == 0, lines
    [answer] = answers
    assert answer["ready"] is False
    reason = str(answer["reason"])
    assert reason.startswith("waiting for Slack: Slack auth.test failed: Cannot connect to host")
    assert re.search(r"; trying again in \d+ s$", reason), reason
    assert not any("GET /readyz" in line or "GET /healthz" in line for line in lines)  # DEBUG
    assert any('"POST /slack/events HTTP/1.1" 503' in line for line in lines), lines


async def test_the_start_up_line_names_what_serves_and_the_probes_answer(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, LOG_FORMAT="json")
    async with serving(env) as served, aiohttp.ClientSession() as session:
        base = served.url.removesuffix("/slack/events")
        async with session.get(f"{base}/readyz") as ready:
            assert (ready.status, await ready.json()) == (200, {"ready": True})
        async with session.get(f"{base}/metrics") as metrics:
            assert metrics.status == 200
            assert "approval_pending_oldest_age_seconds 0.0" in await metrics.text()
    assert not any("Traceback" in line or "Unclosed" in line for line in served.log)
    assert not any("will be unused" in line for line in served.log)  # Bolt's token warning
    assert not any("GET /readyz" in line or "GET /metrics" in line for line in served.log)
    objects = [json.loads(line) for line in served.log]  # LOG_FORMAT=json: every line
    assert all(isinstance(one, dict) and {"level", "message"} <= one.keys() for one in objects)
    [started] = [one for one in objects if "serving Slack at" in one["message"]]
    assert (started["level"], started["logger"]) == ("INFO", "approvals-bot")
    database = tmp_path / "approvals.db"
    installed = [agent.name for agent in builtin_agents() if agent.installed()]  # the extras
    agents = ", ".join(["ops", *installed])
    assert started["message"].endswith(
        f"(database {database}, policy built-in defaults, agents {agents})"
    )


async def test_json_logs_make_every_stderr_line_an_object_errors_too(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, LOG_FORMAT="json")
    env.pop("SLACK_SIGNING_SECRET")
    code, lines = await finished("serve", env)
    assert code == 2
    [error] = [json.loads(line) for line in lines]
    assert (error["level"], error["message"]) == ("ERROR", "error: SLACK_SIGNING_SECRET is not set")

    fake_slack.fail("auth.test", error="invalid_auth")
    code, lines = await finished("serve", serve_env(fake_slack, tmp_path, LOG_FORMAT="json"))
    assert code == 2
    messages = [json.loads(line)["message"] for line in lines]
    assert messages[-1] == "error: SLACK_BOT_TOKEN rejected by Slack: invalid_auth"


async def test_json_logs_while_slack_is_unreachable(fake_slack: FakeSlack, tmp_path: Path) -> None:
    env = serve_env(
        fake_slack,
        tmp_path,
        LOG_FORMAT="json",
        SLACK_API_URL=f"http://127.0.0.1:{closed_port()}/api/",
    )
    code, lines = await stopped_after(
        "serve", env, lambda lines: sum("Slack unreachable" in line for line in lines) >= 2
    )
    assert code == 0, lines
    objects = [json.loads(line) for line in lines]
    assert [one["level"] for one in objects if "Slack unreachable" in one["message"]] == [
        "WARNING",
        "WARNING",
    ]
    assert objects[-1]["message"] == "stopped while starting"


async def test_socket_mode_serves_the_probes_on_its_own_port(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path, SLACK_APP_TOKEN="xapp-1-socket")

    async def probe(lines: list[str]) -> None:
        base = _url_after("probes and metrics at", lines)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/readyz") as ready:
                assert ready.status == 200
            async with session.get(f"{base}/metrics") as metrics:
                assert "slack_api_errors_total" in await metrics.text()

    code, lines = await stopped_after(
        "socket", env, lambda lines: _url_after("probes and metrics at", lines) is not None, probe
    )
    assert code == 0, lines
    assert not any("Traceback" in line or "Unclosed" in line for line in lines), lines


async def test_socket_mode_with_a_refused_app_token_is_one_line(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake_slack.fail("apps.connections.open", error="invalid_auth")
    env = serve_env(fake_slack, tmp_path, SLACK_APP_TOKEN="xapp-1-socket")
    code, lines = await finished("socket", env)
    assert_one_error_line(code, lines, r"SLACK_APP_TOKEN rejected by Slack: invalid_auth$")


async def test_socket_mode_says_once_a_try_that_it_cannot_connect(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake_slack.socket_url = f"ws://127.0.0.1:{closed_port()}/socket"
    env = serve_env(fake_slack, tmp_path, SLACK_APP_TOKEN="xapp-1-socket")
    code, lines = await stopped_after(
        "socket", env, lambda lines: any("Failed to connect" in line for line in lines)
    )
    assert code == 0, lines
    assert not any("Traceback" in line or "Unclosed" in line for line in lines), lines
