"""The `.env` file: settings read from a file in the working directory at start-up.

Every `approvals-bot` command reads `./.env` (or the file `APPROVALS_ENV_FILE` names)
before it starts, and sets each variable it holds that the environment does not: the
environment wins, the file fills in, and what neither sets keeps its default.
`.env.example` lists every variable.

The format is the common one: `NAME=value` a line, `export NAME=value` too; blank
lines and lines starting with `#` are skipped; an unquoted value ends at ` #` (a
comment) and is stripped; a value in single quotes is taken as it is, one in double
quotes takes the escapes `\\n`, `\\t`, `\\"` and `\\\\`. No `${...}` expansion. A line
that is none of these stops start-up naming the file and the line number (never its
text: it may hold a secret).
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

from bot.errors import ConfigError

ENV_FILE_ENV = "APPROVALS_ENV_FILE"
DEFAULT_ENV_FILE = ".env"
_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def load_env_file(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """Set, in `environ` (os.environ), each variable of the env file it does not have;
    the file read, or None when there is none (`./.env` is optional; a file that
    APPROVALS_ENV_FILE names must exist)."""
    env = os.environ if environ is None else environ
    named = env.get(ENV_FILE_ENV, "").strip()
    path = Path(named or DEFAULT_ENV_FILE).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named:
            raise ConfigError(f"{ENV_FILE_ENV} names {path}, which does not exist") from None
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"env file {path}: cannot read it ({error})") from None
    for name, value in parse_env_file(text, source=str(path)).items():
        env.setdefault(name, value)
    return path


def parse_env_file(text: str, *, source: str) -> dict[str, str]:
    """The variables of an env file's `text` (the module doc says the format)."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.fullmatch(stripped)
        if match is None:
            raise ConfigError(f"env file {source} line {number}: expected NAME=value")
        found[match.group(1)] = _value(match.group(2), where=f"env file {source} line {number}")
    return found


def _value(raw: str, *, where: str) -> str:
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = _closing_quote(raw, quote)
        if end is None:
            raise ConfigError(f"{where}: the value's {quote} quote is not closed")
        rest = raw[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise ConfigError(f"{where}: unexpected text after the quoted value")
        inner = raw[1:end]
        return inner if quote == "'" else re.sub(r"\\(.)", _unescape, inner)
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def _closing_quote(raw: str, quote: str) -> int | None:
    index = 1
    while index < len(raw):
        if raw[index] == "\\" and quote == '"':
            index += 2
            continue
        if raw[index] == quote:
            return index
        index += 1
    return None


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(1), match.group(0))
