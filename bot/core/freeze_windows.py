"""Deploy freezes: windows in which no deploy to an environment starts. Pure: no I/O, no clock
(every function is handed `now`, an aware datetime).

Three kinds, all a `Freeze`:

- weekly (`[[freezes]]` with `from`/`to` in deploybot.toml): from a weekday and wall-clock
  time to another, every week, in the freeze's time zone; it may wrap over the week's end
  (`Fri 16:00` to `Mon 08:00`). "Fri 16:00 Europe/Berlin" is 16:00 on the clocks in Berlin on
  every Friday, whatever the UTC offset is that week.
- one-off (`start`/`end`): from one local date and time to another, in the time zone. A date
  alone as `start` means 00:00 that day; a date alone as `end` means the whole of that day
  (the freeze ends at 00:00 the day after), so `start = 2026-12-24, end = 2026-12-24` is one
  day. A date and time with an offset (TOML's `2026-12-24T18:00:00+01:00`) is that instant.
- stop-the-line (set at run time by a person, kept in Redis by bot/adapters/redis/freezes.py): one
  environment or all (`*`), from when it was set until it is lifted or its `until` passes.
  It holds from the moment it is stored: `since` is for telling people, not compared with
  `now` (clocks of different workers need not agree to the second).

Wall-clock times that do not exist or happen twice (daylight saving) are resolved
deliberately, the same everywhere (`to_utc`):

- a time in the spring-forward gap (02:30 on 2026-03-29 in Europe/Berlin) is the first
  instant after the gap: the switch itself (03:00 CEST, 01:00 UTC);
- a time the fall-back repeats (02:30 on 2026-10-25 in Europe/Berlin) is its first
  occurrence (fold=0: 02:30 CEST, 00:30 UTC).

A window whose start and end both fall into one gap is empty that week.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ALL: Final = "*"
"""`environments` of a freeze that holds for every environment."""

Kind = Literal["weekly", "one-off", "stop-the-line"]
Environments = frozenset[str] | Literal["*"]

WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SHORT: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_WEEK: Final = timedelta(days=7)
_WEEKLY = re.compile(r"^\s*([A-Za-z]+)\.?\s+(\d{1,2}):(\d{2})\s*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# A chain of adjacent freezes still going this far ahead has no end worth telling.
HORIZON: Final = timedelta(days=366)
# Stand-ins for "always was" and "until lifted" inside the interval arithmetic; never returned.
_DAWN: Final = datetime.min.replace(tzinfo=UTC)
_NEVER: Final = datetime.max.replace(tzinfo=UTC)


# --- parsing --------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class WeeklyTime:
    """A weekday (0 is Monday) and a wall-clock time: `Fri 16:00`."""

    weekday: int
    hour: int
    minute: int

    def __post_init__(self) -> None:
        if not 0 <= self.weekday <= 6:
            raise ValueError(f"weekday {self.weekday} is not 0 (Monday) to 6 (Sunday)")
        if not _time_of_day(self.hour, self.minute):
            raise ValueError(f"{self.hour:02d}:{self.minute:02d} is not a time of day (00:00 to 23:59)")

    @property
    def minute_of_week(self) -> int:
        return (self.weekday * 24 + self.hour) * 60 + self.minute

    def __str__(self) -> str:
        return f"{_SHORT[self.weekday]} {self.hour:02d}:{self.minute:02d}"


def _time_of_day(hour: int, minute: int) -> bool:
    return 0 <= hour <= 23 and 0 <= minute <= 59


def parse_weekday(word: str) -> int:
    """0 (Monday) to 6 (Sunday) from an English weekday name or its abbreviation, in any case:
    `Fri`, `friday`, `THU`, `Thurs`, `tues` (any start of the name of three letters or more)."""
    low = word.strip().lower().rstrip(".")
    if len(low) >= 3:
        for number, name in enumerate(WEEKDAYS):
            if name.startswith(low):
                return number
    raise ValueError(f"{word!r} is not a day of the week (like Mon, tue or Friday)")


def parse_weekly(text: str) -> WeeklyTime:
    """`Fri 16:00` -> WeeklyTime(4, 16, 0). A weekday name or abbreviation (any case), a
    space, and HH:MM on the 24-hour clock."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} should be a weekday and a time, like 'Fri 16:00'")
    match = _WEEKLY.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a weekday and a time (like 'Fri 16:00' or 'monday 08:30')")
    word, hour, minute = match.groups()
    weekday = parse_weekday(word)
    if not _time_of_day(int(hour), int(minute)):
        raise ValueError(f"{text!r}: {hour}:{minute} is not a time of day (00:00 to 23:59)")
    return WeeklyTime(weekday, int(hour), int(minute))


