"""Events, not only people, start work: GitHub deliveries and schedules. Pure: no I/O, no clock.

`[[triggers]]` and `[[schedules]]` in deploybot.toml (read by bot/config/settings_file.py) become
the `Trigger` and `Schedule` values here. A GitHub delivery is read into what happened
(`happened`: a release published, a tag pushed, a workflow run that succeeded on the
default branch); each trigger it matches gives a `Start`: the text a thread starts with, as
if the delivery's sender had asked, and where the thread is posted (`notify`). Schedules
are started by bot/runtime/scheduler.py when their cron expression says so.

A `notify` target is `<kind>:<value>` (e.g. `slack:<channel id>`): the notifier of that kind
of channel posts the thread there (Origin.notify). Which values are its own is the channel's to
say (`NotifyTarget`, handed in by the root's registry); the core only splits the target.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.core import wording

Kind = Literal["release", "tag", "workflow_run"]
KINDS: tuple[Kind, ...] = ("release", "tag", "workflow_run")
SCHEDULE = "schedule"  # ... and of one a schedule started



@dataclass(frozen=True)
class NotifyTarget:
    """A channel's own notify targets: their shape for people (`CHANNEL_ID`) and why a value
    is not one (None: it is)."""

    shape: str
    problem: Callable[[str], str | None]


def target_problem(target: str, kinds: Mapping[str, NotifyTarget]) -> str | None:
    """Why `target` is not a notify target of one of `kinds` (`kind:value`, its value checked
    by that channel); None when it is one."""
    kind, colon, value = target.partition(":")
    found = kinds.get(kind) if colon else None
    if found is None:
        return wording.not_a_notify_target(target, [f"{k}:{t.shape}" for k, t in kinds.items()])
    return found.problem(value)


def targets(notify: tuple[str, ...], kind: str) -> list[str]:
    """The values of the notify targets `kind:value` of one kind of channel (its own to read:
    a Slack channel id, an address), in order."""
    return [value for target in notify for found, _, value in (target.partition(":"),) if found == kind]


@dataclass(frozen=True)
class Trigger:
    """`[[triggers]]`: when `on` happens on GitHub, ask to deploy `service` to `environment`."""

    on: Kind
    service: str
    environment: str
    notify: tuple[str, ...] = ()


@dataclass(frozen=True)
class Schedule:
    """`[[schedules]]`: at every `cron` occurrence (in `timezone`), start a thread saying `message`."""

    cron: str
    timezone: str
    message: str
    notify: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """Names the schedule in the store. Derived from all of it: an edited schedule is a
        new one, counted from when it is first seen."""
        blob = json.dumps([self.cron, self.timezone, self.message, list(self.notify)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """How threads name who asked: the schedule itself."""
        return f"schedule {self.cron} ({self.timezone})"


@dataclass(frozen=True)
class Happened:
    """What a GitHub delivery says happened, as far as triggers care."""

    kind: Kind
    ref: str  # what to deploy: the tag (release, tag) or the commit (workflow_run)
    sender: str  # the GitHub login who caused it
    note: str  # how the thread says it: "release v1.4.0 published by octocat"


@dataclass(frozen=True)
class Start:
    """A thread to start: its first message, who it is said by, and where it is posted."""

    text: str
    sender: str
    notify: tuple[str, ...]


def _text(value: Any, limit: int = 200) -> str | None:
    return value.strip()[:limit] if isinstance(value, str) and value.strip() else None


def _get(payload: Mapping[str, Any], *path: str) -> Any:
    value: Any = payload
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def happened(event: str, payload: Mapping[str, Any]) -> Happened | None:
    """The trigger-worthy thing in one delivery (`X-GitHub-Event` and its JSON body), or
    None: any other event or action, a draft release, a deleted tag, a failed run, a run
    off the default branch, a payload missing what it should have."""
    sender = _text(_get(payload, "sender", "login")) or "someone"
    if event == "release" and payload.get("action") == "published":
        tag = _text(_get(payload, "release", "tag_name"))
        if tag is None or _get(payload, "release", "draft") is True:
            return None
        return Happened("release", tag, sender, wording.release_published(tag, sender))
    if event == "push":
        ref = _text(payload.get("ref"))
        if ref is None or not ref.startswith("refs/tags/") or payload.get("deleted") is True:
            return None
        if payload.get("created") is not True:
            return None  # a tag moved (force-pushed): not a new tag
        tag = ref.removeprefix("refs/tags/")
        return Happened("tag", tag, sender, wording.tag_pushed(tag, sender))
    if event == "workflow_run" and payload.get("action") == "completed":
        run = payload.get("workflow_run")
        if not isinstance(run, Mapping) or run.get("conclusion") != "success":
            return None
        branch, default = _text(run.get("head_branch")), _text(_get(payload, "repository", "default_branch"))
        sha, name = _text(run.get("head_sha")), _text(run.get("name")) or "workflow"
        if branch is None or branch != default or sha is None:
            return None
        return Happened("workflow_run", sha, sender, wording.workflow_succeeded(name, branch, sha, sender))
    return None


def starts(what: Happened, triggers: tuple[Trigger, ...]) -> list[Start]:
    """One Start per trigger `what` matches (none: the delivery is acknowledged and ignored)."""
    return [
        Start(wording.triggered_deploy(t.service, what.ref, t.environment, what.note), what.sender, t.notify)
        for t in triggers if t.on == what.kind
    ]
