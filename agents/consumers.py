"""The conversation websocket of DESIGN section 4.

The consumer authorises the socket, relays persisted events of its conversation, replays what a
reconnecting client missed, and turns the client's ``message``, ``cancel`` and ``resume_run`` frames into
conversation commands (:mod:`agents.conversations`), the one way every entry point reaches runs. It never
runs a turn itself: runs live in the process's run manager, independent of any socket.

Ordering: a socket relays live events only once it has a position in the stream, so replayed events
always come before live ones. ``{"type": "resume", "after_seq": N}`` sets the position to N (0 for the
whole conversation) and replays everything after it; a client that sends a message without resuming
is positioned at the conversation's newest event, so it receives its own run's events.

Durable runs: ``{"type": "resume_run"}`` (optionally with ``"run_id"``) resumes the conversation's
interrupted run from its checkpoint in this process; its events continue the same stream (same seq
sequence, same run id). A message sent while a run is parked on an approval is stored and taken in when
it resumes; a cancel ends a parked run at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import datetime
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import parse_cookie
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents import selectors, services
from agents.conversations.attachments import attachment_ids_of
from agents.conversations.commands import (
    Cancel,
    NothingToCancel,
    PostMessage,
    Refused,
    Resume,
    Sender,
    nothing_to_resume,
)
from agents.conversations.handling import command_handle
from agents.runs.events.relay import message_texts
from agents.runs.events.store import conversation_group, events_after_sync, last_seq_sync
from agents.runs.events.texts import frame_text
from agents.runs.language import interface_language
from agents.ws_frames import FrameRefused, after_seq_parse, after_seq_within, frame_decode
from platform_core.identity.api_keys.keys import api_key_group

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


class ConversationConsumer(AsyncWebsocketConsumer):
    """``/ws/conversations/<conversation_id>/``"""

    conversation: Any = None
    last_sent_seq: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        # Accept first so the close code reaches the client (a refused handshake tells it nothing).
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.conversation = await database_sync_to_async(selectors.conversation_for_user)(
            user=user, conversation_id=conversation_id
        )
        if self.conversation is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = conversation_group(self.conversation.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        key = self.scope.get("api_key")
        if key is not None:  # revoking the key closes this socket at once, frames or not
            self.key_group = api_key_group(key.key.pk)
            await self.channel_layer.group_add(self.key_group, self.channel_name)
            if key.key.expires_at is not None:  # and so does its expiry
                self.key_expiry = asyncio.create_task(self._close_at(key.key.expires_at))

    async def _close_at(self, expires_at: datetime) -> None:
        """Close the socket (4401) when its API key expires, as a frame sent with it then would be."""
        await asyncio.sleep(max(0.0, (expires_at - timezone.now()).total_seconds()))
        await self.close(code=CLOSE_UNAUTHENTICATED)

    async def disconnect(self, code: int) -> None:
        expiry = getattr(self, "key_expiry", None)
        if expiry is not None and expiry is not asyncio.current_task():
            expiry.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if getattr(self, "key_group", None):
            await self.channel_layer.group_discard(self.key_group, self.channel_name)

    async def api_key_revoked(self, message: dict[str, Any]) -> None:
        """The socket's API key was revoked: close it (4401), as a frame sent with it would be."""
        await self.close(code=CLOSE_UNAUTHENTICATED)

    # -- client frames ---------------------------------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.conversation is None:
            return
        with translation.override(self._language()):
            await self._receive(text_data, bytes_data)

    async def _receive(self, text_data: str | None, bytes_data: bytes | None) -> None:
        decoded = frame_decode(text_data)
        if isinstance(decoded, FrameRefused):
            await self._error(decoded.code, decoded.message)
            return
        frame = decoded.frame
        kind = frame.get("type")
        if kind == "message":
            await self._on_message(frame.get("content"), frame.get("attachments"))
        elif kind == "cancel":
            await self._on_cancel()
        elif kind == "resume":
            await self._on_resume(frame.get("after_seq", 0))
        elif kind == "resume_run":
            await self._on_resume_run(frame.get("run_id"))
        else:
            await self._error(
                "bad_frame", _("Unknown frame type; expected message, cancel, resume or resume_run.")
            )

    def _sender(self) -> Sender:
        return Sender(
            organization_id=self.conversation.organization_id,
            user=self.scope["user"],
            via="websocket",
            language=self._interface_language(),
        )

    async def _position(self) -> None:
        """Give the socket a position (the conversation's newest event) if it has none, before a run of
        its own starts: it then relays that run's events."""
        if self.last_sent_seq is None:
            self.last_sent_seq = await database_sync_to_async(last_seq_sync)(self.conversation.pk)

    async def _command(self, command: PostMessage | Cancel | Resume) -> None:
        """Position the socket, then handle ``command``; a refusal (or nothing to cancel) is sent back as an
        error frame, anything else the socket relays as the run's events."""
        await self._position()
        result = await command_handle(command)
        if isinstance(result, NothingToCancel | Refused):
            await self._error(result.code, result.message)

    async def _on_message(self, content: Any, attachments: Any) -> None:
        try:
            content = services.message_content_check(content)
        except services.RunRefused as refused:
            await self._error(refused.code, refused.message)
            return
        attachment_ids = attachment_ids_of(attachments)
        if isinstance(attachment_ids, Refused):
            await self._error(attachment_ids.code, attachment_ids.message)
            return
        await self._command(
            PostMessage(self._sender(), self.conversation, content, attachment_ids=attachment_ids)
        )

    async def _on_cancel(self) -> None:
        # A parked run is cancelled at once: its cancelled done is stored then, and this socket relays it.
        await self._command(Cancel(self._sender(), self.conversation))

    async def _on_resume_run(self, value: Any) -> None:
        if value is not None and not isinstance(value, str):
            await self._error("bad_frame", _("run_id must be a string."))
            return
        try:
            run_id = uuid.UUID(value) if value is not None else None
        except ValueError:  # no run has that id
            refused = nothing_to_resume()
            await self._error(refused.code, refused.message)
            return
        await self._command(Resume(self._sender(), self.conversation, run_id))

    async def _on_resume(self, value: Any) -> None:
        after_seq = after_seq_parse(value)
        if not isinstance(after_seq, FrameRefused):
            newest = await database_sync_to_async(last_seq_sync)(self.conversation.pk)
            after_seq = after_seq_within(after_seq, newest=newest)
        if isinstance(after_seq, FrameRefused):  # the socket keeps the position it had
            await self._error(after_seq.code, after_seq.message)
            return
        self.last_sent_seq = after_seq
        await self._send_persisted_after(after_seq)

    async def _send_persisted_after(self, after_seq: int) -> None:
        while True:
            frames = await database_sync_to_async(events_after_sync)(self.conversation.pk, after_seq)
            for frame in frames:
                await self._send_frame(frame)
            if len(frames) < 5000:
                return
            after_seq = frames[-1]["seq"]

    # -- events from the run ---------------------------------------------------------------------
    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels (>= 4.2) hops through the process's one shared sync thread before every message a
        # consumer handles, to close stale database connections. This consumer reaches the database only
        # through database_sync_to_async, which closes them itself, so the hop only made every client
        # frame (a cancel too) and every relayed event wait behind the process's other database work.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def run_event(self, message: dict[str, Any]) -> None:
        """Persisted events published to the conversation's group: their frames' text, sent as it is."""
        for seq, text in message_texts(message):
            if self.last_sent_seq is None or seq <= self.last_sent_seq:
                continue  # no position yet (resume will replay it), or already sent
            if seq > self.last_sent_seq + 1:
                # A gap (the layer dropped a message): fill it from the database, in order.
                await self._send_persisted_after(self.last_sent_seq)
            await self._send_text(seq, text)

    async def _send_frame(self, frame: dict[str, Any]) -> None:
        await self._send_text(frame.get("seq"), frame_text(frame))

    async def _send_text(self, seq: Any, text: str) -> None:
        if isinstance(seq, int):
            if self.last_sent_seq is not None and seq <= self.last_sent_seq:
                return
            self.last_sent_seq = seq
        await self.send(text_data=text)

    async def _error(self, code: str, message: str) -> None:
        """A socket-local error: not persisted, no seq; the socket stays open."""
        await self.send(
            text_data=json.dumps(
                {"seq": None, "run_id": None, "event": "error", "data": {"code": code, "message": message}},
                ensure_ascii=False,
            )
        )

    def _interface_language(self) -> str:
        """The user's interface language (``""``: unknown), as LocaleMiddleware finds it for a page: the
        language chosen in the web app (its cookie), else the browser's ``Accept-Language``."""
        headers = dict(self.scope.get("headers") or [])
        cookies = parse_cookie(headers.get(b"cookie", b"").decode("latin-1"))
        return interface_language(
            cookie=cookies.get(settings.LANGUAGE_COOKIE_NAME),
            accept_language=headers.get(b"accept-language", b"").decode("latin-1"),
        )

    def _language(self) -> str:
        """The language of the socket's own messages: the interface language, else the default."""
        return self._interface_language() or translation.get_language() or "en"
