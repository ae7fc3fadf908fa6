"""A fake Feishu (Lark) open platform on loopback, for approval-card tests (FEISHU.md section 6).

A real HTTP server (127.0.0.1, random port, background thread) answering the four endpoints the
approval gate uses with Feishu's validation and body codes:

- ``POST /open-apis/auth/v3/tenant_access_token/internal``: app credentials; the same token while
  more than 30 minutes of it remain, a new one after that.
- ``POST /open-apis/im/v1/messages?receive_id_type=...``: Bearer token, ``content`` a JSON string
  holding a schema 2.0 card, 30 KB limit, ``uuid`` idempotency (a repeat returns the first message).
- ``PATCH /open-apis/im/v1/messages/<id>``: replaces the card (``update_multi`` on both cards).
- ``POST /open-apis/interactive/v1/card/update``: the delayed update with a click's ``c-`` token
  (30 minutes, twice).

Fault switches: :meth:`FakeFeishu.rate_limit`, :meth:`FakeFeishu.fail`, :meth:`FakeFeishu.fail_with`,
:meth:`FakeFeishu.revoke_tokens`, :meth:`FakeFeishu.expire_tokens`, ``latency``,
:meth:`FakeFeishu.remove_bot_from_chat`. Records: ``sent``, ``updates``, ``requests``, ``clicks``.

Feishu's side of the callback (tests/fakes/feishu_callbacks.py): :meth:`FakeFeishu.click` builds a schema 2.0 ``card.action.trigger``
payload for a button of a sent card, encrypts and signs it, POSTs it to our callback URL, checks
that the answer came within 3 seconds and applies a returned card to the message. Calling it twice is
a double click (two event ids; the button is taken from the card history once the card changed).
Negative knobs: ``bad_signature``, ``unsigned``, ``wrong_token``, ``stale``, ``replay`` (resend the
previous request byte for byte), an ``approval_id`` no card carries, any ``operator_open_id``.
:meth:`FakeFeishu.build_click` returns the request without sending it, for Django's test client.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from hooks.feishu.client import FeishuApp
from tests.fakes.feishu_callbacks import (
    CLICK_DEADLINE,
    FAKE_APP_ID,
    FAKE_ENCRYPT_KEY,
    FAKE_TENANT_KEY,
    FAKE_VERIFICATION_TOKEN,
    VERIFY_DEADLINE,
    CallbackRequest,
    CallbackSide,
    ClickRecord,
)
from tests.fakes.feishu_cards import CardUpdate, FakeMessage, find_button, validate_card
from tests.fakes.feishu_oauth import OAuthSide
from tests.fakes.threaded_server import OwnedHTTPServer, ThreadedServer

__all__ = [
    "CLICK_DEADLINE",
    "FAKE_APP_ID",
    "FAKE_APP_SECRET",
    "FAKE_ENCRYPT_KEY",
    "FAKE_TENANT_KEY",
    "FAKE_VERIFICATION_TOKEN",
    "VERIFY_DEADLINE",
    "CallbackRequest",
    "CardUpdate",
    "ClickRecord",
    "FakeFeishu",
    "FakeMessage",
    "RecordedRequest",
    "find_button",
    "validate_card",
]

FAKE_APP_SECRET = "fake-app-secret-do-not-log"
MAX_CONTENT_BYTES = 30 * 1024
REUSE_WINDOW = 1800  # Feishu returns the same tenant token while this many seconds remain
RECEIVE_ID_TYPES = frozenset({"chat_id", "open_id", "union_id", "user_id", "email"})
# The fake listens on loopback: apps pointing at it carry the allowance an operator would configure.
LOOPBACK = ("127.0.0.1",)

# Body codes. 99991663/99991661/99991400/230001/230002/230099 are Feishu's (FEISHU.md); the others
# stand for "bad request" where the fake needs one.
INVALID_TOKEN, MISSING_TOKEN, RATE_LIMITED = 99991663, 99991661, 99991400
INVALID_CONTENT, BOT_NOT_IN_CHAT, CARD_SCHEMA_ERROR = 230001, 230002, 230099
CONTENT_TOO_LONG, BAD_REQUEST, BAD_APP_CREDENTIALS = 230025, 99992402, 10014


@dataclass(frozen=True)
class RecordedRequest:
    """One API request the fake answered (body ``code`` when the answer had one)."""

    method: str
    path: str
    status: int
    code: int | None


@dataclass
class _Fault:
    status: int
    code: int
    msg: str
    headers: dict[str, str] = field(default_factory=dict)


class FakeFeishu(ThreadedServer, CallbackSide, OAuthSide):
    """The fake Feishu server, (through :class:`CallbackSide`) Feishu's side of card callbacks and
    (through :class:`OAuthSide`, tests/fakes/feishu_oauth.py) Feishu's web sign-in."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._ids = itertools.count(1)
        self.reset()

    # lifecycle

    @property
    def base_url(self) -> str:
        return self.address

    @property
    def app(self) -> FeishuApp:
        """The default app's credentials, pointing at this server."""
        return FeishuApp(
            app_id=FAKE_APP_ID,
            app_secret=FAKE_APP_SECRET,
            base_url=self.base_url,
            allowed_private_hosts=LOOPBACK,
        )

    def before_stop(self) -> None:
        self._wake.set()

    def reset(self) -> None:
        """Forget everything and switch every fault off; the default app stays registered."""
        with self._lock:
            self.apps: dict[str, str] = {FAKE_APP_ID: FAKE_APP_SECRET}
            self.token_ttl = 7200
            self.latency = 0.0
            self.messages: dict[str, FakeMessage] = {}
            self.sent: list[FakeMessage] = []
            self.updates: list[CardUpdate] = []
            self.requests: list[RecordedRequest] = []
            self.clicks: list[ClickRecord] = []
            self.token_fetches = 0
            self._tokens: dict[str, tuple[str, float]] = {}
            self._uuids: dict[tuple[str, str], str] = {}
            self._update_tokens: dict[str, list[Any]] = {}  # token -> [message_id, uses, expires_at]
            self._faults: deque[_Fault] = deque()
            self._no_bot: set[str] = set()
            self._last_click: CallbackRequest | None = None
            self._reset_oauth()
            self._wake.set()
            self._wake = threading.Event()

    # fault switches

    def add_app(self, app_id: str, app_secret: str) -> FeishuApp:
        """Register another app, or give an app a new secret; returns its credentials."""
        with self._lock:
            self.apps[app_id] = app_secret
        return FeishuApp(
            app_id=app_id, app_secret=app_secret, base_url=self.base_url, allowed_private_hosts=LOOPBACK
        )

    def rate_limit(self, times: int = 1, *, reset: float = 1) -> None:
        """The next ``times`` API calls get HTTP 429, code 99991400, ``x-ogw-ratelimit-reset``."""
        self._queue_fault(
            times,
            _Fault(
                429, RATE_LIMITED, "request trigger frequency limit", {"x-ogw-ratelimit-reset": f"{reset:g}"}
            ),
        )

    def fail(self, times: int = 1, *, status: int = 500) -> None:
        """The next ``times`` API calls fail with ``status`` (5xx by default)."""
        self._queue_fault(times, _Fault(status, 1, "internal error"))

    def fail_with(self, code: int, *, status: int = 400, msg: str = "fake error", times: int = 1) -> None:
        """The next ``times`` API calls answer body ``code`` (e.g. 230002, 230099)."""
        self._queue_fault(times, _Fault(status, code, msg))

    def revoke_tokens(self) -> None:
        """Invalidate every issued tenant token: their next use gets code 99991663."""
        with self._lock:
            self._tokens.clear()

    def expire_tokens(self) -> None:
        """Let every issued token run out now (the next use gets 99991663, a new fetch a new token)."""
        with self._lock:
            now = time.monotonic()
            self._tokens = {t: (app, now) for t, (app, _) in self._tokens.items()}

    def remove_bot_from_chat(self, chat_id: str) -> None:
        """Sends to ``chat_id`` now fail with 230002 (bot not in the chat)."""
        with self._lock:
            self._no_bot.add(chat_id)

    def _queue_fault(self, times: int, fault: _Fault) -> None:
        with self._lock:
            self._faults.extend(fault for _ in range(times))

    # inspection
    # the HTTP API (called from handler threads)

    def _handle(
        self, method: str, target: str, headers: Any, raw: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        url = urlsplit(target)
        path = url.path
        with self._lock:
            latency, wake = self.latency, self._wake
        if latency:
            wake.wait(latency)
        oauth = self._oauth_handle(method, target, headers, raw)
        if oauth is not None:
            return oauth
        if method == "POST" and path == "/open-apis/auth/v3/tenant_access_token/internal":
            return self._token(_json(raw))
        known = (
            method == "POST"
            and path in ("/open-apis/im/v1/messages", "/open-apis/interactive/v1/card/update")
        ) or (method == "PATCH" and path.startswith("/open-apis/im/v1/messages/"))
        if not known:
            return 404, {"code": 404, "msg": f"fake Feishu: no route {method} {path}"}, {}
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            return fault.status, {"code": fault.code, "msg": fault.msg}, fault.headers
        app_id = self._authorise(headers.get("Authorization"))
        if isinstance(app_id, tuple):
            return app_id
        body = _json(raw)
        if not isinstance(body, dict):
            return 400, {"code": BAD_REQUEST, "msg": "body is not a JSON object"}, {}
        if path == "/open-apis/im/v1/messages":
            return self._send_message(app_id, parse_qs(url.query).get("receive_id_type", [""])[0], body)
        if path == "/open-apis/interactive/v1/card/update":
            return self._delayed_update(body)
        return self._patch(app_id, unquote(path.rsplit("/", 1)[-1]), body)

    def _token(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.token_fetches += 1
            if (
                not isinstance(body, dict)
                or self.apps.get(body.get("app_id")) != body.get("app_secret")
                or not body.get("app_secret")
            ):
                return 400, {"code": BAD_APP_CREDENTIALS, "msg": "app_id or app_secret is invalid"}, {}
            now = time.monotonic()
            for token, (app_id, expires_at) in self._tokens.items():
                if app_id == body["app_id"] and expires_at - now > REUSE_WINDOW:
                    return (
                        200,
                        {
                            "code": 0,
                            "msg": "ok",
                            "tenant_access_token": token,
                            "expire": int(expires_at - now),
                        },
                        {},
                    )
            token = f"t-{secrets.token_hex(12)}"
            self._tokens[token] = (body["app_id"], now + self.token_ttl)
            return 200, {"code": 0, "msg": "ok", "tenant_access_token": token, "expire": self.token_ttl}, {}

    def _authorise(self, header: str | None) -> str | tuple[int, dict[str, Any], dict[str, str]]:
        if not header or not header.startswith("Bearer ") or not header[7:].strip():
            return 400, {"code": MISSING_TOKEN, "msg": "missing access token"}, {}
        with self._lock:
            entry = self._tokens.get(header[7:].strip())
        if entry is None or entry[1] <= time.monotonic():
            return 400, {"code": INVALID_TOKEN, "msg": "Invalid access token for authorization"}, {}
        return entry[0]

    def _send_message(
        self, app_id: str, receive_id_type: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if receive_id_type not in RECEIVE_ID_TYPES:
            return 400, {"code": BAD_REQUEST, "msg": "receive_id_type is invalid"}, {}
        receive_id, uuid = body.get("receive_id"), body.get("uuid")
        if not isinstance(receive_id, str) or not receive_id or body.get("msg_type") != "interactive":
            return 400, {"code": BAD_REQUEST, "msg": "receive_id and msg_type interactive are required"}, {}
        if uuid is not None and (not isinstance(uuid, str) or len(uuid) > 50):
            return 400, {"code": BAD_REQUEST, "msg": "uuid must be a string of at most 50 characters"}, {}
        card, error = _card_from_content(body.get("content"))
        if error is not None:
            return error
        with self._lock:
            if uuid is not None and (app_id, uuid) in self._uuids:
                return 200, _message_reply(self.messages[self._uuids[(app_id, uuid)]]), {}
            if receive_id_type == "chat_id" and receive_id in self._no_bot:
                return 400, {"code": BOT_NOT_IN_CHAT, "msg": "Bot is not in the chat"}, {}
            chat_id = receive_id if receive_id_type == "chat_id" else f"oc_p2p_{receive_id}"
            message = FakeMessage(
                f"om_{next(self._ids):06d}{secrets.token_hex(4)}",
                chat_id,
                receive_id,
                receive_id_type,
                uuid,
                app_id,
                [card],
            )
            self.messages[message.message_id] = message
            self.sent.append(message)
            if uuid is not None:
                self._uuids[(app_id, uuid)] = message.message_id
            return 200, _message_reply(message), {}

    def _patch(
        self, app_id: str, message_id: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        card, error = _card_from_content(body.get("content"))
        if error is not None:
            return error
        with self._lock:
            message = self.messages.get(message_id)
            if message is None or message.app_id != app_id:
                return 400, {"code": INVALID_CONTENT, "msg": f"message {message_id} not found"}, {}
            if not (_update_multi(message.card) and _update_multi(card)):
                return 400, {"code": CARD_SCHEMA_ERROR, "msg": "both cards need config.update_multi true"}, {}
            message.cards.append(card)
            self.updates.append(CardUpdate(message_id, "patch", card))
        return 200, {"code": 0, "msg": "success", "data": {}}, {}

    def _delayed_update(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        card = body.get("card")
        if not isinstance(card, dict) or validate_card(card):
            return (
                400,
                {
                    "code": CARD_SCHEMA_ERROR,
                    "msg": f"card schema error: {validate_card(card) if isinstance(card, dict) else 'not an object'}",
                },
                {},
            )
        with self._lock:
            entry = self._update_tokens.get(body.get("token") or "")
            if entry is None or entry[1] >= 2 or entry[2] <= time.monotonic():
                return (
                    400,
                    {"code": BAD_REQUEST, "msg": "the card update token is invalid, used twice or expired"},
                    {},
                )
            entry[1] += 1
            message = self.messages[entry[0]]
            message.cards.append(card)
            self.updates.append(CardUpdate(message.message_id, "delayed", card))
        return 200, {"code": 0, "msg": "success"}, {}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _card_from_content(
    content: Any,
) -> tuple[dict[str, Any], None] | tuple[None, tuple[int, dict[str, Any], dict[str, str]]]:
    if not isinstance(content, str):
        return None, (400, {"code": INVALID_CONTENT, "msg": "content must be a JSON string"}, {})
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        return None, (400, {"code": CONTENT_TOO_LONG, "msg": "the message content is over 30 KB"}, {})
    card = _json(content.encode("utf-8"))
    if not isinstance(card, dict):
        return None, (400, {"code": INVALID_CONTENT, "msg": "content does not parse as a JSON object"}, {})
    problems = validate_card(card)
    if problems:
        return None, (
            400,
            {"code": CARD_SCHEMA_ERROR, "msg": f"card schema error: {'; '.join(problems)}"},
            {},
        )
    return card, None


def _update_multi(card: dict[str, Any]) -> bool:
    config = card.get("config")
    return isinstance(config, dict) and config.get("update_multi") is True


def _message_reply(message: FakeMessage) -> dict[str, Any]:
    return {
        "code": 0,
        "msg": "success",
        "data": {"message_id": message.message_id, "chat_id": message.chat_id, "msg_type": "interactive"},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: OwnedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_GET(self) -> None:  # the OAuth authorize page and user info (feishu_oauth.py)
        self._serve("GET")

    def _serve(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner = self.server.owner
        status, payload, extra = owner._handle(method, self.path, self.headers, raw)
        with owner._lock:
            owner.requests.append(
                RecordedRequest(method, urlsplit(self.path).path, status, payload.get("code"))
            )
        data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


FakeFeishu.handler = _Handler
