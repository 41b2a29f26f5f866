"""The values deploybot.toml's tables share: names, the file's problems and their key paths,
durations, URLs, notify targets."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ValidationError

from bot.core.promotion import parse_soak
from bot.core.verification import parse_duration

FILE_NAME = "deploybot.toml"
VARIABLE = "DEPLOYBOT_CONFIG"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_SLACK_ID = re.compile(r"^[UW][A-Z0-9]+$")  # people: U…, or W… on Enterprise Grid

_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class FileError(ValueError):
    """deploybot.toml is missing, not TOML, or not valid: `problems` has one line each."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Problems(ValueError):
    """Problems found across entries, each already naming its key path."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _duration(value: str) -> str:
    if parse_duration(value).total_seconds() <= 0:
        raise ValueError(f"{value!r} should be longer than nothing")
    return value


def _url(value: str) -> str:
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value


def _soak(value: str | None) -> str | None:
    if value is not None:
        parse_soak(value)
    return value


def _targets(targets: tuple[str, ...]) -> tuple[str, ...]:
    targets = tuple(t.strip() for t in targets)
    if not targets:
        raise ValueError("name at least one target: 'slack:CHANNEL_ID' or 'email:ADDRESS'")
    # Whether each is one of a channel's targets is the channel's to say: checked when the root
    # knows the channels (bot/wiring/channels.problems).
    return _unique(t if t.startswith("slack:") else t.lower() for t in targets)


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def key_path(loc: Iterable[str | int]) -> str:
    """('people', 'alice', 'email', 0) -> people.alice.email[0]; odd keys quoted as in TOML."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if _BARE_KEY.match(part) else '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
            text += f".{key}" if text else key
    return text


_MESSAGES = {
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
    "string_type": "should be a string",
    "tuple_type": "should be a list of strings",
    "dict_type": "should be a table",
    "model_type": "should be a table",
    "missing": "is missing",
}


def problems(error: ValidationError, tables: Mapping[tuple[str, ...], type[BaseModel]]) -> list[str]:
    """One line per problem, each naming the key path; our messages as written (`tables`: each
    table's model by key path, for what an unknown key may have meant)."""
    lines: list[str] = []
    for e in error.errors(include_url=False):
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, _Problems):
            lines += cause.problems
            continue
        loc = tuple(e["loc"])
        where = key_path(loc)
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: {_unknown_key(loc, tables)}")
        elif isinstance(cause, ValueError):
            lines.append(f"{where}: {cause}")
        else:
            message = _MESSAGES.get(e["type"], e["msg"])
            if e["type"] == "tuple_type" and loc in (("triggers",), ("schedules",), ("freezes",)):
                message = f"should be an array of tables: write [[{loc[0]}]] above each entry"
            one_or_many = loc[-1] in ("slack", "email", "notify") or loc[::2] == ("freezes", "environments")
            if e["type"] == "tuple_type" and one_or_many:
                message = "should be a string or a list of strings"
            lines.append(f"{where}: {message}" if where else message)
    return lines


def _unknown_key(loc: tuple[str | int, ...], tables: Mapping[tuple[str, ...], type[BaseModel]]) -> str:
    table = tables.get(tuple("*" if i == 1 else str(part) for i, part in enumerate(loc[:-1])))
    if table is None:
        return "unknown key"
    known = [field.alias or name for name, field in table.model_fields.items() if not field.exclude]
    hint = _did_you_mean(str(loc[-1]), known)
    return f"unknown key{hint}; expected one of: {', '.join(known)}" if not hint else f"unknown key{hint}"
