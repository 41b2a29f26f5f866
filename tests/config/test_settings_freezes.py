"""[[freezes]] in deploybot.toml: read into bot/core/freeze_windows.py's Freeze, every mistake named by its
key path, and the environments they name checked against those the bot knows."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from bot.config.settings_file import FileConfig, load
from bot.core.freeze_windows import ALL, OneOff, Weekly, WeeklyTime, active
from tests.config.settings_helpers import problems_of

FREEZES = """
[[freezes]]
environments = ["production"]
from = "Fri 16:00"
to = "Mon 08:00"
timezone = "Europe/Berlin"
reason = "weekend"

[[freezes]]
environments = "*"
start = 2026-12-24
end = 2026-12-26
timezone = "Europe/Berlin"
reason = "holidays"

[[freezes]]
environments = ["production", "staging"]
start = "2026-11-11 11:00"
end = 2026-11-11T12:00:00
reason = "carnival"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deploybot.toml"
    path.write_text(text)
    return path


def freeze(**keys: str) -> str:
    """One [[freezes]] entry: a valid weekly one, with `keys` written over it (a value of
    None leaves the key out); values are TOML as written."""
    entry = {"environments": '["production"]', "from": '"Fri 16:00"', "to": '"Mon 08:00"', "reason": '"weekend"'}
    entry.update(keys)
    return "[[freezes]]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items() if v is not None)


# --- reading -----------------------------------------------------------------------------------


def test_freezes_read_into_freezes(tmp_path):
    config = load(write(tmp_path, FREEZES))
    weekend, holidays, carnival = config.freeze_list()
    assert weekend.environments == frozenset({"production"}) and weekend.timezone == "Europe/Berlin"
    assert weekend.window == Weekly(WeeklyTime(4, 16, 0), WeeklyTime(0, 8, 0)) and weekend.reason == "weekend"
    assert holidays.environments == ALL
    assert holidays.window == OneOff(datetime(2026, 12, 24), datetime(2026, 12, 27))  # the 26th included
    assert carnival.environments == frozenset({"production", "staging"}) and carnival.timezone == "UTC"
    assert carnival.window == OneOff(datetime(2026, 11, 11, 11), datetime(2026, 11, 11, 12))
    # The entries keep what was written.
    assert config.freezes[0].from_ == "Fri 16:00" and config.freezes[1].start == date(2026, 12, 24)
    hit = active(config.freeze_list(), "production", datetime(2026, 10, 23, 14, 0, tzinfo=UTC))
    assert hit is not None and hit.until == datetime(2026, 10, 26, 7, 0, tzinfo=UTC)


def test_weekly_times_are_kept_in_one_spelling(tmp_path):
    config = load(write(tmp_path, freeze(**{"from": '"friday 4:00"', "to": '"MON 08:00"'})))
    assert (config.freezes[0].from_, config.freezes[0].to) == ("Fri 04:00", "Mon 08:00")


def test_no_freezes_is_fine(tmp_path):
    config = load(write(tmp_path, ""))
    assert config.freezes == () and config.freeze_list() == ()
    assert FileConfig().freeze_list() == ()


def test_freezes_is_a_known_top_level_key(tmp_path):
    assert problems_of(tmp_path, 'colour = "blue"\n') == [
        "colour: unknown key; expected one of: "
        "people, groups, environments, services, triggers, schedules, freezes, agents, github_environments, "
        "promotion, soak"
    ]
    assert problems_of(tmp_path, "[[freezess]]\n") == ["freezess: unknown key (did you mean freezes?)"]


# --- mistakes, by key path ---------------------------------------------------------------------


