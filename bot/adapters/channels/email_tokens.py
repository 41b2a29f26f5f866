"""Approval reply tokens (approval codes): bound to one approval, one approver address and an
expiry, signed with EMAIL_REPLY_SECRET. Pure (no I/O).

The same machinery signs the code of a sender confirmation ("Did you send this?"): its kind
is signed in, so an approval code never confirms a sender and a confirmation code never
decides an approval. An approval's blob is as it always was (codes already mailed stay good).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

TOKEN = r"[0-9a-f]{16}\.\d{10}\.[0-9a-f]{16}"


class TokenError(ValueError):
    pass


APPROVAL = "approval"
CONFIRMATION = "confirmation"


def make_token(secret: str, approval_id: str, address: str, expires_at: datetime, kind: str = APPROVAL) -> str:
    expires = int(expires_at.timestamp())
    return f"{approval_id}.{expires}.{_sign(secret, approval_id, address, expires, kind)}"


def check_token(secret: str, token: str, address: str, now: datetime, kind: str = APPROVAL) -> str:
    """The approval (or confirmation) id the token is for; raises TokenError saying why it is
    not accepted."""
    approval_id, _, rest = token.partition(".")
    expires_text, _, signature = rest.partition(".")
    what = f"the {kind} code"
    if not (approval_id and expires_text.isdigit() and signature):
        raise TokenError(f"{what} is malformed")
    if not hmac.compare_digest(signature, _sign(secret, approval_id, address.lower(), int(expires_text), kind)):
        raise TokenError(f"{what} is not valid for this sender (forged, altered, or sent from another address)")
    if now > datetime.fromtimestamp(int(expires_text), UTC):
        raise TokenError(f"{what} has expired")
    return approval_id


def _sign(secret: str, approval_id: str, address: str, expires: int, kind: str = APPROVAL) -> str:
    blob = f"{approval_id}|{address.lower()}|{expires}"
    if kind != APPROVAL:
        blob = f"{kind}|{blob}"
    return hmac.new(secret.encode(), blob.encode(), hashlib.sha256).hexdigest()[:16]
