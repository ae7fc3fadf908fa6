"""Verifying, decrypting and parsing Feishu card callbacks (FEISHU.md section 4). Django-free.

:func:`parse_callback` runs the checks in the documented order: signature (401), decryption and
shape (400), URL verification, verification token (403), timestamp (408), replay (409), and
returns what the caller decides on. Every failure is a :class:`CallbackRejected` carrying an HTTP
status and a toast, and the caller answers EVERY path with a toast body (:meth:`CallbackRejected.reply`),
because anything else makes Feishu show the clicker a generic error.

Replays: an ``event_id`` must be recorded with an atomic "add if absent" in shared storage
(``cache.add(key, 1, timeout)`` in Django's cache, or a unique database row). Pass such a store as
``seen_events`` (see :class:`SeenEvents`), or check ``CardAction.event_id`` yourself after parsing
and raise :func:`replay_rejected`. Only events that passed every other check should be recorded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

TIMESTAMP_HEADER = "x-lark-request-timestamp"
NONCE_HEADER = "x-lark-request-nonce"
SIGNATURE_HEADER = "x-lark-signature"
EVENT_TYPE = "card.action.trigger"
# Feishu's callbacks carry opaque ids and a few headers: a few KB. Anything much larger is refused
# before it is verified, decrypted or parsed.
MAX_CALLBACK_BYTES = 256 * 1024
ToastKind = Literal["success", "info", "warning", "error"]
TOAST_KINDS = ("success", "info", "warning", "error")
_Reject = Callable[[str, int, str], "CallbackRejected"]

_TOASTS = {
    "en": {
        "bad_signature": "This request could not be verified.",
        "malformed": "This request could not be read.",
        "wrong_token": "This request is not for this app.",
        "stale": "This request has expired. Please try again.",
        "replay": "This click was already handled.",
        "unsupported": "This kind of callback is not supported.",
        "not_configured": "This Feishu channel is not fully configured.",
        "too_large": "This request is too large.",
    },
    "zh-hans": {
        "bad_signature": "无法验证此请求。",
        "malformed": "无法读取此请求。",
        "wrong_token": "此请求不属于本应用。",
        "stale": "此请求已过期，请重试。",
        "replay": "此次点击已处理。",
        "unsupported": "不支持此类回调。",
        "not_configured": "此飞书渠道尚未配置完成。",
        "too_large": "此请求过大。",
    },
}


@dataclass(frozen=True)
class CallbackSecrets:
    """The channel's Encrypt Key and Verification Token; ``app_id``, when set, must match the event's."""

    verification_token: str = field(repr=False)
    encrypt_key: str = field(repr=False)
    app_id: str | None = None


@dataclass(frozen=True)
class CardAction:
    """A verified button click (``card.action.trigger``). ``value`` is the button's callback value."""

    event_id: str
    operator_open_id: str
    operator_union_id: str | None
    operator_user_id: str | None
    value: dict[str, Any]
    action_name: str | None
    open_message_id: str | None
    open_chat_id: str | None
    update_token: str | None = field(repr=False)  # for delayed_update (30 minutes, twice)
    create_time: datetime | None
    tenant_key: str | None
    app_id: str | None


@dataclass(frozen=True)
class UrlVerification:
    """Feishu checking the callback URL: answer ``url_verification_reply(v)`` (plain JSON)."""

    challenge: str


class CallbackRejected(Exception):
    """A callback that failed a check; reply ``http_status`` with :meth:`reply` as the JSON body.

    ``reason`` is one of bad_signature, malformed, wrong_token, stale, replay, unsupported,
    not_configured, too_large. The message (for logs) never contains secrets.
    """

    def __init__(self, reason: str, http_status: int, detail: str, *, language: str = "en") -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.http_status = http_status
        self.detail = detail
        self.toast = _toast_texts(language)[reason]

    def reply(self) -> dict[str, Any]:
        """The error toast body to answer with."""
        return toast_reply("error", self.toast)


class SeenEvents(Protocol):
    """Shared storage of handled event ids (Django cache ``add`` or a unique row)."""

    def add_if_absent(self, event_id: str) -> bool:
        """Record ``event_id``; ``False`` when it was already recorded (atomically)."""
        ...


def replay_rejected(event_id: str, *, language: str = "en") -> CallbackRejected:
    """The rejection for an ``event_id`` already handled (for callers checking replays themselves)."""
    return CallbackRejected("replay", 409, f"event {event_id} was already handled", language=language)


