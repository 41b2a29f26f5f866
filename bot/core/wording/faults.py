"""What the bot says about faults around it: its clock off from the store's, mail that could
not go out, the embedded store restarted."""

from __future__ import annotations

__all__ = [
    "clock_back", "clock_skewed", "embedded_restarted", "mail_given_up", "mail_retrying",
]


def clock_skewed(skew: float, bound: float) -> str:
    way = "ahead of" if skew > 0 else "behind"
    return (f"This process's clock is {abs(skew):.1f} s {way} Redis's (more than {bound:g} s): it runs no timed "
            "work (approvals, their expiry and reminders, schedules, timers) until the clocks agree; fix its time "
            "sync (NTP).")


def clock_back(skew: float) -> str:
    return f"This process's clock agrees with Redis's again ({skew:+.1f} s): it runs timed work again."


def mail_retrying(to: str, attempts: int, reason: str) -> str:
    return f"Mail to {to} not sent yet (attempt {attempts}: {reason}); it is tried again."


def mail_given_up(to: str, attempts: int, reason: str) -> str:
    return f"The approval request mail to {to} could not be sent after {attempts} attempts ({reason}): ask another way."


def embedded_restarted(folder: str, url: str) -> str:
    return f"The embedded Redis under {folder} had stopped: restarted on its own data at {url}."
