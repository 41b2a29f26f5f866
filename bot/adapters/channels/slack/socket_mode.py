"""Socket Mode: Slack delivers events over a WebSocket the bot opens (SLACK_APP_TOKEN), for
a deploybot that no public URL reaches. The same Bolt app answers them as over HTTP."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp


class SocketMode:
    def __init__(self, app: AsyncApp, app_token: str) -> None:
        self.app, self.app_token = app, app_token
        self._handler: Any = None

    async def open(self) -> None:
        # Imported here: only a deploybot with an app token needs the WebSocket client.
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        self._handler = AsyncSocketModeHandler(self.app, self.app_token)
        await self._handler.connect_async()

    async def close(self) -> None:
        if self._handler is not None:
            await self._handler.close_async()
            self._handler = None
