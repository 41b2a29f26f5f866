"""Who did something: an `Identity` is the person (a name of deploybot.toml, or None for someone
the directory does not know), how they were seen (`via`) and the channel's detail
(`evidence`: the channel's own id, e.g. a Slack user id or an address, or the token id).
bot/core/people.py turns whatever reaches the bot into one; the events record it. Pure: no I/O,
and no import of the rest of the core, so anything may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

# How an identity was seen: its `via`. These are the core's own; a channel's identities carry
# its kind (its package's KIND), which the core never names.
TOKEN = "token"  # a personal API token; evidence: the token id
SESSION = "session"  # a signed-in web session; evidence: the session id
NAME = "name"  # named by someone trusted (a test; the API in open mode); evidence: the name
API = "api"  # named by the shared API token's `user`, which proves nothing; evidence: the name
CLI = "cli"  # named with the CLI's --user (it runs where the bot's secrets are); evidence: the name
AGENT = "agent"  # an AI agent of deploybot.toml's [agents]; evidence: its name (its principal: agent:NAME)

# The bot itself: never decides, locks or unlocks (events it records carry this user).
BOT_USER = "deploybot"


@dataclass(frozen=True)
class Identity:
    """Who did something: `person` None means unknown (no powers but `*`)."""

    person: str | None
    via: str
    evidence: str

    @property
    def known(self) -> bool:
        return self.person is not None

    @property
    def principal(self) -> str:
        """What rules compare: the person, else the raw channel id (`slack:U9`)."""
        return self.person if self.person is not None else f"{self.via}:{self.evidence}"

    @property
    def label(self) -> str:
        """How messages name them."""
        return self.person if self.person is not None else self.evidence


# The shared API_TOKEN: the bot's service identity. It may launch threads, read and send
# free text; it never decides, locks, unlocks or bypasses anything.
SERVICE = Identity(None, TOKEN, "api")
# No credentials at all, on a path that asks for none (the web console, which shows a sign-in
# page): nobody, with no powers.
ANONYMOUS = Identity(None, "anonymous", "")
# The bot acting on its own (a rollback after a failed verification): what its lock is held by.
# `_is_someone` in bot/core/authority.py keeps it from deciding, locking or unlocking anything.
THE_BOT = Identity(BOT_USER, "bot", BOT_USER)
