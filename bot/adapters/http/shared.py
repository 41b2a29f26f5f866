"""What the front door, the API and the console share: one definition each (they used to keep
copies "in sync" when they were separate adapters): the cookies, the limits on what a person
writes, what a refusal means in HTTP, and what the HTTP side is given (`Parts`, `SignIn`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request

from bot.core.policy import Policy
from bot.runtime.delivery import Delivery
from bot.runtime.deploying import Deploying
from bot.runtime.ports import DeployCounters, FreezeStore, Health, History, LiveOutput, Locks, Route, WorkQueue
from bot.runtime.service import Forbidden, Invalid, NotFound, Refused, ThreadService, Unauthorized, WrongState

SESSION_COOKIE = "deploybot_session"  # set by a sign-in link, read by the front door
# A browser without a session (local mode, open mode) gets a random id in this cookie, and
# its forms' CSRF token is derived from it: one browser's token is no use to another's page.
BROWSER_COOKIE = "deploybot_browser"
# The console page a signed-out browser asked for (set by the sign-in page): signing in from
# this browser goes back there. Only ever a path under the console (console_path).
RETURN_COOKIE = "deploybot_return"
CONSOLE_PREFIX = "/console"
MAX_RETURN_PATH = 500
RETURN_FOR = 30 * 60  # seconds: time to get a link (by mail, in Slack) and use it
MAX_TEXT_CHARS = 20_000  # what a person may write in one go (a message, feedback, a reason)
MAX_ADDRESS = 320  # RFC 5321's longest address: longer input is nobody's

# A request that asks to change nothing: no CSRF token asked, another origin's page may ask.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# What each refusal means in HTTP; the service itself knows nothing of HTTP.
STATUS: dict[type[Refused], int] = {Unauthorized: 401, Forbidden: 403, NotFound: 404, WrongState: 409, Invalid: 422}


def console_path(target: str | None) -> str | None:
    """`target` when it is a path under the console, else None: a form's `next` or a cookie
    can never send a browser to another site ("//evil.test", "/console\\..", a scheme)."""
    if not target or len(target) > MAX_RETURN_PATH or not target.startswith(CONSOLE_PREFIX + "/"):
        return None
    if "//" in target or "\\" in target or any(ord(c) < 0x21 or ord(c) == 0x7F for c in target):
        return None
    return target


def http_status(refusal: Refused) -> int:
    return next((code for kind, code in STATUS.items() if isinstance(refusal, kind)), 400)


@dataclass(frozen=True)
class Refusal:
    """What the front door answers instead of the app: a status and why (in JSON's `detail`)."""

    status: int
    detail: str


# --- what the HTTP side is given ---------------------------------------------------------------

Endpoint = Callable[[Request], Awaitable[Any]]


class Parts(Protocol):
    """What the API and the console need of the app; the composition root (bot.wiring.app.App)
    provides it."""

    @property
    def service(self) -> ThreadService: ...

    @property
    def queue(self) -> WorkQueue:
        """Where threads wait for a worker (`kick` pushes on it)."""
        ...

    @property
    def policy(self) -> Policy: ...

    @property
    def locks(self) -> Locks: ...

    @property
    def history(self) -> History: ...

    @property
    def live_output(self) -> LiveOutput | None:
        """Running deploys' output as it comes (the thread page's live tail); None: not kept."""
        ...

    @property
    def freezes(self) -> FreezeStore | None:
        """Stop-the-line: the store the deploy path checks; None: stopping is not offered."""
        ...

    @property
    def delivery(self) -> Delivery:
        """Delivery metrics (GET /metrics/delivery, the console's metrics page)."""
        ...

    @property
    def counters(self) -> DeployCounters:
        """The deploy counters every process shares (GET /metrics)."""
        ...

    @property
    def health(self) -> Health: ...

    @property
    def deploying(self) -> Deploying:
        """The deploy path: each service's versions (tags, commits, CI) and the change preview
        an approval shows, which the console's deploy form shows before anything is asked."""
        ...

    @property
    def llm_configured(self) -> bool: ...

    @property
    def api_token(self) -> str | None:
        """None: the API is open (local mode, bound to 127.0.0.1)."""
        ...

    @property
    def secrets(self) -> tuple[str, ...]:
        """Kept out of transcripts."""
        ...

    @property
    def stream_limits(self) -> tuple[int, int]:
        """The console's live event streams at once: (per person, in all)."""
        ...

    @property
    def routes(self) -> Sequence[Route]:
        """The channels' endpoints (Slack's, email's, GitHub's webhook, those that are on)."""
        ...

    async def kick(self, thread_id: str) -> None: ...

    async def start(self, worker: bool = True, receive: bool = True) -> None: ...

    async def close(self) -> None: ...


class Session(Protocol):
    """A signed-in session (bot.adapters.http.sessions.Session)."""

    @property
    def id(self) -> str: ...

    @property
    def person(self) -> str: ...

    @property
    def expires(self) -> int: ...


class SignIn(Protocol):
    """Signing in and out: bot.adapters.http.auth.Auth, given to `create_app` by the root."""

    @property
    def session_ttl(self) -> int: ...

    @property
    def secure_cookies(self) -> bool:
        """True behind https (PUBLIC_URL): the cookie is Secure even if the request came as http."""
        ...

    async def link_person(self, code: str) -> str | None:
        """Whose link this is, leaving it unused; None: used, expired or unknown."""
        ...

    async def sign_in(self, code: str) -> tuple[Session, str] | None:
        """A link's code -> (the session, its cookie's value); None: used or expired."""
        ...

    async def sign_out(self, session: Any) -> None: ...

    def csrf(self, session: Any) -> str: ...

    async def email_link(self, address: str) -> None: ...

    @property
    def mails_links(self) -> bool:
        """Whether a sign-in link can be mailed (an email channel is on): else no form offers it."""
        ...

    @property
    def slack_login(self) -> bool:
        """Whether `@deploybot login` in Slack answers with a link (the Slack channel is on)."""
        ...


def secure_cookies(sign_in: SignIn | None, request: Request) -> bool:
    """Whether a cookie set for `request` is Secure: behind https (PUBLIC_URL), or asked over https."""
    return (sign_in is not None and sign_in.secure_cookies) or request.url.scheme == "https"
