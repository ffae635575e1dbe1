"""What the reviewer sees in Slack is what runs, and nothing there confirms a secret:
end to end through the real Bolt app (signed requests over HTTP) and the real slack_sdk
client against the fake Slack Web API.

- the card's digest is keyed: a channel member with a wordlist cannot test guesses of a
  redacted password against it, nor against anything else the bot sent to Slack;
- hiding and reordering characters are shown as escapes on the card, in the decision
  modal and in the edit modal, whose JSON still means exactly the arguments;
- a token mixing scripts gets a warning line on the card;
- approve-with-changes never reveals a value the card hid.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.canonical import canonical_arguments
from bot.credentials import REDACTED
from bot.runtime import Agent, AgentRegistry, ScriptedModel, Tool, tool
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.governance_harness import approval_id_of, card_update
from tests.slack.slack_harness import (
    APPROVER,
    Bot,
    Effects,
    build_registry,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

PASSWORD = "Summer2024!"
WORDLIST = ["hunter2", "Winter2023!", PASSWORD, "letmein"]
REVERSED_NAME = "invoice\u202egnp.exe"  # reads as "invoiceexe.png"
LOOKALIKE_HOST = "p\u0430ypal.com"  # a Cyrillic а


def with_trust_agents(
    effects: Effects,
) -> tuple[AgentRegistry, dict[str, ScriptedModel]]:
    """The harness's agents plus `vault` (a password, a sibling-named secret) and
    `upload` (a reversed file name and a look-alike host)."""
    registry, models = build_registry(effects)

    @tool(needs_approval=True)
    async def set_config(service: str, key: str, value: str) -> str:
        """Set a configuration value."""
        effects.configs.append((key, value))
        return f"set {key} on {service}"

    @tool(needs_approval=True)
    async def upload(file: str, host: str, note: str) -> str:
        """Upload a file to a host."""
        effects.deploys.append((file, host, note))
        return "uploaded"

    extra: dict[str, tuple[list[Any], Tool]] = {
        "vault": (
            [[("set_config", {"service": "db", "key": "db_password", "value": PASSWORD})], "ok"],
            set_config,
        ),
        "upload": (
            [[("upload", {"file": REVERSED_NAME, "host": LOOKALIKE_HOST, "note": "q3"})], "ok"],
            upload,
        ),
    }
    for name, (script, function) in extra.items():
        model = ScriptedModel(script)
        registry.register(Agent(name=name, instructions="-", tools=[function], model=model))
        models = {**models, name: model}
    return registry, models


@pytest.fixture
async def trust_bot(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, agents=with_trust_agents
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


def texts(value: Any) -> Iterator[str]:
    """Every string inside a Block Kit structure (block texts, input values...)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def everything_sent(fake: FakeSlack) -> str:
    """All the bot sent to Slack, every method, as one text."""
    return "\n".join("\n".join(texts(dict(call.args))) for call in fake.calls)


def shown(call: Call) -> str:
    return "\n".join(texts(dict(call.args)))


async def test_nothing_sent_to_slack_confirms_a_guessed_password(trust_bot: Bot) -> None:
    _, (card,) = await start_run(trust_bot, "@vault set the database password")
    record = await trust_bot.service.store.get_approval(approval_id_of(card))
    assert record is not None
    assert record.arguments_digest in shown(card)
    view = await open_modal(trust_bot, card, "Approve", user=APPROVER)
    assert record.arguments_digest in shown_view(view)
    await trust_bot.driver.submit(view, user=APPROVER, reason="rotation")
    await trust_bot.fake.wait_for("chat.update", card_update(card, "Approved"))
    await trust_bot.driver.command(
        "/approvals", f"audit {record.approval_id}", user=APPROVER, channel="C0CHANNEL"
    )
    await trust_bot.settle()
    assert trust_bot.effects.configs == [("db_password", PASSWORD)]

    sent = everything_sent(trust_bot.fake)
    assert PASSWORD not in sent
    arguments = {"service": "db", "key": "db_password"}
    for guess in WORDLIST:
        unkeyed = hashlib.sha256(canonical_arguments({**arguments, "value": guess})).hexdigest()
        assert unkeyed not in sent, guess


def shown_view(view: dict[str, Any]) -> str:
    return "\n".join(texts(view))


async def test_hiding_characters_are_escaped_on_the_card_and_in_every_modal(
    trust_bot: Bot,
) -> None:
    _, (card,) = await start_run(trust_bot, "@upload the report")
    on_card = shown(card)
    assert "\u202e" not in on_card
    assert "invoice\\u202egnp.exe" in on_card
    # The look-alike host is flagged on the card, the odd letter pointed out.
    assert "p\\u0430ypal" in on_card
    assert ":warning: *Mixed scripts:*" in on_card
    assert "Cyrillic" in on_card

    decision = await open_modal(trust_bot, card, "Approve", user=APPROVER)
    assert "\u202e" not in shown_view(decision)
    assert "invoice\\u202egnp.exe" in shown_view(decision)

    edit = await open_modal(trust_bot, card, "Approve with changes", user=APPROVER)
    [arguments_input] = [b for b in edit["blocks"] if b.get("block_id") == "arguments"]
    prefilled = arguments_input["element"]["initial_value"]
    assert "\u202e" not in prefilled
    assert '"invoice\\u202egnp.exe"' in prefilled
    assert "Cyrillic" in shown_view(edit)  # the call block above the input warns
    # What the approver submits back means the same arguments: only the note changes.
    edited = json.loads(prefilled)
    assert edited["file"] == REVERSED_NAME
    edited["note"] = "q4"
    reply = await trust_bot.driver.submit(
        edit, user=APPROVER, reason="right quarter", message=json.dumps(edited)
    )
    assert (reply.status, reply.text) == (200, "")
    await trust_bot.fake.wait_for("chat.update", card_update(card, "Approved"))
    await trust_bot.settle()
    assert trust_bot.effects.deploys == [(REVERSED_NAME, LOOKALIKE_HOST, "q4")]
    assert "\u202e" not in everything_sent(trust_bot.fake)


async def test_approve_with_changes_never_reveals_a_hidden_value(trust_bot: Bot) -> None:
    _, (card,) = await start_run(trust_bot, "@vault set the database password")
    edit = await open_modal(trust_bot, card, "Approve with changes", user=APPROVER)
    [arguments_input] = [b for b in edit["blocks"] if b.get("block_id") == "arguments"]
    edited = json.loads(arguments_input["element"]["initial_value"])
    assert edited == {"service": "db", "key": "db_password", "value": REDACTED}
    edited["key"] = "db_host"  # only the sibling changes: the hidden value is kept
    await trust_bot.driver.submit(
        edit, user=APPROVER, reason="wrong key", message=json.dumps(edited)
    )
    (updated,) = await trust_bot.fake.wait_for("chat.update", card_update(card, "Approved"))
    await trust_bot.settle()

    assert "db_host" in shown(updated)
    assert REDACTED in shown(updated)
    assert PASSWORD not in everything_sent(trust_bot.fake)
    record = await trust_bot.service.store.get_approval(approval_id_of(card))
    assert record is not None
    assert PASSWORD not in record.snapshot
    assert trust_bot.effects.configs == [("db_host", PASSWORD)]  # what really ran
