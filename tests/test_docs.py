"""The README lists every environment variable the code reads.

The names are found in the code itself: the first argument of `os.getenv(...)`,
`<environ>.get(...)` and `<environ>[...]` where the mapping is an environment
(`os.environ`, or a parameter or variable named `env`/`environ`), whether the name is
written there or in a module constant (`POLICY_ENV = "APPROVALS_POLICY"`).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

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


# -- the docs point at what exists -----------------------------------------------------

TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    }


def missing_tests(text: str) -> list[str]:
    """Each `tests/...py::test_name` the text names that is not a test in that file."""
    missing = []
    for file, name in TEST_REFERENCE.findall(text):
        path = ROOT / file
        if not path.is_file() or name not in _test_names(path):
            missing.append(f"{file}::{name}")
    return missing


def test_every_test_the_security_doc_names_exists() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert len(TEST_REFERENCE.findall(text)) > 60, "too few references: has the format changed?"
    assert not missing_tests(text), f"docs/security.md names missing tests: {missing_tests(text)}"


def test_a_reference_to_a_test_that_is_gone_is_caught() -> None:
    assert (
        missing_tests("`tests/test_docs.py::test_every_test_the_security_doc_names_exists`") == []
    )
    assert missing_tests("`tests/test_docs.py::test_that_never_was`") == [
        "tests/test_docs.py::test_that_never_was"
    ]
    assert missing_tests("`tests/nowhere.py::test_x`") == ["tests/nowhere.py::test_x"]


def relative_links(path: Path) -> list[str]:
    return [
        target for target in LINK.findall(path.read_text(encoding="utf-8")) if "://" not in target
    ]


def test_the_readme_links_nothing_outside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    outside = [
        target for target in LINK.findall(readme) if "://" in target or target.startswith("mailto:")
    ]
    assert not outside, f"README.md links outside the repository: {outside}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_the_docs_reaches_a_file(doc: Path) -> None:
    broken = [
        target
        for target in relative_links(doc)
        if not (doc.parent / target.partition("#")[0]).exists()
    ]
    assert not broken, f"{doc.relative_to(ROOT)} links to missing files: {broken}"


# -- the repository speaks for itself --------------------------------------------------

TEXT_ROOTS = ("bot", "store", "tests", "bench", "docs", "examples", ".ci")
TEXT_FILES = ("README.md", "pyproject.toml", "manifest.yml")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".sql", ".txt", ".cfg", ""}
PLANNING_WORDS = re.compile(
    r"\bissues?\s*#?\d+|\bDESIGN\.md\b|\bseed\s+(?:doc|document|\d+)|\bbuild plan\b"
    r"|\bfrom the issue\b|\bthe issue names\b",
    re.IGNORECASE,
)


def repository_text() -> list[Path]:
    found = [ROOT / name for name in TEXT_FILES]
    for root in TEXT_ROOTS:
        found.extend(
            path
            for path in sorted((ROOT / root).rglob("*"))
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
        )
    return found


def planning_talk(text: str) -> list[str]:
    return [match.group(0) for match in PLANNING_WORDS.finditer(text)]


def test_no_code_doc_or_bench_speaks_of_issues_or_plans() -> None:
    """The repository stands alone: nothing refers to tickets, design notes or plans
    that live elsewhere."""
    found = {
        str(path.relative_to(ROOT)): talk
        for path in repository_text()
        if (talk := planning_talk(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert not found, f"text that points outside the repository: {found}"


def test_the_planning_check_sees_what_it_should() -> None:
    # The phrases are split so that this file does not trip the check itself.
    assert planning_talk("as Issue " + "12 says") == ["Issue " + "12"]
    assert planning_talk("see DESIGN" + ".md") == ["DESIGN" + ".md"]
    assert planning_talk("the floor the issue" + " names") == ["the issue" + " names"]
    assert planning_talk("def seed(store): seeds the test data; a known issue") == []


def test_the_license_file_is_the_license_pyproject_names() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert (project["license"], project["license-files"]) == ("Apache-2.0", ["LICENSE"])
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert " ".join(text.split()[:5]) == "Apache License Version 2.0, January"
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert len(text.splitlines()) > 190  # the whole text, not a pointer to it


def test_every_install_line_works_from_a_checkout() -> None:
    """The package is not on an index: `pip install 'approvals-bot[extra]'` fails, so
    every install line is the one that works, `pip install -e '.[extra]'` in the checkout."""
    index_install = re.compile(r"pip install\s+['\"]?approvals-bot")
    found = {
        str(path.relative_to(ROOT)): index_install.findall(text)
        for path in repository_text()
        if path.suffix != "" and index_install.search(text := path.read_text(encoding="utf-8"))
    }
    found.pop("tests/test_docs.py", None)
    assert not found, f"install lines that need a package index: {found}"


def readme_configuration_names() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Configuration", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return set(re.findall(r"(?:^|\s)([A-Z][A-Z0-9_]{2,})=", block, flags=re.MULTILINE))


def test_env_example_lists_every_variable() -> None:
    """Each variable the code reads, and each the README's configuration names, has its
    (commented-out) line in .env.example."""
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]{2,})=", text, flags=re.MULTILINE))
    wanted = set(variables_read_by_the_code()) | readme_configuration_names()
    assert "APPROVALS_SWEEP_SECONDS" in wanted  # read through a helper the scan misses
    assert not wanted - listed, f".env.example does not list: {sorted(wanted - listed)}"
