"""The stand-in's Web API, called by the real slack_sdk client as the bot calls it: it
answers as Slack does and refuses what Slack refuses, so what works in the console does
not fail in a workspace for a reason the console hid."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.devconsole import DevConsole, Secrets
from bot.devconsole.state import TRIGGER_SECONDS
from bot.devconsole.workspace import BOT_USER_ID, CHANNEL_ID

MODAL = {
    "type": "modal",
    "callback_id": "decide",
    "title": {"type": "plain_text", "text": "Approve tool call"},
    "submit": {"type": "plain_text", "text": "Approve"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Reason"},
            "element": {"type": "plain_text_input", "action_id": "reason", "max_length": 500},
        }
    ],
}


@pytest.fixture
async def client(console: DevConsole, shared: Secrets) -> AsyncIterator[AsyncWebClient]:
    async with aiohttp.ClientSession() as session:
        yield AsyncWebClient(token=shared.bot_token, base_url=console.api_url, session=session)


async def refused(call: Any) -> tuple[str, list[str]]:
    with pytest.raises(SlackApiError) as raised:
        await call
    data = raised.value.response.data
    return data["error"], data.get("response_metadata", {}).get("messages", [])


async def test_auth_test_names_the_workspace_the_payloads_come_from(
    client: AsyncWebClient,
) -> None:
    answer = await client.auth_test()
    assert (answer["team_id"], answer["user_id"], answer["app_id"]) == (
        "T0DEVCONSOLE", BOT_USER_ID, "A0DEVCONSOLE",
    )  # fmt: skip


async def test_a_token_other_than_this_runs_is_refused(console: DevConsole) -> None:
    async with aiohttp.ClientSession() as session:
        wrong = AsyncWebClient(token="xoxb-guessed", base_url=console.api_url, session=session)
        assert (await refused(wrong.auth_test()))[0] == "invalid_auth"
        none = AsyncWebClient(base_url=console.api_url, session=session)
        assert (await refused(none.auth_test()))[0] == "not_authed"
    assert [call.error for call in console.state.log] == ["invalid_auth", "not_authed"]


async def test_a_trigger_opens_one_modal_within_three_seconds(
    console: DevConsole, client: AsyncWebClient
) -> None:
    now = [100.0]
    console.state.clock = lambda: now[0]
    trigger = console.state.issue_trigger("U0ALICE")
    opened = await client.views_open(trigger_id=trigger, view=MODAL)
    assert opened["view"]["id"] == console.state.stacks["U0ALICE"][0].id
    assert (await refused(client.views_open(trigger_id=trigger, view=MODAL)))[0] == (
        "invalid_trigger_id"
    )
    late = console.state.issue_trigger("U0ALICE")
    now[0] += TRIGGER_SECONDS + 0.1
    assert (await refused(client.views_open(trigger_id=late, view=MODAL)))[0] == (
        "expired_trigger_id"
    )
    assert (await refused(client.views_open(trigger_id="made-up", view=MODAL)))[0] == (
        "invalid_trigger_id"
    )


async def test_views_update_refuses_a_stale_hash_and_an_unknown_view(
    console: DevConsole, client: AsyncWebClient
) -> None:
    opened = await client.views_open(trigger_id=console.state.issue_trigger("U0BOB"), view=MODAL)
    view_id, first_hash = opened["view"]["id"], opened["view"]["hash"]
    updated = await client.views_update(view_id=view_id, hash=first_hash, view=MODAL)
    assert updated["view"]["hash"] != first_hash
    stale = client.views_update(view_id=view_id, hash=first_hash, view=MODAL)
    assert (await refused(stale))[0] == "hash_conflict"
    assert (await refused(client.views_update(view_id="V404", view=MODAL)))[0] == "not_found"


async def test_a_fourth_pushed_view_is_refused(console: DevConsole, client: AsyncWebClient) -> None:
    await client.views_open(trigger_id=console.state.issue_trigger("U0BOB"), view=MODAL)
    for _ in range(2):
        await client.views_push(trigger_id=console.state.issue_trigger("U0BOB"), view=MODAL)
    fourth = client.views_push(trigger_id=console.state.issue_trigger("U0BOB"), view=MODAL)
    assert (await refused(fourth))[0] == "push_limit_reached"
    assert len(console.state.stacks["U0BOB"]) == 3


async def test_an_ephemeral_message_reaches_channel_members_only(
    console: DevConsole, client: AsyncWebClient
) -> None:
    await client.chat_postEphemeral(channel=CHANNEL_ID, user="U0ALICE", text="only you")
    outsider = client.chat_postEphemeral(channel=CHANNEL_ID, user="U0OLIVE", text="only you")
    assert (await refused(outsider))[0] == "user_not_in_channel"
    stranger = client.chat_postEphemeral(channel=CHANNEL_ID, user="U0NOBODY", text="x")
    assert (await refused(stranger))[0] == "user_not_found"
    assert [(m.text, m.only_for) for m in console.state.messages] == [("only you", "U0ALICE")]


async def test_the_bot_updates_its_own_messages_only(
    console: DevConsole, client: AsyncWebClient
) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL_ID, text="card")
    await client.chat_update(channel=CHANNEL_ID, ts=posted["ts"], text="decided")
    assert console.state.messages[0].text == "decided"
    assert console.state.messages[0].edited
    theirs = console.state.post(channel=CHANNEL_ID, user="U0RILEY", text="hi")
    update = client.chat_update(channel=CHANNEL_ID, ts=theirs.ts, text="edited by the bot")
    assert (await refused(update))[0] == "cant_update_message"
    gone = client.chat_update(channel=CHANNEL_ID, ts="1.000001", text="x")
    assert (await refused(gone))[0] == "message_not_found"
    elsewhere = client.chat_postMessage(channel="C0ELSEWHERE", text="x")
    assert (await refused(elsewhere))[0] == "channel_not_found"


async def test_blocks_past_block_kits_limits_fail_as_in_slack(
    console: DevConsole, client: AsyncWebClient
) -> None:
    long_section = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    code, messages = await refused(
        client.chat_postMessage(channel=CHANNEL_ID, text="t", blocks=long_section)
    )
    assert code == "invalid_blocks"
    assert messages == [
        "[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]"
    ]
    titled = {**MODAL, "title": {"type": "plain_text", "text": "A title far too long for it"}}
    trigger = console.state.issue_trigger("U0BOB")
    code, messages = await refused(client.views_open(trigger_id=trigger, view=titled))
    assert code == "invalid_arguments"
    assert messages == ["[ERROR] must be less than 25 characters [json-pointer:/view/title/text]"]
    without_submit = {key: value for key, value in MODAL.items() if key != "submit"}
    trigger = console.state.issue_trigger("U0BOB")
    code, _ = await refused(client.views_open(trigger_id=trigger, view=without_submit))
    assert code == "invalid_arguments"
    assert console.state.messages == []
    assert console.state.stacks.get("U0BOB", []) == []


async def test_app_home_is_published_per_person(
    console: DevConsole, client: AsyncWebClient
) -> None:
    home = {"type": "home", "blocks": [{"type": "divider"}]}
    await client.views_publish(user_id="U0ALICE", view=home)
    assert set(console.state.homes) == {"U0ALICE"}
    modal_as_home = client.views_publish(user_id="U0ALICE", view=MODAL)
    assert (await refused(modal_as_home))[0] == "invalid_arguments"
    nobody = client.views_publish(user_id="U0NOBODY", view=home)
    assert (await refused(nobody))[0] == "user_not_found"


async def test_members_and_groups_are_the_workspaces(client: AsyncWebClient) -> None:
    first = await client.conversations_members(channel=CHANNEL_ID, limit=2)
    assert first["members"] == [BOT_USER_ID, "U0RILEY"]
    rest = await client.conversations_members(
        channel=CHANNEL_ID, cursor=first["response_metadata"]["next_cursor"]
    )
    assert rest["members"] == ["U0ALICE", "U0BOB", "U0SAM"]  # not Olive, the outsider
    assert rest["response_metadata"]["next_cursor"] == ""
    bad = client.conversations_members(channel=CHANNEL_ID, cursor="dXNlcjpVMEc5V0ZYTlo=")
    assert (await refused(bad))[0] == "invalid_cursor"
    assert (await refused(client.usergroups_users_list(usergroup="S0NONE")))[0] == (
        "no_such_subteam"
    )
    assert (await refused(client.api_call("chat.meMessage")))[0] == "unknown_method"


async def test_a_response_url_answers_its_command_author_five_times(
    console: DevConsole,
) -> None:
    key = console.state.issue_response_url(user="U0RILEY", channel=CHANNEL_ID, command="/agent")
    url = f"{console.url}/hooks/{key}"
    async with aiohttp.ClientSession() as session:
        statuses = []
        for n in range(6):
            async with session.post(url, json={"text": f"answer {n}"}) as response:
                statuses.append(response.status)
        async with session.post(f"{console.url}/hooks/made-up", json={"text": "x"}) as response:
            assert response.status == 404
    assert statuses == [200] * 5 + [404]
    assert {m.only_for for m in console.state.messages} == {"U0RILEY"}


async def test_a_dm_is_opened_with_one_person_and_only_then_takes_messages(
    console: DevConsole, client: AsyncWebClient
) -> None:
    dm = console.state.im_id("U0ALICE")
    assert (await refused(client.chat_postMessage(channel=dm, text="hi")))[0] == (
        "channel_not_found"
    )
    opened = await client.conversations_open(users="U0ALICE")
    assert opened["channel"]["id"] == dm
    assert "already_open" not in opened.data
    again = await client.conversations_open(users="U0ALICE")
    assert (again["channel"]["id"], again["already_open"]) == (dm, True)
    posted = await client.chat_postMessage(channel=dm, text="a card for you")
    await client.chat_update(channel=dm, ts=posted["ts"], text="decided")
    info = await client.conversations_info(channel=dm)
    assert (info["channel"]["is_im"], info["channel"]["user"]) == (True, "U0ALICE")
    members = await client.conversations_members(channel=dm)
    assert members["members"] == [BOT_USER_ID, "U0ALICE"]
    # An ephemeral message in a DM reaches its one person only.
    assert (await refused(client.chat_postEphemeral(channel=dm, user="U0BOB", text="x")))[0] == (
        "user_not_in_channel"
    )
    await client.chat_postEphemeral(channel=dm, user="U0ALICE", text="only you")


async def test_conversations_open_refuses_what_slack_refuses(
    console: DevConsole, client: AsyncWebClient
) -> None:
    assert (await refused(client.conversations_open(users="")))[0] == "users_list_not_supplied"
    assert (await refused(client.conversations_open(users=BOT_USER_ID)))[0] == "cannot_dm_bot"
    assert (await refused(client.conversations_open(users="U0NOBODY")))[0] == "user_not_found"
    assert (await refused(client.conversations_open(users="U0ALICE,U0BOB")))[0] == (
        "too_many_users"
    )
    assert (await refused(client.conversations_open(channel="D0ALICE")))[0] == ("channel_not_found")
    assert console.state.ims == {}
    refusals = [(call.method, call.error) for call in console.state.log]
    assert ("conversations.open", "cannot_dm_bot") in refusals
