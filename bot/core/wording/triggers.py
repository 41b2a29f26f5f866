"""Triggers and schedules: threads started by events, not people (bot/core/triggers.py); the
slash command's help and status; an outgoing webhook that kept failing."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "delivery_kept_failing", "not_a_notify_target", "not_a_slack_channel", "not_an_address", "release_published",
    "slash_command_help", "slash_command_status", "started_by", "status_line", "tag_pushed", "triggered_deploy",
    "workflow_succeeded",
]


def release_published(tag: str, sender: str) -> str:
    return f"release {tag} published by {sender}"


def tag_pushed(tag: str, sender: str) -> str:
    return f"tag {tag} pushed by {sender}"


def workflow_succeeded(name: str, branch: str, sha: str, sender: str) -> str:
    return f"{name} succeeded on {branch} at {sha[:7]}, run by {sender}"


def triggered_deploy(service: str, ref: str, environment: str, note: str) -> str:
    """The first message of a thread a GitHub delivery starts, as if its sender had asked."""
    return f"deploy {service} {ref} to {environment} ({note})"


def started_by(source: str, who: str, text: str) -> str:
    """The message a notify target gets when a trigger or schedule starts a thread."""
    return f"{who} ({source}): {text}"


def not_a_notify_target(target: str, shapes: Iterable[str]) -> str:
    """A notify target of no channel's kind: `shapes` are each kind's (`slack:CHANNEL_ID`)."""
    return f"{target!r}: a notify target is {' or '.join(repr(shape) for shape in shapes)}"


def not_a_slack_channel(value: str) -> str:
    return f"{value!r} is not a Slack channel id (like C0123DEPLOY)"


def not_an_address(value: str) -> str:
    return f"{value!r} is not an email address"


def slash_command_help(command: str, examples: Iterable[str]) -> str:
    return (
        f"`{command} ...` asks deploybot in this channel, like a mention. Try: "
        + "; ".join(f"`{command} {c.removeprefix('deploy ')}`" if c.startswith("deploy ") else f"`{command} {c}`"
                    for c in examples)
        + f"; `{command} status` lists what is running or waiting here."
    )


def slash_command_status(count: int) -> str:
    """The heading of `/deploy status`; the channel lists the threads under it (status_line)."""
    if not count:
        return "Nothing is running or waiting for anyone right now."
    return f"Running or waiting ({count}, newest first):"


def status_line(thread_id: str, status: str, text: str) -> str:
    return f"• {text} ({status.replace('_', ' ')}, thread {thread_id})"


def delivery_kept_failing(url: str, attempts: int, error: str) -> str:
    return f"the webhook {url} failed {attempts} times: {error}"
