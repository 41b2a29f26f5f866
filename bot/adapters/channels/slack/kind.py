"""The Slack channel's kind: its name in a thread's origin, in notify targets (`slack:CHANNEL_ID`)
and among the ways people are seen."""

KIND = "slack"
