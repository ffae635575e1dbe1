"""The tools the gateway exposes: names, which need approval, and their definitions.

Names. Every upstream tool is exposed as `<upstream>__<tool>` (`ops__deploy_release`),
whether or not its own name is unique: a name that never changes when another upstream
adds a tool of the same name, and that says where a call goes. An exposed name must be
what every client accepts (letters, digits, `_` and `-`, at most 64): a tool whose name
does not fit is not exposed (and the log says so).

Approval. Per upstream, `needs_approval` in the gateway's file: "all" (the default)
gates every tool whatever the upstream says of it; "unless_read_only" lets a tool the
upstream annotates `readOnlyHint: true` (and not `destructiveHint: true`) pass straight
through; a list gates the tools it names, and any tool the upstream itself annotates
`destructiveHint: true`. Annotations come from a server we may not trust: they relax a
rule only where the file says they may, and they can always tighten one.

Definitions. What an upstream says of a tool (title, description, input and output
schema, annotations) is its definition; the call's digest binds its SHA-256 (the
definition digest), so an approval is for the tool as it was described when it was
asked. A definition too large, or not plain JSON, is not exposed.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.canonical import canonical_arguments
from bot.errors import InputError
from bot.mcp.config import NeedsApproval, UpstreamConfig

DEFINITION_FIELDS = ("title", "description", "inputSchema", "outputSchema", "annotations")
EXPOSED_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_DEFINITION_BYTES = 64 * 1024
MAX_TOOLS_PER_UPSTREAM = 1000
GATED_NOTE = " (approvals-bot: a person approves each call in Slack; a call may wait.)"


@dataclass(frozen=True, kw_only=True)
class ListedTool:
    """One upstream tool as its upstream last listed it."""

    upstream: str
    name: str  # the upstream's own name
    exposed: str
    definition: Mapping[str, Any]  # the DEFINITION_FIELDS it gave
    digest: str  # definition_digest(name, definition)
    gated: bool

    @property
    def input_schema(self) -> Mapping[str, Any]:
        schema = self.definition.get("inputSchema")
        return schema if isinstance(schema, Mapping) else {"type": "object"}

    def as_exposed(self) -> dict[str, Any]:
        """The tool as the gateway lists it to clients (MCP `Tool` fields)."""
        listed: dict[str, Any] = {"name": self.exposed, **self.definition}
        listed.setdefault("inputSchema", {"type": "object"})
        if self.gated:
            listed["description"] = str(listed.get("description") or "") + GATED_NOTE
        return listed


def listed_tool(upstream: UpstreamConfig, raw: Mapping[str, Any]) -> ListedTool:
    """A tool of `upstream`'s listing (a wire `Tool`, by alias); InputError naming why it
    cannot be exposed."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("a tool without a name")
    exposed = upstream.exposed(name)
    if not EXPOSED_NAME.fullmatch(exposed):
        raise InputError(
            f"tool {name[:80]!r}: its exposed name {exposed[:100]!r} is not letters, digits, "
            "'_' and '-' of at most 64 (what clients accept)"
        )
    definition = {field: raw[field] for field in DEFINITION_FIELDS if raw.get(field) is not None}
    digest = definition_digest(name, definition)
    annotations = definition.get("annotations")
    return ListedTool(
        upstream=upstream.name,
        name=name,
        exposed=exposed,
        definition=definition,
        digest=digest,
        gated=needs_approval(
            upstream.needs_approval, name, annotations if isinstance(annotations, Mapping) else {}
        ),
    )


def definition_digest(name: str, definition: Mapping[str, Any]) -> str:
    """SHA-256 hex of the tool's name and definition in canonical JSON (InputError when
    it is not plain JSON or too large)."""
    try:
        text = canonical_arguments({"name": name, "definition": dict(definition)})
    except InputError as error:
        raise InputError(
            f"tool {name[:80]!r}: its definition is not plain JSON ({error})"
        ) from None
    if len(text) > MAX_DEFINITION_BYTES:
        raise InputError(
            f"tool {name[:80]!r}: its definition is {len(text)} bytes, over the gateway's "
            f"limit of {MAX_DEFINITION_BYTES}"
        )
    return hashlib.sha256(text).hexdigest()


def needs_approval(rule: NeedsApproval, tool: str, annotations: Mapping[str, Any]) -> bool:
    """Whether a call of `tool` waits for a person (see the module doc)."""
    destructive = annotations.get("destructiveHint") is True
    if rule == "all":
        return True
    if rule == "unless_read_only":
        return destructive or annotations.get("readOnlyHint") is not True
    return tool in rule or destructive


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Which parts of a definition differ (in DEFINITION_FIELDS order)."""
    return [field for field in DEFINITION_FIELDS if before.get(field) != after.get(field)]


def read_listing(
    upstream: UpstreamConfig, raw_tools: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, ListedTool], list[str]]:
    """The exposable tools of a listing by their own name, and one line per tool that is
    not exposed (and why)."""
    tools: dict[str, ListedTool] = {}
    problems: list[str] = []
    if len(raw_tools) > MAX_TOOLS_PER_UPSTREAM:
        problems.append(
            f"lists {len(raw_tools)} tools; only the first {MAX_TOOLS_PER_UPSTREAM} are exposed"
        )
    kept = raw_tools[:MAX_TOOLS_PER_UPSTREAM]
    counts = Counter(raw.get("name") for raw in kept)
    for raw in kept:
        try:
            tool = listed_tool(upstream, raw)
        except InputError as error:
            problems.append(str(error))
            continue
        if counts[tool.name] > 1:
            if tool.name not in tools:  # said once
                problems.append(f"tool {tool.name[:80]!r} is listed twice; it is not exposed")
            tools.setdefault(tool.name, tool)
            continue
        tools[tool.name] = tool
    return {name: tool for name, tool in tools.items() if counts[name] == 1}, problems
