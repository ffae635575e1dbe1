"""Everything a person does on the page reaches the bot as Slack would deliver it: a
signed HTTP request to the bot's `/slack/events` (v0 HMAC-SHA256 with the signing
secret, the timestamp in `X-Slack-Request-Timestamp`), within Slack's 3 seconds, and the
bot's answer is read as Slack reads it: a slash command's text shown to its author, a
submission's `response_action` (errors, update, push, clear) applied to the modal. A
late or failed answer is told the way Slack tells it ("failed with the error
operation_timeout").

The signature is computed here, on Slack's side of the protocol, not with the bot's own
helper: two independent implementations of the two ends keep each other honest.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from bot.devconsole import limits, payloads
from bot.devconsole.state import MAX_VIEW_STACK, Message, SlackState, View
from bot.devconsole.workspace import CHANNEL_ID, Person, Workspace
from bot.errors import InputError

SLACK_TIMEOUT_SECONDS = 3.0  # Slack waits this long for an app's answer
FORM = "application/x-www-form-urlencoded"
COMMANDS = ("/agent", "/approvals")  # the manifest's slash commands

log = logging.getLogger(__name__)


class Unanswered(Exception):
    """The bot gave no usable answer: Slack's error code for it (`operation_timeout`,
    `dispatch_failed`) and what the console can say about why."""

    def __init__(self, code: str, why: str) -> None:
        super().__init__(f"{code}: {why}")
        self.code = code
        self.why = why


@dataclass(frozen=True, kw_only=True)
class Answer:
    status: int
    body: str

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body.strip() else None
        except ValueError:
            return None


def slack_signature(*, secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


class Delivery:
    """Delivers a person's actions to the bot at `events_url` (None until it listens)."""

    def __init__(
        self,
        *,
        state: SlackState,
        workspace: Workspace,
        signing_secret: str,
        session: aiohttp.ClientSession,
        hooks_url: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state
        self.workspace = workspace
        self.events_url: str | None = None
        self._secret = signing_secret
        self._session = session
        self.hooks_url = hooks_url
        self._clock = clock
        self.timeout_seconds = SLACK_TIMEOUT_SECONDS

    # -- the page's actions ----------------------------------------------------------------

    async def send(self, person: Person, text: str, *, thread_ts: str | None) -> None:
        """What a person typed in the channel or a thread: a slash command, or a message."""
        if not person.in_channel:
            raise InputError(f"{person.name} is not in #ops: join it to post (they may read)")
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            await self._command(person, command, rest.strip(), thread_ts=thread_ts)
            return
        message = self.state.post(
            channel=CHANNEL_ID, user=person.id, text=text, thread_ts=thread_ts
        )
        event = payloads.message_event(message)
        await self._event(event)

    async def click(
        self,
        person: Person,
        *,
        block_id: str,
        action_id: str,
        message_ts: str | None = None,
        view_id: str | None = None,
        typed: Mapping[str, Any] | None = None,
    ) -> None:
        """A button pressed on a message (`message_ts`) or in a view (`view_id`)."""
        trigger_id = self.state.issue_trigger(person.id)
        where = CHANNEL_ID  # where Slack tells the person the click failed
        if view_id is not None:
            view = self._own_view(person, view_id, home=True)
            element = _button(view.definition.get("blocks"), block_id, action_id)
            values, _ = payloads.form_state(view.definition, typed or {}, submitting=False)
            payload = payloads.view_click(
                person,
                view=view,
                element=element,
                block_id=block_id,
                trigger_id=trigger_id,
                values=values,
            )
        else:
            message = self._visible_message(person, message_ts or "")
            element = _button(message.blocks, block_id, action_id)
            where = message.channel
            payload = payloads.message_click(
                person,
                message=message,
                element=element,
                block_id=block_id,
                trigger_id=trigger_id,
                response_url=self._response_url(person, "a button", channel=where),
            )
        try:
            await self._deliver(payloads.interactive(payload), FORM)
        except Unanswered as unanswered:
            self.state.tell(person.id, where, _app_failed("The click", unanswered))

    async def submit(self, person: Person, *, view_id: str, typed: Mapping[str, Any]) -> None:
        """The modal's submit button: field errors first (Slack's client checks those),
        then the submission, and the app's `response_action` applied."""
        view = self._own_view(person, view_id)
        values, errors = payloads.form_state(view.definition, typed, submitting=True)
        view.errors, view.problem = errors, None
        if errors:
            self.state.changed()
            return
        trigger_id = self.state.issue_trigger(person.id)
        payload = payloads.view_submission(person, view=view, trigger_id=trigger_id, values=values)
        try:
            answer = await self._deliver(payloads.interactive(payload), FORM)
        except Unanswered as unanswered:
            view.problem = f"We had some trouble connecting. Try again? ({unanswered.why})"
            self.state.changed()
            return
        self._apply_response_action(person, view, answer.json())

    async def close(self, person: Person, *, view_id: str) -> None:
        """The modal's close button (the app hears of it if it asked: notify_on_close)."""
        view = self._own_view(person, view_id)
        stack = self.state.stack(person.id)
        del stack[stack.index(view) :]
        self.state.changed()
        if view.definition.get("notify_on_close"):
            payload = payloads.view_closed(person, view=view)
            try:
                await self._deliver(payloads.interactive(payload), FORM)
            except Unanswered as unanswered:
                log.info("view_closed was not answered: %s", unanswered)

    async def open_home(self, person: Person) -> None:
        event = payloads.home_opened_event(
            person, home=self.state.homes.get(person.id), event_ts=self.state.next_ts()
        )
        await self._event(event)

    # -- answers ---------------------------------------------------------------------------

    async def _command(
        self, person: Person, command: str, text: str, *, thread_ts: str | None
    ) -> None:
        if command not in COMMANDS:
            note = f"`{command}` is not a valid command. The bot has {' and '.join(COMMANDS)}."
            self.state.tell(person.id, CHANNEL_ID, note, thread_ts=thread_ts)
            return
        body = payloads.slash_command(
            person,
            command=command,
            text=text,
            channel=CHANNEL_ID,
            trigger_id=self.state.issue_trigger(person.id),
            response_url=self._response_url(person, command),
        )
        try:
            answer = await self._deliver(body, FORM)
        except Unanswered as unanswered:
            note = f'{command} failed with the error "{unanswered.code}" ({unanswered.why})'
            self.state.tell(person.id, CHANNEL_ID, note, thread_ts=thread_ts)
            return
        self._show_command_answer(person, answer, thread_ts=thread_ts)

    def _show_command_answer(
        self, person: Person, answer: Answer, *, thread_ts: str | None
    ) -> None:
        data = answer.json()
        if data is None and not answer.body.strip():
            return
        if not isinstance(data, dict):
            data = {"text": answer.body}
        self.state.answer(data, channel=CHANNEL_ID, to=person.id, thread_ts=thread_ts)

    def _apply_response_action(self, person: Person, view: View, data: Any) -> None:
        stack = self.state.stack(person.id)
        action = data.get("response_action") if isinstance(data, dict) else None
        if action == "errors":
            errors = data.get("errors")
            view.errors = (
                {str(k): str(v) for k, v in errors.items()} if isinstance(errors, dict) else {}
            )
        elif action in ("update", "push"):
            definition = data.get("view")
            problems = limits.view_problems(definition, home=False)
            if problems:
                view.problem = f"The app answered with a view Slack refuses: {problems[0]}"
            elif action == "update":
                assert isinstance(definition, dict)
                stack[stack.index(view)] = self.state.new_view(person.id, definition, view.id)
            elif len(stack) >= MAX_VIEW_STACK:
                view.problem = "The app pushed a fourth view (Slack allows three)."
            else:
                assert isinstance(definition, dict)
                stack.append(self.state.new_view(person.id, definition))
        elif action == "clear":
            stack.clear()
        else:
            del stack[stack.index(view) :]
        self.state.changed()

    async def _event(self, event: Mapping[str, Any]) -> None:
        body = payloads.event_callback(event, event_id=self.state.next_id("Ev"))
        try:
            await self._deliver(body, "application/json")
        except Unanswered as unanswered:
            # Slack would retry an event three times; the console tells the developer.
            log.warning("the bot did not take a %s event: %s", event.get("type"), unanswered)

    async def _deliver(self, body: str, content_type: str) -> Answer:
        """POST `body` to the bot, signed; its answer, or Unanswered."""
        if self.events_url is None:
            raise Unanswered("dispatch_failed", "the bot is still starting")
        raw = body.encode("utf-8")
        timestamp = str(int(self._clock()))
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": slack_signature(
                secret=self._secret, timestamp=timestamp, body=raw
            ),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }
        timeout = aiohttp.ClientTimeout(total=self.timeout_seconds)
        try:
            async with self._session.post(
                self.events_url, data=raw, headers=headers, timeout=timeout
            ) as response:
                answer = Answer(status=response.status, body=await response.text())
        except TimeoutError:
            late = f"the bot did not answer within {self.timeout_seconds:g} s"
            raise Unanswered("operation_timeout", late) from None
        except aiohttp.ClientError as error:
            raise Unanswered("dispatch_failed", f"the bot is unreachable ({error})") from None
        if answer.status != 200:
            raise Unanswered("dispatch_failed", f"the bot answered HTTP {answer.status}")
        return answer

    # -- lookups ----------------------------------------------------------------------------

    def _own_view(self, person: Person, view_id: str, *, home: bool = False) -> View:
        """One of `person`'s open modals (or, with `home`, their App Home too)."""
        views = list(self.state.stacks.get(person.id) or [])
        if home and person.id in self.state.homes:
            views.append(self.state.homes[person.id])
        for view in views:
            if view.id == view_id:
                return view
        raise InputError(f"{person.name} has no open view {view_id!r}")

    def _visible_message(self, person: Person, ts: str) -> Message:
        for message in self.state.messages:
            if message.ts == ts and self.state.visible_to(message, person.id):
                return message
        raise InputError(f"no message {ts!r} that {person.name} can see")

    def _response_url(self, person: Person, what: str, *, channel: str = CHANNEL_ID) -> str:
        key = self.state.issue_response_url(user=person.id, channel=channel, command=what)
        return self.hooks_url + key


def _button(blocks: Any, block_id: str, action_id: str) -> Mapping[str, Any]:
    """The element `action_id` of the block `block_id`: only what the bot sent can be
    pressed."""
    for block in blocks or []:
        if not isinstance(block, Mapping) or block.get("block_id") != block_id:
            continue
        elements = block.get("elements") or [block.get("accessory")]
        for element in elements:
            if isinstance(element, Mapping) and element.get("action_id") == action_id:
                return element
    raise InputError(f"no button {action_id!r} in block {block_id!r}")


def _app_failed(what: str, unanswered: Unanswered) -> str:
    return f'{what} failed with the error "{unanswered.code}" ({unanswered.why}).'
