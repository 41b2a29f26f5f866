"""Stopping deploys, and freeze windows (bot/core/freeze_windows.py)."""

from __future__ import annotations

from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "cannot_stop_here", "deploys_resumed", "deploys_stopped", "freeze_scope", "frozen", "frozen_waits", "not_stopped",
    "not_stopped_now", "until_in_the_past",
]


def freeze_scope(scope: str) -> str:
    return "every environment" if scope == "*" else scope


def _until(until: datetime | None) -> str:
    return f"until {utc(until)}" if until else "until someone resumes them"


def deploys_stopped(where: str, reason: str, until: datetime | None) -> str:
    return f"Stopped all deploys to {where} {_until(until)}: {reason}. Deploys already running finish."


def deploys_resumed(where: str) -> str:
    return f"Deploys to {where} may start again."


def not_stopped_now(where: str) -> str:
    return f"Deploys to {where} were not stopped (a scheduled freeze in deploybot.toml ends by itself)."


def not_stopped(why: str) -> str:
    return f"Not stopped: {why}."


def cannot_stop_here() -> str:
    return "Stopping deploys is not possible from here."


def until_in_the_past(until: datetime) -> str:
    return f"{utc(until)} has passed already; give a time to come, or none."


def frozen(environment: str, reason: str, until: datetime | None, source: str) -> str:
    return (
        f"{environment} is frozen {_until(until)} ({source}): {reason}. An approver may deploy anyway "
        '("deploy anyway: REASON").'
    )


def frozen_waits(environment: str, reason: str, until: datetime | None) -> str:
    return f"{environment} is frozen {_until(until)}: {reason}"
