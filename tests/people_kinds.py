"""People as the tests write them: a person with Slack ids, addresses and GitHub logins, and a
directory told the registered channels' normalisers, as the root tells production's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.core.people import Directory, Person
from bot.wiring.channels import people_kinds

KINDS = people_kinds()  # the registered channels' kinds of ids and how they compare


def a_person(name: str, slack: Iterable[str] = (), email: Iterable[str] = (), github: Iterable[str] = ()) -> Person:
    ids = {"slack": tuple(slack), "email": tuple(email), "github": tuple(github)}
    return Person(name, {kind: values for kind, values in ids.items() if values})


def directory_of(people: Iterable[Person] = (), groups: Any = None, **given: Any) -> Directory:
    return Directory(people, groups, normalisers=KINDS, **given)
