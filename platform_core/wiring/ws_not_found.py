"""The answer to a websocket handshake for a path no route serves: accepted, then closed with 4404.

Channels' ``URLRouter`` raises ``ValueError`` for an unknown path, which daphne answers with a 500 and a
traceback in the log. Closing with an application code instead tells the client why, the way the
conversation socket's 4401 and 4403 do (DESIGN section 4).
"""

from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer

CLOSE_NOT_FOUND = 4404


class UnknownPathConsumer(AsyncWebsocketConsumer):
    """Accepts and closes at once with :data:`CLOSE_NOT_FOUND`; never reads a frame."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
