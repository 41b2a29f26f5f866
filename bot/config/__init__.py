"""The settings: `settings` reads the environment (and an optional .env) once, `settings_file`
reads deploybot.toml, each of its tables by a `file_*` module. Read before any adapter exists,
and handed to them by the composition root: config imports no adapter."""

__all__ = ["file_freezes", "file_people", "file_services", "file_triggers", "file_values", "settings", "settings_file"]
