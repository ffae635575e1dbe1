"""Decision seals: an HMAC-SHA256 over everything a vote, a standing decision or an
approval request means, keyed from the store's key ring.

Whoever can write the database but does not hold the keys can insert rows, flip a
status or copy a row onto another record; none of that can make a seal. So a decision
counts only where its seal verifies (the service decides what counts, from what the
store's reads say of each seal: bot.service.authority).

The MAC key is derived per ring key (HKDF-SHA256, a fixed `info` label), so the AES key
that encrypts blobs is never used as an HMAC key directly, and a seal names the ring key
it was made under: the newest key seals, every key in the ring verifies, and rotation
re-seals under the newest. The message is canonical JSON of the purpose, the key id and
the fields (times as the stored text), so a seal moved to another purpose, record or key
id does not verify. Comparison is in constant time.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import orjson
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

# re-exported (`X as X`): store.seals stays the one place seals are imported from
from store.authority_seals import ESCALATION_PURPOSE as ESCALATION_PURPOSE
from store.authority_seals import STAND_IN_PURPOSE as STAND_IN_PURPOSE
from store.authority_seals import WINDOW_MATCH_PURPOSE as WINDOW_MATCH_PURPOSE
from store.authority_seals import WINDOW_PURPOSE as WINDOW_PURPOSE
from store.authority_seals import escalation_fields as escalation_fields
from store.authority_seals import escalation_row_fields as escalation_row_fields
from store.authority_seals import stand_in_fields as stand_in_fields
from store.authority_seals import stand_in_row_fields as stand_in_row_fields
from store.authority_seals import window_fields as window_fields
from store.authority_seals import window_match_fields as window_match_fields
from store.authority_seals import window_row_fields as window_row_fields
from store.crypto import DataKey, KeyRing
from store.records import ApprovalRecord, NewApproval, SealCheck, VoteRecord
from store.rows import Row, by_name, from_db, row_to_approval, to_db

SEAL_COLUMNS = "seal_key_id, seal"  # a sealed row's columns: the ring key id, the MAC
SEAL_INFO = b"approvals-bot decision seal v1"
MAC_BYTES = 32

VOTE_PURPOSE = "vote"
STANDING_PURPOSE = "standing"
REQUEST_PURPOSE = "request"
SNAPSHOT_PURPOSE = "snapshot"
SNAPSHOT_SEAL_COLUMNS = "snapshot_seal_key_id, snapshot_seal"  # the snapshot's own seal

SealValue = str | int | None
REMEMBERED_CHECKS = 4096
REMEMBERED_SNAPSHOT_CHARS = 16_384


@dataclass(frozen=True, kw_only=True)
class Seal:
    """A seal as stored: the ring key it was made under and the MAC (hex)."""

    key_id: str
    mac: str


def seal_message(purpose: str, fields: Mapping[str, SealValue], key_id: str) -> bytes:
    """The canonical bytes a seal covers: `json.dumps` of {"fields", "key_id", "purpose"}
    with sorted keys, no spaces, ASCII only (`\\uXXXX` escapes).

    Every seal is made and checked on a vote's path, so the common case is made faster
    with the same bytes: orjson writes the fields (sorted keys, no spaces), and the
    fixed rest of the message is remembered per key id and purpose. orjson leaves
    non-ASCII text and DEL (0x7f) unescaped where `json` escapes them, and refuses what
    `json` writes otherwise (an int beyond 64 bits, a key that is not a string): any
    such message is written by `json` as before, so a seal made either way verifies."""
    try:
        encoded = orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        encoded = b"\x7f"  # not ASCII-safe: written by json below
    if encoded.isascii() and b"\x7f" not in encoded:
        return b'{"fields":' + encoded + _message_tail(key_id, purpose)
    bound = {"fields": dict(fields), "purpose": purpose, "key_id": key_id}
    return json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()


@functools.lru_cache(maxsize=256)
def _message_tail(key_id: str, purpose: str) -> bytes:
    """What follows the fields in a seal message: the key id and the purpose."""
    return f',"key_id":{json.dumps(key_id)},"purpose":{json.dumps(purpose)}}}'.encode()


class DecisionSeals:
    """Makes seals with the ring's newest key and checks them with any ring key."""

    def __init__(self, keyring: KeyRing) -> None:
        self.keyring = keyring
        self._keyed: dict[str, hmac.HMAC] = {}  # per ring key: HMAC keyed, no message yet
        self._remembered_snapshot_check = functools.lru_cache(maxsize=REMEMBERED_CHECKS)(
            self._snapshot_check
        )

    def check_snapshot(
        self, *, approval_id: str, arguments_digest: str, snapshot: str, seal: Seal | None
    ) -> SealCheck:
        """What an approval's snapshot seal says (`snapshot_fields`). Lists read the same
        rows again and again: the answer for snapshots up to `REMEMBERED_SNAPSHOT_CHARS`
        is remembered, keyed by everything it depends on (the snapshot text included)."""
        if len(snapshot) > REMEMBERED_SNAPSHOT_CHARS:
            return self._snapshot_check(approval_id, arguments_digest, snapshot, seal)
        return self._remembered_snapshot_check(approval_id, arguments_digest, snapshot, seal)

    def _snapshot_check(
        self, approval_id: str, arguments_digest: str, snapshot: str, seal: Seal | None
    ) -> SealCheck:
        fields = snapshot_fields(
            approval_id=approval_id, arguments_digest=arguments_digest, snapshot=snapshot
        )
        return self.check(SNAPSHOT_PURPOSE, fields, seal)

    def seal(self, purpose: str, fields: Mapping[str, SealValue]) -> Seal:
        key = self.keyring.newest
        return Seal(key_id=key.key_id, mac=self._mac(key, purpose, fields))

    def check(self, purpose: str, fields: Mapping[str, SealValue], seal: Seal | None) -> SealCheck:
        if seal is None:
            return "missing"
        key = self.keyring.get(seal.key_id)
        if key is None:
            return "unknown_key"
        expected = self._mac(key, purpose, fields)
        return "valid" if hmac.compare_digest(expected, seal.mac) else "mismatch"

    def _mac(self, key: DataKey, purpose: str, fields: Mapping[str, SealValue]) -> str:
        keyed = self._keyed.get(key.key_id)
        if keyed is None:
            mac_key = HKDF(
                algorithm=hashes.SHA256(), length=MAC_BYTES, salt=None, info=SEAL_INFO
            ).derive(key.secret)
            keyed = self._keyed[key.key_id] = hmac.new(mac_key, digestmod="sha256")
        mac = keyed.copy()  # the key's HMAC state, set up once: a copy costs less
        mac.update(seal_message(purpose, fields, key.key_id))
        return mac.hexdigest()


