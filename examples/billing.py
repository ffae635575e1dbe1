"""A custom agent, "billing", that runs offline: its own tools and its own model.

Register it with the bot (or the terminal demo) by naming its registry:

    PYTHONPATH=. APPROVALS_AGENTS=examples.billing:registry \
        approvals-bot demo --agent billing "refund order 1042 2500"

`lookup_order` needs no approval; `refund` does, and is `idempotent`: it hands the
execution key to the payment system, so a refund retried after a crash is not paid
twice. The model is a few lines of pattern matching instead of an LLM, so the example
runs anywhere; swap in `OpenAIChatModel` (bot.runtime.openai_model) for a real one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.runtime import (
    Agent,
    AgentRegistry,
    Item,
    ModelResponse,
    ToolCall,
    ToolSpec,
    current_tool_call,
    tool,
)

# The "payment system": refunds by idempotency key (a real one lives elsewhere).
PAID: dict[str, tuple[str, int]] = {}


@tool
async def lookup_order(order_id: str) -> str:
    """Look an order up (read-only: no approval needed)."""
    return f"order {order_id}: 1 item, paid 4999 cents"


@tool(needs_approval=True, replay_policy="idempotent")
async def refund(order_id: str, cents: int) -> str:
    """Refund part of an order. Needs a human's approval."""
    if cents <= 0:
        return "nothing to refund"
    key = current_tool_call().execution_key  # the payment system dedupes by it
    PAID.setdefault(key, (order_id, cents))
    return f"refunded {cents} cents on order {order_id}"


_REFUND = re.compile(r"refund\s+order\s+(\S+)\s+(\d{1,9})", re.IGNORECASE)
_LOOKUP = re.compile(r"look\s*up\s+order\s+(\S+)", re.IGNORECASE)


UNDERSTOOD = 'I understand "refund order <id> <cents>" and "lookup order <id>".'


class BillingModel:
    """Understands "refund order <id> <cents>" and "lookup order <id>"."""

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        last = history[-1]
        if last["type"] == "tool_result":
            results = [item for item in history if item["type"] == "tool_result"]
            return ModelResponse(text="; ".join(item["content"] for item in results))
        if last["type"] != "user":
            return ModelResponse(text="Done.")
        task = last["content"].strip()
        if match := _REFUND.fullmatch(task):
            order_id, cents = match.group(1), int(match.group(2))
            return ModelResponse(
                tool_calls=[
                    ToolCall(id="lookup", name="lookup_order", arguments={"order_id": order_id}),
                    ToolCall(
                        id="refund", name="refund", arguments={"order_id": order_id, "cents": cents}
                    ),
                ]
            )
        if match := _LOOKUP.fullmatch(task):
            order_id = match.group(1)
            call = ToolCall(id="lookup", name="lookup_order", arguments={"order_id": order_id})
            return ModelResponse(tool_calls=[call])
        return ModelResponse(
            text='I understand "refund order <id> <cents>" and "lookup order <id>".'
        )


def build_billing_agent() -> Agent:
    return Agent(
        name="billing",
        version="1",
        instructions="You handle refunds. Look the order up before refunding it.",
        tools=[lookup_order, refund],
        model=BillingModel(),
    )


registry = AgentRegistry([build_billing_agent()])
