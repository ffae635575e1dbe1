"""The README lists every environment variable the code reads.

The names are found in the code itself: the first argument of `os.getenv(...)`,
`<environ>.get(...)` and `<environ>[...]` where the mapping is an environment
(`os.environ`, or a parameter or variable named `env`/`environ`), whether the name is
written there or in a module constant (`POLICY_ENV = "APPROVALS_POLICY"`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("bot", "store")
ENV_MAPPINGS = {"environ", "env"}
NAME = re.compile(r"[A-Z][A-Z0-9_]{2,}")


def _is_environment(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ENV_MAPPINGS
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _constants(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found[node.targets[0].id] = node.value.value
    return found


def _imported_constants(tree: ast.Module, everywhere: dict[str, dict[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in everywhere:
            for alias in node.names:
                value = everywhere[node.module].get(alias.name)
                if value is not None:
                    found[alias.asname or alias.name] = value
    return found


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def variables_read_by_the_code() -> dict[str, list[str]]:
    """Each environment variable name the code reads -> where."""
    files = [path for source in SOURCES for path in sorted((ROOT / source).rglob("*.py"))]
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in files}
    constants = {_module(path): _constants(tree) for path, tree in trees.items()}
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        names = {**_imported_constants(tree, constants), **constants[_module(path)]}
        for node in ast.walk(tree):
            key: ast.expr | None = None
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "getenv":
                    key = node.args[0]
                elif isinstance(func, ast.Attribute) and func.attr == "get":
                    key = node.args[0] if _is_environment(func.value) else None
                elif isinstance(func, ast.Name) and func.id in {
                    "_optional",
                    "_required",
                    "_required_token",
                }:
                    key = node.args[1] if len(node.args) > 1 else None  # bot.slack.config helpers
            elif isinstance(node, ast.Subscript) and _is_environment(node.value):
                key = node.slice
            if key is None:
                continue
            value = None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                value = key.value
            elif isinstance(key, ast.Name):
                value = names.get(key.id)
            if value is not None and NAME.fullmatch(value):
                found.setdefault(value, []).append(f"{path.relative_to(ROOT)}:{key.lineno}")
    return found


def test_the_readme_lists_every_environment_variable_the_code_reads() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    read = variables_read_by_the_code()
    missing = {
        name: places for name, places in read.items() if not re.search(rf"\b{name}\b", readme)
    }
    assert not missing, f"README.md does not list: {missing}"


def test_the_scan_finds_what_it_should() -> None:
    """The scan itself: names read directly, through constants, through helpers."""
    read = variables_read_by_the_code()
    for name in (
        "LOG_LEVEL",  # os.environ.get("LOG_LEVEL", ...)
        "OPENAI_TIMEOUT_SECONDS",  # environ.get("OPENAI_TIMEOUT_SECONDS", ...)
        "APPROVALS_WORKER_ID",  # env.get(WORKER_ID_ENV, ...)
        "APPROVALS_POLICY",  # env.get(POLICY_ENV, ...) with the constant imported
        "SLACK_SIGNING_SECRET",  # _required(env, "SLACK_SIGNING_SECRET")
        "OPS_API_TOKEN",
    ):
        assert name in read, name