def stored_seal(key_id: object, mac: object) -> Seal | None:
    """The seal of a row's two seal columns; None when either is empty."""
    if not isinstance(key_id, str) or not isinstance(mac, str) or not key_id or not mac:
        return None
    return Seal(key_id=key_id, mac=mac)


def vote_fields(
    *, approval_id: str, voter: str, decision: str, digest: str, at: str
) -> dict[str, SealValue]:
    """What a vote means: who decided what on which arguments of which approval, when
    (`at` as stored). The call it is for, the run and the quorum are the approval's,
    fixed by its request seal (`request_fields`); the digest binds the call's tool,
    execution key and arguments. So a vote needs nothing read from the database to be
    sealed, and a vote row moved to another approval or digest does not verify."""
    return {
        "approval_id": approval_id,
        "voter": voter,
        "decision": decision,
        "digest": digest,
        "at": at,
    }


def request_fields(
    *,
    approval_id: str,
    run_id: str,
    execution_key: str,
    tool_call_id: str,
    tool_name: str,
    requester: str | None,
    required_approvals: int,
    created_at: str,
    expires_at: str | None,
) -> dict[str, SealValue]:
    """What an approval request fixes for good: the call, who asked, the quorum and the
    expiry (times as stored)."""
    return {
        "approval_id": approval_id,
        "run_id": run_id,
        "execution_key": execution_key,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "requester": requester,
        "required_approvals": required_approvals,
        "created_at": created_at,
        "expires_at": expires_at,
    }


def standing_fields(
    *,
    approval_id: str,
    run_id: str,
    tool_name: str,
    decision: str,
    decider: str,
    message: str | None,
    created_at: str,
) -> dict[str, SealValue]:
    """What a standing decision means: this person's verdict on this tool for the rest of
    this run, made by this approval (`created_at` as stored)."""
    return {
        "approval_id": approval_id,
        "run_id": run_id,
        "tool_name": tool_name,
        "decision": decision,
        "decider": decider,
        "message": message,
        "created_at": created_at,
    }


def seal_params(seal: Seal | None) -> tuple[str | None, str | None]:
    """The values of the two seal columns."""
    return (None, None) if seal is None else (seal.key_id, seal.mac)


