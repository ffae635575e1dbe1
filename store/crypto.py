"""AES-256-GCM sealing of stored blobs, bound to their record by associated data.

Every write draws a fresh random 96-bit nonce. The associated data names what the blob
belongs to (purpose, record fields such as run id and state version, schema version) and
the key id, so a blob copied onto another record, replayed from an older version of the
same record, or relabelled with another key id fails authentication. Any failure to open
a sealed blob becomes one `TamperError`; callers fail closed.

`Sealer` is how every backend seals and opens its blobs: off the event loop when they are
large, and failing closed: a blob that does not open is audited `tamper_detected` before
the TamperError reaches the caller. What each kind of blob is bound to lives with its
concept (run states: store.sql.runs; ledger results: store.sql.ledger).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from bot.errors import ConfigError, KeyMissingError, TamperError
from bot.off_loop import off_loop_if_large
from store.api import AuditStore

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16

AadValue = str | int


@dataclass(frozen=True, kw_only=True)
class DataKey:
    """One AES-256 key and its id. The secret never appears in repr or str."""

    key_id: str
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ConfigError(
                f"key {self.key_id!r} is {len(self.secret)} bytes; AES-256 needs {KEY_BYTES}"
            )


class KeyRing:
    """Keys by id. The first key encrypts new writes; every key decrypts."""

    def __init__(self, keys: Sequence[DataKey]) -> None:
        if not keys:
            raise ConfigError("the key ring is empty; at least one key is needed")
        by_id: dict[str, DataKey] = {}
        for key in keys:
            if key.key_id in by_id:
                raise ConfigError(f"key id {key.key_id!r} appears twice in the key ring")
            by_id[key.key_id] = key
        self._keys = tuple(keys)
        self._by_id = by_id

    @property
    def newest(self) -> DataKey:
        return self._keys[0]

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(key.key_id for key in self._keys)

    def get(self, key_id: str) -> DataKey | None:
        return self._by_id.get(key_id)

    def __iter__(self) -> Iterator[DataKey]:
        return iter(self._keys)

    def __repr__(self) -> str:
        return f"KeyRing(key_ids={list(self.key_ids)!r})"


class NoKeys(KeyRing):
    """The key ring of a store opened to read only what is stored in clear (runs, the
    audit log) where no key is at hand: sealing or opening anything is a ConfigError
    saying why there is no key (`why`), never a TamperError."""

    def __init__(self, why: str) -> None:
        self._keys = ()
        self._by_id = {}
        self.why = why

    @property
    def newest(self) -> DataKey:
        raise ConfigError(self.why)

    def get(self, key_id: str) -> DataKey | None:
        raise ConfigError(self.why)

    def __repr__(self) -> str:
        return "NoKeys()"


@dataclass(frozen=True, kw_only=True)
class Sealed:
    """A sealed blob as stored: the key id, the nonce and ciphertext-with-tag."""

    key_id: str
    nonce: bytes
    ciphertext: bytes


def associated_data(purpose: str, fields: Mapping[str, AadValue], key_id: str) -> bytes:
    """Canonical bytes naming the record a blob belongs to, including the key id."""
    bound = {**fields, "purpose": purpose, "key_id": key_id}
    return json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()


def seal(
    keyring: KeyRing, plaintext: bytes, *, purpose: str, fields: Mapping[str, AadValue]
) -> Sealed:
    """Encrypt with the newest key and a fresh random nonce."""
    key = keyring.newest
    nonce = os.urandom(NONCE_BYTES)
    aad = associated_data(purpose, fields, key.key_id)
    ciphertext = AESGCM(key.secret).encrypt(nonce, plaintext, aad)
    return Sealed(key_id=key.key_id, nonce=nonce, ciphertext=ciphertext)


def unseal(
    keyring: KeyRing, sealed: Sealed, *, purpose: str, fields: Mapping[str, AadValue]
) -> bytes:
    """Decrypt and authenticate; TamperError names what failed, never any key material."""
    where = ", ".join(f"{name}={value}" for name, value in sorted(fields.items()))
    key = keyring.get(sealed.key_id)
    if key is None:
        raise KeyMissingError(
            f"{purpose} blob ({where}) is sealed with key id {sealed.key_id!r}, which this "
            f"process's key ring lacks (it has {', '.join(keyring.key_ids)}); add that key "
            "(APPROVALS_KEYS or the key file) and restart",
            key_id=sealed.key_id,
        )
    if len(sealed.nonce) != NONCE_BYTES or len(sealed.ciphertext) < TAG_BYTES:
        raise TamperError(f"{purpose} blob ({where}) is truncated")
    aad = associated_data(purpose, fields, sealed.key_id)
    try:
        return AESGCM(key.secret).decrypt(sealed.nonce, sealed.ciphertext, aad)
    except InvalidTag:
        raise TamperError(
            f"{purpose} blob ({where}) failed authentication: it was altered, moved from "
            "another record, or encrypted with a different key"
        ) from None


class Sealer:
    """Seals with the ring's newest key and opens with any; records tampering, and the
    key ids it was asked to open with and lacks (`missing`: id -> the blob that named it
    first, what readiness reports)."""

    def __init__(self, keyring: KeyRing, audit: AuditStore) -> None:
        self.keyring = keyring
        self._audit = audit
        self.missing: dict[str, str] = {}

    async def seal(
        self, plaintext: bytes, *, purpose: str, fields: Mapping[str, AadValue]
    ) -> Sealed:
        return await off_loop_if_large(
            len(plaintext),
            lambda: seal(self.keyring, plaintext, purpose=purpose, fields=fields),
        )

    async def open(
        self,
        sealed: Sealed,
        *,
        purpose: str,
        fields: Mapping[str, AadValue],
        run_id: str | None,
    ) -> bytes:
        """Decrypt, or record `tamper_detected` and raise TamperError (fail closed). A key
        id the ring lacks is KeyMissingError, remembered in `missing`, not tampering."""
        try:
            return await off_loop_if_large(
                len(sealed.ciphertext),
                lambda: unseal(self.keyring, sealed, purpose=purpose, fields=fields),
            )
        except KeyMissingError as error:
            self.missing.setdefault(error.key_id, f"{purpose} of run {run_id}")
            raise
        except TamperError as error:
            raise await self.tampered(error, run_id=run_id, purpose=purpose) from None

    async def tampered(
        self, error: TamperError, *, run_id: str | None, purpose: str
    ) -> TamperError:
        """Record the tampering in the audit log; the caller raises what this returns."""
        await self._audit.append_audit(
            "tamper_detected",
            actor="store",
            run_id=run_id,
            detail={"purpose": purpose, "error": str(error)},
        )
        return error
