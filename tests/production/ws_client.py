"""A real websocket client of a daphne server (the ``websockets`` library over loopback TCP)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

TIMEOUT = 20.0


async def ws_open(base_url: str, conversation_id: str, token: str) -> ClientConnection:
    """Open ``/ws/conversations/<id>/`` on the server at ``base_url`` (``http://host:port``) as an API
    client: Bearer token, no Origin."""
    url = base_url.replace("http://", "ws://", 1) + f"/ws/conversations/{conversation_id}/"
    return await connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        proxy=None,
        compression=None,
        open_timeout=TIMEOUT,
    )


async def ws_send(ws: ClientConnection, frame: dict[str, Any]) -> None:
    await ws.send(json.dumps(frame))


async def ws_frame(ws: ClientConnection, within: float = TIMEOUT) -> dict[str, Any]:
    """The next frame; fails the test after ``within`` seconds without one."""
    try:
        async with asyncio.timeout(within):
            raw = await ws.recv(decode=True)
    except TimeoutError:
        raise AssertionError(f"no websocket frame within {within:.0f} s") from None
    return json.loads(raw)


async def ws_frames_until(
    ws: ClientConnection, predicate: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Every frame up to and including the first one ``predicate`` accepts."""
    frames: list[dict[str, Any]] = []
    while True:
        frame = await ws_frame(ws)
        frames.append(frame)
        if predicate(frame):
            return frames


def is_done(frame: dict[str, Any]) -> bool:
    return frame.get("event") == "done"


def is_approval(status: str) -> Callable[[dict[str, Any]], bool]:
    return lambda frame: frame.get("event") == "approval" and frame["data"].get("status") == status