def approval_request_fields(approval: ApprovalRecord) -> dict[str, SealValue]:
    return request_fields(
        approval_id=approval.approval_id,
        run_id=approval.run_id,
        execution_key=approval.execution_key,
        tool_call_id=approval.tool_call_id,
        tool_name=approval.tool_name,
        requester=approval.requester,
        required_approvals=approval.required_approvals,
        created_at=to_db(approval.created_at),
        expires_at=None if approval.expires_at is None else to_db(approval.expires_at),
    )


def fields_of_vote(approval: ApprovalRecord, vote: VoteRecord) -> dict[str, SealValue]:
    return vote_fields(
        approval_id=approval.approval_id,
        voter=vote.voter,
        decision=vote.decision,
        digest=vote.digest,
        at=to_db(vote.at),
    )


def new_request_fields(new: NewApproval, created_at: datetime) -> dict[str, SealValue]:
    """What the request of an approval about to be added fixes (`approval_request_fields`
    of the row it becomes)."""
    return request_fields(
        approval_id=new.approval_id,
        run_id=new.run_id,
        execution_key=new.key,
        tool_call_id=new.tool_call_id,
        tool_name=new.tool_name,
        requester=new.requester,
        required_approvals=new.required_approvals,
        created_at=to_db(created_at),
        expires_at=None if new.expires_at is None else to_db(new.expires_at),
    )


def decider_vote(approval: ApprovalRecord, at: str) -> VoteRecord:
    """A decided approval's decision as its decider's vote on its current digest, cast at
    `at` (as stored)."""
    assert approval.decider is not None
    return VoteRecord(
        approval_id=approval.approval_id,
        voter=approval.decider,
        decision="approved" if approval.status == "approved" else "rejected",
        digest=approval.arguments_digest,
        reason=approval.reason,
        at=from_db(at),
    )


def standing_row_fields(row: Row) -> dict[str, SealValue]:
    return standing_fields(
        approval_id=row["approval_id"],
        run_id=row["run_id"],
        tool_name=row["tool_name"],
        decision=row["decision"],
        decider=row["decider"],
        message=row["message"],
        created_at=row["created_at"],
    )


def check_standing_row(seals: DecisionSeals, row: Row) -> SealCheck:
    """What a standing decision row's seal says (the row read with its seal columns)."""
    seal = stored_seal(row["seal_key_id"], row["seal"])
    return seals.check(STANDING_PURPOSE, standing_row_fields(row), seal)


# -- what an approver is shown: the review snapshot ---------------------------------------

UNVERIFIED_NOTE = (
    "the arguments: the stored snapshot of this call failed its seal (it was altered in "
    "the database); nobody can approve it"
)


def snapshot_fields(
    *, approval_id: str, arguments_digest: str, snapshot: str
) -> dict[str, SealValue]:
    """What an approval's review snapshot is: this text (by its SHA-256), shown for this
    digest of this approval. Re-made whenever the store writes the snapshot (a request,
    approve-with-changes, retention), so what a person is shown is what the store wrote."""
    return {
        "approval_id": approval_id,
        "arguments_digest": arguments_digest,
        "snapshot_sha256": hashlib.sha256(snapshot.encode()).hexdigest(),
    }


def seal_snapshot(
    seals: DecisionSeals, *, approval_id: str, arguments_digest: str, snapshot: str
) -> Seal:
    fields = snapshot_fields(
        approval_id=approval_id, arguments_digest=arguments_digest, snapshot=snapshot
    )
    return seals.seal(SNAPSHOT_PURPOSE, fields)


def unverified_snapshot(tool_name: str, arguments_digest: str) -> str:
    """The review snapshot JSON shown in place of one whose seal does not verify: the
    tool and the digest, no arguments, and a note saying why."""
    return json.dumps(
        {
            "tool_name": tool_name,
            "arguments": {},
            "redacted_paths": [],
            "omitted_fields": [UNVERIFIED_NOTE],
            "digest": arguments_digest,
        },
        sort_keys=True,
    )


def read_approval(seals: DecisionSeals, row: Row) -> ApprovalRecord:
    """The approval of a row read with its snapshot seal columns (`APPROVAL_COLUMNS`
    include them), its snapshot checked: one that does not verify is never handed out,
    it is replaced by `unverified_snapshot`, and `snapshot_seal` says what was found."""
    row = by_name(row)
    digest = row["arguments_digest"]
    check = seals.check_snapshot(
        approval_id=row["approval_id"],
        arguments_digest=digest,
        snapshot=row["snapshot"],
        seal=stored_seal(row["snapshot_seal_key_id"], row["snapshot_seal"]),
    )
    if check == "valid":
        return row_to_approval(row, snapshot_seal=check)
    shown = unverified_snapshot(row["tool_name"], digest)
    return row_to_approval(row, snapshot=shown, snapshot_seal=check)
