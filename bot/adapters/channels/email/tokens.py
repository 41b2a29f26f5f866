"""Approval reply tokens (approval codes): bound to one approval, one approver address and an
expiry, signed with EMAIL_REPLY_SECRET (itsdangerous). Pure (no I/O).

The same machinery signs the code of a sender confirmation ("Did you send this?"): its kind
is signed in, so an approval code never confirms a sender and a confirmation code never
decides an approval.

A code travels in a Reply-To's local part (`deploybot+<code>@...`), where only some
characters survive every mail system: so it is `<id>.<expiry>.<signature>` in lower-case
hex, digits and dots (TOKEN), the signature an HMAC-SHA256 cut to 64 bits (16 hex digits).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from itsdangerous import HMACAlgorithm, Signer, base64_encode

TOKEN = r"[0-9a-f]{16}\.\d{10}\.[0-9a-f]{16}"
_SIGNATURE = re.compile(r"[0-9a-f]{16}")
SALT = b"deploybot.email-code"


class TokenError(ValueError):
    pass


APPROVAL = "approval"
CONFIRMATION = "confirmation"


class _Short(HMACAlgorithm):
    """HMAC-SHA256 cut to its first 8 bytes: what fits the local part, and a forgery holds
    once in 2**64."""

    def __init__(self) -> None:
        super().__init__(hashlib.sha256)

    def get_signature(self, key: bytes, value: bytes) -> bytes:
        return super().get_signature(key, value)[:8]


def _signer(secret: str) -> Signer:
    return Signer(secret, salt=SALT, key_derivation="hmac", digest_method=hashlib.sha256, algorithm=_Short())


def _old_signer(secret: str) -> Signer:
    """Compatibility, read only: how codes were signed before itsdangerous (the same short
    HMAC, written by hand, under the secret itself). A code mailed so still decides until it
    expires (its expiry is in the code, checked as always); nothing new is signed so. Remove
    once the longest approval expiry has passed since the release that signs the new way."""
    return Signer(secret, key_derivation="none", algorithm=_Short())


def make_token(secret: str, approval_id: str, address: str, expires_at: datetime, kind: str = APPROVAL) -> str:
    expires = int(expires_at.timestamp())
    signer = _signer(secret)
    signature = signer.algorithm.get_signature(signer.derive_key(), _blob(approval_id, address, expires, kind))
    return f"{approval_id}.{expires}.{signature.hex()}"


def check_token(secret: str, token: str, address: str, now: datetime, kind: str = APPROVAL) -> str:
    """The approval (or confirmation) id the token is for; raises TokenError saying why it is
    not accepted."""
    approval_id, _, rest = token.partition(".")
    expires_text, _, signature = rest.partition(".")
    what = f"the {kind} code"
    if not (approval_id and expires_text.isdigit() and signature):
        raise TokenError(f"{what} is malformed")
    if not _signed(secret, _blob(approval_id, address, int(expires_text), kind), signature):
        raise TokenError(f"{what} is not valid for this sender (forged, altered, or sent from another address)")
    if now > datetime.fromtimestamp(int(expires_text), UTC):
        raise TokenError(f"{what} has expired")
    return approval_id


def _signed(secret: str, blob: bytes, signature: str) -> bool:
    """Whether `signature` (as mailed: lower-case hex) signs `blob`, the new way or the old."""
    if not _SIGNATURE.fullmatch(signature):
        return False
    as_signed = base64_encode(bytes.fromhex(signature))
    return any(signer.verify_signature(blob, as_signed) for signer in (_signer(secret), _old_signer(secret)))


def _blob(approval_id: str, address: str, expires: int, kind: str) -> bytes:
    """What a code signs: an approval's as it always was, any other kind's with its kind first."""
    blob = f"{approval_id}|{address.lower()}|{expires}"
    return (blob if kind == APPROVAL else f"{kind}|{blob}").encode()
