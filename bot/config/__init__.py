"""The settings: `settings` reads the environment (and an optional .env) once, `settings_file`
reads deploybot.toml. Read before any adapter exists, and handed to them by the composition
root: config imports no adapter."""

__all__ = ["settings", "settings_file"]
