"""Helpers for websocket tests: a real Bearer-authenticated connection to the real ASGI application."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agents.runs.manager import run_manager
from platform_core.asgi import application
from platform_core.identity.api_keys.keys import api_token_issue

TIMEOUT = 15


@database_sync_to_async
def bearer_for(user: Any) -> str:
    return api_token_issue(user=user, name="ws-test")[1]


async def connect(
    conversation_id: Any, token: str | None, *, accept_language: str | None = None, cookie: str | None = None
) -> tuple[WebsocketCommunicator, bool, int | None]:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    if accept_language:
        headers.append((b"accept-language", accept_language.encode()))
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/", headers=headers
    )
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    code = None
    if connected:
        # The consumer accepts, then closes at once when the caller may not use the conversation.
        # receive_nothing waits without cancelling the application (receive_output's timeout would).
        first = (
            None if await communicator.receive_nothing(timeout=0.3) else await communicator.receive_output()
        )
        if first is not None and first.get("type") == "websocket.close":
            code = first.get("code")
        elif first is not None:
            communicator._pending_first = first  # type: ignore[attr-defined]
    return communicator, connected, code


async def next_frame(communicator: WebsocketCommunicator) -> dict[str, Any]:
    pending = getattr(communicator, "_pending_first", None)
    if pending is not None:
        communicator._pending_first = None  # type: ignore[attr-defined]
        import json

        return json.loads(pending["text"])
    return await communicator.receive_json_from(timeout=TIMEOUT)


async def frames_until_done(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    """Every frame up to and including the run's ``done`` event."""
    frames = []
    while True:
        frame = await next_frame(communicator)
        frames.append(frame)
        if frame["event"] == "done":
            return frames


async def frames_until(communicator: WebsocketCommunicator, predicate: Any) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = await next_frame(communicator)
        frames.append(frame)
        if predicate(frame):
            return frames


async def finish_runs() -> None:
    """Wait for every run of this process's run manager to end."""
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def ask_until_done(conversation_id: Any, user: Any, content: str) -> list[dict[str, Any]]:
    """``user`` asks ``content`` over a new websocket of the conversation; every frame up to the run's
    ``done``, once the run has ended and the socket is closed."""
    ws, _, _ = await connect(conversation_id, await bearer_for(user))
    await ws.send_json_to({"type": "message", "content": content})
    frames = await frames_until_done(ws)
    await finish_runs()
    await ws.disconnect()
    return frames
