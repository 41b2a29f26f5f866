"""Services, and the CI checks a deploy meets: which services there are and where they
deploy, and deploying past checks that are not green."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.core.events import GitTag

__all__ = [
    "checks_failing", "checks_unreadable", "forced_note", "may_not_force", "nothing_to_force", "service_not_in",
    "tags_of", "undeclared_environment", "unknown_service",
]


def unknown_service(service: str, known: Iterable[str]) -> str:
    return f"unknown service {service!r}; known services: {', '.join(sorted(known))}"


def service_not_in(service: str, environment: str, environments: Sequence[str]) -> str:
    return f"{service} is not deployed to {environment}; it deploys to {', '.join(environments)}"


def tags_of(service: str, tags: Sequence[GitTag]) -> str:
    return f"{service}: " + (", ".join(t.name for t in tags) if tags else "no tags")


def undeclared_environment(environment: str, known: Iterable[str], file_name: str, file_names_them: bool) -> str:
    """A service names an environment deploybot does not know: say where environments come
    from (the file's [environments.*] once it has any, else ENVIRONMENTS)."""
    how = (
        f"declare it with [environments.{environment}] in {file_name}" if file_names_them
        else f"list it in ENVIRONMENTS or declare it with [environments.{environment}] in {file_name}"
    )
    return f"unknown environment {environment!r} (known: {', '.join(sorted(known))}); {how}"


def checks_failing(commit: str, failing: Sequence[str], pending: Sequence[str]) -> str:
    parts = []
    if failing:
        parts.append(f"failing: {', '.join(failing)}")
    if pending:
        parts.append(f"still running: {', '.join(pending)}")
    return (
        f"CI checks on {commit[:7]} are not all green ({'; '.join(parts)}). An approver may deploy "
        'anyway with "deploy anyway: REASON".'
    )


def checks_unreadable(commit: str, why: object) -> str:
    return f"could not read the CI checks on {commit[:7]}: {why}"


def nothing_to_force() -> str:
    return "There is no blocked deploy in this thread to deploy anyway."


def may_not_force(who: str, environment: str) -> str:
    return f"{who} may not deploy past the checks to {environment}: only its approvers may."


def forced_note(reason: str, by: str) -> str:
    return f"deployed anyway by {by}: {reason}"
