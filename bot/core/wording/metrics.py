"""Delivery metrics (the console's metrics page): durations, rates and shares."""

from __future__ import annotations

__all__ = [
    "per_day", "share", "span",
]


def span(seconds: float | None) -> str:
    """A duration for people, in its two largest units: `1 d 4 h`, `3 h 20 min`, `45 s`; `–` for none."""
    if seconds is None:
        return "–"
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0 s"


def per_day(rate: float) -> str:
    return f"{rate:.2f} a day" if rate < 10 else f"{rate:.0f} a day"


def share(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction * 100:.0f}%"
