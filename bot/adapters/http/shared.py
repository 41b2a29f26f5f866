"""What the front door, the API and the console share: one definition each (they used to keep
copies "in sync" when they were separate adapters)."""

from __future__ import annotations

from bot.runtime.service import Forbidden, Invalid, NotFound, Refused, Unauthorized, WrongState

SESSION_COOKIE = "deploybot_session"  # set by a sign-in link, read by the front door
# A browser without a session (local mode, open mode) gets a random id in this cookie, and
# its forms' CSRF token is derived from it: one browser's token is no use to another's page.
BROWSER_COOKIE = "deploybot_browser"
MAX_TEXT_CHARS = 20_000  # what a person may write in one go (a message, feedback, a reason)
MAX_ADDRESS = 320  # RFC 5321's longest address: longer input is nobody's
# A personal API token (bot/adapters/redis/credentials.py: TOKEN_PREFIX, with its separator).
PERSONAL_TOKEN_PREFIX = "dbt_"

# What each refusal means in HTTP; the service itself knows nothing of HTTP.
STATUS: dict[type[Refused], int] = {Unauthorized: 401, Forbidden: 403, NotFound: 404, WrongState: 409, Invalid: 422}


def http_status(refusal: Refused) -> int:
    return next((code for kind, code in STATUS.items() if isinstance(refusal, kind)), 400)
