"""What the console's routes read from a request and answer with, as plain functions: a posted
form and its CSRF token, a field's text, a whole number, a stop's end, the redirect back to a
page, a CSV cell. No app and no server: each is tested alone (tests/adapters/http/console/test_console_helpers.py).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from fastapi.responses import RedirectResponse
from itsdangerous import Signer

from bot.adapters.http.shared import CONSOLE_PREFIX, console_path, http_status
from bot.runtime.service import Refused

PREFIX = CONSOLE_PREFIX
MAX_FORM_FIELDS = 20
TITLES = {401: "Sign in", 403: "Not allowed", 404: "Not found", 409: "Not possible now"}

_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_UNTIL = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{1,2}:\d{2}))?Z?$")
_BROWSER = re.compile(r"[0-9a-f]{32}")


class Page(Exception):
    """Stop and show a page saying why: a refusal, a bad parameter, something not found."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


def refusal_page(refusal: Refused) -> Page:
    """The page a refusal of the service shows, with the status the API gives it."""
    status = http_status(refusal)
    return Page(status, TITLES.get(status, "Not valid"), refusal.message)


def csrf_token(key: bytes, owner: str) -> str:
    """A CSRF token for `owner` (a session's or a browser's id) when the app has no sign-in
    support to derive one (bot.adapters.http.front_door.Auth.csrf): signed with the app's key,
    which is made when the process starts, so no token outlives it (and none signed before
    itsdangerous needs reading)."""
    signer = Signer(key, salt=b"deploybot.console-form", key_derivation="hmac", digest_method=hashlib.sha256)
    return signer.get_signature(owner).decode()


def browser_id(given: str, state: dict[str, Any]) -> str:
    """This browser's id: its cookie's (`given`) when well formed, else a new one, kept in the
    request's `state` so the page's response can set it (and one request gets one id)."""
    if _BROWSER.fullmatch(given):
        return given
    return state.setdefault("new_browser", secrets.token_hex(16))  # type: ignore[no-any-return]


def read_form(body: bytes, csrf: str) -> dict[str, str]:
    """A posted form's fields, once its `csrf_token` is `csrf` (else a 403 page)."""
    try:
        fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                                max_num_fields=MAX_FORM_FIELDS))
    except ValueError:
        raise Page(400, "Not valid", "this form could not be read") from None
    if not hmac.compare_digest(fields.get("csrf_token", "").encode(), csrf.encode()):
        raise Page(403, "Not allowed", "this form has no valid CSRF token: reload the page and try again")
    return fields


def back(fields: dict[str, str], default: str, notice: str) -> RedirectResponse:
    """303 to the console page the form came from (its `next`), else to `default`, saying
    `notice`. Only a path under the console: a form cannot send a browser elsewhere."""
    target = console_path(fields.get("next")) or default
    target = re.sub(r"([?&])notice=[^&]*&?", r"\1", target).rstrip("?&")
    joiner = "&" if "?" in target else "?"
    return RedirectResponse(f"{target}{joiner}notice={notice}", status_code=303)


def text(fields: dict[str, str], name: str, limit: int, required: bool = False) -> str:
    value = fields.get(name, "")
    if len(value) > limit:
        raise Page(413, "Too long", f"{name} is longer than {limit} characters")
    if required and not value.strip():
        raise Page(422, "Not valid", f"say something: {name} is empty")
    return value


def reason(fields: dict[str, str], limit: int) -> str:
    """A required reason on one line: a lock's, a stop's, a deploy anyway's (said in a command)."""
    return " ".join(text(fields, "reason", limit, required=True).split())


def whole_number(value: str, name: str, low: int, high: int) -> int:
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses (a 500).
    if not re.fullmatch(r"[0-9]{1,9}", value.strip()) or not low <= int(value) <= high:
        raise Page(400, "Not valid", f"{name} must be a whole number from {low} to {high}")
    return int(value)


def until(value: str) -> datetime | None:
    """A stop's optional end, in UTC, as a datetime-local field posts it (`2026-11-26T08:00`)
    or as the chat command takes it (`2026-11-26 08:00`, a date alone: its start)."""
    value = value.strip()
    if not value:
        return None
    m = _UNTIL.match(value)
    try:
        if m is None:
            raise ValueError(value)
        hour, minute = (m[2] or "0:00").split(":")
        return datetime.fromisoformat(f"{m[1]}T{int(hour):02d}:{minute}").replace(tzinfo=UTC)
    except ValueError:
        raise Page(422, "Not valid", "until must be a date and a time in UTC, like 2026-11-26 08:00") from None


def id_like(value: str) -> bool:
    """Whether `value` may be a thread's id (else nothing is looked up for it)."""
    return bool(_ID.match(value))


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: one starting with = + - @ (a formula) gets a '."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def indexed_as(status: str) -> tuple[str, ...]:
    """The index's statuses a thread in `status` now may have (the index has no clock: an
    expired approval is still waited for there)."""
    return ("waiting_for_human", "waiting_for_approval") if status == "waiting_for_human" else (status,)