@pytest.mark.parametrize(("keys", "problem"), [
    ({"from": '"Fry 16:00"'}, "freezes[0].from: 'Fry' is not a day of the week (like Mon, tue or Friday)"),
    ({"to": '"Mon 8"'}, "freezes[0].to: 'Mon 8' is not a weekday and a time (like 'Fri 16:00' or 'monday 08:30')"),
    ({"to": '"Mon 25:00"'}, "freezes[0].to: 'Mon 25:00': 25:00 is not a time of day (00:00 to 23:59)"),
    ({"from": "2026-12-24"}, (
        'freezes[0].from: 2026-12-24 is not a weekday and a time: from and to repeat every week (like "Fri 16:00"); '
        "a freeze that happens once has start and end"
    )),
    ({"from": "1600"}, 'freezes[0].from: should be a weekday and a time, like "Fri 16:00"'),
    ({"to": None}, "freezes[0]: a weekly freeze needs both from and to"),
    ({"to": '"Fri 16:00"'}, "freezes[0]: from and to are the same time (Fri 16:00): a freeze needs a length"),
    ({"start": "2026-12-24"}, "freezes[0]: give from and to (every week) or start and end (once), not both"),
    ({"from": None, "to": None}, (
        'freezes[0]: say when: from and to (every week, like from = "Fri 16:00") or start and end (once, '
        "like start = 2026-12-24)"
    )),
    ({"from": None, "to": None, "start": "2026-12-24"}, "freezes[0]: a one-off freeze needs both start and end"),
    ({"from": None, "to": None, "start": '"2026-12-24 18:00"', "end": '"2026-12-24 08:00"'},
     "freezes[0]: it ends (2026-12-24 08:00) before it starts (2026-12-24 18:00)"),
    ({"from": None, "to": None, "start": '"24.12.2026"', "end": "2026-12-26"},
     "freezes[0].start: '24.12.2026' is not a date, or a date and a time (like '2026-12-24' or '2026-12-24 18:00')"),
    ({"from": None, "to": None, "start": "2026-12-24", "end": "18:00:00"},
     "freezes[0].end: 18:00:00 is a time of day alone: write a date, or a date and a time"),
    ({"from": None, "to": None, "start": "2026-12-24", "end": "true"},
     'freezes[0].end: should be a date, or a date and a time (like 2026-12-24 or "2026-12-24 18:00")'),
    ({"timezone": '"Europe/Berln"'},
     "freezes[0].timezone: 'Europe/Berln' is not a time zone (like Europe/Berlin or UTC)"),
    ({"timezone": "1"}, "freezes[0].timezone: should be a string"),
    ({"reason": None}, "freezes[0].reason: is missing"),
    ({"reason": '"  "'}, "freezes[0].reason: say why: the people whose deploys wait are told it"),
    ({"environments": None}, "freezes[0].environments: is missing"),
    ({"environments": "[]"}, 'freezes[0].environments: name at least one environment, or write "*" for all'),
    ({"environments": '["*", "production"]'},
     'freezes[0].environments: "*" means every environment: write environments = "*" on its own'),
    ({"environments": '["prod uction"]'},
     "freezes[0].environments: 'prod uction': a name holds only letters, digits, '.', '_' and '-'"),
    ({"environments": "5"}, "freezes[0].environments: should be a string or a list of strings"),
    ({"environments": '["production", 5]'}, "freezes[0].environments[1]: should be a string"),
    ({"form": '"Fri 16:00"'}, "freezes[0].form: unknown key (did you mean from?)"),
    ({"colour": '"blue"'},
     "freezes[0].colour: unknown key; expected one of: environments, from, to, start, end, timezone, reason"),
])
def test_each_mistake_is_named_by_its_key_path(tmp_path, keys, problem):
    assert problems_of(tmp_path, freeze(**keys)) == [problem]


def test_mistakes_in_several_freezes_are_all_said(tmp_path):
    text = freeze() + freeze(**{"from": '"Fry 16:00"'}) + freeze(reason=None, timezone='"Nowhere"')
    assert problems_of(tmp_path, text) == [
        "freezes[1].from: 'Fry' is not a day of the week (like Mon, tue or Friday)",
        "freezes[2].timezone: 'Nowhere' is not a time zone (like Europe/Berlin or UTC)",
        "freezes[2].reason: is missing",
    ]


def test_freezes_written_as_a_table_say_how_to_write_them(tmp_path):
    assert problems_of(tmp_path, '[freezes]\nreason = "weekend"\n') == [
        "freezes: should be an array of tables: write [[freezes]] above each entry"
    ]


# --- the environments freezes name (settings.py checks them against all it knows) --------------


def test_freeze_problems_name_unknown_environments(tmp_path):
    config = load(write(tmp_path, FREEZES + freeze(environments='["prodution", "production"]')))
    assert config.freeze_problems(["production", "staging"]) == [
        "freezes[3].environments[0]: there is no environment 'prodution' (did you mean production?)"
    ]
    assert config.freeze_problems(["production"]) == [
        "freezes[2].environments[1]: there is no environment 'staging'",
        "freezes[3].environments[0]: there is no environment 'prodution' (did you mean production?)",
    ]
    assert config.freeze_problems(["production", "staging", "prodution"]) == []
