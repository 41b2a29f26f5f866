"""Slack's names in the Inbox: the scopes its conversations and commands are deduplicated in, and
the pointers to the messages it posted (Inbox.receive, Inbox.link/lookup). The Inbox puts them
inside its own keys (bot/adapters/redis/keys.py). Changing any string here orphans data already
stored under the old one (tests/adapters/channels/test_stored_names.py pins each)."""

from __future__ import annotations


def slack_conversation(channel: str, thread_ts: str) -> str:
    """A Slack thread: the scope its messages are deduplicated in and bound to a bot thread."""
    return f"slack:{channel}:{thread_ts}"


def slack_approval_message(approval_id: str) -> str:
    """An approval -> the ts of the Slack message asking for it (updated once decided)."""
    return f"slack:approval-message:{approval_id}"


def slack_notify_root(thread_id: str, channel: str) -> str:
    """A thread posted to a Slack channel it did not come from (a notify target) -> the ts
    of the message its updates are posted under."""
    return f"slack:notify-root:{thread_id}:{channel}"


def slack_notify_approval_message(approval_id: str, channel: str) -> str:
    """An approval asked for in a notify target's Slack thread -> the ts of that message."""
    return f"slack:notify-approval:{approval_id}:{channel}"


def slack_command(trigger_id: str) -> str:
    """The scope a `/deploy` command is deduplicated in (a Socket Mode envelope can come twice)."""
    return f"slack:command:{trigger_id}"


def slack_dm_approval(approval_id: str, user: str) -> str:
    """An approval escalated to a Slack user -> "<channel> <ts>" of the DM asking them."""
    return f"slack:dm-approval:{approval_id}:{user}"
