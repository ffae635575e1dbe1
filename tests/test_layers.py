"""Layers import only downward (docs/architecture.md, "Layers").

slack -> service -> runtime | review | policy | store; errors, credentials, canonical,
clock, off_loop, logs, metrics and tasks are leaves anyone may import. bot.devconsole (the
stand-in Slack of `approvals-bot dev`) meets the bot over HTTP only. Composition roots
(bot.cli, bot.commands, bot.__main__) may import anything; bot.agents (which agents a
deployment runs) sits above bot.adapters (agents of other frameworks, through the
runtime's engine seam), bot.demo and the runtime. bot.mcp (the MCP gateway: an engine
and an MCP server) sits beside them under the service, which reaches it only through its
plain call types (bot.mcp.calls). A new package must be given its place here before it
can import ours.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEAVES = (
    "bot.errors",
    "bot.credentials",
    "bot.canonical",
    "bot.clock",
    "bot.off_loop",
    "bot.logs",
    "bot.metrics",
    "bot.tasks",
)
ANYTHING = ("bot", "store")

# package (module-name prefix) -> prefixes of our modules it may import
ALLOWED: dict[str, tuple[str, ...]] = {
    "bot.errors": (),
    "bot.credentials": (),
    "bot.canonical": ("bot.errors",),
    "bot.clock": (),
    "bot.off_loop": (),
    "bot.logs": ("bot.credentials", "bot.errors"),
    "bot.env_file": ("bot.errors",),
    "bot.metrics": (),
    "bot.tasks": ("bot.errors",),
    "bot.runtime": ("bot.runtime", *LEAVES),
    "bot.review": ("bot.review", *LEAVES),
    "bot.policy": ("bot.policy", *LEAVES),
    "store": ("store", "bot.runtime.journal", *LEAVES),
    "bot.demo": ("bot.demo", "bot.runtime", "bot.review", *LEAVES),
    "bot.adapters": ("bot.adapters", "bot.demo", "bot.runtime", *LEAVES),
    "bot.agents": ("bot.adapters", "bot.demo", "bot.runtime", *LEAVES),
    "bot.mcp": ("bot.mcp", "bot.runtime", "bot.policy", *LEAVES),
    "bot.service": (
        "bot.service",
        "bot.runtime",
        "bot.review",
        "bot.policy",
        "bot.mcp.calls",
        "store.api",
        "store.records",
        "store.journal",
        "store.config",
        *LEAVES,
    ),
    "bot.slack": (
        "bot.slack",
        "bot.service",
        "bot.runtime",
        "bot.review",
        "bot.policy",
        "store.api",
        "store.records",
        *LEAVES,
    ),
    "bot.devconsole": ("bot.devconsole", *LEAVES),
    "bot.commands": ANYTHING,
    "bot.cli": ANYTHING,
    "bot.__main__": ANYTHING,
    "bot": ("bot",),  # bot/__init__.py
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _our_imports(path: Path, module: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append(name)
    return [name for name in found if name.split(".")[0] in ("bot", "store")]


def _rule_for(module: str) -> tuple[str, tuple[str, ...]]:
    owners = [key for key in ALLOWED if module == key or module.startswith(key + ".")]
    assert owners, f"{module} has no place in the layer map of tests/test_layers.py"
    owner = max(owners, key=len)
    return owner, ALLOWED[owner]


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


SOURCES = sorted([*ROOT.joinpath("bot").rglob("*.py"), *ROOT.joinpath("store").rglob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    module = _module_name(path)
    owner, allowed = _rule_for(module)
    upward = [name for name in _our_imports(path, module) if not _within(name, allowed)]
    assert not upward, f"{module} ({owner}) imports {upward}; allowed: {allowed}"


STORE = ROOT / "store"
SHARED = ("store.sql", "store.api")  # the concept parts every engine runs, its interface
ENGINES = sorted(
    f"store.{d.name}"
    for d in STORE.iterdir()
    if (d / "__init__.py").exists() and f"store.{d.name}" not in SHARED
)


@pytest.mark.parametrize(
    "path", sorted(STORE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_store_engines_are_siblings_over_engine_neutral_modules(path: Path) -> None:
    """The store's own modules hold what every engine shares; an engine package holds
    its connections and SQL and imports no other engine. Only `store/__init__.py`
    (which opens the default engine) names an engine from outside."""
    module = _module_name(path)
    if module == "store":
        return
    own = [engine for engine in ENGINES if _within(module, (engine,))]
    foreign = [
        name
        for name in _our_imports(path, module)
        if _within(name, tuple(ENGINES)) and not _within(name, tuple(own))
    ]
    assert not foreign, f"{module} imports the engine module(s) {foreign}"


def test_the_check_sees_absolute_and_relative_upward_imports(tmp_path: Path) -> None:
    source = tmp_path / "ledger.py"
    source.write_text("from bot.slack import app\nfrom ..service import tasks\nimport json\n")
    names = _our_imports(source, "store.sqlite.ledger")
    assert names == ["bot.slack", "store.service"]
    _, allowed = _rule_for("store.sqlite.ledger")
    assert not _within("bot.slack", allowed)
    assert not _within("bot.service", _rule_for("bot.runtime.runner")[1])


# -- docs/architecture.md stays true ---------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
CODE = re.compile(r"`([^`\n]+)`")
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
OUR_PATH = re.compile(r"(?:bot|store|tests|bench|examples|docs)/[\w./-]*")
OUR_MODULE = re.compile(r"(?:bot|store)(?:\.\w+)*")


def _section(text: str, title: str) -> str:
    """The lines of the markdown section `## title`, up to the next `## ` heading."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def documented_layers(text: str) -> dict[str, set[str]]:
    """The "package | may import" table of the Layers section: package -> the prefixes
    it may import, with "leaves" and "anything" spelled out as the test spells them."""
    layers: dict[str, set[str]] = {}
    for line in _section(text, "Layers").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed = set(CODE.findall(cells[1]))
        if "leaves" in cells[1]:
            allowed |= set(LEAVES)
        if "anything" in cells[1]:
            allowed |= set(ANYTHING)
        for package in CODE.findall(cells[0]):
            layers[package] = allowed
    return layers


