"""The gateway end to end (tests/mcp/harness.py): a real MCP client over Streamable HTTP,
the real `approvals-bot serve`, a real stdio upstream that appends to an effects file,
and the fake Slack Web API."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import aiohttp
import mcp_types as types
import pytest

from tests.mcp.harness import (
    APPROVER,
    REQUESTER,
    Progress,
    Setup,
    abandon,
    decide,
    gateway,
    mcp_session,
    next_card,
    running,
    slack_driver,
    text_of,
)
from tests.polling import until
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import card_calls

pytestmark = pytest.mark.slow

DEPLOY = {"service": "api", "version": "1.2.3"}


def _tools(setup: Setup) -> list[str]:
    return [effect["tool"] for effect in setup.effects()]


def _audit(workdir: Path) -> list[tuple[str, dict[str, object]]]:
    with sqlite3.connect(workdir / "approvals.db") as database:
        rows = database.execute("SELECT kind, detail FROM audit_events ORDER BY seq").fetchall()
    return [(kind, json.loads(detail)) for kind, detail in rows]


async def test_a_read_only_tool_passes_through_and_a_gated_call_runs_once_when_approved(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[tools.ops__deploy]\napprovers = ["{APPROVER}"]\n', encoding="utf-8")
    async with running(setup, fake_slack, APPROVALS_POLICY=str(policy)) as bot:
        client, driver = bot.client, bot.driver
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ops__status", "ops__deploy", "ops__send_email"} <= tools
        status = await client.call_tool("ops__status", {"service": "api"})
        assert "status done" in text_of(status)
        assert not fake_slack.calls_to("chat.postMessage")  # no card, no thread for a read

        progress = Progress()
        call = asyncio.create_task(
            client.call_tool("ops__deploy", DEPLOY, progress_callback=progress)
        )
        card = await next_card(fake_slack)
        assert card.args["channel"] == "C0OPS"
        assert "Approve with changes" in card.text
        assert "1.2.3" in card.text
        assert "MCP client agent, upstream ops, tool deploy" in card.text
        assert _tools(setup) == ["status"]  # nothing ran before the decision
        await driver.click(card, "Approve", user="U0OUT", ts=card.answer["ts"])
        (refused,) = await fake_slack.wait_for("chat.postEphemeral")  # not a policy approver
        assert refused.args["user"] == "U0OUT"
        await decide(fake_slack, driver, card, "Approve", reason="CR-7")
        result = await call
        metrics_url = bot.url.replace("/mcp", "/metrics")
        async with aiohttp.ClientSession() as http, http.get(metrics_url) as response:
            metrics = await response.text()
    assert not result.is_error
    assert "deploy done" in text_of(result)
    assert _tools(setup) == ["status", "deploy"]
    for line in (
        'mcp_calls_total{upstream="ops"} 2.0',
        'mcp_gated_calls_total{upstream="ops"} 1.0',
        'mcp_decisions_total{decision="approved",upstream="ops"} 1.0',
        'mcp_upstream_up{upstream="ops"} 1.0',
        'mcp_upstream_latency_seconds_count{upstream="ops"} 2.0',
    ):
        assert line in metrics, line
    assert any("waiting for a person to decide approval" in m for m in progress.messages)
    assert len(card_calls(fake_slack)) == 1
    answer = await fake_slack.wait_for(
        "chat.postMessage", lambda c: "ran; its result went back" in c.text
    )
    assert answer[0].args["thread_ts"] == card.args["thread_ts"]
    kinds = [kind for kind, _ in _audit(tmp_path)]
    for kind in ("mcp_call", "requested", "decided", "executed", "mcp_result"):
        assert kind in kinds, kinds
    (asked,) = [detail for kind, detail in _audit(tmp_path) if kind == "mcp_call"]
    assert (asked["client"], asked["upstream"], asked["tool"]) == ("agent", "ops", "deploy")
    (outcome,) = [detail for kind, detail in _audit(tmp_path) if kind == "mcp_result"]
    assert outcome["outcome"] == "executed"


async def test_the_client_s_user_cannot_approve_and_a_rejection_returns_only_its_message(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with running(setup, fake_slack) as bot:
        client, driver = bot.client, bot.driver
        call = asyncio.create_task(client.call_tool("ops__deploy", DEPLOY))
        card = await next_card(fake_slack)
        await driver.click(card, "Approve", user=REQUESTER, ts=card.answer["ts"])
        (told,) = await fake_slack.wait_for("chat.postEphemeral")
        assert told.args["user"] == REQUESTER
        assert "someone else" in told.text
        assert not fake_slack.calls_to("views.open")
        await decide(
            fake_slack,
            driver,
            card,
            "Reject",
            reason="internal: the release train is frozen",
            message="Not now: deploys are frozen until Monday.",
        )
        result = await call
    assert result.is_error
    assert "deploys are frozen until Monday" in text_of(result)
    assert "release train" not in text_of(result)
    assert setup.effects() == []


async def test_past_its_wait_a_call_is_pending_and_its_retry_attaches_to_the_same_approval(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write(wait="1s")
    async with (
        gateway(setup.env(fake_slack)) as (served, url),
        slack_driver(served, fake_slack) as driver,
    ):
        async with mcp_session(url, setup.token, mode="legacy") as client:
            first = await client.call_tool("ops__deploy", DEPLOY)
        assert first.is_error
        card = await next_card(fake_slack)
        approval_id = card.args["blocks"][-1]["elements"][0]["value"]
        assert f"Approval {approval_id} is pending" in text_of(first)
        assert "same arguments" in text_of(first)

        async with mcp_session(url, setup.token, mode="legacy") as client:  # a new session
            second = await client.call_tool("ops__deploy", DEPLOY)
            assert f"Approval {approval_id} is pending" in text_of(second)
            altered = await client.call_tool("ops__deploy", {**DEPLOY, "version": "6.6.6"})
            assert f"Approval {approval_id}" not in text_of(altered)  # another call: asked
            await next_card(fake_slack, count=2)
            await decide(fake_slack, driver, card, "Approve")
            third = await client.call_tool("ops__deploy", DEPLOY)
            assert not third.is_error, text_of(third)
            assert "deploy done" in text_of(third)
            # the result was handed out: the same call now is a new call, asked again
            again = asyncio.create_task(client.call_tool("ops__deploy", DEPLOY))
            await next_card(fake_slack, count=3)
            await abandon(again)
    assert len(card_calls(fake_slack)) == 3
    assert _tools(setup) == ["deploy"]


async def test_a_2026_client_is_told_to_call_again_and_gets_the_result_in_one_call(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write(wait="1s")
    async with (
        gateway(setup.env(fake_slack)) as (served, url),
        slack_driver(served, fake_slack) as driver,
        mcp_session(url, setup.token, mode="auto") as client,
    ):
        assert client.protocol_version == "2026-07-28"
        waiting = await client.session.call_tool("ops__deploy", DEPLOY, allow_input_required=True)
        assert isinstance(waiting, types.InputRequiredResult)
        assert waiting.request_state is not None
        assert not waiting.input_requests

        progress = Progress()  # the SDK's own loop: it calls again with the state
        call = asyncio.create_task(
            client.call_tool(
                "ops__deploy",
                DEPLOY,
                progress_callback=progress,
                request_state=waiting.request_state,
            )
        )
        card = await next_card(fake_slack)

        async def rounds() -> bool | None:  # each round's request reports once at its start
            return True if len(progress.messages) >= 3 else None

        await until(rounds, "the client calling again past its waits")
        await decide(fake_slack, driver, card, "Approve")
        result = await call
    assert "deploy done" in text_of(result)
    assert len(card_calls(fake_slack)) == 1
    assert _tools(setup) == ["deploy"]


async def test_a_definition_changed_while_waiting_voids_the_approval_and_asks_again(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with running(setup, fake_slack) as bot:
        client, driver = bot.client, bot.driver
        call = asyncio.create_task(client.call_tool("ops__deploy", DEPLOY))
        first = await next_card(fake_slack)
        setup.describe("deploy", "Deploy a version, and drop the old database.")
        await decide(fake_slack, driver, first, "Approve")
        second = await next_card(fake_slack, count=2)
        assert "changed this tool's description" in second.text
        assert "drop the old database" in second.text
        assert second.args["thread_ts"] == first.args["thread_ts"]
        assert setup.effects() == []
        assert not call.done()
        await decide(fake_slack, driver, second, "Approve")
        result = await call
    assert "deploy done" in text_of(result)
    assert _tools(setup) == ["deploy"]


async def test_the_voided_approvals_card_says_it_is_void_and_why(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with running(setup, fake_slack) as bot:
        call = asyncio.create_task(bot.client.call_tool("ops__deploy", DEPLOY))
        first = await next_card(fake_slack)
        setup.describe("deploy", "Deploy a version, and drop the old database.")
        await decide(fake_slack, bot.driver, first, "Approve")
        second = await next_card(fake_slack, count=2)

        async def voided_card() -> Call | None:
            updates = [
                update
                for update in fake_slack.calls_to("chat.update")
                if update.args["ts"] == first.answer["ts"]
            ]
            return updates[-1] if updates and "Revoked" in updates[-1].text else None

        update = await until(voided_card, "the first card updated to say its approval is void")
        assert "Approve" not in json.dumps(
            [b for b in update.args["blocks"] if b["type"] == "actions"]
        )
        assert (
            "voided: upstream ops changed deploy (its description) after it was approved; "
            "it is asked again" in update.text
        )
        await decide(fake_slack, bot.driver, second, "Reject")
        assert (await call).is_error
    revoked = [detail for kind, detail in _audit(tmp_path) if kind == "revoked"]
    assert [detail["reason"] for detail in revoked] == [
        "voided: upstream ops changed deploy (its description) after it was approved; "
        "it is asked again"
    ]
    assert setup.effects() == []  # and no ledger row was claimed for the voided call
    with sqlite3.connect(tmp_path / "approvals.db") as database:
        assert database.execute("SELECT COUNT(*) FROM ledger").fetchone() == (0,)


async def test_a_wrong_or_missing_token_gets_401_is_counted_and_headers_name_nobody(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with gateway(setup.env(fake_slack)) as (served, url), aiohttp.ClientSession() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in ({}, {"Authorization": "Bearer abmcp_guess"}, {"Authorization": "Basic x"}):
            async with http.post(url, json=body, headers={**accept, **headers}) as response:
                assert response.status == 401
                assert "abmcp_guess" not in await response.text()
        async with http.get(url.replace("/mcp", "/metrics")) as response:
            metrics = await response.text()
        assert 'mcp_unauthorized_requests_total{reason="missing"} 2.0' in metrics
        assert 'mcp_unauthorized_requests_total{reason="invalid"} 1.0' in metrics
        assert not any("abmcp_guess" in line for line in served.log)

        spoofing = {"X-Slack-User-Id": APPROVER, "X-Requester": APPROVER, "X-Mcp-Client": "root"}
        async with mcp_session(url, setup.token, headers=spoofing) as client:
            call = asyncio.create_task(client.call_tool("ops__deploy", DEPLOY))
            await next_card(fake_slack)
            await abandon(call)
    with sqlite3.connect(tmp_path / "approvals.db") as database:
        assert database.execute("SELECT requester FROM runs").fetchall() == [(REQUESTER,)]


async def test_secrets_in_arguments_never_reach_slack_or_the_log(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    secret_key = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    email = {
        "to": "ops@example.com",
        "body": "the new db_password=hunter2-but-longer is live",
        "api_key": secret_key,
    }
    async with running(setup, fake_slack) as bot:
        client, driver = bot.client, bot.driver
        call = asyncio.create_task(client.call_tool("ops__send_email", email))
        card = await next_card(fake_slack)
        assert "Approve with changes" not in card.text  # its schema has a regex
        assert "cannot be checked safely" in card.text
        await decide(fake_slack, driver, card, "Approve")
        result = await call
        await fake_slack.wait_for("chat.postMessage", lambda c: "its result went back" in c.text)
    assert not result.is_error
    (sent,) = setup.effects()
    assert sent["arguments"]["api_key"] == secret_key  # the upstream got the real value
    slack_text = json.dumps([dict(call.args) for call in fake_slack.calls])
    for secret in (secret_key, "hunter2-but-longer"):
        assert secret not in slack_text
        assert not any(secret in line for line in bot.served.log)


async def test_a_huge_result_is_not_relayed_but_the_call_ran_once(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with gateway(setup.env(fake_slack)) as (_, url), mcp_session(url, setup.token) as client:
        result = await client.call_tool("ops__huge", {"size": 2_000_000})
    assert result.is_error
    assert "over the gateway's limit" in text_of(result)
    assert _tools(setup) == ["huge"]


async def test_approve_with_changes_checks_the_new_arguments_against_the_tool_schema(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write()
    async with running(setup, fake_slack) as bot:
        client, driver = bot.client, bot.driver
        call = asyncio.create_task(client.call_tool("ops__deploy", DEPLOY))
        card = await next_card(fake_slack)
        await driver.click(card, "Approve with changes", user=APPROVER, ts=card.answer["ts"])
        (opened,) = await fake_slack.wait_for("views.open")
        view = opened.args["view"]
        wrong = {"service": "api", "version": 7}
        refused = await driver.submit(view, user=APPROVER, reason="r", message=json.dumps(wrong))
        assert refused.json()["response_action"] == "errors"
        assert "version" in refused.json()["errors"]["arguments"]
        extra = {**DEPLOY, "force": True}  # additionalProperties: false
        refused = await driver.submit(view, user=APPROVER, reason="r", message=json.dumps(extra))
        assert refused.json()["response_action"] == "errors"
        changed = {"service": "api", "version": "1.2.4"}
        ok = await driver.submit(view, user=APPROVER, reason="hotfix", message=json.dumps(changed))
        assert ok.status == 200
        result = await call
    assert [effect["arguments"] for effect in setup.effects()] == [changed]
    assert "an approver changed this call's arguments" in text_of(result)
    assert '"version":"1.2.4"' in text_of(result)


async def test_readyz_reports_each_upstream_and_one_down_does_not_fail_readiness(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    path = setup.write()
    path.write_text(
        path.read_text(encoding="utf-8")
        + '\n[upstreams.broken]\ncommand = "/nonexistent/mcp-server"\n',
        encoding="utf-8",
    )
    async with gateway(setup.env(fake_slack)) as (_, url), aiohttp.ClientSession() as http:

        async def ready() -> dict[str, object] | None:
            async with http.get(url.replace("/mcp", "/readyz")) as response:
                body = await response.json()
            return body if response.status == 200 else None

        body = await until(ready, "/readyz answering 200")
        upstreams = body["upstreams"]
        assert isinstance(upstreams, dict)
        assert upstreams["ops"]["up"] is True
        assert upstreams["broken"]["up"] is False
        assert "down" in upstreams["broken"]["detail"]


async def test_a_pending_mcp_call_is_listed_like_any_other(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write(wait="1s")
    env = setup.env(fake_slack)
    async with gateway(env) as (_, url):
        async with mcp_session(url, setup.token, mode="legacy") as client:
            pending = await client.call_tool("ops__deploy", DEPLOY)
        assert "is pending" in text_of(pending)
    listing = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "approvals", "list", env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await listing.communicate()
    assert listing.returncode == 0
    assert "ops__deploy" in out.decode()
    assert REQUESTER in out.decode()


async def test_an_audit_only_tool_runs_at_once_through_the_gateway_and_is_carded_after(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    """`mode = "audit"` on an exposed name: the client gets the result without anyone
    deciding, the call is in the ledger and the audit, and a card without buttons says
    what ran and its result."""
    setup = Setup(workdir=tmp_path)
    setup.write()
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools.ops__deploy]\nmode = "audit"\n', encoding="utf-8")
    async with running(setup, fake_slack, APPROVALS_POLICY=str(policy)) as bot:
        result = await bot.client.call_tool("ops__deploy", DEPLOY)
        assert not result.is_error
        assert "deploy done" in text_of(result)
        (card,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: "ran without waiting" in c.text
        )
    assert _tools(setup) == ["deploy"]  # once, with nobody asked
    assert card_calls(fake_slack) == []  # no card ever waited with buttons
    assert fake_slack.calls_to("views.open") == []
    assert "1.2.3" in card.text
    assert "*Result:*" in card.text
    assert "deploy done" in card.text
    audit = _audit(tmp_path)
    assert ("decided", "audit") in [(kind, detail.get("via")) for kind, detail in audit]
    (outcome,) = [detail for kind, detail in audit if kind == "mcp_result"]
    assert outcome["outcome"] == "executed"
