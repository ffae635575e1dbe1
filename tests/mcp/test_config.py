"""The gateway's file: every problem at once, each naming its key; no secret in it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.mcp.config import HttpTransport, McpConfigError, StdioTransport
from bot.mcp.config_file import load_gateway_config, missing_environment, parse_gateway_config
from bot.mcp.tokens import token_digest

ROOT = Path(__file__).resolve().parents[2]
DIGEST = token_digest("abmcp_test")

GOOD = f"""
[gateway]
wait = "20s"

[upstreams.ops]
command = "python3"
args = ["server.py"]
env = {{ OPS_TOKEN = "MY_OPS_TOKEN" }}
needs_approval = ["deploy", "drop_table"]
replay = "safe"

[upstreams.docs]
url = "https://mcp.example.com/mcp"
headers = {{ Authorization = "DOCS_AUTH" }}
needs_approval = "unless_read_only"

[clients.claude]
token_digest = "{DIGEST}"
channel = "C0OPS"
user = "U0ALICE"
"""


def test_a_good_file_reads_whole() -> None:
    config = parse_gateway_config(GOOD)
    assert config.wait == timedelta(seconds=20)
    ops, docs = config.upstreams["ops"], config.upstreams["docs"]
    assert ops.transport == StdioTransport(
        command="python3", args=("server.py",), env={"OPS_TOKEN": "MY_OPS_TOKEN"}
    )
    assert ops.needs_approval == frozenset({"deploy", "drop_table"})
    assert ops.replay == "safe"
    assert docs.transport == HttpTransport(
        url="https://mcp.example.com/mcp", headers={"Authorization": "DOCS_AUTH"}
    )
    assert config.clients["claude"].token_digests == (DIGEST,)
    assert config.upstream_of("ops__deploy") == (ops, "deploy")
    assert config.upstream_of("nope__deploy") is None
    assert config.upstream_of("ops") is None


def test_every_problem_is_named_at_once() -> None:
    text = """
[gateway]
wait = "forever"
colour = "blue"

[upstreams.Bad_Name]
command = "x"

[upstreams.both]
command = "x"
url = "https://example.com/mcp"

[upstreams.creds]
url = "https://user:hunter2@example.com/mcp"

[upstreams.literal]
command = "x"
env = { OPS_TOKEN = "sk-live-1234 not a variable name" }
needs_approval = "sometimes"

[clients.alice]
token_digest = "abmcp_the-token-itself"
channel = "general"
user = "alice"
"""
    with pytest.raises(McpConfigError) as raised:
        parse_gateway_config(text, source="gw.toml")
    problems = raised.value.problems
    keys = [problem.split(":")[0] for problem in problems]
    assert keys == [
        "gateway.colour",
        "upstreams.Bad_Name",
        "upstreams.both",
        "upstreams.creds.url",
        "upstreams.literal.env.OPS_TOKEN",
        "upstreams.literal.needs_approval",
        "clients.alice",
        "clients.alice.channel",
        "clients.alice.user",
        "gateway.wait",
    ]
    message = str(raised.value)
    assert message.startswith("MCP gateway file gw.toml: 10 problems:")
    assert "hunter2" not in message
    assert "sk-live-1234" not in message
    assert "abmcp_the-token-itself" not in message


def test_two_clients_may_not_share_a_token_and_an_empty_file_says_what_it_needs() -> None:
    shared = f"""
[upstreams.ops]
command = "x"
[clients.a]
token_digest = "{DIGEST}"
channel = "C0OPS"
user = "U0A"
[clients.b]
token_digests = ["{DIGEST}"]
channel = "C0OPS"
user = "U0B"
"""
    with pytest.raises(McpConfigError, match=r"clients\.b: shares a token with clients\.a"):
        parse_gateway_config(shared)
    with pytest.raises(McpConfigError) as raised:
        parse_gateway_config("")
    assert [p.split(":")[0] for p in raised.value.problems] == ["upstreams", "clients"]
    with pytest.raises(McpConfigError, match="not valid TOML"):
        parse_gateway_config("[upstreams")


def test_the_variables_an_upstream_names_must_be_set_where_it_runs() -> None:
    config = parse_gateway_config(GOOD)
    assert missing_environment(config, {"MY_OPS_TOKEN": "x"}) == [
        "upstreams.docs: environment variable DOCS_AUTH is not set"
    ]
    assert missing_environment(config, {"MY_OPS_TOKEN": "x", "DOCS_AUTH": "Bearer y"}) == []


def test_an_unreadable_file_is_one_line() -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load_gateway_config("/nonexistent/mcp.toml")


def test_the_example_file_is_good() -> None:
    config = load_gateway_config(str(ROOT / "examples" / "mcp.toml"))
    assert set(config.upstreams) == {"ops"}
    assert missing_environment(config, {}) == []