def test_the_architecture_doc_states_the_layer_rules_this_test_enforces() -> None:
    documented = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert set(documented) == set(ALLOWED), (
        "docs/architecture.md's layer table lists other packages"
    )
    differ = {
        package: (sorted(documented[package]), sorted(ALLOWED[package]))
        for package in ALLOWED
        if documented[package] != set(ALLOWED[package])
    }
    assert not differ, f"docs/architecture.md states other rules (doc, test): {differ}"


def _exists(name: str) -> bool:
    if OUR_PATH.fullmatch(name):
        return (ROOT / name).exists()
    parts = name.split(".")
    return (ROOT.joinpath(*parts).with_suffix(".py")).is_file() or (
        ROOT.joinpath(*parts) / "__init__.py"
    ).is_file()


def named_in_architecture(text: str) -> list[str]:
    """Every repository path (bot/..., store/..., tests/...) and every module of ours
    (bot.x, store.y) the page names in code spans."""
    prose = FENCED.sub("", text)
    return [
        name
        for name in CODE.findall(prose)
        if OUR_PATH.fullmatch(name) or OUR_MODULE.fullmatch(name)
    ]


def test_every_path_and_module_the_architecture_doc_names_exists() -> None:
    named = named_in_architecture(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(named) > 100, "the check found too few names: has the page's format changed?"
    missing = sorted({name for name in named if not _exists(name)})
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"


def test_every_concept_row_names_a_module() -> None:
    rows = [
        line
        for line in _section(
            ARCHITECTURE.read_text(encoding="utf-8"), "Where each concept lives"
        ).splitlines()
        if line.startswith("| ") and not line.startswith("| concept")
    ]
    assert len(rows) > 60
    bare = [row for row in rows if not named_in_architecture(row.rsplit("|", 2)[1])]
    assert not bare, f"concepts without a module: {bare}"


def test_the_doc_checks_see_a_wrong_name_and_a_wrong_rule() -> None:
    assert not _exists("bot/service/nothing_here.py")
    assert not _exists("bot.service.nothing_here")
    assert _exists("store/migrations/sqlite/")
    assert _exists("bot.service.voting")
    table = (
        "\n## Layers\n\n| package | may import |\n|---|---|\n| `bot.review` | `store`, leaves |\n"
    )
    assert documented_layers(table) == {"bot.review": {"store", *LEAVES}}


def test_every_module_has_its_row_in_the_concept_table() -> None:
    """A newcomer finds each module from the concept it holds: a new module gets its row
    (a package's `__init__` only gathers what its modules hold)."""
    concepts = _section(ARCHITECTURE.read_text(encoding="utf-8"), "Where each concept lives")
    named = set(named_in_architecture(concepts))
    unnamed = [
        str(path.relative_to(ROOT))
        for path in SOURCES
        if path.name != "__init__.py" and str(path.relative_to(ROOT)) not in named
    ]
    assert not unnamed, f"modules in no row of docs/architecture.md's concept table: {unnamed}"
