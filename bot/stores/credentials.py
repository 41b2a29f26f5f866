"""Credentials in Redis: personal API tokens, one-time sign-in links, and signed-out sessions.

No secret is stored: a token or a link's code is shown once, to its owner, and Redis keeps
only its SHA-256 hash (both are 256-bit random values, so a plain hash is enough: there is
nothing to guess). Whose a credential is is a person's *name* (bot/people.py); whether that
name still means anyone is the directory's business, so removing someone from
deploybot.toml takes their powers without touching what is stored here.

Sessions are cookies the web layer signs (session id, person, expiry), so nothing is stored
for a live session. A signed cookie stays valid until it expires, though, so signing out
needs server state: `end_session` records the session id until the cookie would have
expired anyway, and the web layer refuses a cookie whose session `session_ended`.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from redis.asyncio import Redis
from redis.typing import EncodableT, FieldT

from bot.clock import utcnow
from bot.stores import scripts
from bot.stores.keys import Keys
from bot.stores.replies import text

TOKEN_PREFIX = "dbt"
_TOKEN = re.compile(rf"^{TOKEN_PREFIX}_([0-9a-f]{{16}})_([A-Za-z0-9_-]{{43}})$")

# KEYS: the token's hash. ARGV: the hash of the token just verified, now. Sets last_used only
# while the token is still the one verified (a revoke in between leaves nothing behind).
_TOUCH = """
if redis.call('HGET', KEYS[1], 'hash') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'last_used', ARGV[2])
return 1
"""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    person: str
    name: str
    created: datetime
    last_used: datetime | None


def _info(token_id: str, fields: dict[str, str]) -> TokenInfo:
    last_used = fields.get("last_used")
    return TokenInfo(
        token_id=token_id,
        person=fields["person"],
        name=fields["name"],
        created=datetime.fromisoformat(fields["created"]),
        last_used=datetime.fromisoformat(last_used) if last_used else None,
    )


def _decoded(reply: dict[bytes | str, bytes | str]) -> dict[str, str]:
    return {text(k): text(v) for k, v in reply.items()}


class RedisCredentials:
    def __init__(self, redis: Redis, keys: Keys | None = None, clock: Callable[[], datetime] = utcnow) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.clock = clock

    # --- personal API tokens ----------------------------------------------------------------

    async def create(self, person: str, name: str) -> tuple[str, str]:
        """A new token for `person`, called `name`: (its id, the token). The token is shown
        this once; only its hash is kept."""
        if not person.strip() or not name.strip():
            raise ValueError("a token needs a person and a name")
        token_id = secrets.token_hex(8)
        token = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
        fields: dict[FieldT, EncodableT] = {
            "hash": _digest(token), "person": person, "name": name.strip(),
            "created": self.clock().isoformat(), "last_used": "",
        }
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.api_token(token_id), mapping=fields)
            pipe.sadd(self.keys.api_tokens(), token_id)
            await pipe.execute()
        return token_id, token

    async def verify(self, token: str) -> TokenInfo | None:
        """The token's details when it is one of ours and not revoked (and its last_used
        set to now), else None."""
        match = _TOKEN.match(token.strip())
        if not match:
            return None
        token_id = match.group(1)
        key = self.keys.api_token(token_id)
        fields = _decoded(await self.redis.hgetall(key))
        digest = _digest(token.strip())
        if not hmac.compare_digest(fields.get("hash", "").encode(), digest.encode()):
            return None
        now = self.clock().isoformat()
        if not await scripts.run(self.redis, _TOUCH, [key], digest, now):
            return None  # revoked while being verified
        return _info(token_id, {**fields, "last_used": now})

    async def list(self, person: str | None = None) -> builtins.list[TokenInfo]:
        """Every token (of `person`, when given), oldest first; never the tokens themselves."""
        ids = sorted(text(i) for i in await self.redis.smembers(self.keys.api_tokens()))
        async with self.redis.pipeline(transaction=False) as pipe:
            for token_id in ids:
                pipe.hgetall(self.keys.api_token(token_id))
            replies = await pipe.execute()
        tokens = [_info(token_id, _decoded(reply)) for token_id, reply in zip(ids, replies, strict=True) if reply]
        return sorted(
            (t for t in tokens if person is None or t.person == person), key=lambda t: (t.created, t.token_id)
        )

    async def revoke(self, token_id: str) -> bool:
        """Whether there was such a token; it no longer verifies."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.api_token(token_id))
            pipe.srem(self.keys.api_tokens(), token_id)
            deleted, _ = await pipe.execute()
        return bool(deleted)

    # --- one-time sign-in links ---------------------------------------------------------------

    async def issue_link(self, person: str, ttl_seconds: int = 600) -> str:
        """A code for a sign-in link (sent to the person's address): good once, for
        `ttl_seconds`. Only its hash is kept."""
        if not person.strip():
            raise ValueError("a sign-in link needs a person")
        code = secrets.token_urlsafe(32)
        await self.redis.set(self.keys.sign_in_link(_digest(code)), person, ex=ttl_seconds)
        return code

    async def consume_link(self, code: str) -> str | None:
        """The person the link was for, once: used or expired or never issued -> None.
        One GETDEL, so of two clicks racing exactly one signs in."""
        if not code:
            return None
        person = await self.redis.getdel(self.keys.sign_in_link(_digest(code)))
        return text(person) if person is not None else None

    # --- signed-out sessions ------------------------------------------------------------------

    async def end_session(self, session_id: str, ttl_seconds: int) -> None:
        """Sign a session out: remembered for `ttl_seconds`, the rest of its cookie's life."""
        await self.redis.set(self.keys.ended_session(session_id), "1", ex=max(1, int(ttl_seconds)))

    async def session_ended(self, session_id: str) -> bool:
        return bool(await self.redis.exists(self.keys.ended_session(session_id)))

    # --- how often a sign-in link is mailed ---------------------------------------------------

    async def first_link_in(self, person: str, seconds: int) -> bool:
        """Whether no link was mailed to `person` in the last `seconds` (and now one is):
        POST /auth/email-link asks for no credentials, so this keeps it from flooding a
        mailbox. Kept under the sign-in links' keys, by a hash of the name (codes hash to
        hex, so the two never meet)."""
        key = self.keys.sign_in_link(f"mailed:{_digest(person)}")
        return bool(await self.redis.set(key, "1", ex=max(1, int(seconds)), nx=True))
