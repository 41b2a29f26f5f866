"""The Slack channel's kind: its name in a thread's origin, in notify targets (`slack:CHANNEL_ID`)
and among the ways people are seen."""

import re

from bot.core import wording
from bot.core.triggers import NotifyTarget

KIND = "slack"


def normalise_user(user_id: str) -> str:
    """`" U012AB3CD "` -> `U012AB3CD`: Slack ids compare as written, trimmed (the directory is told)."""
    return user_id.strip()


_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,30}$")
# `slack:CHANNEL_ID` in a notify list: the channel a thread is posted to (docs/configuration.md).
TARGET = NotifyTarget(
    "CHANNEL_ID", lambda value: None if _CHANNEL_ID.match(value) else wording.not_a_slack_channel(value),
)
