"""Where the key ring comes from: `APPROVALS_KEYS`, or a key file beside the database.

`APPROVALS_KEYS` holds `kid:base64key,kid:base64key,...`; the first key encrypts new
writes, every key decrypts. When it is unset, the key file `<database>.key` is used,
created on first run with mode 0600 (one `kid:base64key` per line, newest first). A key
file that group or others may read is refused: a key anyone on the host can read protects
nothing. Errors name the entry or file at fault and never print key material.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
import stat
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path

from bot.errors import ConfigError
from store.crypto import KEY_BYTES, DataKey, KeyRing, NoKeys

KEYS_ENV = "APPROVALS_KEYS"
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def generate_key(key_id: str | None = None) -> DataKey:
    """A fresh random AES-256 key; the default id carries the date and a random suffix."""
    kid = key_id or f"k{datetime.now(UTC):%Y%m%d}-{secrets.token_hex(3)}"
    _check_key_id(kid, where="generated key")
    return DataKey(key_id=kid, secret=secrets.token_bytes(KEY_BYTES))


def format_key(key: DataKey) -> str:
    """`kid:base64key`, the form APPROVALS_KEYS and the key file use."""
    return f"{key.key_id}:{base64.b64encode(key.secret).decode()}"


def parse_keyring(text: str, *, source: str) -> KeyRing:
    """Parse `kid:base64key` entries separated by commas or newlines (`#` comments)."""
    entries = [
        entry.strip()
        for line in text.splitlines()
        if not line.strip().startswith("#")
        for entry in line.split(",")
        if entry.strip()
    ]
    if not entries:
        raise ConfigError(f"{source} holds no keys; expected kid:base64key[,kid:base64key...]")
    return KeyRing([_parse_entry(entry, number, source) for number, entry in enumerate(entries, 1)])


def _parse_entry(entry: str, number: int, source: str) -> DataKey:
    where = f"{source} entry {number}"
    kid, colon, encoded = entry.partition(":")
    if not colon:
        raise ConfigError(f"{where} has no ':'; expected kid:base64key")
    kid = kid.strip()
    _check_key_id(kid, where=where)
    try:
        secret = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where} (key id {kid!r}) is not valid base64") from None
    if len(secret) != KEY_BYTES:
        raise ConfigError(
            f"{where} (key id {kid!r}) decodes to {len(secret)} bytes; AES-256 needs {KEY_BYTES}"
        )
    return DataKey(key_id=kid, secret=secret)


def _check_key_id(kid: str, *, where: str) -> None:
    if not KEY_ID_PATTERN.match(kid):
        raise ConfigError(f"{where} has key id {kid!r}; use 1-64 letters, digits, '.', '_' or '-'")


def key_file_for(database: Path) -> Path:
    """The default key file: `<database file name>.key` in the same directory."""
    return database.with_name(database.name + ".key")


def load_key_file(path: Path) -> KeyRing:
    """Read a key file, refusing one that group or others may access."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        raise ConfigError(f"key file {path} does not exist") from None
    if mode & 0o077:
        raise ConfigError(
            f"key file {path} has mode {mode:04o}; group and others must have no access "
            f"(run: chmod 600 {path})"
        )
    return parse_keyring(path.read_text(encoding="utf-8"), source=f"key file {path}")


def create_key_file(path: Path, key: DataKey | None = None) -> KeyRing:
    """Create a key file holding `key` (default a new one), mode 0600; fails if it exists."""
    key = key or generate_key()
    _write_new_file(path, format_key(key) + "\n")
    return KeyRing([key])


def prepend_key_to_file(path: Path, key: DataKey, *, decrypt_only: bool = False) -> KeyRing:
    """Make `key` the newest key of an existing key file (atomic replace, mode 0600); with
    `decrypt_only`, its last key instead: read with, never sealed with, until moved first."""
    ring = load_key_file(path)
    if ring.get(key.key_id) is not None:
        raise ConfigError(f"key id {key.key_id!r} is already in key file {path}")
    keys = (*ring, key) if decrypt_only else (key, *ring)
    lines = [format_key(k) for k in keys]
    temporary = path.with_name(path.name + f".tmp-{secrets.token_hex(4)}")
    _write_new_file(temporary, "\n".join(lines) + "\n")
    os.replace(temporary, path)
    return KeyRing(keys)


def _write_new_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def resolve_keyring(
    database: Path,
    *,
    environ: Mapping[str, str] | None = None,
    sealed: Collection[str],
    required: bool = True,
) -> KeyRing:
    """APPROVALS_KEYS if set, else the key file beside the database.

    The key file is created only when nothing in the database is `sealed` yet (the key
    ids its sealed data names): a missing key file next to encrypted data is an error,
    not a reason to mint a key that cannot decrypt it. Not `required` (a command that
    reads only what is in clear), a missing key is NoKeys, and no key file is created.
    """
    env = os.environ if environ is None else environ
    configured = env.get(KEYS_ENV)
    if configured is not None and configured.strip():
        return parse_keyring(configured, source=KEYS_ENV)
    path = key_file_for(database)
    if path.exists():
        return load_key_file(path)
    if sealed:
        problem = missing_key_file(database, path, sealed)
        if required:
            raise ConfigError(problem)
        return NoKeys(problem)
    if not required:
        return NoKeys(f"database {database} has no key file ({path}) and {KEYS_ENV} is unset")
    return create_key_file(path)


def missing_key_file(database: Path, key_file: Path, sealed: Collection[str]) -> str:
    """Why a SQLite database's sealed data cannot be opened, and where its keys are."""
    return (
        f"database {database} holds data sealed with key id(s) {', '.join(sorted(sealed))}, "
        f"but its key file {key_file} is missing: restore it (or set {KEYS_ENV}); a "
        "database made by `approvals-bot db copy` needs the key file of the database it "
        f"was copied from, copied to {key_file} (mode 0600)"
    )


def missing_keys_variable(where: str, sealed: Collection[str]) -> str:
    """Why a server database (no key file beside it) cannot be opened without
    APPROVALS_KEYS: the keys its data was sealed with, or a new ring when none was."""
    if not sealed:
        return (
            f"database {where} is Postgres: set {KEYS_ENV} (kid:base64key,...; "
            "`approvals-bot keys generate --print` makes one); there is no key file beside it"
        )
    return (
        f"database {where} holds data sealed with key id(s) {', '.join(sorted(sealed))} and "
        f"{KEYS_ENV} is not set: set it to those keys (kid:base64key,...). After "
        "`approvals-bot db copy` from SQLite they are the lines of the source's key file: "
        f'{KEYS_ENV}="$(paste -sd, approvals.db.key)"'
    )
