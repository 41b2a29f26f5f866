"""Freeze windows (pure): weekly ones in their time zone across daylight-saving changes,
one-off ones, stop-the-line, how long a chain of freezes holds, when the next change is."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.core.freeze_windows import (
    ALL,
    Freeze,
    OneOff,
    Weekly,
    WeeklyTime,
    active,
    environments_of,
    next_change,
    occurrences,
    one_off,
    parse_moment,
    parse_weekly,
    stop_the_line,
    to_utc,
    weekly,
    zone,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
PROD = "production"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def weekend(tz: str = "Europe/Berlin", environments: str | list[str] = (PROD,)) -> Freeze:
    return weekly(environments, "Fri 16:00", "Mon 08:00", timezone=tz, reason="weekend")


def frozen(freezes: list[Freeze], now: datetime, env: str = PROD) -> bool:
    return active(freezes, env, now) is not None


# --- parsing ------------------------------------------------------------------------------


def test_weekly_times_read_weekday_names_in_any_case():
    assert parse_weekly("Fri 16:00") == WeeklyTime(4, 16, 0)
    assert parse_weekly("  friday   16:00 ") == WeeklyTime(4, 16, 0)
    assert parse_weekly("MON 08:00") == WeeklyTime(0, 8, 0)
    assert parse_weekly("Thurs 9:05") == WeeklyTime(3, 9, 5)
    assert parse_weekly("tue. 23:59") == WeeklyTime(1, 23, 59)
    assert parse_weekly("Sunday 00:00") == WeeklyTime(6, 0, 0)
    assert str(parse_weekly("wednesday 7:30")) == "Wed 07:30"


@pytest.mark.parametrize(("text", "message"), [
    ("Fri", "'Fri' is not a weekday and a time (like 'Fri 16:00' or 'monday 08:30')"),
    ("16:00 Fri", "is not a weekday and a time"),
    ("Fri 4pm", "is not a weekday and a time"),
    ("Fry 16:00", "'Fry' is not a day of the week (like Mon, tue or Friday)"),
    ("Fr 16:00", "'Fr' is not a day of the week"),  # two letters: too short to be sure
    ("Funday 10:00", "'Funday' is not a day of the week"),
    ("Fri 24:00", "'Fri 24:00': 24:00 is not a time of day (00:00 to 23:59)"),
    ("Fri 16:60", "16:60 is not a time of day"),
    ("", "'' is not a weekday and a time"),
])
def test_weekly_times_that_are_not_say_why(text, message):
    with pytest.raises(ValueError) as e:
        parse_weekly(text)
    assert message in str(e.value)


def test_a_weekly_time_must_be_text():
    with pytest.raises(ValueError, match="should be a weekday and a time, like 'Fri 16:00'"):
        parse_weekly(1600)  # type: ignore[arg-type]


def test_one_off_moments_read_dates_and_times_as_written_and_as_toml_gives_them():
    assert parse_moment("2026-12-24") == datetime(2026, 12, 24)
    assert parse_moment("2026-12-24", end=True) == datetime(2026, 12, 25)  # a date as the end: the whole day
    assert parse_moment("2026-12-24 18:00") == datetime(2026, 12, 24, 18, 0)
    assert parse_moment("2026-12-24T18:00:30") == datetime(2026, 12, 24, 18, 0, 30)
    assert parse_moment("2026-12-24 18:00", end=True) == datetime(2026, 12, 24, 18, 0)
    assert parse_moment(date(2026, 12, 24)) == datetime(2026, 12, 24)
    assert parse_moment(date(2026, 12, 31), end=True) == datetime(2027, 1, 1)
    assert parse_moment(datetime(2026, 12, 24, 18)) == datetime(2026, 12, 24, 18)
    aware = datetime(2026, 12, 24, 18, tzinfo=UTC)
    assert parse_moment(aware) is aware
    assert parse_moment("2026-12-24T18:00+01:00") == utc(2026, 12, 24, 17)


@pytest.mark.parametrize(("value", "message"), [
    ("24.12.2026", "'24.12.2026' is not a date, or a date and a time (like '2026-12-24' or '2026-12-24 18:00')"),
    ("2026-13-01", "'2026-13-01' is not a date"),
    ("tomorrow", "'tomorrow' is not a date"),
    (time(18, 0), "18:00:00 is a time of day alone: write a date, or a date and a time"),
    (20261224, "20261224 should be a date, or a date and a time"),
])
def test_one_off_moments_that_are_not_say_why(value, message):
    with pytest.raises(ValueError) as e:
        parse_moment(value)
    assert message in str(e.value)


def test_time_zones_are_iana_names():
    assert zone("Europe/Berlin") == BERLIN and zone(" UTC ") == ZoneInfo("UTC")
    for bad in ("Europe/Berln", "CEST+2", "", "../etc/passwd"):
        with pytest.raises(ValueError, match="is not a time zone"):
            zone(bad)


# --- wall-clock times that do not exist or happen twice --------------------------------------


def test_a_wall_time_in_the_spring_forward_gap_is_the_first_instant_after_it():
    # Berlin: 02:00 CET -> 03:00 CEST on 2026-03-29 at 01:00 UTC; 02:30 never shows.
    assert to_utc(datetime(2026, 3, 29, 2, 30), BERLIN) == utc(2026, 3, 29, 1, 0)
    assert to_utc(datetime(2026, 3, 29, 2, 0), BERLIN) == utc(2026, 3, 29, 1, 0)
    assert to_utc(datetime(2026, 3, 29, 3, 0), BERLIN) == utc(2026, 3, 29, 1, 0)
    assert to_utc(datetime(2026, 3, 29, 1, 59), BERLIN) == utc(2026, 3, 29, 0, 59)
    # New York: 02:00 EST -> 03:00 EDT on 2026-03-08 at 07:00 UTC.
    assert to_utc(datetime(2026, 3, 8, 2, 30), NEW_YORK) == utc(2026, 3, 8, 7, 0)


def test_a_wall_time_shown_twice_is_its_first_occurrence():
    # Berlin: 03:00 CEST -> 02:00 CET on 2026-10-25 at 01:00 UTC; 02:30 shows at 00:30 and 01:30 UTC.
    assert to_utc(datetime(2026, 10, 25, 2, 30), BERLIN) == utc(2026, 10, 25, 0, 30)
    assert to_utc(datetime(2026, 10, 25, 2, 30, fold=1), BERLIN) == utc(2026, 10, 25, 0, 30)  # fold ignored
    assert to_utc(datetime(2026, 10, 25, 3, 0), BERLIN) == utc(2026, 10, 25, 2, 0)
    # New York: 02:00 EDT -> 01:00 EST on 2026-11-01 at 06:00 UTC; 01:30 shows at 05:30 and 06:30 UTC.
    assert to_utc(datetime(2026, 11, 1, 1, 30), NEW_YORK) == utc(2026, 11, 1, 5, 30)


def test_an_aware_wall_time_is_the_instant_it_names():
    assert to_utc(datetime(2026, 3, 29, 2, 30, tzinfo=ZoneInfo("Asia/Tokyo")), BERLIN) == utc(2026, 3, 28, 17, 30)


# --- weekly windows -----------------------------------------------------------------------


def test_a_weekly_window_wraps_over_the_end_of_the_week():
    freezes = [weekend("UTC")]
    assert not frozen(freezes, utc(2026, 11, 6, 15, 59))  # Friday
    assert frozen(freezes, utc(2026, 11, 6, 16, 0))  # the start is frozen
    assert frozen(freezes, utc(2026, 11, 8, 12, 0))  # Sunday
    assert frozen(freezes, utc(2026, 11, 9, 7, 59, 59))  # Monday morning
    assert not frozen(freezes, utc(2026, 11, 9, 8, 0))  # the end is not
    assert not frozen(freezes, utc(2026, 11, 11, 12, 0))  # Wednesday
    hit = active(freezes, PROD, utc(2026, 11, 7, 10, 0))
    assert hit is not None
    assert (hit.reason, hit.until, hit.kind) == ("weekend", utc(2026, 11, 9, 8, 0), "weekly")
    assert hit.source == "weekly freeze Fri 16:00 to Mon 08:00 (UTC)"
    assert hit.set_by is None and hit.freezes == (freezes[0],)


def test_a_weekly_window_within_a_week_and_one_of_almost_a_week():
    lunch = weekly([PROD], "wed 12:00", "wed 13:00", reason="lunch")
    assert frozen([lunch], utc(2026, 11, 11, 12, 30)) and not frozen([lunch], utc(2026, 11, 11, 13, 0))
    assert not frozen([lunch], utc(2026, 11, 12, 12, 30))
    almost = weekly([PROD], "Tue 10:00", "Tue 09:00", reason="all but an hour")  # wraps: six days 23 hours
    assert frozen([almost], utc(2026, 11, 10, 8, 59)) and not frozen([almost], utc(2026, 11, 10, 9, 0))
    assert frozen([almost], utc(2026, 11, 10, 10, 0)) and frozen([almost], utc(2026, 11, 13, 0, 0))


def test_the_weekend_freeze_in_berlin_across_the_autumn_switch():
    # Fri 2026-10-23 16:00 CEST (+2) to Mon 2026-10-26 08:00 CET (+1): clocks went back on Sunday.
    freezes = [weekend()]
    assert not frozen(freezes, utc(2026, 10, 23, 13, 59))
    assert frozen(freezes, utc(2026, 10, 23, 14, 0))
    hit = active(freezes, PROD, utc(2026, 10, 25, 1, 30))  # in the repeated hour
    assert hit is not None and hit.until == utc(2026, 10, 26, 7, 0)
    assert frozen(freezes, utc(2026, 10, 26, 6, 59))
    assert not frozen(freezes, utc(2026, 10, 26, 7, 0))
    # The next Friday is 16:00 CET: 15:00 UTC, an hour later in UTC than the week before.
    assert next_change(freezes, PROD, utc(2026, 10, 26, 7, 0)) == utc(2026, 10, 30, 15, 0)
    assert not frozen(freezes, utc(2026, 10, 30, 14, 30))
    assert frozen(freezes, utc(2026, 10, 30, 15, 0))


def test_the_weekend_freeze_in_berlin_across_the_spring_switch():
    # Fri 2026-03-27 16:00 CET (+1) to Mon 2026-03-30 08:00 CEST (+2): clocks went forward on Sunday.
    freezes = [weekend()]
    assert not frozen(freezes, utc(2026, 3, 27, 14, 59))
    assert frozen(freezes, utc(2026, 3, 27, 15, 0))
    hit = active(freezes, PROD, utc(2026, 3, 29, 1, 0))  # the moment of the switch
    assert hit is not None and hit.until == utc(2026, 3, 30, 6, 0)
    assert frozen(freezes, utc(2026, 3, 30, 5, 59)) and not frozen(freezes, utc(2026, 3, 30, 6, 0))
    assert next_change(freezes, PROD, utc(2026, 3, 30, 6, 0)) == utc(2026, 4, 3, 14, 0)  # Fri 16:00 CEST


def test_the_weekend_freeze_in_new_york_across_both_switches():
    freezes = [weekend("America/New_York")]
    # Spring: Fri 2026-03-06 16:00 EST (-5) to Mon 2026-03-09 08:00 EDT (-4).
    assert active(freezes, PROD, utc(2026, 3, 6, 21, 0)).until == utc(2026, 3, 9, 12, 0)
    assert not frozen(freezes, utc(2026, 3, 6, 20, 59)) and not frozen(freezes, utc(2026, 3, 9, 12, 0))
    # Autumn: Fri 2026-10-30 16:00 EDT (-4) to Mon 2026-11-02 08:00 EST (-5).
    assert not frozen(freezes, utc(2026, 10, 30, 19, 59))
    assert active(freezes, PROD, utc(2026, 10, 30, 20, 0)).until == utc(2026, 11, 2, 13, 0)
    assert frozen(freezes, utc(2026, 11, 2, 12, 59)) and not frozen(freezes, utc(2026, 11, 2, 13, 0))


def test_a_weekly_window_starting_in_the_gap_starts_at_the_switch():
    night = weekly([PROD], "Sun 02:30", "Sun 05:00", timezone="Europe/Berlin", reason="maintenance")
    assert occurrences(night, utc(2026, 3, 22), utc(2026, 3, 30)) == [
        (utc(2026, 3, 22, 1, 30), utc(2026, 3, 22, 4, 0)),  # CET
        (utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 3, 0)),  # 02:30 is not on the clocks: from 03:00 CEST
    ]
    assert not frozen([night], utc(2026, 3, 29, 0, 59)) and frozen([night], utc(2026, 3, 29, 1, 0))


def test_a_weekly_window_at_a_repeated_time_starts_or_ends_at_its_first_occurrence():
    starts = weekly([PROD], "Sun 02:30", "Sun 04:00", timezone="Europe/Berlin", reason="maintenance")
    assert occurrences(starts, utc(2026, 10, 24), utc(2026, 10, 26)) == [
        (utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 3, 0)),  # 02:30 CEST to 04:00 CET: 2.5 hours
    ]
    ends = weekly([PROD], "Sun 01:00", "Sun 02:30", timezone="Europe/Berlin", reason="maintenance")
    assert occurrences(ends, utc(2026, 10, 24), utc(2026, 10, 26)) == [
        (utc(2026, 10, 24, 23, 0), utc(2026, 10, 25, 0, 30)),
    ]
    assert frozen([ends], utc(2026, 10, 25, 0, 29)) and not frozen([ends], utc(2026, 10, 25, 1, 15))


def test_a_weekly_window_wholly_in_the_gap_does_not_happen_that_week():
    gone = weekly([PROD], "Sun 02:10", "Sun 02:50", timezone="Europe/Berlin", reason="never on the switch day")
    assert occurrences(gone, utc(2026, 3, 21), utc(2026, 4, 6)) == [
        (utc(2026, 3, 22, 1, 10), utc(2026, 3, 22, 1, 50)),
        (utc(2026, 4, 5, 0, 10), utc(2026, 4, 5, 0, 50)),
    ]
    assert not frozen([gone], utc(2026, 3, 29, 1, 0))
    assert next_change([gone], PROD, utc(2026, 3, 22, 2, 0)) == utc(2026, 4, 5, 0, 10)


# --- one-off windows ------------------------------------------------------------------------


def test_a_one_off_freeze_between_dates_includes_the_end_date():
    xmas = one_off([PROD], "2026-12-24", "2026-12-26", timezone="Europe/Berlin", reason="holidays")
    assert not frozen([xmas], utc(2026, 12, 23, 22, 59))
    assert frozen([xmas], utc(2026, 12, 23, 23, 0))  # 00:00 CET on the 24th
    hit = active([xmas], PROD, utc(2026, 12, 25, 12, 0))
    assert hit is not None and hit.until == utc(2026, 12, 26, 23, 0) and hit.kind == "one-off"
    assert hit.source == "one-off freeze 2026-12-24 00:00 to 2026-12-27 00:00 (Europe/Berlin)"
    assert not frozen([xmas], utc(2026, 12, 26, 23, 0))
    assert xmas.over(utc(2026, 12, 26, 23, 0)) and not xmas.over(utc(2026, 12, 26, 22, 59))


def test_a_one_off_freeze_from_dates_and_times_and_toml_values():
    evening = one_off([PROD], "2026-12-24 18:00", "2026-12-25 08:00", timezone="America/New_York", reason="eve")
    assert occurrences(evening, utc(2026, 12, 1), utc(2027, 1, 1)) == [(utc(2026, 12, 24, 23), utc(2026, 12, 25, 13))]
    toml = one_off([PROD], datetime(2026, 12, 24, 18), date(2026, 12, 24), timezone="America/New_York", reason="eve")
    assert occurrences(toml, utc(2026, 12, 1), utc(2027, 1, 1)) == [(utc(2026, 12, 24, 23), utc(2026, 12, 25, 5))]
    offset = one_off([PROD], "2026-12-24T18:00:00+01:00", "2026-12-24T20:00:00+01:00", reason="eve")
    assert occurrences(offset, utc(2026, 12, 1), utc(2027, 1, 1)) == [(utc(2026, 12, 24, 17), utc(2026, 12, 24, 19))]
    one_day = one_off(PROD, "2026-12-31", "2026-12-31", reason="new year's eve")
    assert frozen([one_day], utc(2026, 12, 31, 23, 59)) and not frozen([one_day], utc(2027, 1, 1))


def test_a_one_off_freeze_must_end_after_it_starts():
    with pytest.raises(ValueError, match=r"it ends \(2026-12-24 08:00\) before it starts \(2026-12-24 18:00\)"):
        one_off([PROD], "2026-12-24 18:00", "2026-12-24 08:00", reason="backwards")
    with pytest.raises(ValueError, match="before it starts"):  # both in one gap: the same instant
        one_off([PROD], "2026-03-29 02:10", "2026-03-29 02:50", timezone="Europe/Berlin", reason="gap")


# --- several freezes: which one is told, and until when -------------------------------------


def test_overlapping_and_adjacent_freezes_hold_until_the_last_of_them_ends():
    berlin = weekend()
    # Monday after the weekend: a one-off release freeze from 07:00 to Wednesday (CET).
    release = one_off([PROD], "2026-11-02 07:00", "2026-11-03", timezone="Europe/Berlin", reason="release week")
    # ... and, adjacent to that, Wednesday morning in UTC.
    handover = one_off([PROD], "2026-11-03 23:00", "2026-11-04 09:00", reason="handover")
    hit = active([berlin, release, handover], PROD, utc(2026, 10, 31, 12, 0))  # Saturday
    assert hit is not None and hit.freeze is berlin and hit.reason == "weekend"
    assert hit.until == utc(2026, 11, 4, 9, 0)
    hit = active([berlin, release, handover], PROD, utc(2026, 11, 2, 6, 30))  # both hold
    assert hit is not None and hit.freeze is release  # ends last
    assert hit.freezes == (berlin, release)
    # A gap of a minute breaks the chain.
    late = one_off([PROD], "2026-11-03 23:01", "2026-11-04 09:00", reason="handover")
    assert active([berlin, release, late], PROD, utc(2026, 10, 31, 12, 0)).until == utc(2026, 11, 3, 23, 0)


def test_freezes_that_cover_every_week_have_no_end_to_tell():
    first = weekly([PROD], "Mon 00:00", "Thu 00:00", reason="first half")
    second = weekly([PROD], "Thu 00:00", "Mon 00:00", reason="second half")
    hit = active([first, second], PROD, utc(2026, 11, 4, 12, 0))
    assert hit is not None and hit.reason == "first half" and hit.until is None


def test_stop_the_line_is_told_first_and_holds_until_lifted_or_until():
    since = utc(2026, 10, 30, 15, 30)
    stop = stop_the_line(ALL, reason="incident 4711", set_by="alice", since=since)
    hit = active([weekend(), stop], PROD, utc(2026, 10, 31, 12, 0))
    assert hit is not None and hit.freeze is stop and hit.kind == "stop-the-line"
    assert (hit.reason, hit.set_by, hit.until, hit.source) == ("incident 4711", "alice", None, "stop-the-line by alice")
    assert frozen([stop], since - timedelta(seconds=1))  # holds from when it is stored, whatever the clocks
    assert frozen([stop], utc(2030, 1, 1), "anything")
    assert not stop.over(utc(2030, 1, 1))
    timed = stop_the_line(PROD, reason="db migration", set_by="bob", since=since, until=utc(2026, 11, 3, 10, 0))
    hit = active([weekend(), timed], PROD, utc(2026, 10, 31, 12, 0))
    assert hit is not None and hit.freeze is timed and hit.until == utc(2026, 11, 3, 10, 0)
    assert not frozen([timed], utc(2026, 11, 3, 10, 0)) and timed.over(utc(2026, 11, 3, 10, 0))
    assert not frozen([timed], utc(2026, 10, 31, 12, 0), "staging")
    assert occurrences(timed, utc(2026, 10, 1), utc(2026, 12, 1)) == [(since, utc(2026, 11, 3, 10, 0))]
    assert timed.scope == PROD and stop.scope == ALL


def test_stop_the_line_needs_one_scope_a_person_a_reason_and_aware_times():
    since = utc(2026, 10, 30, 15, 30)
    with pytest.raises(ValueError, match="say why"):
        stop_the_line(PROD, reason=" ", set_by="alice", since=since)
    with pytest.raises(ValueError, match="names who set it"):
        stop_the_line(PROD, reason="incident", set_by="", since=since)
    with pytest.raises(ValueError, match="since must be an aware datetime"):
        stop_the_line(PROD, reason="incident", set_by="alice", since=datetime(2026, 10, 30))
    with pytest.raises(ValueError, match="until must come after since"):
        stop_the_line(PROD, reason="incident", set_by="alice", since=since, until=since)
    with pytest.raises(ValueError, match="one environment or for all"):
        stop_the_line(["production", "staging"], reason="incident", set_by="alice", since=since)  # type: ignore[arg-type]


# --- environments -----------------------------------------------------------------------------


def test_star_means_every_environment_and_names_only_those():
    everywhere = weekend(environments="*")
    assert everywhere.environments == ALL
    assert frozen([everywhere], utc(2026, 11, 7), "staging") and frozen([everywhere], utc(2026, 11, 7), "qa-3")
    two = weekend(environments=["production", "eu-production"])
    assert frozen([two], utc(2026, 11, 7), "eu-production") and not frozen([two], utc(2026, 11, 7), "staging")
    assert environments_of(["*"]) == ALL and environments_of("staging") == frozenset({"staging"})
    with pytest.raises(ValueError, match="'\\*' means every environment: write it on its own"):
        environments_of(["*", "production"])
    with pytest.raises(ValueError, match="name at least one environment"):
        weekend(environments=[])
    with pytest.raises(ValueError, match="is not an environment name"):
        weekend(environments=["prod*"])


def test_a_freeze_checks_what_it_is_given():
    with pytest.raises(ValueError, match=r"from and to are the same time \(Fri 16:00\)"):
        weekly([PROD], "Fri 16:00", "friday 16:00", reason="nothing")
    with pytest.raises(ValueError, match="say why"):
        weekly([PROD], "Fri 16:00", "Mon 08:00", reason="")
    with pytest.raises(ValueError, match="'Mars/Olympus' is not a time zone"):
        weekly([PROD], "Fri 16:00", "Mon 08:00", timezone="Mars/Olympus", reason="weekend")
    with pytest.raises(ValueError, match="is not a freeze window"):
        Freeze(frozenset({PROD}), "Fri 16:00 to Mon 08:00", reason="weekend")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="frozenset of names"):
        Freeze(["production"], Weekly(WeeklyTime(4, 16, 0), WeeklyTime(0, 8, 0)), reason="w")  # type: ignore[arg-type]
    assert Freeze(ALL, OneOff(datetime(2026, 1, 1), datetime(2026, 1, 2)), reason="x").kind == "one-off"


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="now must be an aware datetime"):
        active([weekend()], PROD, datetime(2026, 11, 7))
    with pytest.raises(ValueError, match="now must be an aware datetime"):
        next_change([weekend()], PROD, datetime(2026, 11, 7))


def test_now_in_any_zone_is_the_same_instant():
    berlin_now = datetime(2026, 10, 23, 16, 0, tzinfo=BERLIN)
    hit = active([weekend()], PROD, berlin_now)
    assert hit is not None and hit.until == utc(2026, 10, 26, 7, 0) and hit.until.tzinfo is UTC


# --- the next change, for timers ---------------------------------------------------------------


def test_the_next_change_is_the_next_start_or_end_of_any_freeze_on_the_environment():
    xmas = one_off([PROD], "2026-12-24", "2026-12-26", timezone="Europe/Berlin", reason="holidays")
    staging = one_off(["staging"], "2026-11-01", "2026-11-02", reason="not ours")
    freezes = [weekend(), xmas, staging]
    assert next_change(freezes, PROD, utc(2026, 11, 4, 12, 0)) == utc(2026, 11, 6, 15, 0)  # Friday, CET
    assert next_change(freezes, PROD, utc(2026, 11, 6, 15, 0)) == utc(2026, 11, 9, 7, 0)  # the end
    assert next_change(freezes, PROD, utc(2026, 12, 21, 8, 0)) == utc(2026, 12, 23, 23, 0)  # xmas starts
    assert next_change(freezes, PROD, utc(2026, 12, 24, 12, 0)) == utc(2026, 12, 25, 15, 0)  # Friday within it
    assert next_change([xmas], PROD, utc(2026, 12, 24, 12, 0)) == utc(2026, 12, 26, 23, 0)
    assert next_change([xmas], PROD, utc(2026, 12, 26, 23, 0)) is None  # over
    assert next_change([xmas, staging], "staging", utc(2026, 10, 1)) == utc(2026, 11, 1)
    assert next_change([], PROD, utc(2026, 11, 4)) is None


def test_the_next_change_of_stop_the_line_is_its_until():
    since = utc(2026, 11, 4, 9, 0)
    stop = stop_the_line(PROD, reason="incident", set_by="alice", since=since)
    assert next_change([stop], PROD, since) is None
    timed = stop_the_line(PROD, reason="incident", set_by="alice", since=since, until=utc(2026, 11, 4, 11, 0))
    assert next_change([timed], PROD, since) == utc(2026, 11, 4, 11, 0)
    assert next_change([timed], PROD, utc(2026, 11, 4, 11, 0)) is None
