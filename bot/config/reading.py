"""What the readers of the settings share: the error they raise (worded for the operator,
naming variables), their small parsers, and the problems of Settings as one line each."""

from __future__ import annotations

from pydantic import ValidationError


class ConfigError(ValueError):
    """A configuration problem worded for the operator: it names environment variables."""


def words(text: str) -> frozenset[str]:
    return frozenset(w.strip() for w in text.split(",") if w.strip())


def require(what: str, values: tuple[tuple[str, object], ...]) -> None:
    missing = [name for name, value in values if not value]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}")


def config_problems(error: ValidationError) -> list[str]:
    """One line per problem, for the operator: our own messages as written, pydantic's
    (a PORT that is not a number) after the variable's name; no pydantic types or URLs."""
    lines: list[str] = []
    for e in error.errors(include_url=False):
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):
            lines += str(cause).splitlines()
        else:
            name = ".".join(str(part) for part in e["loc"]).upper()
            lines.append(f"{name}: {e['msg']}" if name else e["msg"])
    return lines
