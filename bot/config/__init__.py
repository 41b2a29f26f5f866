"""The settings: `settings` reads the environment (and an optional .env) once, its flat
`fields` read per concern (`channels`, `github`, `store`, `web`, `services`, `access` the people
and approvals, `triggering`, `redaction`; `reading` what they share); `settings_file` reads
deploybot.toml, each of its tables by a `file_*` module. Read before any adapter exists, and
handed to them by the composition root: config imports no adapter."""

__all__ = [
    "access", "channels", "fields", "file_freezes", "file_people", "file_services", "file_triggers", "file_values",
    "github", "reading", "redaction", "services", "settings", "settings_file", "store", "triggering", "web"
]
