"""What people do on the page reaches the app as Slack delivers it: signed so that the
bot's own verifier accepts it, shaped as Slack shapes it, and the app's answer read as
Slack reads it. The app here is a small recorder, to see the requests themselves (the
real bot is behind the console in test_dev_command and test_browser)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import pytest
from aiohttp import web

from bot.devconsole import DevConsole
from bot.devconsole.delivery import Delivery
from bot.devconsole.state import View
from bot.devconsole.workspace import BOT_USER_ID, CHANNEL_ID
from bot.errors import InputError
from bot.slack.signature import verify_signature
from tests.devconsole.test_webapi import MODAL

Reply = Callable[[dict[str, Any]], web.StreamResponse]


@dataclass(kw_only=True)
class App:
    """Records what it is sent (after checking the signature with the bot's verifier)
    and answers with `reply`."""

    secret: str
    received: list[dict[str, Any]] = field(default_factory=list)
    reply: Reply = lambda body: web.Response()
    hang: asyncio.Event | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            verify_signature(
                signing_secret=self.secret,
                timestamp=request.headers.get("X-Slack-Request-Timestamp"),
                signature=request.headers.get("X-Slack-Signature"),
                body=raw,
                now=time.time(),
            )
        except InputError as error:
            return web.Response(status=401, text=str(error))
        text = raw.decode()
        if request.content_type == "application/json":
            body = json.loads(text)
        else:
            body = dict(parse_qsl(text))
            if "payload" in body:
                body = json.loads(body["payload"])
        self.received.append(body)
        if self.hang is not None:
            await self.hang.wait()
        return self.reply(body)


@pytest.fixture
async def app(console: DevConsole, shared: Any) -> AsyncIterator[App]:
    recorder = App(secret=shared.signing_secret)
    web_app = web.Application()
    web_app.router.add_post("/slack/events", recorder.handle)
    runner = web.AppRunner(web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    console.connect(f"http://127.0.0.1:{port}/slack/events")
    try:
        yield recorder
    finally:
        if recorder.hang is not None:
            recorder.hang.set()
        await runner.cleanup()


def delivery(console: DevConsole) -> Delivery:
    assert console.delivery is not None
    return console.delivery


def person(console: DevConsole, user: str) -> Any:
    found = console.workspace.person(user)
    assert found is not None
    return found


def open_modal(console: DevConsole, user: str, definition: dict[str, Any] = MODAL) -> View:
    view = console.state.new_view(user, definition)
    console.state.stacks[user] = [view]
    return view


async def test_a_slash_command_is_the_form_slack_posts(console: DevConsole, app: App) -> None:
    await delivery(console).send(person(console, "U0RILEY"), "/agent  deploy payments 1.2.3",
                                 thread_ts=None)  # fmt: skip
    (form,) = app.received
    assert form["command"] == "/agent"
    assert form["text"] == "deploy payments 1.2.3"
    assert (form["user_id"], form["channel_id"]) == ("U0RILEY", CHANNEL_ID)
    assert (form["team_id"], form["api_app_id"]) == ("T0DEVCONSOLE", "A0DEVCONSOLE")
    assert form["response_url"].startswith(console.url + "/hooks/")
    assert form["trigger_id"] in console.state.triggers


async def test_the_commands_answer_is_shown_to_its_author_only(
    console: DevConsole, app: App
) -> None:
    app.reply = lambda body: web.json_response({"text": "Usage: /agent <task>"})
    await delivery(console).send(person(console, "U0RILEY"), "/agent help", thread_ts=None)
    (answer,) = console.state.messages
    assert (answer.text, answer.user, answer.only_for) == (
        "Usage: /agent <task>", BOT_USER_ID, "U0RILEY",
    )  # fmt: skip


async def test_a_command_the_app_does_not_have_never_reaches_it(
    console: DevConsole, app: App
) -> None:
    await delivery(console).send(person(console, "U0RILEY"), "/deploy now", thread_ts=None)
    assert app.received == []
    assert "`/deploy` is not a valid command" in console.state.messages[0].text


async def test_an_unanswered_command_fails_as_slack_says(console: DevConsole, app: App) -> None:
    app.hang = asyncio.Event()
    delivery(console).timeout_seconds = 0.2
    await delivery(console).send(person(console, "U0RILEY"), "/agent deploy", thread_ts=None)
    app.reply = lambda body: web.Response(status=500)
    app.hang.set()
    await delivery(console).send(person(console, "U0RILEY"), "/agent deploy", thread_ts=None)
    assert [m.text for m in console.state.messages] == [
        '/agent failed with the error "operation_timeout" (the bot did not answer within 0.2 s)',
        '/agent failed with the error "dispatch_failed" (the bot answered HTTP 500)',
    ]
    assert {m.only_for for m in console.state.messages} == {"U0RILEY"}


async def test_a_request_signed_with_another_secret_is_refused_by_the_bots_verifier(
    console: DevConsole, app: App
) -> None:
    app.secret = "not-this-runs-secret"
    await delivery(console).send(person(console, "U0RILEY"), "/agent deploy", thread_ts=None)
    assert app.received == []
    assert "the bot answered HTTP 401" in console.state.messages[0].text


async def test_a_thread_reply_is_a_message_event(console: DevConsole, app: App) -> None:
    root = console.state.post(channel=CHANNEL_ID, user=BOT_USER_ID, text="run")
    await delivery(console).send(person(console, "U0RILEY"), "and restart it", thread_ts=root.ts)
    (body,) = app.received
    assert body["type"] == "event_callback"
    event = body["event"]
    assert (event["type"], event["user"], event["text"], event["thread_ts"]) == (
        "message", "U0RILEY", "and restart it", root.ts,
    )  # fmt: skip
    assert console.state.messages[-1].ts == event["ts"]


async def test_an_outsider_may_not_post(console: DevConsole, app: App) -> None:
    with pytest.raises(InputError, match="Olive is not in #ops"):
        await delivery(console).send(person(console, "U0OLIVE"), "/agent deploy", thread_ts=None)
    assert app.received == []


async def test_only_buttons_the_app_sent_can_be_pressed(console: DevConsole, app: App) -> None:
    card = console.state.post(
        channel=CHANNEL_ID,
        user=BOT_USER_ID,
        text="card",
        blocks=[
            {
                "type": "actions",
                "block_id": "decision",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "approve",
                        "value": "00ab-cd",
                        "text": {"type": "plain_text", "text": "Approve"},
                    }
                ],
            }
        ],
    )
    alice = person(console, "U0ALICE")
    with pytest.raises(InputError, match="no button 'revoke'"):
        await delivery(console).click(alice, block_id="decision", action_id="revoke",
                                      message_ts=card.ts)  # fmt: skip
    await delivery(console).click(alice, block_id="decision", action_id="approve",
                                  message_ts=card.ts)  # fmt: skip
    (click,) = app.received
    assert click["type"] == "block_actions"
    assert click["actions"][0]["value"] == "00ab-cd"  # from the card, not from the page
    assert click["container"] == {
        "type": "message", "message_ts": card.ts, "channel_id": CHANNEL_ID, "is_ephemeral": False,
    }  # fmt: skip
    assert click["message"]["blocks"] == card.blocks
    assert click["user"]["id"] == "U0ALICE"


async def test_someone_elses_ephemeral_message_cannot_be_clicked(
    console: DevConsole, app: App
) -> None:
    private = console.state.post(channel=CHANNEL_ID, user=BOT_USER_ID, text="x", only_for="U0ALICE")
    with pytest.raises(InputError, match="no message"):
        await delivery(console).click(person(console, "U0BOB"), block_id="b", action_id="a",
                                      message_ts=private.ts)  # fmt: skip


async def test_a_required_field_left_empty_is_not_sent(console: DevConsole, app: App) -> None:
    view = open_modal(console, "U0ALICE")
    await delivery(console).submit(person(console, "U0ALICE"), view_id=view.id, typed={})
    assert app.received == []
    assert view.errors == {"reason": "Please complete this required field."}


async def test_a_submission_carries_the_typed_state(console: DevConsole, app: App) -> None:
    view = open_modal(console, "U0ALICE", {**MODAL, "private_metadata": "ctx"})
    typed = {"reason": {"reason": "release window"}}
    await delivery(console).submit(person(console, "U0ALICE"), view_id=view.id, typed=typed)
    (body,) = app.received
    assert body["type"] == "view_submission"
    assert body["view"]["private_metadata"] == "ctx"
    assert body["view"]["callback_id"] == "decide"
    assert body["view"]["state"]["values"] == {
        "reason": {"reason": {"type": "plain_text_input", "value": "release window"}}
    }
    assert console.state.stacks["U0ALICE"] == []  # an empty answer closes the modal


async def test_the_apps_response_action_is_applied(console: DevConsole, app: App) -> None:
    alice = person(console, "U0ALICE")
    typed = {"reason": {"reason": "r"}}
    notice = {"type": "modal", "title": {"type": "plain_text", "text": "Done"}, "blocks": []}

    app.reply = lambda body: web.json_response(
        {"response_action": "errors", "errors": {"reason": "Say more"}}
    )
    view = open_modal(console, "U0ALICE")
    await delivery(console).submit(alice, view_id=view.id, typed=typed)
    assert console.state.stacks["U0ALICE"] == [view]
    assert view.errors == {"reason": "Say more"}

    app.reply = lambda body: web.json_response({"response_action": "update", "view": notice})
    await delivery(console).submit(alice, view_id=view.id, typed=typed)
    (updated,) = console.state.stacks["U0ALICE"]
    assert (updated.id, updated.definition["title"]["text"]) == (view.id, "Done")

    app.reply = lambda body: web.json_response({"response_action": "push", "view": MODAL})
    await delivery(console).submit(alice, view_id=view.id, typed=typed)
    assert len(console.state.stacks["U0ALICE"]) == 2

    app.reply = lambda body: web.json_response({"response_action": "clear"})
    await delivery(console).submit(alice, view_id=console.state.stacks["U0ALICE"][-1].id,
                                   typed=typed)  # fmt: skip
    assert console.state.stacks["U0ALICE"] == []


async def test_an_answer_with_a_view_slack_refuses_is_shown_in_the_modal(
    console: DevConsole, app: App
) -> None:
    broken = {"type": "modal", "title": {"type": "plain_text", "text": "x" * 30}, "blocks": []}
    app.reply = lambda body: web.json_response({"response_action": "update", "view": broken})
    view = open_modal(console, "U0ALICE")
    await delivery(console).submit(person(console, "U0ALICE"), view_id=view.id,
                                   typed={"reason": {"reason": "r"}})  # fmt: skip
    assert view.problem is not None
    assert view.problem.startswith("The app answered with a view Slack refuses: [ERROR]")


async def test_opening_app_home_is_an_app_home_opened_event(console: DevConsole, app: App) -> None:
    await delivery(console).open_home(person(console, "U0BOB"))
    (body,) = app.received
    assert body["event"]["type"] == "app_home_opened"
    assert (body["event"]["user"], body["event"]["tab"]) == ("U0BOB", "home")


async def test_before_the_bot_listens_nothing_is_lost_silently(console: DevConsole) -> None:
    await delivery(console).send(person(console, "U0RILEY"), "/agent deploy", thread_ts=None)
    assert console.state.messages[0].text == (
        '/agent failed with the error "dispatch_failed" (the bot is still starting)'
    )


async def test_app_home_is_no_modal_to_submit_or_close(console: DevConsole, app: App) -> None:
    home = console.state.new_view("U0BOB", {"type": "home", "blocks": []})
    console.state.homes["U0BOB"] = home
    bob = person(console, "U0BOB")
    with pytest.raises(InputError, match="Bob has no open view"):
        await delivery(console).close(bob, view_id=home.id)
    with pytest.raises(InputError, match="Bob has no open view"):
        await delivery(console).submit(bob, view_id=home.id, typed={})
    assert console.state.homes["U0BOB"] is home
    assert app.received == []


async def test_a_button_in_app_home_carries_the_ticked_checkboxes(
    console: DevConsole, app: App
) -> None:
    """App Home's bulk selection: checkboxes in input blocks, whose ticks the page sends
    with the button press in the Home view's state, as Slack does."""
    options = [
        {"text": {"type": "plain_text", "text": f"call {n}"}, "value": f"00ab-{n}"}
        for n in range(3)
    ]
    home = console.state.new_view(
        "U0BOB",
        {
            "type": "home",
            "blocks": [
                {
                    "type": "input",
                    "block_id": "bulk:0:0",
                    "optional": True,
                    "label": {"type": "plain_text", "text": "Calls 1-3"},
                    "element": {
                        "type": "checkboxes",
                        "action_id": "bulk_select_0",
                        "options": options,
                    },
                },
                {
                    "type": "actions",
                    "block_id": "bulk:0",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "bulk_approve",
                            "value": "deploy_release",
                            "text": {"type": "plain_text", "text": "Approve selected…"},
                        }
                    ],
                },
            ],
        },
    )
    console.state.homes["U0BOB"] = home
    typed = {"bulk:0:0": {"bulk_select_0": ["00ab-0", "00ab-2"]}}
    await delivery(console).click(
        person(console, "U0BOB"), block_id="bulk:0", action_id="bulk_approve",
        view_id=home.id, typed=typed,
    )  # fmt: skip
    (click,) = app.received
    ticked = click["view"]["state"]["values"]["bulk:0:0"]["bulk_select_0"]["selected_options"]
    assert [option["value"] for option in ticked] == ["00ab-0", "00ab-2"]


async def test_a_click_in_a_dm_comes_from_the_dm_and_only_its_person_may_click(
    console: DevConsole, app: App
) -> None:
    dm, _ = console.state.open_im("U0ALICE")
    button = {"type": "button", "action_id": "approve", "value": "00ab-cd",
              "text": {"type": "plain_text", "text": "Approve"}}  # fmt: skip
    card = console.state.post(
        channel=dm, user=BOT_USER_ID, text="card",
        blocks=[{"type": "actions", "block_id": "decision", "elements": [button]}],
    )  # fmt: skip
    with pytest.raises(InputError, match="no message"):
        await delivery(console).click(person(console, "U0BOB"), block_id="decision",
                                      action_id="approve", message_ts=card.ts)  # fmt: skip
    await delivery(console).click(person(console, "U0ALICE"), block_id="decision",
                                  action_id="approve", message_ts=card.ts)  # fmt: skip
    (click,) = app.received
    assert click["channel"] == {"id": dm, "name": "directmessage"}
    assert click["container"]["channel_id"] == dm
    answered_in = console.state.use_response_url(click["response_url"].rsplit("/", 1)[1])
    assert answered_in is not None
    assert answered_in.channel == dm
