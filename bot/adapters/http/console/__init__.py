"""The web console: environments board, approvals inbox, thread timelines, deploy history and
audit, served by the same app under /console/ (see routes.py)."""

from bot.adapters.http.console.routes import mount

__all__ = ["mount"]
