"""Credentials in Redis: personal API tokens, one-time sign-in links, and signed-out sessions.

No secret is stored: a token or a link's code is shown once, to its owner, and Redis keeps
only its SHA-256 hash (both are 256-bit random values, so a plain hash is enough: there is
nothing to guess). Whose a credential is is a person's *name* (bot/core/people.py); whether that
name still means anyone is the directory's business, so removing someone from
deploybot.toml takes their powers without touching what is stored here.

Checking a token costs Redis nothing unless it is one we made: every request with a
well-formed `dbt_` token used to cost a round trip, so a flood of made-up ones held the
connection pool and real users got 503s. So a token (`dbt_<id>_<random>_<checksum>`) carries
a checksum, an HMAC of the rest (like GitHub's tokens carry a CRC32, but keyed: a CRC anyone
can compute, so it would stop typos, not a flood). The key is random, made once and kept in
Redis beside the tokens, read once per process: not derived from SESSION_SECRET, because a
token made by the CLI on another machine (another DATA_DIR, no SESSION_SECRET) must verify on
the server, and rotating the session secret (everyone signs in again) must not break every
pipeline's token; the key only has to be as secret as the tokens' hashes, which it sits
beside. Tokens made before checksums (`dbt_<id>_<random>`) still verify: their hashes are
read once per process (no new one can be made) and a token is compared with them in memory.
A token whose checksum holds but is not stored (revoked) is remembered among the recent
misses (MISSES), and at most LOOKUPS lookups run at once, so not even a flood of a revoked
token can take the pool from everyone else.

Sessions are cookies the web layer signs (session id, person, expiry), so nothing is stored
for a live session. A signed cookie stays valid until it expires, though, so signing out
needs server state: `end_session` records the session id until the cookie would have
expired anyway, and the web layer refuses a cookie whose session `session_ended`.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import hashlib
import hmac
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from redis.asyncio import Redis
from redis.typing import EncodableT, FieldT

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text
from bot.core.tokens import PERSONAL_TOKEN_PREFIX
from bot.runtime.clock import utcnow

_PREFIX = re.escape(PERSONAL_TOKEN_PREFIX)
_TOKEN = re.compile(rf"^{_PREFIX}([0-9a-f]{{16}})_([A-Za-z0-9_-]{{43}})_([A-Za-z0-9_-]{{11}})$")
_LEGACY = re.compile(rf"^{_PREFIX}([0-9a-f]{{16}})_([A-Za-z0-9_-]{{43}})$")  # before checksums
MISSES = 1024  # recent tokens with a good checksum that are not stored (revoked): no second lookup
LOOKUPS = 8  # token lookups in Redis at once, in one process

# KEYS: the token's hash. ARGV: the hash of the token just verified, now. Sets last_used only
# while the token is still the one verified (a revoke in between leaves nothing behind).
_TOUCH = """
if redis.call('HGET', KEYS[1], 'hash') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'last_used', ARGV[2])
return 1
"""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _checksum(key: bytes, body: str) -> str:
    """11 characters (64 bits) of an HMAC-SHA256 of the token's other parts: a guess holds
    once in 2**64, so a made-up token is refused without asking Redis."""
    return base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest()[:8]).rstrip(b"=").decode()


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
    def __init__(
        self, redis: Redis, keys: Keys | None = None, clock: Callable[[], datetime] = utcnow, lookups: int = LOOKUPS
    ) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.clock = clock
        self._key: bytes | None = None  # the checksum key, once read
        self._legacy: dict[str, str] | None = None  # token id -> hash of tokens made before checksums
        self._loading = asyncio.Lock()
        self._misses: OrderedDict[str, None] = OrderedDict()
        self._lookups = asyncio.Semaphore(lookups)

    # --- personal API tokens ----------------------------------------------------------------

    async def create(self, person: str, name: str) -> tuple[str, str]:
        """A new token for `person`, called `name`: (its id, the token). The token is shown
        this once; only its hash is kept."""
        if not person.strip() or not name.strip():
            raise ValueError("a token needs a person and a name")
        token_id = secrets.token_hex(8)
        body = f"{PERSONAL_TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        token = f"{body}_{_checksum(await self._checksum_key(), body)}"
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
        set to now), else None. Only a token we made costs a lookup (see above)."""
        token = token.strip()
        token_id = await self._plausible(token)
        digest = _digest(token)
        if token_id is None or digest in self._misses:
            return None
        async with self._lookups:
            found = await self._lookup(token_id, digest)
        if found is None:
            self._misses[digest] = None
            while len(self._misses) > MISSES:
                self._misses.popitem(last=False)
        return found

    async def _plausible(self, token: str) -> str | None:
        """The token's id when it may be one of ours, decided in memory (but for reading the
        checksum key, and the hashes of tokens made before checksums, once)."""
        if match := _TOKEN.match(token):
            expected = _checksum(await self._checksum_key(), token[: match.start(3) - 1])
            return match.group(1) if hmac.compare_digest(expected.encode(), match.group(3).encode()) else None
        if match := _LEGACY.match(token):
            known = (await self._legacy_hashes()).get(match.group(1), "")
            return match.group(1) if hmac.compare_digest(known.encode(), _digest(token).encode()) else None
        return None

    async def _lookup(self, token_id: str, digest: str) -> TokenInfo | None:
        key = self.keys.api_token(token_id)
        fields = _decoded(await self.redis.hgetall(key))
        if not hmac.compare_digest(fields.get("hash", "").encode(), digest.encode()):
            return None
        now = self.clock().isoformat()
        if not await scripts.run(self.redis, _TOUCH, [key], digest, now):
            return None  # revoked while being verified
        return _info(token_id, {**fields, "last_used": now})

    async def _checksum_key(self) -> bytes:
        """The key checksums are made with: made by whichever process needs it first (SET NX)."""
        if self._key is None:
            async with self._loading:
                if self._key is None:
                    name = self.keys.api_token_key()
                    await self.redis.set(name, secrets.token_hex(32), nx=True)
                    stored = await self.redis.get(name)
                    if stored is None:
                        raise RuntimeError("the personal tokens' checksum key vanished from Redis")
                    self._key = text(stored).encode()
        return self._key

    async def _legacy_hashes(self) -> dict[str, str]:
        """Token id -> hash, of every token stored when first asked: none without a checksum
        is made any more, so tokens made before checksums are all among them."""
        if self._legacy is None:
            async with self._loading:
                if self._legacy is None:
                    ids = [text(i) for i in await self.redis.smembers(self.keys.api_tokens())]
                    async with self.redis.pipeline(transaction=False) as pipe:
                        for token_id in ids:
                            pipe.hget(self.keys.api_token(token_id), "hash")
                        hashes = await pipe.execute()
                    self._legacy = {i: text(h) for i, h in zip(ids, hashes, strict=True) if h}
        return self._legacy

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
        if self._legacy is not None:
            self._legacy.pop(token_id, None)
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

    async def peek_link(self, code: str) -> str | None:
        """The person a link is for, leaving it unused: what a GET of the link shows (a mail
        scanner's GET must not use it up)."""
        if not code:
            return None
        person = await self.redis.get(self.keys.sign_in_link(_digest(code)))
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