def too_large_rejected(size: int | None, *, language: str = "en") -> CallbackRejected:
    """The rejection for a body over :data:`MAX_CALLBACK_BYTES` (``size`` unknown: ``None``)."""
    told = "an unknown number of" if size is None else str(size)
    return CallbackRejected(
        "too_large", 413, f"{told} bytes; at most {MAX_CALLBACK_BYTES} are read", language=language
    )


def verify_signature(
    *, timestamp: str, nonce: str, encrypt_key: str, raw_body: bytes, signature: str
) -> bool:
    """Whether ``signature`` is sha256(timestamp + nonce + encrypt_key + raw body), in constant time."""
    expected = hashlib.sha256((timestamp + nonce + encrypt_key).encode("utf-8") + raw_body).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), signature.strip().lower().encode("utf-8"))


def sign(*, timestamp: str, nonce: str, encrypt_key: str, raw_body: bytes) -> str:
    """The ``X-Lark-Signature`` Feishu sends for these bytes (for fakes and tests)."""
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode("utf-8") + raw_body).hexdigest()


def decrypt_payload(encrypt: str, encrypt_key: str) -> bytes:
    """AES-256-CBC decrypt Feishu's ``encrypt`` field; ``ValueError`` when it is not valid."""
    try:
        raw = base64.b64decode(encrypt, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("encrypt is not valid base64") from exc
    if len(raw) < 32 or len(raw) % 16:
        raise ValueError("encrypt has an invalid length")
    decryptor = Cipher(algorithms.AES(_aes_key(encrypt_key)), modes.CBC(raw[:16])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError as exc:
        raise ValueError("encrypt does not decrypt with this key") from exc


def encrypt_payload(plaintext: bytes, encrypt_key: str) -> str:
    """Encrypt like Feishu does: base64(iv + AES-256-CBC(PKCS#7(plaintext)))."""
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(_aes_key(encrypt_key)), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode("ascii")


def parse_callback(
    *,
    raw_body: bytes,
    headers: Mapping[str, str],
    secrets: CallbackSecrets,
    now: datetime,
    max_skew: timedelta = timedelta(minutes=5),
    seen_events: SeenEvents | None = None,
    language: str = "en",
) -> CardAction | UrlVerification:
    """Check a callback request in FEISHU.md's order and return the click or the URL verification.

    ``raw_body`` must be the exact request bytes. Raises :class:`CallbackRejected`.
    Without ``seen_events`` the caller must do the replay check on ``event_id``.
    """

    def reject(reason: str, status: int, detail: str) -> CallbackRejected:
        return CallbackRejected(reason, status, detail, language=language)

    if len(raw_body) > MAX_CALLBACK_BYTES:
        raise too_large_rejected(len(raw_body), language=language)
    if not secrets.encrypt_key or not secrets.verification_token:
        raise reject("not_configured", 503, "the channel has no encrypt key or verification token")
    lowered = {k.lower(): v for k, v in headers.items()}
    timestamp = lowered.get(TIMESTAMP_HEADER, "")
    nonce = lowered.get(NONCE_HEADER, "")
    signature = lowered.get(SIGNATURE_HEADER, "")
    signed = bool(signature)
    if signed and not verify_signature(
        timestamp=timestamp,
        nonce=nonce,
        encrypt_key=secrets.encrypt_key,
        raw_body=raw_body,
        signature=signature,
    ):
        raise reject("bad_signature", 401, "the signature does not match")

    payload = _decode(raw_body, secrets.encrypt_key, reject)
    if payload.get("type") == "url_verification":
        if not _same(payload.get("token"), secrets.verification_token):
            raise reject("wrong_token", 403, "url_verification carries a wrong verification token")
        challenge = payload.get("challenge")
        if not isinstance(challenge, str):
            raise reject("malformed", 400, "url_verification without a challenge")
        return UrlVerification(challenge=challenge)
    if not signed:
        raise reject("bad_signature", 401, "an event without a signature")

    header = payload.get("header")
    event = payload.get("event")
    if payload.get("schema") != "2.0" or not isinstance(header, dict) or not isinstance(event, dict):
        raise reject("unsupported", 400, "not a schema 2.0 callback")
    if header.get("event_type") != EVENT_TYPE:
        raise reject("unsupported", 400, f"unsupported event type {str(header.get('event_type'))[:64]!r}")
    if "token" in header and not _same(header.get("token"), secrets.verification_token):
        raise reject("wrong_token", 403, "the verification token does not match")
    if secrets.app_id is not None and header.get("app_id") != secrets.app_id:
        raise reject("wrong_token", 403, "the event is for another app")

    sent_at = _parse_unix_seconds(timestamp)
    if sent_at is None:
        raise reject("malformed", 400, "missing or invalid request timestamp")
    if abs(now - sent_at) > max_skew:
        raise reject("stale", 408, f"request timestamp is {abs(now - sent_at)} away from now")

    action = _card_action(header, event, reject)
    if seen_events is not None and not seen_events.add_if_absent(action.event_id):
        raise replay_rejected(action.event_id, language=language)
    return action


def toast_reply(kind: ToastKind, text: str, card: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The callback answer: a toast, and optionally a new card that replaces the card for everyone."""
    if kind not in TOAST_KINDS:
        raise ValueError(f"toast kind must be one of {TOAST_KINDS}")
    reply: dict[str, Any] = {"toast": {"type": kind, "content": text}}
    if card is not None:
        reply["card"] = {"type": "raw", "data": dict(card)}
    return reply


def url_verification_reply(verification: UrlVerification) -> dict[str, str]:
    """The plain JSON answer to a URL verification."""
    return {"challenge": verification.challenge}


# --- helpers ---------------------------------------------------------------------------------


def _aes_key(encrypt_key: str) -> bytes:
    return hashlib.sha256(encrypt_key.encode("utf-8")).digest()


def _toast_texts(language: str) -> dict[str, str]:
    return _TOASTS["zh-hans" if language.lower().startswith("zh") else "en"]


def _same(given: Any, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _decode(raw_body: bytes, encrypt_key: str, reject: _Reject) -> dict[str, Any]:
    body = _json_object(raw_body)
    if body is None:
        raise reject("malformed", 400, "the body is not a JSON object")
    if "encrypt" not in body:
        return body
    encrypted = body["encrypt"]
    if not isinstance(encrypted, str):
        raise reject("malformed", 400, "encrypt is not a string")
    try:
        plaintext = decrypt_payload(encrypted, encrypt_key)
    except ValueError as exc:
        raise reject("malformed", 400, str(exc)) from None
    payload = _json_object(plaintext)
    if payload is None:
        raise reject("malformed", 400, "the decrypted payload is not a JSON object")
    return payload


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """``raw`` as a JSON object, or ``None`` for anything else: not JSON, not an object, NaN or
    Infinity, or nested too deeply for the decoder (``RecursionError``)."""
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _parse_unix_seconds(raw: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(raw.strip()), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def _parse_create_time(raw: Any) -> datetime | None:
    # Feishu sends create_time as a string of digits; the unit (s, ms or µs) is told by its size.
    try:
        number = int(str(raw))
    except ValueError:
        return None
    for divisor in (1, 1_000, 1_000_000):
        seconds = number / divisor
        if seconds < 10_000_000_000:
            try:
                return datetime.fromtimestamp(seconds, tz=UTC)
            except (OverflowError, OSError, ValueError):
                return None
    return None


def _card_action(header: dict[str, Any], event: dict[str, Any], reject: _Reject) -> CardAction:
    operator = event.get("operator")
    action = event.get("action")
    raw_context = event.get("context")
    context: dict[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    event_id = header.get("event_id")
    if not isinstance(event_id, str) or not event_id:
        raise reject("malformed", 400, "the event has no event_id")
    if (
        not isinstance(operator, dict)
        or not isinstance(operator.get("open_id"), str)
        or not operator["open_id"]
    ):
        raise reject("malformed", 400, "the event has no operator open_id")
    if not isinstance(action, dict):
        raise reject("malformed", 400, "the event has no action")
    value = action.get("value")
    if isinstance(value, str):
        value = _json_object(value.encode("utf-8"))
    if not isinstance(value, dict):
        raise reject("malformed", 400, "the action value is not an object")

    def text(source: Mapping[str, Any], key: str) -> str | None:
        item = source.get(key)
        return item if isinstance(item, str) and item else None

    return CardAction(
        event_id=event_id,
        operator_open_id=operator["open_id"],
        operator_union_id=text(operator, "union_id"),
        operator_user_id=text(operator, "user_id"),
        value=value,
        action_name=text(action, "name"),
        open_message_id=text(context, "open_message_id"),
        open_chat_id=text(context, "open_chat_id"),
        update_token=text(event, "token"),
        create_time=_parse_create_time(header.get("create_time")),
        tenant_key=text(header, "tenant_key"),
        app_id=text(header, "app_id"),
    )
