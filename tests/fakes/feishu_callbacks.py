"""Feishu's side of card callbacks, for the fake Feishu server.

:class:`CallbackSide` (mixed into :class:`tests.fakes.feishu_server.FakeFeishu`) builds what
Feishu POSTs to our callback URL when a button is clicked or the URL is saved: the schema 2.0
``card.action.trigger`` payload, encrypted with the Encrypt Key and signed, or the unsigned URL
verification. It sends it (httpx, sync or async, or any ``httpx`` client such as one on Django's
WSGI/ASGI app), requires the answer within Feishu's deadline (3 s; 1 s for URL verification) and
applies a returned card to the message, as Feishu does.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid as uuid_module
from dataclasses import dataclass
from typing import Any

import httpx

from hooks.feishu.callback import encrypt_payload, sign
from tests.fakes.feishu_cards import CardUpdate, FakeMessage, find_button, validate_card

FAKE_APP_ID = "cli_fake_approvals"
FAKE_ENCRYPT_KEY = "fake-encrypt-key"
FAKE_VERIFICATION_TOKEN = "fake-verification-token"
FAKE_TENANT_KEY = "fake-tenant"
CLICK_DEADLINE = 3.0
VERIFY_DEADLINE = 1.0
UPDATE_TOKEN_TTL = 1800


@dataclass(frozen=True)
class CallbackRequest:
    """A callback request as Feishu would send it (exact body bytes and headers)."""

    body: bytes
    headers: dict[str, str]
    event_id: str | None
    message_id: str | None
    deadline: float = CLICK_DEADLINE


@dataclass(frozen=True)
class ClickRecord:
    """One callback the fake sent and what our endpoint answered."""

    event_id: str | None
    message_id: str | None
    status: int
    reply: dict[str, Any] | None
    elapsed: float


class CallbackSide:
    """Clicks and URL verifications against our callback; state lives in the fake server."""

    _lock: threading.RLock
    messages: dict[str, FakeMessage]
    updates: list[CardUpdate]
    clicks: list[ClickRecord]
    _update_tokens: dict[str, list[Any]]
    _last_click: CallbackRequest | None

    def message_for(self, approval_id: str) -> FakeMessage | None:
        """The message whose card (now or earlier) has a button for ``approval_id``."""
        with self._lock:
            for message in self.messages.values():
                if any(find_button(card, approval_id=approval_id) for card in message.cards):
                    return message
        return None

    def build_click(
        self,
        *,
        operator_open_id: str,
        decision: str = "approve",
        message_id: str | None = None,
        approval_id: str | None = None,
        encrypt_key: str = FAKE_ENCRYPT_KEY,
        verification_token: str = FAKE_VERIFICATION_TOKEN,
        app_id: str = FAKE_APP_ID,
        bad_signature: bool = False,
        unsigned: bool = False,
        wrong_token: bool = False,
        stale: bool = False,
        replay: bool = False,
        encrypted: bool = True,
        value: dict[str, Any] | None = None,
    ) -> CallbackRequest:
        """The signed, encrypted request a click on a card's button makes (see the module docstring)."""
        if replay:
            if self._last_click is None:
                raise AssertionError("replay=True but no click was made before")
            return self._last_click
        message = self.messages.get(message_id) if message_id else None
        if message is None and approval_id is not None:
            message = self.message_for(approval_id)
        if message_id and message is None:
            raise AssertionError(f"the fake holds no message {message_id}")
        name, button_value = decision, value or {"approval_id": approval_id, "decision": decision}
        if message is not None and value is None:
            found = next(
                (b for card in reversed(message.cards) if (b := find_button(card, approval_id, decision))),
                None,
            )
            if found is None:
                raise AssertionError(f"message {message.message_id} never had a {decision!r} button")
            name, button_value = found.get("name", decision), found["behaviors"][0]["value"]
        event_id = uuid_module.uuid4().hex
        update_token = f"c-{uuid_module.uuid4().hex}"
        open_message_id = message.message_id if message else f"om_unknown_{secrets.token_hex(4)}"
        if message is not None:
            with self._lock:
                self._update_tokens[update_token] = [
                    message.message_id,
                    0,
                    time.monotonic() + UPDATE_TOKEN_TTL,
                ]
        payload = {
            "schema": "2.0",
            "header": {
                "event_id": event_id,
                "token": "wrong-verification-token" if wrong_token else verification_token,
                "create_time": str(int(time.time() * 1_000_000)),
                "event_type": "card.action.trigger",
                "tenant_key": FAKE_TENANT_KEY,
                "app_id": app_id,
            },
            "event": {
                "operator": {
                    "tenant_key": FAKE_TENANT_KEY,
                    "open_id": operator_open_id,
                    "union_id": f"on_{operator_open_id}",
                },
                "token": update_token,
                "action": {"value": button_value, "tag": "button", "name": name},
                "host": "im_message",
                "context": {
                    "open_message_id": open_message_id,
                    "open_chat_id": message.chat_id if message else "oc_unknown",
                },
            },
        }
        request = self._callback_request(
            payload,
            encrypt_key,
            encrypted=encrypted,
            stale=stale,
            bad_signature=bad_signature,
            unsigned=unsigned,
        )
        request = CallbackRequest(
            request.body, request.headers, event_id, message.message_id if message else None
        )
        self._last_click = request
        return request

    def click(
        self, callback_url: str, *, client: httpx.Client | None = None, **knobs: Any
    ) -> tuple[int, Any]:
        """Click a button (``build_click`` knobs) and POST it to ``callback_url``; (status, reply JSON)."""
        return self.post_callback(callback_url, self.build_click(**knobs), client=client)

    async def aclick(
        self, callback_url: str, *, client: httpx.AsyncClient | None = None, **knobs: Any
    ) -> tuple[int, Any]:
        """:meth:`click` for async tests."""
        return await self.apost_callback(callback_url, self.build_click(**knobs), client=client)

    def build_url_verification(
        self,
        *,
        verification_token: str = FAKE_VERIFICATION_TOKEN,
        encrypt_key: str | None = FAKE_ENCRYPT_KEY,
        challenge: str | None = None,
        wrong_token: bool = False,
    ) -> CallbackRequest:
        """The unsigned URL verification Feishu sends when the callback URL is saved."""
        payload = {
            "type": "url_verification",
            "challenge": challenge or uuid_module.uuid4().hex,
            "token": "wrong-verification-token" if wrong_token else verification_token,
        }
        built = self._callback_request(
            payload, encrypt_key or "", encrypted=encrypt_key is not None, unsigned=True
        )
        return CallbackRequest(built.body, built.headers, None, None, deadline=VERIFY_DEADLINE)

    def verify_url(
        self, callback_url: str, *, client: httpx.Client | None = None, **knobs: Any
    ) -> tuple[int, Any]:
        """Send a URL verification (``build_url_verification`` knobs); (status, reply JSON)."""
        return self.post_callback(callback_url, self.build_url_verification(**knobs), client=client)

    async def averify_url(
        self, callback_url: str, *, client: httpx.AsyncClient | None = None, **knobs: Any
    ) -> tuple[int, Any]:
        return await self.apost_callback(callback_url, self.build_url_verification(**knobs), client=client)

    def post_callback(
        self, callback_url: str, request: CallbackRequest, *, client: httpx.Client | None = None
    ) -> tuple[int, Any]:
        """POST a built callback request; checks the deadline and applies a returned card."""
        started = time.monotonic()
        if client is None:
            with httpx.Client(timeout=10) as own:
                response = own.post(callback_url, content=request.body, headers=request.headers)
        else:
            response = client.post(callback_url, content=request.body, headers=request.headers)
        return self.receive_reply(request, response.status_code, response.content, time.monotonic() - started)

    async def apost_callback(
        self, callback_url: str, request: CallbackRequest, *, client: httpx.AsyncClient | None = None
    ) -> tuple[int, Any]:
        started = time.monotonic()
        if client is None:
            async with httpx.AsyncClient(timeout=10) as own:
                response = await own.post(callback_url, content=request.body, headers=request.headers)
        else:
            response = await client.post(callback_url, content=request.body, headers=request.headers)
        return self.receive_reply(request, response.status_code, response.content, time.monotonic() - started)

    def receive_reply(
        self, request: CallbackRequest, status: int, body: bytes, elapsed: float = 0.0
    ) -> tuple[int, Any]:
        """What Feishu does with our answer: require it in time, apply a returned card.

        Public so tests driving the view through Django's test client can hand the response in.
        """
        if elapsed > request.deadline:
            raise AssertionError(
                f"the callback answered after {elapsed:.2f}s; Feishu waits {request.deadline}s"
            )
        try:
            reply = json.loads(body)
        except ValueError:
            reply = None
        card = reply.get("card") if isinstance(reply, dict) else None
        if status == 200 and card is not None:
            if (
                not isinstance(card, dict)
                or card.get("type") != "raw"
                or not isinstance(card.get("data"), dict)
            ):
                raise AssertionError(f"the callback answered a card Feishu cannot use: {card!r}")
            problems = validate_card(card["data"])
            if problems:
                raise AssertionError(f"the callback answered an invalid card: {problems}")
            with self._lock:
                message = self.messages.get(request.message_id or "")
                if message is not None:
                    message.cards.append(card["data"])
                    self.updates.append(CardUpdate(message.message_id, "callback", card["data"]))
        with self._lock:
            self.clicks.append(ClickRecord(request.event_id, request.message_id, status, reply, elapsed))
        return status, reply

    def _callback_request(
        self,
        payload: dict[str, Any],
        encrypt_key: str,
        *,
        encrypted: bool,
        stale: bool = False,
        bad_signature: bool = False,
        unsigned: bool = False,
    ) -> CallbackRequest:
        plain = json.dumps(payload, ensure_ascii=False).encode()
        body = json.dumps({"encrypt": encrypt_payload(plain, encrypt_key)}).encode() if encrypted else plain
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "fake-feishu"}
        if not unsigned:
            timestamp = str(int(time.time()) - (600 if stale else 0))
            nonce = secrets.token_hex(8)
            key = "not-the-encrypt-key" if bad_signature else encrypt_key
            headers["X-Lark-Request-Timestamp"] = timestamp
            headers["X-Lark-Request-Nonce"] = nonce
            headers["X-Lark-Signature"] = sign(
                timestamp=timestamp, nonce=nonce, encrypt_key=key, raw_body=body
            )
        return CallbackRequest(body, headers, None, None)