def parse_moment(value: str | date | datetime | time, *, end: bool = False) -> datetime:
    """A one-off freeze's start or end: `2026-12-24`, `2026-12-24 18:00` (or with a `T`, or
    seconds), or what TOML reads (a date, a local datetime, an offset datetime). A local time
    stays naive (it is read in the freeze's time zone); one with an offset stays aware. A date
    alone is 00:00 that day, or, as an `end`, 00:00 the day after (the whole day is frozen)."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        day = value
    elif isinstance(value, time):
        raise ValueError(f"{value.isoformat()} is a time of day alone: write a date, or a date and a time")
    elif isinstance(value, str):
        text = value.strip()
        try:
            if not _DATE.match(text):
                return datetime.fromisoformat(text)
            day = date.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a date, or a date and a time (like '2026-12-24' or '2026-12-24 18:00')"
            ) from None
    else:
        raise ValueError(f"{value!r} should be a date, or a date and a time (like '2026-12-24 18:00')")
    midnight = datetime.combine(day, time())
    return midnight + timedelta(days=1) if end else midnight


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (`Europe/Berlin`, `UTC`), or ValueError saying it is not one."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, TypeError, AttributeError):
        raise ValueError(f"{name!r} is not a time zone (like Europe/Berlin or UTC)") from None


# --- wall-clock time to instants ------------------------------------------------------------


def to_utc(wall: datetime, tz: ZoneInfo) -> datetime:
    """The instant (aware, UTC) the clocks in `tz` show `wall` (naive; an aware `wall` is
    converted as it is). In a daylight-saving gap: the first instant after it (the switch).
    Shown twice (fall back): the first time (fold=0)."""
    if wall.tzinfo is not None:
        return wall.astimezone(UTC)
    wall = wall.replace(fold=0)
    first = wall.replace(tzinfo=tz).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None, fold=0) == wall:
        return first  # exists; if it is shown twice, fold=0 is the first time
    other = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    # In a gap: the switch lies between the two readings (before and after offsets). Find the
    # first second at which the offset is the later one (tz switches on whole seconds).
    low, high = sorted((first, other))
    after = high.astimezone(tz).utcoffset()
    low_s, high_s = int(low.timestamp()), int(high.timestamp())
    while high_s - low_s > 1:
        middle = (low_s + high_s) // 2
        if datetime.fromtimestamp(middle, UTC).astimezone(tz).utcoffset() == after:
            high_s = middle
        else:
            low_s = middle
    return datetime.fromtimestamp(high_s, UTC)


def _aware(now: datetime, what: str = "now") -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"{what} must be an aware datetime (with a time zone), not {now!r}")
    return now.astimezone(UTC)


def _wall(moment: datetime) -> str:
    if moment.tzinfo is not None:
        return moment.isoformat(sep=" ", timespec="minutes")
    return moment.strftime("%Y-%m-%d %H:%M")


# --- freezes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Weekly:
    """Every week from `start` to `end` (wall-clock, in the freeze's zone); wraps over the
    week's end when `end` comes before `start` in the week (Fri 16:00 to Mon 08:00)."""

    start: WeeklyTime
    end: WeeklyTime

    @property
    def length(self) -> timedelta:
        """Wall-clock length (0 < length < 7 days)."""
        return timedelta(minutes=(self.end.minute_of_week - self.start.minute_of_week) % (7 * 24 * 60))


@dataclass(frozen=True)
class OneOff:
    """Once, from `start` to `end`: naive (wall-clock, in the freeze's zone) or aware."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class StopTheLine:
    """Set by a person at run time: from `since` (aware) until lifted or until `until`."""

    set_by: str
    since: datetime
    until: datetime | None = None


Window = Weekly | OneOff | StopTheLine


@dataclass(frozen=True)
class Freeze:
    """No deploy to `environments` (names, or ALL) starts during `window`.

    Build one with `weekly`, `one_off` or `stop_the_line`; the constructor checks what it is
    given (ValueError with a plain message)."""

    environments: Environments
    window: Window
    timezone: str = "UTC"
    reason: str = ""

    def __post_init__(self) -> None:
        self._check_environments()
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("say why (a reason): the people whose deploys wait are told it")
        tz = zone(self.timezone)
        window = self.window
        if isinstance(window, Weekly):
            if window.start == window.end:
                raise ValueError(f"from and to are the same time ({window.start}): a freeze needs a length")
        elif isinstance(window, OneOff):
            start, end = to_utc(window.start, tz), to_utc(window.end, tz)
            if end <= start:
                raise ValueError(f"it ends ({_wall(window.end)}) before it starts ({_wall(window.start)})")
        elif isinstance(window, StopTheLine):
            self._check_stop_the_line(window)
        else:
            raise ValueError(f"{window!r} is not a freeze window (Weekly, OneOff or StopTheLine)")

    def _check_environments(self) -> None:
        if self.environments == ALL:
            return
        if not isinstance(self.environments, frozenset):
            raise ValueError("environments must be a frozenset of names, or '*' for all")
        if not self.environments:
            raise ValueError("name at least one environment, or '*' for all")
        for name in self.environments:
            if not isinstance(name, str) or not name.strip() or name != name.strip() or ALL in name:
                raise ValueError(f"{name!r} is not an environment name ('*' on its own means all)")

    def _check_stop_the_line(self, window: StopTheLine) -> None:
        if self.environments != ALL and len(self.environments) != 1:
            raise ValueError("a stop-the-line freeze holds for one environment or for all ('*')")
        if not window.set_by.strip():
            raise ValueError("a stop-the-line freeze names who set it")
        _aware(window.since, "since")
        if window.until is not None and _aware(window.until, "until") <= _aware(window.since, "since"):
            raise ValueError("until must come after since")

    @property
    def kind(self) -> Kind:
        if isinstance(self.window, Weekly):
            return "weekly"
        if isinstance(self.window, OneOff):
            return "one-off"
        return "stop-the-line"

    @property
    def zone(self) -> ZoneInfo:
        return zone(self.timezone)

    @property
    def scope(self) -> str:
        """ALL, or the one environment's name: what a stop-the-line freeze is stored under."""
        if self.environments == ALL:
            return ALL
        return ",".join(sorted(self.environments))

    @property
    def set_by(self) -> str | None:
        return self.window.set_by if isinstance(self.window, StopTheLine) else None

    @property
    def source(self) -> str:
        """What this freeze is, for people, history and the audit trail:
        `weekly freeze Fri 16:00 to Mon 08:00 (Europe/Berlin)`, `one-off freeze 2026-12-24 00:00
        to 2026-12-28 00:00 (Europe/Berlin)`, `stop-the-line by alice`."""
        window = self.window
        if isinstance(window, Weekly):
            return f"weekly freeze {window.start} to {window.end} ({self.timezone})"
        if isinstance(window, OneOff):
            return f"one-off freeze {_wall(window.start)} to {_wall(window.end)} ({self.timezone})"
        return f"stop-the-line by {window.set_by}"

    def applies_to(self, environment: str) -> bool:
        return self.environments == ALL or environment in self.environments

    def over(self, now: datetime) -> bool:
        """Whether it will never hold again from `now` (aware) on: a one-off freeze that has
        ended, a stop-the-line one past its until. A weekly freeze is never over."""
        now = _aware(now)
        window = self.window
        if isinstance(window, StopTheLine):
            return window.until is not None and window.until <= now
        if isinstance(window, OneOff):
            return to_utc(window.end, self.zone) <= now
        return False


def environments_of(value: str | Iterable[str]) -> Environments:
    """ALL for `"*"` (or `["*"]`); otherwise the names, stripped, as a frozenset."""
    if isinstance(value, str):
        value = [value]
    names = [name.strip() if isinstance(name, str) else name for name in value]
    if names == [ALL]:
        return ALL
    if ALL in names:
        raise ValueError("'*' means every environment: write it on its own, not in a list of names")
    return frozenset(names)


def weekly(
    environments: str | Iterable[str], start: str | WeeklyTime, end: str | WeeklyTime, *,
    timezone: str = "UTC", reason: str,
) -> Freeze:
    """Every week from `start` to `end` (`"Fri 16:00"`, `"Mon 08:00"`) in `timezone`."""
    begins = start if isinstance(start, WeeklyTime) else parse_weekly(start)
    ends = end if isinstance(end, WeeklyTime) else parse_weekly(end)
    return Freeze(environments_of(environments), Weekly(begins, ends), timezone.strip(), reason.strip())


def one_off(
    environments: str | Iterable[str], start: str | date | datetime, end: str | date | datetime, *,
    timezone: str = "UTC", reason: str,
) -> Freeze:
    """Once, from `start` to `end` (see `parse_moment`: a date alone as `end` includes that day)."""
    window = OneOff(parse_moment(start), parse_moment(end, end=True))
    return Freeze(environments_of(environments), window, timezone.strip(), reason.strip())


def stop_the_line(
    scope: str, *, reason: str, set_by: str, since: datetime, until: datetime | None = None,
) -> Freeze:
    """Stop every deploy to `scope` (an environment, or ALL) from `since` (now, aware) until
    lifted, or until `until` (aware) passes. `set_by` names the person (a label)."""
    window = StopTheLine(set_by.strip(), _aware(since, "since"), _aware(until, "until") if until is not None else None)
    return Freeze(environments_of(scope), window, "UTC", reason.strip())


# --- when a freeze holds ---------------------------------------------------------------------


def occurrences(freeze: Freeze, start: datetime, end: datetime) -> list[tuple[datetime, datetime | None]]:
    """The freeze's windows that overlap [start, end] (aware), as (from, to) in UTC, in order.
    A stop-the-line freeze's window is (its since, its until); its until is None when it holds
    until lifted."""
    found = []
    for begins, ends in _intervals(freeze, _aware(start, "start"), _aware(end, "end")):
        shown_start = freeze.window.since if isinstance(freeze.window, StopTheLine) else begins
        found.append((shown_start.astimezone(UTC), None if ends == _NEVER else ends))
    return found


def _intervals(freeze: Freeze, low: datetime, high: datetime) -> Iterator[tuple[datetime, datetime]]:
    """[from, to) in UTC of each window with from <= high and to > low (from before to)."""
    window = freeze.window
    if isinstance(window, StopTheLine):
        until = window.until.astimezone(UTC) if window.until is not None else _NEVER
        if until > low:
            yield _DAWN, until
        return
    tz = freeze.zone
    if isinstance(window, OneOff):
        begins, ends = to_utc(window.start, tz), to_utc(window.end, tz)
        if begins <= high and ends > low:
            yield begins, ends
        return
    first = low.astimezone(tz).replace(tzinfo=None)
    last = high.astimezone(tz).replace(tzinfo=None)
    # From the Monday of the week before `low` (a window may have started then and still
    # hold), week by week, until windows start after `high`.
    week = datetime.combine(first.date() - timedelta(days=first.weekday()), time()) - _WEEK
    length = window.length
    offset = timedelta(days=window.start.weekday, hours=window.start.hour, minutes=window.start.minute)
    while week <= last + timedelta(days=1):
        wall = week + offset
        begins, ends = to_utc(wall, tz), to_utc(wall + length, tz)
        if begins < ends and begins <= high and ends > low:
            yield begins, ends
        week += _WEEK


@dataclass(frozen=True)
class FreezeHit:
    """Why a deploy may not start now.

    `freeze` is the freeze reported (a stop-the-line one if any holds, else the one whose
    window ends last); `reason` and `source` are its. `until` (aware, UTC) is when deploys may
    start again: the end of the chain of overlapping or adjacent freezes that hold now, or
    None when that is not known (a stop-the-line freeze without until, which holds until
    lifted; or freezes that keep each other going beyond a year). `freezes`: all that hold now."""

    freeze: Freeze
    reason: str
    until: datetime | None
    source: str
    freezes: tuple[Freeze, ...]

    @property
    def kind(self) -> Kind:
        return self.freeze.kind

    @property
    def set_by(self) -> str | None:
        return self.freeze.set_by


def active(freezes: Iterable[Freeze], environment: str, now: datetime) -> FreezeHit | None:
    """The freeze that stops deploys to `environment` at `now` (aware), or None. A window
    holds from its start (included) to its end (excluded)."""
    now = _aware(now)
    relevant = [f for f in freezes if f.applies_to(environment)]
    holding: list[tuple[Freeze, datetime]] = []
    for freeze in relevant:
        for begins, ends in _intervals(freeze, now, now):
            if begins <= now < ends:
                holding.append((freeze, ends))
    if not holding:
        return None
    stops = [h for h in holding if isinstance(h[0].window, StopTheLine)]
    chosen, _ = max(stops or holding, key=lambda h: h[1])
    until = _chain_end(relevant, now, max(ends for _, ends in holding))
    return FreezeHit(
        freeze=chosen, reason=chosen.reason, until=None if until == _NEVER else until, source=chosen.source,
        freezes=tuple(dict.fromkeys(f for f, _ in holding)),
    )


def _chain_end(freezes: Sequence[Freeze], now: datetime, end: datetime) -> datetime:
    """Follow windows that start at or before `end` and end after it, to the last end."""
    while end != _NEVER:
        later = [ends for f in freezes for begins, ends in _intervals(f, end, end) if begins <= end < ends]
        if not later:
            return end
        if end - now > HORIZON:
            return _NEVER
        end = max(later)
    return end


def next_change(freezes: Iterable[Freeze], environment: str, now: datetime) -> datetime | None:
    """The first moment after `now` (aware) at which a freeze on `environment` starts or ends
    (UTC), for a timer; None when none will. A boundary where one freeze hands over to the
    next is a change too: look again with `active`."""
    now = _aware(now)
    soonest: datetime | None = None
    for freeze in freezes:
        if not freeze.applies_to(environment):
            continue
        # Weekly windows repeat within a week; two weeks cover one emptied by a gap.
        high = now + 2 * _WEEK + timedelta(days=1) if isinstance(freeze.window, Weekly) else _NEVER
        for begins, ends in _intervals(freeze, now, high):
            for moment in (begins, ends):
                if now < moment < _NEVER and (soonest is None or moment < soonest):
                    soonest = moment
    return soonest
