"""The Slack channel's kind: its name in a thread's origin, in notify targets (`slack:CHANNEL_ID`)
and among the ways people are seen."""

KIND = "slack"


def normalise_user(user_id: str) -> str:
    """`" U012AB3CD "` -> `U012AB3CD`: Slack ids compare as written, trimmed (the directory is told)."""
    return user_id.strip()
